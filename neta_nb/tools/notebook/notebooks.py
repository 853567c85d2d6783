"""``list_notebooks`` and ``create_notebook``: the other notebooks of the page the chat is
on (``read_notebook(path=...)`` reads one of them, :mod:`.reading_running`).

The agent works in its chat's own notebook. The others open on the same JupyterLab page it
may list and read, never change: the edit, run and structure tools act on the chat's own
notebook only (a chat opened in another notebook works there).

``create_notebook`` writes a new file through the page, as JupyterLab's New Notebook does
(the server's contents API: the file browser shows it at once), with the user's approval,
which shows the path and every cell's source. It never overwrites: a path that holds a
file is refused. Paths are relative to the server's root, as ``list_notebooks`` shows
them, and stay inside it (no ``..``, no absolute path). The new notebook gets the kernel
of the chat's notebook and is not opened: opening it would start a kernel and take the
focus from the chat in the middle of a turn; the user opens it from the file browser.
"""

from __future__ import annotations

import unicodedata
import uuid
from typing import Any

from ...escaping import one_line
from ...events import ApprovalPreview
from ..base import ToolContext, ToolFailure, tool
from ..rich import RichResult
from .editing import MAX_CELL_CHARS, live_page
from .page import NotebookError
from .reading import json_label

__all__ = ["MAX_NEW_CELLS", "create_notebook", "list_notebooks", "new_notebook",
           "render_notebook_list", "valid_cells", "valid_path"]

MAX_NEW_CELLS = 500
"""The most cells one ``create_notebook`` call writes."""
_MAX_PATH_CHARS = 1_000
_CELL_TYPES = ("code", "markdown", "raw")
_FIELD_CHARS = 80


# --- list_notebooks ------------------------------------------------------------------

def _field(value: Any) -> str:
    """A word the page reports (a kernel's name or status) on one line, bounded."""
    text = one_line("" if value is None else str(value))
    return text if len(text) <= _FIELD_CHARS else text[:_FIELD_CHARS] + "…"


def render_notebook_list(answer: dict[str, Any]) -> str:
    """The text ``list_notebooks`` returns for the page's ``notebooks`` answer. Paths are
    the user's file names: each is a JSON string, so none reads as more than a path."""
    listed = answer.get("notebooks")
    entries = [item for item in listed if isinstance(item, dict)] if isinstance(listed,
                                                                                list) else []
    count = len(entries)
    lines = [f"{count} notebook{'s are' if count != 1 else ' is'} open on this page "
             "(paths from the server's root):"]
    for item in entries:
        facts = []
        if item.get("own") is True:
            facts.append("this chat's notebook")
        kernel = item.get("kernel")
        if isinstance(kernel, dict) and kernel.get("status") != "dead":
            facts.append(f"kernel {_field(kernel.get('name'))} running "
                         f"({_field(kernel.get('status'))})")
        else:
            facts.append("no kernel running")
        facts.append("has a chat" if item.get("chat") is True else "no chat")
        if item.get("dirty") is True:
            facts.append("unsaved changes")
        lines.append(f"- {json_label(item.get('path'))}: {' · '.join(facts)}")
    lines.append("read_notebook(path=...) reads one of them (read-only: the edit and run "
                 "tools act on this chat's notebook only).")
    return "\n".join(lines)


@tool(category="notebook", label="List notebooks")
async def list_notebooks(ctx: ToolContext) -> RichResult:
    """List the notebooks open in this JupyterLab page: each one's path, whether its
    kernel is running, whether it is this chat's own notebook and whether it has a chat.
    read_notebook(path=...) reads one of them; the other tools act on this chat's own
    notebook only.
    """
    access = live_page(ctx)
    assert access.page is not None
    try:
        answer = await access.page.request("notebooks", {})
    except NotebookError as error:
        raise ToolFailure(f"The open notebooks could not be listed: {error}") from error
    return RichResult(text=render_notebook_list(answer))


# --- create_notebook -----------------------------------------------------------------

def valid_path(path: str) -> str:
    """``path`` when it names a new notebook inside the server's root: relative, with
    ``/`` between folders, no ``..``, no control or invisible formatting character,
    ending in ``.ipynb``; a :class:`ToolFailure` saying
    what is wrong otherwise."""
    shown = json_label(path)
    if not path.strip():
        raise ToolFailure("The path is empty: give the new notebook's path from the "
                          "server's root, e.g. \"reports/summary.ipynb\".")
    if len(path) > _MAX_PATH_CHARS:
        raise ToolFailure(f"The path is {len(path):,} characters; at most "
                          f"{_MAX_PATH_CHARS:,}.")
    if any(ord(char) < 32 or ord(char) == 127 for char in path):
        raise ToolFailure(f"The path {shown} holds a control character (a newline, a tab).")
    hidden = next((char for char in path if unicodedata.category(char) == "Cf"), None)
    if hidden is not None:
        raise ToolFailure(f"The path {shown} holds an invisible formatting character "
                          f"(U+{ord(hidden):04X}: a direction mark or a zero-width one), which "
                          "would make the name read otherwise than it is.")
    if "\\" in path:
        raise ToolFailure(f"The path {shown} holds a backslash: separate folders with \"/\".")
    if path.startswith(("/", "~")) or (len(path) > 1 and path[1] == ":"):
        raise ToolFailure(f"The path {shown} is absolute: give it relative to the server's "
                          "root (as list_notebooks shows paths), e.g. \"reports/summary.ipynb\".")
    parts = path.split("/")
    if ".." in parts:
        raise ToolFailure(f"The path {shown} goes up a folder (\"..\"): the notebook must "
                          "stay inside the server's root.")
    if any(part in ("", ".") for part in parts):
        raise ToolFailure(f"The path {shown} has an empty or \".\" part: write it as "
                          "\"folder/name.ipynb\".")
    if not path.endswith(".ipynb") or parts[-1] == ".ipynb":
        raise ToolFailure(f"The path {shown} does not name a notebook: it must end in "
                          "\".ipynb\" after a name.")
    return path


