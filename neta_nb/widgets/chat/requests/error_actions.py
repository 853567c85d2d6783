"""Fix and Explain on a cell's error (``error_action``): the prompt a chat sends when the
user presses one of the buttons the page shows on an error output.

The page (js/labextension/src/error-actions.ts) offers the buttons on a notebook that shows
a live chat, and hands the press to that chat's view, which asks its kernel-side chat
with ``error_action {action, cell_id, execution_count, source, error}``: the cell's
notebook id, the number it ran as, its text on the page and the error output as the page
shows it (``ename``, ``evalue``, ``traceback``). What the prompt says is decided here:

* the cell by its notebook id (what ``edit_cell`` takes) and, where the kernel's run
  ``[n]`` is that cell's text, as ``@In[n]`` (its source and result as a mention gives
  them);
* the error's one line (its name and message) as a code span, and the error as ``@error``
  where the kernel's last exception is the one that cell raised, otherwise (a later cell
  failed since, the kernel restarted) the error output the page shows, quoted as data,
  with the cell's text (its start, when long). Nothing the page sent is a mention: an
  ``@`` in an error's message (``KeyError: '@timestamp'``) would otherwise read a
  variable or a file, or fail the prompt;
* Fix asks for the corrected cell proposed with ``edit_cell`` — the usual diff card:
  nothing changes without Accept — and Explain for an explanation only, nothing changed.

A chat running a turn refuses (nothing is queued): the page shows why beside the button.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any, Literal, TypedDict

from ....tools.notebook.kernel import raising_cell
from ....tools.notebook.texts import TRACEBACK_CHARS, last_exception, uncoloured
from ...base import RequestError, Requests, handles
from ..wire import CommandReply

if TYPE_CHECKING:
    from ....runtime.session import AgentSession

__all__ = ["ERROR_ACTIONS", "ErrorActionRequest", "ErrorActions", "error_prompt"]

ErrorAction = Literal["fix", "explain"]
ERROR_ACTIONS: tuple[ErrorAction, ...] = ("fix", "explain")

_MAX_SOURCE = 1_000_000
"""The longest cell text a request may carry (a page's cell, not a file)."""
PROMPT_SOURCE_CHARS = 20_000
"""The most of a cell's text the prompt quotes (the rest is cut, with a note: the model
reads the whole cell with ``read_notebook``)."""
_CELL_ID = re.compile(r"[A-Za-z0-9_-]{1,64}")
"""A cell id as nbformat allows one (and an ``@cell:`` mention takes)."""


class ErrorOutput(TypedDict, total=False):
    ename: str
    evalue: str
    traceback: list[str]


class ErrorActionRequest(TypedDict, total=False):
    """``error_action``: view → kernel (the page's Fix or Explain on an error output)."""

    action: ErrorAction
    cell_id: str
    execution_count: int | None
    source: str
    error: ErrorOutput


class ErrorActions(Requests):
    """A chat view's ``error_action`` request, for the session it shows (``session()``:
    raises :class:`RequestError` when it shows none); ``send(session, prompt)`` starts
    the turn as the view's Send does."""

    def __init__(self, session: Callable[[], AgentSession],
                 send: Callable[[AgentSession, str], None]) -> None:
        self._session = session
        self._send = send

    @handles("error_action")
    def answer(self, request: ErrorActionRequest) -> CommandReply:
        """Fix or Explain pressed on an error output of the page: a turn with the prompt
        :func:`error_prompt` makes; refused while a turn runs."""
        session = self._session()
        if session.running:
            raise RequestError("The chat is answering: wait for its turn to end (or stop "
                               "it), then press again.")
        self._send(session, error_prompt(request, session.namespace))
        return {"running": True}


def error_prompt(request: Mapping[str, Any], namespace: Mapping[str, Any]) -> str:
    """The prompt for ``request`` (see the module docstring); :class:`RequestError` names
    what is wrong with a malformed one."""
    action, cell_id = request.get("action"), request.get("cell_id")
    count, source = request.get("execution_count"), request.get("source")
    error = request.get("error")
    if action not in ERROR_ACTIONS:
        raise RequestError(f"error_action needs an 'action' of {', '.join(ERROR_ACTIONS)}, "
                           f"not {action!r}")
    if not isinstance(cell_id, str) or not _CELL_ID.fullmatch(cell_id):
        raise RequestError("error_action needs the failing cell's 'cell_id' (1 to 64 "
                           "letters, digits, '-' or '_', as nbformat writes one)")
    if count is not None and (not isinstance(count, int) or isinstance(count, bool)
                              or count < 1):
        raise RequestError("'execution_count' must be a positive integer or null")
    if not isinstance(source, str) or len(source) > _MAX_SOURCE:
        raise RequestError("error_action needs the cell's 'source' text")
    if not isinstance(error, Mapping) or not isinstance(error.get("ename"), str):
        raise RequestError("error_action needs the 'error' output (its 'ename' at least)")

    ran = count if count is not None and _ran_as(count, source, namespace) else None
    name = f"`{cell_id}`" + (f" (In[{ran}])" if ran is not None else "")
    exception = last_exception()
    raised_here = ran is not None and exception is not None and raising_cell(exception) == ran
    lines = [f"Cell {name} of this notebook failed with "
             f"{_code_span(_one_line(error))}."]
    mentions = [f"@In[{ran}]"] if ran is not None else []
    if raised_here:
        mentions.append("@error")
    if mentions:
        lines.append(" ".join(mentions))
    if not raised_here:
        lines += ["", "The error output as the notebook shows it:", _quoted(_error_text(error))]
    if ran is None:
        lines += ["", "The cell's text now:", _quoted(_bounded_source(source, cell_id))]
    lines.append("")
    if action == "fix":
        lines.append(f"Find the cause and propose the corrected cell with edit_cell on cell "
                     f"id `{cell_id}` (its whole new text). Change no other cell, and run "
                     "nothing.")
    else:
        lines.append("Explain what this error means and what causes it here, briefly. "
                     "Change nothing in the notebook.")
    return "\n".join(lines)


def _ran_as(count: int, source: str, namespace: Mapping[str, Any]) -> bool:
    """Whether the kernel's run ``[count]`` was ``source`` (the cell as it is on the page):
    not after a restart, nor once the cell was edited."""
    sources = namespace.get("_ih", namespace.get("In"))
    if not isinstance(sources, list) or not 0 < count < len(sources):
        return False
    ran = sources[count]
    return isinstance(ran, str) and ran.strip() == source.strip()


def _one_line(error: Mapping[str, Any]) -> str:
    ename, evalue = str(error.get("ename")), str(error.get("evalue") or "")
    text = uncoloured(f"{ename}: {evalue}" if evalue else ename).strip()
    text = " ".join(text.split())
    return text if len(text) <= 300 else text[:299] + "…"


def _error_text(error: Mapping[str, Any]) -> str:
    """The error output's traceback as plain text (its colours taken out), its end kept
    when long; its name and value where it has no traceback."""
    frames = error.get("traceback")
    lines: list[str] = []
    kept = 0
    # From the end, and only as far as the prompt can use: a page may send a traceback of
    # any length, and joining all of it to keep its end would cost its whole size.
    for line in reversed(frames) if isinstance(frames, list) else ():
        lines.append(str(line)[-2 * TRACEBACK_CHARS:])
        kept += len(lines[-1]) + 1
        if kept > 2 * TRACEBACK_CHARS:  # its colour codes come out below: room for them
            break
    dropped = len(frames) - len(lines) if isinstance(frames, list) else 0
    text = uncoloured("\n".join(reversed(lines))).strip() or _one_line(error)
    cut = max(0, len(text) - TRACEBACK_CHARS)
    if cut or dropped:
        what = [f"{cut:,} earlier characters"] if cut else []
        what += [f"{dropped:,} earlier lines"] if dropped else []
        text = f"… (cut: {' and '.join(what)})\n{text[cut:]}"
    return text


def _bounded_source(source: str, cell_id: str) -> str:
    """``source``, its start kept when it is over :data:`PROMPT_SOURCE_CHARS`."""
    if len(source) <= PROMPT_SOURCE_CHARS:
        return source
    return (f"{source[:PROMPT_SOURCE_CHARS]}\n… (cut: {len(source) - PROMPT_SOURCE_CHARS:,} "
            f"more characters; read_notebook(cell_id=\"{cell_id}\") shows the cell whole)")


def _code_span(text: str) -> str:
    """``text`` (one line) as a code span: quoted, so no ``@`` in it is a mention, and
    its backticks cannot pair with the prompt's own (a span between them hides
    mentions)."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{fence}{pad}{text}{pad}{fence}"


def _quoted(text: str) -> str:
    """``text`` in a fenced block longer than any run of backticks in it: data, and no
    ``@`` in it is a mention."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text}\n{fence}"
