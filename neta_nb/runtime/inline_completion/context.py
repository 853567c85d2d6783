"""What an inline completion request tells the model: the code around the cursor, the
notebook's previous cells, the kernel's variables and the cell's last error — each cut to
a bound, so that a request stays a few KB whatever the notebook holds.

The variables are described by :func:`~neta_nb.tools.builtin.variables.describe_variable`,
the rules of ``list_variables``: no code of a class the notebook defines runs, a
DataFrame's line names its columns and dtypes (never its rows), and a line is at most
600 characters, so a 1 GB frame costs its line and no more. Names the cell mentions come
first; the whole block stops at :data:`VARIABLES_BYTES`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ...tools.builtin.variables import MAX_VARIABLES, describe_variable, user_variables

__all__ = ["CELLS_CHARS", "CHAT_SYSTEM_PROMPT", "ERROR_CHARS", "PREFIX_CHARS", "SUFFIX_CHARS",
           "VARIABLES_BYTES", "CompletionContext", "CompletionRequest", "variable_context"]

VARIABLES_BYTES = 2048
"""The variables' block at most (UTF-8 bytes)."""
CELLS_CHARS = 3000
"""The previous cells at most, the nearest kept."""
ERROR_CHARS = 800
"""The cell's last error at most."""
PREFIX_CHARS = 4000
"""The code before the cursor at most (its end kept)."""
SUFFIX_CHARS = 1500
"""The code after the cursor at most (its start kept)."""
MAX_CELLS = 20
"""Previous cells a request may carry."""

_MISSES = 8
"""Lines that did not fit, after which the variables' block is taken as full."""
_SHORTEST_LINE = 24
"""Room below which no further line is tried."""
_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_]*")


@dataclass(frozen=True)
class CompletionRequest:
    """One request from the page: the cell's text around the cursor, the code cells above
    it (nearest last) and the error its last run ended in (``""``: none)."""

    prefix: str
    suffix: str = ""
    cells: tuple[str, ...] = ()
    error: str = ""
    language: str = "python"

    @classmethod
    def from_message(cls, content: Mapping[str, Any]) -> CompletionRequest:
        """The request a comm message carries; a :class:`ValueError` names a field that
        is not what it should be."""
        def text(name: str, default: str | None = None) -> str:
            value = content.get(name, default)
            if not isinstance(value, str):
                raise ValueError(f"inline completion request: {name!r} must be text, "
                                 f"not {type(value).__name__}")
            return value

        cells = content.get("cells", [])
        if not isinstance(cells, list) or not all(isinstance(cell, str) for cell in cells):
            raise ValueError("inline completion request: 'cells' must be a list of texts")
        return cls(prefix=text("prefix"), suffix=text("suffix", ""),
                   cells=tuple(cells[-MAX_CELLS:]), error=text("error", ""),
                   language=text("language", "python") or "python")


@dataclass(frozen=True)
class CompletionContext:
    """A request made ready for the model: every part within its bound."""

    prefix: str
    suffix: str
    cells: tuple[str, ...]
    variables: str
    error: str
    language: str = "python"

    @classmethod
    def build(cls, request: CompletionRequest,
              namespace: Mapping[str, Any] | None) -> CompletionContext:
        """The context of ``request`` in a kernel whose user namespace is ``namespace``
        (``None``: no variables)."""
        return cls(prefix=request.prefix[-PREFIX_CHARS:], suffix=request.suffix[:SUFFIX_CHARS],
                   cells=_nearest_cells(request.cells),
                   variables=(variable_context(namespace, request.prefix + request.suffix)
                              if namespace is not None else ""),
                   error=_cut(request.error, ERROR_CHARS), language=request.language)

    def header(self) -> str:
        """The kernel's facts as comments of the cell's language, ahead of the code."""
        mark = "#" if self.language in ("python", "r", "julia", "") else "//"
        lines: list[str] = []
        if self.variables:
            lines.append(f"{mark} Variables in the running kernel (name: type, shape, columns):")
            lines.extend(f"{mark} {line}" for line in self.variables.splitlines())
        if self.error:
            lines.append(f"{mark} The last run of this cell failed with:")
            lines.extend(f"{mark} {line}" for line in self.error.splitlines())
        return "\n".join(lines) + "\n" if lines else ""

    def fim_prompt(self) -> str:
        """The text before the cursor of a fill-in-the-middle request: the kernel's facts
        and the previous cells (:meth:`fim_extra`), then the cell's code up to the cursor."""
        return self.fim_extra() + self.prefix

    def fim_extra(self) -> str:
        """What comes ahead of the cell's code: the kernel's facts, the previous cells."""
        return self.header() + "".join(f"{cell.rstrip()}\n\n" for cell in self.cells)

    def chat_prompt(self) -> str:
        """The user message of a chat-model request: the same facts and the cell with the
        cursor marked."""
        cells = "\n\n".join(cell.rstrip() for cell in self.cells)
        parts = [self.header().rstrip()] if self.header() else []
        if cells:
            parts.append(f"Previous cells:\n```{self.language}\n{cells}\n```")
        parts.append(f"The cell, <CURSOR> marks the cursor:\n```{self.language}\n"
                     f"{self.prefix}<CURSOR>{self.suffix}\n```")
        return "\n\n".join(parts)

    def size(self) -> int:
        """The request's text in UTF-8 bytes (what a FIM request sends, prompt and suffix)."""
        return len(self.fim_prompt().encode()) + len(self.suffix.encode())


CHAT_SYSTEM_PROMPT = (
    "You complete code in a Jupyter notebook cell. Answer with exactly the text to insert "
    "at <CURSOR> and nothing else: no explanation, no code fences, no repetition of the "
    "code around it. Use the kernel's variables by their real names and columns. An empty "
    "answer is fine when nothing fits.")


def variable_context(namespace: Mapping[str, Any], text: str = "",
                     limit: int = VARIABLES_BYTES) -> str:
    """The kernel's variables, a line each as ``list_variables`` gives it, those that
    ``text`` names first, at most ``limit`` UTF-8 bytes (a line that would pass it is left
    out, the next ones still tried until a few did not fit)."""
    user_ns = dict(namespace)
    names = user_variables(user_ns)
    named = set(_NAME.findall(text))
    ordered = [name for name in names if name in named] + [
        name for name in names if name not in named]
    lines: list[str] = []
    used = missed = 0
    for name in ordered[:MAX_VARIABLES]:
        line = describe_variable(name, user_ns[name])
        size = len(line.encode()) + 1
        if used + size > limit:
            missed += 1
            if missed >= _MISSES or limit - used < _SHORTEST_LINE:
                break  # full: describing more would cost the kernel time for nothing
            continue
        lines.append(line)
        used += size
    return "\n".join(lines)


def _nearest_cells(cells: tuple[str, ...]) -> tuple[str, ...]:
    """The previous cells, nearest kept, within :data:`CELLS_CHARS` (a long cell keeps its
    end, the part next to the cursor)."""
    kept: list[str] = []
    room = CELLS_CHARS
    for cell in reversed(cells):
        if room <= 0:
            break
        if not cell.strip():
            continue
        piece = cell[-room:]
        kept.append(piece)
        room -= len(piece) + 2
    return tuple(reversed(kept))


def _cut(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit - 1] + "…"
