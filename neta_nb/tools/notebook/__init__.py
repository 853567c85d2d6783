"""The notebook tools (category ``notebook``): the agent reads the notebook its chat is
in, proposes edits the user accepts or rejects, and runs cells with approval.

* ``read_notebook`` — cells, outputs and errors, bounded (the kernel's history where no
  page answers); with ``path``, another notebook open on the page, read-only
* ``list_notebooks`` — the notebooks open on the page (:mod:`.notebooks`)
* ``create_notebook`` — a new notebook file with the cells given (needs approval; never
  overwrites)
* ``edit_cell``, ``insert_cell`` — proposals shown as diff cards; applied only when the
  user accepts, as one undoable edit (several change calls written together in one
  response are reviewed as one set, :mod:`.changes`; ``applied_changes`` reads back what
  a session's accepted changes did)
* ``run_cell`` — runs a cell where the user sees it (needs approval); with
  ``wait=False`` it does not hold the turn (:mod:`.background`)
* ``cell_status`` — a cell's state, execution count and output so far (read-only)
* ``delete_cell``, ``move_cell`` — proposals with a card, as edits are; an accepted one
  is one step of the notebook's undo history (:mod:`.structure`)
* ``clear_outputs`` — one cell's outputs or all (needs approval)
* ``run_all``, ``interrupt_kernel``, ``restart_kernel`` — the kernel, as the user's Run
  All, Interrupt and Restart (need approval; :mod:`.kernel_control`)

All but ``read_notebook`` need a JupyterLab or Notebook 7 page with the chat open on it
(:mod:`.page`); elsewhere the resolver leaves them out with that reason. All are off by
default: switch them on per agent (``AgentToolConfig(enabled=[...])``) or in the tool
panel.
"""

from __future__ import annotations

import dataclasses

from ..base import Tool
from .background import cell_status
from .changes import AppliedChange, applied_changes
from .editing import edit_cell, insert_cell
from .kernel_control import interrupt_kernel, restart_kernel, run_all
from .notebooks import create_notebook, list_notebooks
from .page import PAGE_NEEDED, NotebookAccess, NotebookError, NotebookPage
from .reading_running import read_notebook, run_cell
from .structure import clear_outputs, delete_cell, move_cell

__all__ = ["NOTEBOOK_TOOL_NAMES", "PAGE_NEEDED", "AppliedChange", "NotebookAccess",
           "NotebookError", "NotebookPage", "applied_changes", "notebook_tools"]

NOTEBOOK_TOOL_NAMES = ("read_notebook", "edit_cell", "insert_cell", "run_cell",
                       "delete_cell", "move_cell", "clear_outputs", "run_all",
                       "interrupt_kernel", "restart_kernel", "list_notebooks",
                       "create_notebook", "cell_status")


_NOTEBOOK_TOOLS = (
    dataclasses.replace(read_notebook, sequence="notebook"),
    *(dataclasses.replace(item, needs_notebook_page=True, sequence="notebook")
      for item in (edit_cell, insert_cell, run_cell, delete_cell, move_cell,
                   clear_outputs, run_all, interrupt_kernel, restart_kernel,
                   list_notebooks, create_notebook, cell_status)),
)
"""Made once: a tool is frozen, and making one builds its arguments' model (~1 ms), which
every new session's default catalog would pay again."""


def notebook_tools() -> list[Tool]:
    """The notebook tools, the page-bound ones marked so (``Tool.needs_notebook_page``). Their
    calls of one response run in the order written (``Tool.sequence``): a run written
    after an edit runs the edited cell, a read after them sees both."""
    return list(_NOTEBOOK_TOOLS)
