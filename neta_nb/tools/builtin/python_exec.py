"""``python``: run code in the notebook's own namespace.

The code sees (and may change) the variables of the notebook it runs in, which is what
makes it useful — and why the tool is off by default, must be enabled per agent and asks
for approval before each run.

It runs on the event loop's thread (the kernel's main thread): notebook objects,
matplotlib and widgets expect that. Top-level ``await`` works. What the tool returns: the
printed output, the ``repr`` of the last expression (as a notebook cell would show it)
and the traceback if the code raised — an error in the code is a normal result the model
should read and act on.

What a cell would *display* is captured too (:mod:`neta_nb.tools.rich`): matplotlib
figures the code made (closed afterwards), ``display(...)`` calls and ``plt.show()`` in a
notebook (IPython's display publisher is listened to while the code runs), and the last
expression's rich form — a DataFrame's HTML table, a PIL image, a figure. The card shows
them; vision models receive the images.
"""

from __future__ import annotations

import ast
import asyncio
import contextlib
import dataclasses
import inspect
import linecache
import signal
import sys
import threading
import traceback
from collections.abc import Iterator
from types import CodeType
from typing import Any

from ...events import ApprovalPreview
from ..base import ToolContext, tool
from ..rich import (
    DEFAULT_LIMITS,
    RICH_TYPES,
    CapturedItems,
    RichLimits,
    RichResult,
    _matplotlib_figure,
    capture_figures,
    display_items,
)
from ..rich import items_from_bundle as _items_from_bundle
from .output_capture import capture_output

__all__ = ["MAX_OUTPUT_CHARS", "CodeRun", "notebook_namespace", "python", "run_python",
           "run_python_parts", "run_python_rich"]

MAX_OUTPUT_CHARS = 20_000
_FILENAME = "<python tool>"


async def _code_preview(_: ToolContext, args: dict[str, Any]) -> ApprovalPreview | None:
    """The code a ``python`` call will run, for its approval."""
    code = args.get("code")
    return ApprovalPreview(code=code) if isinstance(code, str) else None


@tool(name="python", category="base", requires_approval=True, label="Python",
      approval_preview=_code_preview)
async def python(ctx: ToolContext, code: str) -> RichResult:
    """Run Python code in the notebook's namespace and return what it printed, the value
    of its last expression and any error.

    Variables persist between calls and are shared with the notebook.

    Args:
        code: Python source. The last line's value is shown, as in a notebook cell.
    """
    return await run_python_rich(code, ctx.namespace)


def notebook_namespace() -> dict[str, Any] | None:
    """The running notebook's user namespace (where the tool's code runs), if any."""
    # A running shell means IPython is imported already; outside one, importing it just
    # to learn that there is none would cost a session ~0.3 s.
    ipython = sys.modules.get("IPython")
    shell = ipython.get_ipython() if ipython is not None else None
    return shell.user_ns if shell is not None else None


async def run_python(code: str, namespace: dict[str, Any]) -> str:
    """Execute ``code`` in ``namespace``; the text the ``python`` tool returns."""
    return (await run_python_rich(code, namespace)).model_text()


async def run_python_rich(code: str, namespace: dict[str, Any], *,
                          limits: RichLimits = DEFAULT_LIMITS) -> RichResult:
    """Execute ``code`` in ``namespace``: its text and what it displayed."""
    return (await run_python_parts(code, namespace, limits=limits)).result


@dataclasses.dataclass
class CodeRun:
    """What code run in the notebook's namespace did: :attr:`result` as the ``python``
    tool returns it, and its parts as a cell's outputs are made of them."""

    result: RichResult
    printed: str
    """What it printed (bounded)."""
    value: str | None
    """The ``repr`` of its last expression's value (bounded); ``None``: no value."""
    error: BaseException | None
    """What it raised (its traceback in :attr:`error_text`)."""
    error_text: str | None
    displayed: int
    """How many of ``result.items`` it displayed; those after are its value's rich form."""


async def run_python_parts(code: str, namespace: dict[str, Any], *,
                           limits: RichLimits = DEFAULT_LIMITS) -> CodeRun:
    """Execute ``code`` in ``namespace``: what :func:`run_python_rich` returns, in parts."""
    with capture_figures(limits) as figures, _published_displays(limits) as shown:
        printed, value, has_value, error, error_text = await _execute_parts(code, namespace)
        value_text = _cut(repr(value)) if has_value else None
    result = RichResult(text=_render(printed, value_text, error_text))
    result.add(shown)
    result.add(figures)
    result.dropped += shown.left_out + figures.left_out
    displayed = len(result.items)
    if has_value and not _already_shown(value, result):
        result.add(display_items(value, limits))
    result.bound(limits)
    return CodeRun(result=result, printed=printed, value=value_text, error=error,
                   error_text=error_text, displayed=min(displayed, len(result.items)))


def _already_shown(value: Any, result: RichResult) -> bool:
    """A figure returned as the last value was captured as a new figure already."""
    return _matplotlib_figure(value) is not None and any(
        item.name == "figure" for item in result.items)


