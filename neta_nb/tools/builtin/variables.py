"""``list_variables``: the notebook's variables, so the model can use the user's data by
its real names instead of guessing them.

It lists the user namespace the ``python`` tool runs in (the notebook's ``user_ns``),
leaving out what the user did not make: names starting with ``_`` (IPython's ``_``,
``_i3``, ``__builtins__``…), modules, IPython's own helpers (``In``, ``Out``, ``exit``,
``get_ipython``) and anything IPython hid from ``%who``. For each variable: its type,
shape or length, dtypes of DataFrames and arrays, and a one-line preview — all cut to
bounds, so a namespace with a million-row frame or thousands of names stays readable.
Like ``python`` it is off by default: it reads the notebook's data.

Describing a variable runs no code the user wrote. Every fact may run the object's own
code (``__repr__``, ``__len__``, a ``shape`` property, ``__getattr__``), and an object made
in the notebook may do anything there: hang (a ``__repr__`` that waits on a server),
raise ``SystemExit``, print megabytes. A deadline would not help: a thread cannot be
stopped, so the hang would go on in the kernel. So an object's own code runs only if its
class, with every base, comes from trusted code: the standard library, an installed
package (``site-packages``) or neta_nb. Of any other object (a class defined in the
notebook or in the user's own files) the line says what needs none of its code: its type,
the length of a builtin container (read with the builtin's own method) and a ``shape``
stored as a plain tuple; no preview. Previews walk lists, tuples, dicts and sets
themselves, so a notebook object inside one is shown as ``<__main__.Thing>``, and
arrays of Python objects (dtype ``object``), whose repr is their elements' reprs, get no
preview. Trusted code that raises anything but ``KeyboardInterrupt`` (``SystemExit``
too) costs only the fact it was computing.

What this does not cover: trusted code that prints the user's objects it holds in other
ways (a ``functools.partial`` of a notebook object, a DataFrame with object cells in
another container) still runs their ``__repr__``.
"""

from __future__ import annotations

import functools
import inspect
import os
import reprlib
import sys
import sysconfig
import types
import weakref
from itertools import islice
from pathlib import Path
from typing import Any

from ...escaping import one_line
from ..base import ToolContext, tool

__all__ = ["MAX_VARIABLES", "brief_description", "describe_variable", "describe_variables",
           "list_variables", "preview_value", "trusted_class", "type_name", "user_variables"]

MAX_VARIABLES = 100
_PREVIEW_CHARS = 120
_MAX_DTYPES = 20
_MAX_DIMENSIONS = 300
"""Of a shape, at most (its line is cut at ``_LINE_CHARS`` anyway)."""
_LINE_CHARS = 600
"""A variable's line at most (a 100-dimensional shape or a long column name is cut)."""
_IPYTHON_NAMES = frozenset({"In", "Out", "exit", "quit", "get_ipython", "open"})
_CONTAINERS = (list, tuple, dict, set, frozenset)
_SIZED = (str, bytes, *_CONTAINERS)
_OWN_PACKAGE = __name__.partition(".")[0]
_STANDARD_LIBRARY = tuple(Path(sysconfig.get_paths()[key]).resolve()
                          for key in ("stdlib", "platstdlib"))


@tool(name="list_variables", category="base", label="Variables")
def list_variables(ctx: ToolContext, pattern: str = "") -> str:
    """List the notebook's variables: name, type, shape or length, column dtypes and a
    short preview (not of objects whose class the notebook defines: their code is not run).

    Args:
        pattern: Only names containing this text (case-insensitive); empty lists all.
    """
    return describe_variables(ctx.namespace, pattern)


def describe_variables(namespace: dict[str, Any], pattern: str = "") -> str:
    """The text :func:`list_variables` returns for ``namespace``."""
    needle = pattern.lower()
    names = [name for name in user_variables(namespace)
             if not needle or needle in name.lower()]
    if not names:
        return ("No variables match." if needle else
                "The notebook has no variables yet.")
    lines = [_bounded_line(name, namespace[name]) for name in names[:MAX_VARIABLES]]
    if len(names) > MAX_VARIABLES:
        lines.append(f"... and {len(names) - MAX_VARIABLES} more (ask with a pattern)")
    return "\n".join(lines)


