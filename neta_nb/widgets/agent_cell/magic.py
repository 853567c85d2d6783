"""``%%agent`` and ``%agent`` in IPython: the magics ``%load_ext neta_nb`` registers.

A cell magic is an ordinary function, called while the cell runs — and a turn needs the
kernel's event loop, which is busy running that very cell. So a cell that starts with
``%%agent`` (or is one ``%agent`` line) is rewritten before IPython reads it into an
``await`` of the cell's run: IPython runs a cell holding a top-level ``await`` on the
kernel's loop, which then runs the turn while the cell waits for it (see
:mod:`.cell`). The registered magics stand for ``%agent`` used elsewhere (inside other
code), where no turn can be awaited: they say how to use it instead.
"""

from __future__ import annotations

import re
from typing import Any

from IPython.core.error import UsageError

from .cell import AgentCells
from .options import USAGE

__all__ = ["register_magics", "rewrite_agent_cell"]

_CELL = re.compile(r"%%agent(?:\s|$)")
_LINE = re.compile(r"%agent(?:\s|$)")
_RUNNER = "neta_nb_agent_cells"
"""The attribute of the shell the rewritten cell finds the kernel's :class:`AgentCells`
under (on the shell, not among the notebook's variables: ``%reset`` keeps it, and
``%who`` and the variable tools do not list it)."""


def rewrite_agent_cell(lines: list[str]) -> list[str]:
    """IPython's cleanup transform: an ``%%agent`` cell (or a lone ``%agent`` line) as
    the ``await`` of its run; any other cell as it is."""
    text = "".join(lines)
    stripped = text.lstrip("\n")
    if _CELL.match(stripped):
        first, _, body = stripped.partition("\n")
        line, cell_body = first[len("%%agent"):].strip(), body
    elif _LINE.match(stripped) and not stripped.strip().count("\n"):
        line, cell_body = stripped.strip()[len("%agent"):].strip(), None
    else:
        return lines
    return [f"await get_ipython().{_RUNNER}.run({line!r}, {cell_body!r})\n"]


def _elsewhere(line: str, cell: str | None = None) -> None:
    raise UsageError("%agent runs as a cell of its own: a cell that starts with %%agent "
                     "(the prompt below it) or a cell of one %agent line; inside other "
                     "code use `await session.run(prompt)`.\n" + USAGE)


def register_magics(shell: Any) -> None:
    """What ``%load_ext neta_nb`` does for ``%%agent`` (loading it again changes nothing)."""
    if not isinstance(getattr(shell, _RUNNER, None), AgentCells):
        setattr(shell, _RUNNER, AgentCells(shell))
    transforms = shell.input_transformers_cleanup
    if rewrite_agent_cell not in transforms:
        transforms.append(rewrite_agent_cell)
    shell.register_magic_function(_elsewhere, magic_kind="line_cell", magic_name="agent")