@contextlib.contextmanager
def _published_displays(limits: RichLimits) -> Iterator[CapturedItems]:
    """What the code passes to IPython's display machinery (``display(df)``, the inline
    backend's ``plt.show()``, plotly's ``fig.show()``), caught instead of going to the
    output of whichever cell happens to be running."""
    captured = CapturedItems()
    try:
        from IPython import get_ipython
    except ImportError:
        yield captured
        return
    shell = get_ipython()
    publisher = getattr(shell, "display_pub", None)
    if publisher is None:
        yield captured
        return
    original = publisher.publish

    def publish(data: dict[str, Any], metadata: Any = None, *args: Any, **kwargs: Any) -> None:
        if len(captured) >= limits.max_items and any(key in (data or {})
                                                     for key in RICH_TYPES):
            captured.left_out += 1  # counted, not decoded (see CapturedItems)
            return
        items = _items_from_bundle(data or {}, limits)
        if items:
            captured.extend(items)
        else:
            original(data, metadata, *args, **kwargs)  # plain text, widgets: as usual

    publisher.publish = publish
    try:
        yield captured
    finally:
        publisher.publish = original


async def _execute_parts(code: str, namespace: dict[str, Any]
                         ) -> tuple[str, Any, bool, BaseException | None, str | None]:
    """(printed, value, has value, what it raised, its traceback)."""
    value: Any = None
    has_value = False
    error: str | None = None
    raised: BaseException | None = None
    # Registering the source lets tracebacks quote the failing line.
    linecache.cache[_FILENAME] = (len(code), None, code.splitlines(True), _FILENAME)
    try:
        body, last = _compile(code)
    except SyntaxError as exc:
        return "", None, False, exc, _format_error(exc)
    with capture_output(head=MAX_OUTPUT_CHARS * 3 // 5,
                        tail=MAX_OUTPUT_CHARS * 2 // 5) as printed:
        try:
            value = await _run([c for c in (body, last) if c is not None], namespace)
            has_value = last is not None and value is not None
        except KeyboardInterrupt:
            raise  # a kernel interrupt: the tool runner closes the call and stops the turn
        except asyncio.CancelledError as exc:
            if _stopped():
                raise  # Stop must still stop
            raised, error = exc, _format_error(exc)  # it cancelled something of its own
        except BaseException as exc:
            # Whatever else the code raises (SystemExit, GeneratorExit, a BaseException of
            # its own) is a result the model can read and act on, not a tool failure.
            raised, error = exc, _format_error(exc)
    return printed.text(), value, has_value, raised, error


def _stopped() -> bool:
    """The call's task is being cancelled (Stop, the turn's end), as opposed to the code
    raising ``CancelledError`` itself."""
    task = asyncio.current_task()
    return task is None or task.cancelling() > 0


def _compile(code: str) -> tuple[CodeType | None, CodeType | None]:
    flags = ast.PyCF_ALLOW_TOP_LEVEL_AWAIT
    tree = ast.parse(code, filename=_FILENAME, mode="exec")
    last_expression = None
    if tree.body and isinstance(tree.body[-1], ast.Expr):
        last_expression = ast.Expression(body=tree.body.pop().value)  # type: ignore[attr-defined]
    body = compile(tree, _FILENAME, "exec", flags=flags) if tree.body else None
    last = (compile(last_expression, _FILENAME, "eval", flags=flags)
            if last_expression is not None else None)
    return body, last


@contextlib.contextmanager
def _interruptible() -> Iterator[None]:
    """Let a kernel interrupt stop the code while it runs on the main thread.

    An idle ipykernel ignores SIGINT (its handler is ``SIG_IGN`` between requests), and a
    cell awaiting a turn turns SIGINT into a cancellation that code stuck in a loop never
    sees: so the interrupt button could not stop a runaway ``while True``. While the
    code's synchronous part runs, SIGINT raises ``KeyboardInterrupt`` in it; the tool
    runner then closes the call and stops the turn. Never across an ``await``: there a
    KeyboardInterrupt could surface in the event loop itself and end the kernel.
    """
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    previous = signal.signal(signal.SIGINT, signal.default_int_handler)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def _run(parts: list[CodeType], namespace: dict[str, Any]) -> Any:
    """Run the compiled parts in order; the last one's value. Consecutive synchronous
    parts share one interruptible window: a SIGINT arriving between them (the cell's body
    and its last expression) must stop the code too, not fall between two windows."""
    result: Any = None
    window = contextlib.ExitStack()
    inside = False
    try:
        for code in parts:
            if not inside:
                window.enter_context(_interruptible())
                inside = True
            result = eval(code, namespace)
            # With top-level await allowed, code that awaits compiles to a coroutine.
            if code.co_flags & inspect.CO_COROUTINE:
                window.close()  # never across an await
                inside = False
                result = await result
    finally:
        window.close()
    return result


def _format_error(exc: BaseException) -> str:
    """The traceback without this module's frames: only the user's code matters."""
    report = traceback.TracebackException.from_exception(exc)
    report.stack = traceback.StackSummary.from_list(
        [frame for frame in report.stack if frame.filename != __file__])
    return "".join(report.format())


def _cut(text: str) -> str:
    if len(text) <= MAX_OUTPUT_CHARS:
        return text
    return text[:MAX_OUTPUT_CHARS] + f"\n[... {len(text) - MAX_OUTPUT_CHARS:,} more characters cut]"


def _render(printed: str, value: str | None, error: str | None) -> str:
    sections: list[str] = []
    if printed:  # bounded while it was captured (output_capture.BoundedText)
        sections.append("Output:\n" + printed.rstrip("\n"))
    if value is not None:
        sections.append("Result:\n" + value)
    if error:
        sections.append("Error:\n" + _cut(error.rstrip("\n")))
    return "\n\n".join(sections) if sections else "(no output)"
