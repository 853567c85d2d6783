"""``list_variables``: the notebook's variables, so the model can use the user's data by
its real names instead of guessing them.

It lists the user namespace the ``python`` tool runs in (the notebook's ``user_ns``),
leaving out what the user did not make: names starting with ``_`` (IPython's ``_``,
``_i3``, ``__builtins__``…), modules, IPython's own helpers (``In``, ``Out``, ``exit``,
``get_ipython``) and anything IPython hid from ``%who``. For each variable: its type,
shape or length, dtypes of DataFrames and arrays, and a one-line preview — all cut to
bounds, so a namespace with a million-row frame or thousands of names stays readable.
Like ``python`` it is off by default: it reads the notebook's data.
"""

from __future__ import annotations

import reprlib
import types
from typing import Any

from ..base import ToolContext, tool

__all__ = ["MAX_VARIABLES", "describe_variables", "list_variables"]

MAX_VARIABLES = 100
_PREVIEW_CHARS = 120
_MAX_DTYPES = 20
_LINE_CHARS = 600
"""A variable's line at most (a 100-dimensional shape or a long column name is cut)."""
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})

_repr = reprlib.Repr()
_repr.maxstring = _PREVIEW_CHARS
_repr.maxother = _PREVIEW_CHARS
_repr.maxlist = _repr.maxtuple = _repr.maxdict = _repr.maxset = 6


@tool(name="list_variables", category="base", label="Variables")
def list_variables(ctx: ToolContext, pattern: str = "") -> str:
    """List the notebook's variables: name, type, shape or length, column dtypes and a
    short preview.

    Args:
        pattern: Only names containing this text (case-insensitive); empty lists all.
    """
    return describe_variables(ctx.namespace, pattern)


def describe_variables(namespace: dict[str, Any], pattern: str = "") -> str:
    """The text :func:`list_variables` returns for ``namespace``."""
    hidden = _hidden_names(namespace)
    needle = pattern.lower()
    names = sorted(name for name, value in list(namespace.items())
                   if _is_user_variable(name, value, hidden)
                   and (not needle or needle in name.lower()))
    if not names:
        return ("No variables match." if needle else
                "The notebook has no variables yet.")
    lines = [_bounded_line(name, namespace[name]) for name in names[:MAX_VARIABLES]]
    if len(names) > MAX_VARIABLES:
        lines.append(f"... and {len(names) - MAX_VARIABLES} more (ask with a pattern)")
    return "\n".join(lines)


def _hidden_names(namespace: dict[str, Any]) -> set[str]:
    """What IPython keeps out of ``%who``: names it put there itself at start-up."""
    try:
        from IPython import get_ipython
    except ImportError:
        return set()
    shell = get_ipython()
    if shell is None or getattr(shell, "user_ns", None) is not namespace:
        return set()
    return set(getattr(shell, "user_ns_hidden", {}))


def _is_user_variable(name: str, value: Any, hidden: set[str]) -> bool:
    if name.startswith("_") or name in hidden or name in _IPYTHON_NAMES:
        return False
    return not isinstance(value, types.ModuleType)


def _bounded_line(name: str, value: Any) -> str:
    """One variable's line, cut to ``_LINE_CHARS``. Any step may run the object's own
    code (``__len__``, a ``shape`` property, a column name's ``__format__``): one that
    raises costs that variable its facts, not the whole listing."""
    try:
        line = _describe(name, value)
    except Exception as error:
        line = f"{name}: {_type_name(value)} (not described: {type(error).__name__})"
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS - 1] + "…"


def _type_name(value: Any) -> str:
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else (
        f"{kind.__module__.split('.')[0]}.{kind.__name__}")


def _describe(name: str, value: Any) -> str:
    facts = [_type_name(value)]
    shape = _safe(lambda: getattr(value, "shape", None))
    if isinstance(shape, tuple) and not callable(value):
        facts.append("shape " + "×".join(str(n) for n in shape))
    elif isinstance(value, (str, bytes, list, tuple, dict, set, frozenset)):
        facts.append(f"len {len(value)}")
    dtypes = _dtypes(value)
    if dtypes:
        facts.append(dtypes)
    preview = _preview(value)
    return f"{name}: {', '.join(facts)}" + (f" = {preview}" if preview else "")


def _dtypes(value: Any) -> str:
    columns = _safe(lambda: getattr(value, "dtypes", None))
    items = _safe(lambda: list(columns.items())) if columns is not None else None
    if isinstance(items, list):  # a DataFrame: a dtype per column
        shown = ", ".join(f"{column}: {dtype}" for column, dtype in items[:_MAX_DTYPES])
        more = f", … {len(items) - _MAX_DTYPES} more" if len(items) > _MAX_DTYPES else ""
        return f"columns {{{shown}{more}}}"
    dtype = _safe(lambda: getattr(value, "dtype", None))
    return f"dtype {dtype}" if dtype is not None else ""


def _preview(value: Any) -> str:
    if callable(value) or isinstance(value, type):
        return ""
    if _safe(lambda: getattr(value, "columns", None)) is not None:
        return ""  # a DataFrame: its dtypes already name the columns
    text = _safe(lambda: _repr.repr(value)) or ""
    text = " ".join(str(text).split())
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS - 1] + "…"


def _safe(read: Any) -> Any:
    """Reading an attribute of a user object may run any code: a failure hides the fact."""
    try:
        return read()
    except Exception:
        return None