def user_variables(namespace: dict[str, Any]) -> list[str]:
    """The names :func:`list_variables` lists, sorted: what the user made."""
    hidden = _hidden_names(namespace)
    return sorted(name for name, value in list(namespace.items())
                  if _is_user_variable(name, value, hidden))


def brief_description(value: Any) -> str:
    """A value's type and size, nothing more: ``pandas.DataFrame, shape 1000×3``,
    ``list, len 4``, ``int`` (beside a name to pick from a list)."""
    kind = type(value)
    try:
        if not _trusted_type(kind):
            return ", ".join([_type_name(kind), *_facts_without_its_code(value, kind)])
        if issubclass(kind, type):
            return _type_name(kind)
        shape = _shape(_safe(lambda: getattr(value, "shape", None)))
        size = (shape if shape and not callable(value)
                else f"len {len(value)}" if issubclass(kind, _SIZED) else "")
    except KeyboardInterrupt:
        raise
    except BaseException:
        size = ""
    return f"{_type_name(kind)}, {size}" if size else _type_name(kind)


def trusted_class(kind: type) -> bool:
    """Whether code of ``kind`` may run to describe its objects: the class, every base and
    its metaclass come from the standard library, an installed package or neta_nb."""
    return _trusted_type(kind)


def type_name(kind: type) -> str:
    """``pandas.DataFrame``, ``int``, ``__main__.Thing``: a class named without its code."""
    return _type_name(kind)


def describe_variable(name: str, value: Any) -> str:
    """One variable's line as :func:`list_variables` gives it (at most ``_LINE_CHARS``)."""
    return _bounded_line(name, value)


def preview_value(value: Any, max_chars: int) -> str:
    """A longer look at ``value`` than its line's preview, by the same rules (no code of
    an untrusted class runs): a pandas frame's or series' first rows as a table, a
    string's own text, otherwise a bounded repr; ``""`` when there is nothing safe to
    show. At most ``max_chars`` characters (an ``@`` mention shows this under the line)."""
    kind = type(value)
    if (not _trusted_type(kind) or issubclass(kind, type) or callable(value)
            or _holds_objects(value)):
        return ""
    if issubclass(kind, str):
        text = str.__str__(value[:max_chars + 1])
    elif _is_pandas(kind):
        # Not its repr when the rows cannot be shown: that prints every cell's own.
        text = _first_rows(value) or ""
    else:
        text = _safe(lambda: _DETAIL.repr(value)) or ""
    return text if len(text) <= max_chars else text[:max_chars - 1] + "…"


_ROWS, _COLUMNS = 5, 12


def _is_pandas(kind: type) -> bool:
    return str(_class_attribute(kind, "__module__")).partition(".")[0] == "pandas"


def _first_rows(value: Any) -> str | None:
    """A pandas frame's or series' first rows, as pandas prints them; ``None`` for another
    pandas object, or when a cell or label shown is an object of an untrusted class
    (pandas would print it with its own ``__repr__``)."""
    ndim = _safe(lambda: value.ndim)
    if ndim not in (1, 2):
        return None
    head = _safe(lambda: value.iloc[:_ROWS, :_COLUMNS] if ndim == 2 else value.iloc[:_ROWS])
    shown = _safe(lambda: [*head.to_numpy(dtype=object).ravel().tolist(), *head.index,
                           *(head.columns if ndim == 2 else ())])
    if shown is None or not _all_trusted(shown):
        return None
    table = _safe(lambda: head.to_string(max_colwidth=40) if ndim == 2 else head.to_string())
    if not isinstance(table, str):
        return None
    rows, columns = _safe(lambda: len(value)), _safe(lambda: value.shape[1]) if ndim == 2 else 1
    cut = [f"{_ROWS} of {rows:,} rows" if isinstance(rows, int) and rows > _ROWS else "",
           f"{_COLUMNS} of {columns:,} columns"
           if isinstance(columns, int) and columns > _COLUMNS else ""]
    note = ", ".join(part for part in cut if part)
    return f"{table}\n({note})" if note else table


def _all_trusted(items: list[Any]) -> bool:
    """Every item, and every element of a tuple among them (a MultiIndex label), is of a
    trusted class."""
    return all(_trusted_type(type(item))
               and (type(item) is not tuple or _all_trusted(list(item))) for item in items)


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


