"""The notebook's things as text: a variable, a cell, the last exception — plain text,
bounded, made without running code of a class the notebook defined (the rules of
``list_variables``, whose describer this reuses). An ``@`` mention
(:mod:`neta_nb.runtime.mentions.mentions`) and ``read_notebook``'s kernel history (:mod:`.kernel`)
are made of them, so both read the notebook alike.

``mentions`` cuts each whole block to its byte limit; the bounds here keep each piece in
proportion first (a cell's long source does not crowd out its result, a long traceback
keeps its end, where the exception is).
"""

from __future__ import annotations

import re
import sys
import traceback
from collections.abc import Mapping
from typing import Any

from ...escaping import quoted_lines
from ..builtin.variables import describe_variable, preview_value, trusted_class, type_name

__all__ = ["cell_text", "error_text", "last_exception", "uncoloured", "variable_text"]

VALUE_CHARS = 6_000
"""A variable's longer preview at most (its line comes first)."""
SOURCE_CHARS = 3_000
"""A cell's source at most; the rest of the block is its result."""
RESULT_CHARS = 3_500
TRACEBACK_CHARS = 7_000
_ANSI = re.compile(r"\x1b\[[0-9;?]*[ -/]*[@-~]")
"""A terminal's colour and cursor codes (IPython colours its tracebacks with them)."""
_CHAIN_DEPTH = 3
"""Causes and contexts shown before the last exception, at most."""


def variable_text(name: str, value: Any) -> str:
    """``name``'s line as ``list_variables`` gives it, and under it a longer preview (a
    frame's first rows, a string's text, more elements) unless the line shows it all."""
    line = describe_variable(name, value)
    detail = preview_value(value, VALUE_CHARS)
    if not detail or line.endswith((f" = {detail}", f" = {detail!r}")):
        return line
    return f"{line}\n{detail}"


def cell_text(number: int, namespace: Mapping[str, Any]) -> str | None:
    """The cell executed as ``[number]``: its source (as IPython ran it) and its result
    (``Out[number]``, described as a variable is); ``None`` when no cell ran as that.

    The source's lines and those of the value's longer preview are quoted (``│ ``,
    :func:`~neta_nb.escaping.quoted_lines`, as ``read_notebook`` shows a cell): the lines
    that are not (``In [n]:``, the value's own line, a note of a cut) are these, so a
    source or a value printing ``Out[n]: …`` cannot pass for the cell's result."""
    sources = namespace.get("_ih", namespace.get("In"))
    if not isinstance(sources, list) or not 0 < number < len(sources):
        return None
    source = sources[number]
    if not isinstance(source, str):
        return None
    source = source.rstrip("\n")
    lines = quoted_lines(source[:SOURCE_CHARS])
    if len(source) > SOURCE_CHARS:
        lines.append(f"… (cut: {len(source) - SOURCE_CHARS:,} more characters)")
    results = namespace.get("_oh", namespace.get("Out"))
    if isinstance(results, dict) and number in results:
        result = variable_text(f"Out[{number}]", results[number])
        if len(result) > RESULT_CHARS:
            result = result[:RESULT_CHARS - 1] + "…"
        line, _, detail = result.partition("\n")  # the value's line is one line
        result = "\n".join([line, *quoted_lines(detail)])
    else:
        result = (f"Out[{number}]: no value (what the cell printed or displayed is not kept "
                  "by the kernel)")
    return "\n".join([f"In [{number}]:", *lines, "", result])


def last_exception() -> BaseException | None:
    """The last exception that reached the notebook (or the interpreter) uncaught:
    ``sys.last_exc`` (Python 3.12 and later, IPython 8.15 and later), else
    ``sys.last_value`` (which older versions set alone)."""
    value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    return value if isinstance(value, BaseException) else None


def error_text(exception: BaseException) -> str:
    """``exception``'s traceback as Python prints it, with up to :data:`_CHAIN_DEPTH`
    causes before it; the frames IPython adds to run a cell left out. A long one keeps
    its end."""
    chain: list[tuple[BaseException, str]] = []
    current: BaseException | None = exception
    link = ""
    while current is not None and len(chain) <= _CHAIN_DEPTH:
        chain.append((current, link))
        cause = _slot(current, "__cause__")
        context = _slot(current, "__context__")
        if isinstance(cause, BaseException):
            current, link = cause, ("The above exception was the direct cause of the "
                                    "following exception:")
        elif isinstance(context, BaseException) and not _slot(current, "__suppress_context__"):
            current, link = context, ("During handling of the above exception, another "
                                      "exception occurred:")
        else:
            current = None
    blocks = []
    for item, linked in reversed(chain):  # the first cause first, as Python prints them
        blocks.append(_one_exception(item))
        if linked:
            blocks.append(linked)
    text = "\n\n".join(blocks)
    if len(text) > TRACEBACK_CHARS:
        cut = len(text) - TRACEBACK_CHARS
        text = f"… (cut: {cut:,} earlier characters)\n{text[cut:]}"
    return text


def _one_exception(exception: BaseException) -> str:
    frames = [frame for frame in traceback.extract_tb(_slot(exception, "__traceback__"))
              if not _ipython_internal(frame.filename)]
    lines = ["Traceback (most recent call last):", *(
        line.rstrip("\n") for line in traceback.StackSummary.from_list(frames).format())]
    if not frames:
        lines = []
    lines.append(_exception_line(exception))
    return "\n".join(lines)


def _exception_line(exception: BaseException) -> str:
    """``ZeroDivisionError: division by zero``. An exception of a class the notebook
    defined is not asked for its message (its ``__str__`` is its code): its arguments are
    shown as a variable's would be."""
    kind = type(exception)
    name = type_name(kind)
    if trusted_class(kind):
        try:
            message = str(exception)
        except KeyboardInterrupt:
            raise
        except BaseException:
            message = "<the message could not be read>"
    else:
        arguments = _slot(exception, "args")
        message = preview_value(arguments, 500) if isinstance(arguments, tuple) else ""
    return f"{name}: {message}" if message else name


def _slot(exception: BaseException, name: str) -> Any:
    """An attribute as ``BaseException`` stores it (a subclass may override the name with
    a property: its code)."""
    try:
        return getattr(BaseException, name).__get__(exception)
    except (AttributeError, TypeError):
        return None


def _ipython_internal(filename: str) -> bool:
    """IPython's own frames above a cell's code (``run_code``'s ``exec``)."""
    parts = filename.replace("\\", "/").split("/")
    return "IPython" in parts and "core" in parts


def uncoloured(text: str) -> str:
    """``text`` without a terminal's colour and cursor codes."""
    return _ANSI.sub("", text)