def valid_cells(cells: list[Any]) -> list[dict[str, str]]:
    """``cells`` as ``{"cell_type", "source"}`` each (the type ``code`` when not given);
    a :class:`ToolFailure` naming the first cell that is not one."""
    if len(cells) > MAX_NEW_CELLS:
        raise ToolFailure(f"{len(cells):,} cells; create_notebook writes at most "
                          f"{MAX_NEW_CELLS:,}.")
    checked: list[dict[str, str]] = []
    for number, cell in enumerate(cells, 1):
        if not isinstance(cell, dict):
            raise ToolFailure(f"Cell {number} is a {type(cell).__name__}: each cell is an "
                              "object {\"cell_type\": \"code\", \"source\": \"...\"}.")
        unknown = sorted(str(key) for key in cell if key not in ("cell_type", "source"))
        if unknown:
            raise ToolFailure(f"Cell {number} has {', '.join(map(repr, unknown))}: a cell "
                              "takes only \"cell_type\" and \"source\".")
        source = cell.get("source")
        if not isinstance(source, str):
            raise ToolFailure(f"Cell {number}'s \"source\" must be a string (its text), "
                              f"not {type(source).__name__}.")
        if len(source) > MAX_CELL_CHARS:
            raise ToolFailure(f"Cell {number} is {len(source):,} characters; a cell holds "
                              f"at most {MAX_CELL_CHARS:,}.")
        kind = cell.get("cell_type", "code")
        if kind not in _CELL_TYPES:
            raise ToolFailure(f"Cell {number}'s \"cell_type\" is {kind!r}; it must be one "
                              f"of {', '.join(_CELL_TYPES)}.")
        checked.append({"cell_type": kind, "source": source})
    return checked


def new_notebook(cells: list[dict[str, str]]) -> dict[str, Any]:
    """The nbformat 4.5 notebook of ``cells`` (each with a new id); its kernel is left to
    the page (the chat's notebook's)."""
    made = []
    for cell in cells:
        item: dict[str, Any] = {"id": uuid.uuid4().hex[:8], "cell_type": cell["cell_type"],
                                "metadata": {}, "source": cell["source"]}
        if cell["cell_type"] == "code":
            item.update(execution_count=None, outputs=[])
        made.append(item)
    return {"cells": made, "metadata": {}, "nbformat": 4, "nbformat_minor": 5}


def _sources(cells: list[dict[str, str]]) -> str:
    """The cells as one text for the approval: each after a ``# %%`` line (``# %%
    [markdown]`` for a markdown cell), the percent format editors read."""
    parts = []
    for cell in cells:
        marker = "# %%" if cell["cell_type"] == "code" else f"# %% [{cell['cell_type']}]"
        parts.append(f"{marker}\n{cell['source']}")
    return "\n\n".join(parts)


async def _create_preview(ctx: ToolContext, args: dict[str, Any]) -> ApprovalPreview:
    path, cells = args.get("path"), args.get("cells")
    try:
        if not isinstance(path, str) or not isinstance(cells, list):
            raise ToolFailure("it needs a path (a string) and cells (a list).")
        valid_path(path)
        checked = valid_cells(cells)
    except ToolFailure as error:
        return ApprovalPreview(summary=f"This call will be refused, and nothing created: "
                                       f"{error}")
    count = f"{len(checked)} cell{'s' if len(checked) != 1 else ''}"
    summary = (f"It creates the notebook {json_label(path)} (from the server's root) with "
               f"{count}, shown below; the file is not opened. If a file is at that path "
               "already, nothing is written.")
    return ApprovalPreview(summary=summary, code=_sources(checked))


@tool(category="notebook", label="Create notebook", requires_approval=True,
      approval_preview=_create_preview)
async def create_notebook(ctx: ToolContext, path: str,
                          cells: list[dict[str, Any]]) -> RichResult:
    """Create a new notebook file with these cells, as JupyterLab's New Notebook does
    (the file browser shows it; it is not opened). Needs the user's approval, which shows
    the path and every cell. Never overwrites a file.

    Args:
        path: The new notebook's path from the server's root, as list_notebooks shows
            paths, ending in .ipynb (e.g. "reports/summary.ipynb"); its folder must exist.
        cells: The cells in order, each {"cell_type": "code" | "markdown" | "raw"
            (code if left out), "source": "the cell's text"}.
    """
    valid_path(path)
    checked = valid_cells(cells)
    access = live_page(ctx)
    assert access.page is not None
    try:
        answer = await access.page.request("create", {"path": path,
                                                      "notebook": new_notebook(checked)})
    except NotebookError as error:
        if error.code == "exists":
            raise ToolFailure(f"Nothing was created: {error}. create_notebook never "
                              "overwrites a file; choose another path.") from error
        raise ToolFailure(f"The notebook {json_label(path)} could not be created: "
                          f"{error}") from error
    made = answer.get("path")
    where = json_label(made if isinstance(made, str) else path)
    count = f"{len(checked)} cell{'s' if len(checked) != 1 else ''}"
    return RichResult(text=f"Created the notebook {where} with {count}. It is not open: the "
                           "user opens it from the file browser; once it is, "
                           "read_notebook(path=...) reads it.")