def _is_user_variable(name: object, value: Any, hidden: set[str]) -> bool:
    if not isinstance(name, str) or name.startswith("_") or name in hidden \
            or name in _IPYTHON_NAMES:
        return False
    # type(), not isinstance(): that may ask the object for its __class__.
    return not issubclass(type(value), types.ModuleType)


# --- which code may run --------------------------------------------------------------------

@functools.lru_cache(maxsize=2048)
def _trusted_module(name: str) -> bool:
    """Code from the standard library, an installed package or this package."""
    if name in sys.builtin_module_names or name.partition(".")[0] == _OWN_PACKAGE:
        return True
    module = sys.modules.get(name)
    if name == "__main__" or not isinstance(module, types.ModuleType):
        return False
    origin = getattr(module.__spec__, "origin", None) or getattr(module, "__file__", None)
    if origin in ("built-in", "frozen"):
        return True
    if not isinstance(origin, str):
        return False  # made at run time: the notebook's own
    path = Path(os.path.realpath(origin))
    return ("site-packages" in path.parts or "dist-packages" in path.parts
            or any(path.is_relative_to(root) for root in _STANDARD_LIBRARY))


# Builtin types that pass every attribute read (and repr) on to an object they wrap: a
# proxy's class says nothing about whose code runs.
_FORWARDING_TYPES = (weakref.ProxyType, weakref.CallableProxyType)


def _trusted_type(kind: type) -> bool:
    """Whether every class ``kind`` inherits from (and its metaclass) is trusted code."""
    if issubclass(kind, _FORWARDING_TYPES):
        return False
    try:
        classes = (*_class_attribute(kind, "__mro__"), type(kind))
        return all(_trusted_module(_class_attribute(cls, "__module__")) for cls in classes)
    except Exception:
        return False


def _class_attribute(kind: type, name: str) -> Any:
    # As type finds it: a metaclass's own __getattribute__ is code like any other.
    return type.__getattribute__(kind, name)


def _type_name(kind: type) -> str:
    try:
        module, name = _class_attribute(kind, "__module__"), _class_attribute(kind, "__name__")
    except Exception:
        return "object"
    return name if module == "builtins" else f"{str(module).split('.')[0]}.{name}"


def _safe(read: Any) -> Any:
    """Reading a fact of an object may run any code: a failure (even ``SystemExit``)
    hides the fact; only the user's interrupt goes through."""
    try:
        return read()
    except KeyboardInterrupt:
        raise
    except BaseException:
        return None


# --- describing ----------------------------------------------------------------------------

def _bounded_line(name: str, value: Any) -> str:
    """One variable's line, cut to ``_LINE_CHARS``: one that fails costs that variable its
    facts, not the whole listing. One line whatever the name or a column's label holds
    (line breaks written as escapes): none can pass for another variable's line."""
    try:
        line = _describe(name, value)
    except KeyboardInterrupt:
        raise
    except BaseException as error:
        line = f"{name}: {_type_name(type(value))} (not described: {type(error).__name__})"
    line = one_line(line)
    return line if len(line) <= _LINE_CHARS else line[:_LINE_CHARS - 1] + "…"


def _describe(name: str, value: Any) -> str:
    kind = type(value)
    facts = [_type_name(kind)]
    if not _trusted_type(kind):
        facts.extend(_facts_without_its_code(value, kind))
        return f"{name}: {', '.join(facts)}"
    if issubclass(kind, type):
        # A class: reading attributes from it runs its descriptors, and it has no data.
        return f"{name}: {facts[0]}"
    shape = _shape(_safe(lambda: getattr(value, "shape", None)))
    if shape and not callable(value):
        facts.append(shape)
    elif issubclass(kind, _SIZED):
        facts.append(f"len {len(value)}")
    dtypes = _dtypes(value)
    if dtypes:
        facts.append(dtypes)
    preview = _preview(value)
    return f"{name}: {', '.join(facts)}" + (f" = {preview}" if preview else "")


def _facts_without_its_code(value: Any, kind: type) -> list[str]:
    """What is known of an object of an untrusted class without running its code."""
    facts = []
    shape = _shape(_safe(lambda: inspect.getattr_static(value, "shape", None)))
    if shape:
        facts.append(shape)
    sized = next((base for base in _SIZED if issubclass(kind, base)), None)
    if sized is not None:
        facts.append(f"len {sized.__len__(value)}")  # the builtin's, not an override
    return facts


