"""``%%agent`` cells: a prompt in a notebook cell, the turn drawn as the cell's output
(:mod:`.options` reads the cell's first line, :mod:`.cell` runs it, :mod:`.form` draws
its static form, :mod:`.magic` registers it with IPython)."""

from .cell import AgentCellError, AgentCells
from .magic import register_magics
from .options import AgentCellUsageError

__all__ = ["AgentCellError", "AgentCellUsageError", "AgentCells", "register_magics"]