def _shape(shape: Any) -> str:
    """A shape of integers, as ``3×4``."""
    if type(shape) is not tuple:
        return ""
    shown = shape[:_MAX_DIMENSIONS]
    if not all(_trusted_type(type(n)) for n in shown):
        return ""
    return "shape " + "×".join(str(n) for n in shown)


def _dtypes(value: Any) -> str:
    columns = _safe(lambda: getattr(value, "dtypes", None))
    items = _safe(lambda: list(columns.items())) if columns is not None else None
    if isinstance(items, list):  # a DataFrame: a dtype per column
        shown = ", ".join(f"{_label(column)}: {dtype}" for column, dtype in items[:_MAX_DTYPES])
        more = f", … {len(items) - _MAX_DTYPES} more" if len(items) > _MAX_DTYPES else ""
        return f"columns {{{shown}{more}}}"
    dtype = _safe(lambda: getattr(value, "dtype", None))
    return f"dtype {dtype}" if dtype is not None else ""


def _label(column: Any) -> str:
    """A column's name: any object may name one."""
    return str(column) if _trusted_type(type(column)) else f"<{_type_name(type(column))}>"


def _preview(value: Any) -> str:
    if callable(value) or _holds_objects(value):
        return ""
    if _safe(lambda: getattr(value, "columns", None)) is not None:
        return ""  # a DataFrame: its dtypes already name the columns
    text = _safe(lambda: _PREVIEW.repr(value)) or ""
    text = " ".join(str(text).split())
    return text if len(text) <= _PREVIEW_CHARS else text[:_PREVIEW_CHARS - 1] + "…"


def _holds_objects(value: Any) -> bool:
    """An array or series of Python objects (numpy's dtype ``object``): its repr is
    theirs. Not pandas' strings, which say ``O`` as their kind too."""
    dtype = _safe(lambda: getattr(value, "dtype", None))
    return dtype is not None and _safe(lambda: str(dtype)) == "object"


class _Preview(reprlib.Repr):
    """reprlib's bounded repr that runs no untrusted code: it walks the builtin containers
    itself (in their order: sorting would compare the user's objects), shows an object of
    an untrusted class as ``<module.Type>``, and calls ``repr()`` only of the rest."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = _PREVIEW_CHARS
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 6

    def repr1(self, x: Any, level: int) -> str:
        kind = type(x)
        if not _trusted_type(kind) or _holds_objects(x):
            return f"<{_type_name(kind)}>"
        container = next((base for base in _CONTAINERS if issubclass(kind, base)), None)
        if container is None or kind is container:
            return super().repr1(x, level)
        # A subclass (OrderedDict, a named tuple): its own repr would print the elements
        # with theirs.
        inside = getattr(self, f"repr_{container.__name__}")(x, level)
        return f"{kind.__name__}({inside})"

    def repr_dict(self, x: Any, level: int) -> str:
        if not x:
            return "{}"
        if level <= 0:
            return "{" + self.fillvalue + "}"
        pieces = [f"{self.repr1(key, level - 1)}: {self.repr1(item, level - 1)}"
                  for key, item in islice(dict.items(x), self.maxdict)]
        if len(x) > self.maxdict:
            pieces.append(self.fillvalue)
        return "{" + ", ".join(pieces) + "}"

    def repr_set(self, x: Any, level: int) -> str:
        return self._elements(x, level, "{", "}", self.maxset) if x else "set()"

    def repr_frozenset(self, x: Any, level: int) -> str:
        return (self._elements(x, level, "frozenset({", "})", self.maxfrozenset)
                if x else "frozenset()")

    def _elements(self, x: Any, level: int, left: str, right: str, most: int) -> str:
        if level <= 0:
            return left + self.fillvalue + right
        pieces = [self.repr1(item, level - 1) for item in islice(x, most)]
        if len(x) > most:
            pieces.append(self.fillvalue)
        return left + ", ".join(pieces) + right


_PREVIEW = _Preview()


class _DetailPreview(_Preview):
    """The same walk with room for more: what :func:`preview_value` shows."""

    def __init__(self) -> None:
        super().__init__()
        self.maxstring = self.maxother = 2_000
        self.maxlist = self.maxtuple = self.maxdict = self.maxset = self.maxfrozenset = 40
        self.maxlevel = 4


_DETAIL = _DetailPreview()
