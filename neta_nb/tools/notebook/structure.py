"""``delete_cell``, ``move_cell`` and ``clear_outputs``: the notebook's structure.

A delete and a move are proposals, as an edit is (:mod:`.editing`): the card shows the
cell (a delete its whole text, removed; a move the cell and from where to where), the
user accepts or rejects it, and an accepted one reaches the page as one step of the
notebook's undo history — the notebook's Undo Cell Operation (Z in command mode;
Ctrl+Z there undoes the active cell's text) puts the cell back. The page makes it
only if the cell is still as the proposal showed it (its text; for a move its place), so
a user's change made while they decided is never overwritten.

``clear_outputs`` asks for approval (outputs are not in the notebook's undo history: a
cleared output comes back only by running the cell again); its approval names the cells
whose outputs go.
"""

from __future__ import annotations

from typing import Any

from ...events import ApprovalPreview, PreviewCell
from ..base import ToolContext, ToolFailure, tool
from ..rich import RichResult
from .changes import grouped_outcome
from .changes.proposals import move_in_place
from .editing import (
    cell_source,
    decided,
    live_page,
    preview_page,
    proposal,
    proposal_result,
    rejected_result,
    who_decided,
)
from .page import NotebookAccess, NotebookError
from .reading import cell_label, notebook_cells, shown_name

__all__ = ["clear_outputs", "code_cells", "delete_cell", "first_line", "move_cell", "preview_cells"]

_DECISION_WAIT = 24 * 3600.0
"""A proposal waits for the user like an approval does; the tool's timeout is no limit."""


async def _notebook(access: NotebookAccess) -> dict[str, Any]:
    assert access.page is not None
    try:
        return await access.page.request("read", {})
    except NotebookError as error:
        raise ToolFailure(f"The notebook could not be read: {error}") from error


async def _cells(access: NotebookAccess) -> list[dict[str, Any]]:
    return notebook_cells(await _notebook(access))


def _position(cells: list[dict[str, Any]], cell_id: str) -> int:
    """The cell's index (0 the first); a clear refusal naming the ids there are."""
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return index
    ids = ", ".join(cell_label(cell.get("id")) for cell in cells[:40])
    raise ToolFailure(f"No cell has the id {cell_id!r}. The notebook's cell ids: {ids}")


def first_line(cell: dict[str, Any]) -> str:
    """A cell's first line that is not blank (what a list of cells shows of it)."""
    for line in cell_source(cell).splitlines():
        if line.strip():
            return line.strip()
    return ""


def preview_cells(cells: list[tuple[int, dict[str, Any]]]) -> list[PreviewCell]:
    """Cells (with their positions, 1 the first) as an approval names them."""
    return [PreviewCell(cell_id=str(cell.get("id", "")),
                        cell_label=shown_name(cell, position),
                        first_line=first_line(cell)) for position, cell in cells]


@tool(category="notebook", label="Delete cell", timeout=_DECISION_WAIT)
async def delete_cell(ctx: ToolContext, cell_id: str) -> RichResult:
    """Propose deleting a notebook cell. The user sees the cell's text and accepts or
    rejects the deletion; the result says which. An accepted deletion is one step of the
    notebook's undo history (the notebook's Undo Cell Operation, Z in command mode,
    restores the cell).

    Args:
        cell_id: The cell's id, as read_notebook shows it.
    """
    access = live_page(ctx)
    grouped = await grouped_outcome(ctx, access)
    if grouped is not None:
        return grouped
    cells = await _cells(access)
    index = _position(cells, cell_id)
    cell = cells[index]
    source = cell_source(cell)
    cell_type = str(cell.get("cell_type") or "code")
    proposed = proposal("delete", cell_id, source, "", cell_type=cell_type,
                        position=index + 1, cell_label=shown_name(cell, index + 1))
    decision, _ = await decided(ctx, access, "delete_cell", {"cell_id": cell_id}, proposed)
    if not decision.accepted:
        return rejected_result(proposed, decision, f"the deletion of cell {cell_id}",
                               f"Cell {cell_id} was not deleted")
    assert access.page is not None
    try:
        await access.page.request("delete", {"cell_id": cell_id, "expected": source})
    except NotebookError as error:
        raise ToolFailure(_not_applied("deletion", cell_id, error)) from error
    text = (f"The user accepted the deletion; cell {cell_id} ({cell_type}, position "
            f"{index + 1}) was deleted." if decision.by == "user"
            else f"{who_decided(decision)}; cell {cell_id} was deleted.")
    return proposal_result(proposed, "accepted",
                           f"{text} The notebook's Undo Cell Operation (Z in command "
                           "mode) restores it.")


@tool(category="notebook", label="Move cell", timeout=_DECISION_WAIT)
async def move_cell(ctx: ToolContext, cell_id: str, to_index: int) -> RichResult:
    """Propose moving a notebook cell to another position. The user sees the cell and
    where it goes and accepts or rejects the move; the result says which. Positions are
    those read_notebook shows: 1 is the first cell.

    Args:
        cell_id: The cell's id, as read_notebook shows it.
        to_index: The position the cell takes (1 the first, the number of cells the last);
            the cells from there on move down one (or up, when it moves down).
    """
    access = live_page(ctx)
    grouped = await grouped_outcome(ctx, access)
    if grouped is not None:
        return grouped
    cells = await _cells(access)
    index = _position(cells, cell_id)
    in_place = move_in_place(cell_id, index, to_index, len(cells))
    if in_place is not None:
        return in_place
    cell = cells[index]
    source = cell_source(cell)
    proposed = proposal("move", cell_id, source, source,
                        cell_type=str(cell.get("cell_type") or "code"),
                        from_index=index + 1, to_index=to_index,
                        cell_label=shown_name(cell, index + 1))
    decision, _ = await decided(ctx, access, "move_cell",
                                {"cell_id": cell_id, "to_index": to_index}, proposed)
    where = f"from position {index + 1} to position {to_index}"
    if not decision.accepted:
        return rejected_result(proposed, decision, f"moving cell {cell_id} {where}",
                               f"Cell {cell_id} was not moved")
    assert access.page is not None
    try:
        await access.page.request("move", {"cell_id": cell_id, "expected": source,
                                           "from_index": index, "to_index": to_index - 1})
    except NotebookError as error:
        raise ToolFailure(_not_applied("move", cell_id, error)) from error
    text = (f"The user accepted the move; cell {cell_id} moved {where}."
            if decision.by == "user"
            else f"{who_decided(decision)}; cell {cell_id} moved {where}.")
    return proposal_result(proposed, "accepted",
                           f"{text} The notebook's Undo Cell Operation (Z in command "
                           "mode) moves it back.")


def _not_applied(what: str, cell_id: str, error: NotebookError) -> str:
    if error.code == "changed":
        return (f"The user accepted the {what}, but cell {cell_id} changed (or moved) while "
                f"they were deciding, so it was not made. Read the notebook again before "
                "proposing.")
    return f"The user accepted the {what} of cell {cell_id}, but it could not be made: {error}"


def _with_outputs(notebook: dict[str, Any], cell_id: str | None
                  ) -> list[tuple[int, dict[str, Any]]]:
    """The code cells ``clear_outputs`` clears (with their positions): the one named,
    or every one with outputs or an execution count but the one whose output is this
    chat (the page names it, ``chat_cell_id``)."""
    if cell_id is not None:
        cells = notebook_cells(notebook)
        index = _position(cells, cell_id)
        return [(index + 1, cells[index])]
    return [(position, cell) for position, cell in code_cells(notebook)
            if cell.get("outputs") or cell.get("execution_count") is not None]


def code_cells(notebook: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The notebook's code cells with their positions (1 the first), but the one that shows
    the chat asking (the page names it, ``chat_cell_id``): its output is the chat, and
    running it would make a new chat in the middle of this turn."""
    chat = notebook.get("chat_cell_id")
    return [(position, cell) for position, cell in enumerate(notebook_cells(notebook), 1)
            if cell.get("cell_type", "code") == "code" and (chat is None
                                                           or cell.get("id") != chat)]


async def _clear_preview(ctx: ToolContext, args: dict[str, Any]) -> ApprovalPreview | None:
    page = preview_page(ctx)
    cell_id = args.get("cell_id")
    if page is None or not (cell_id is None or isinstance(cell_id, str)):
        return None
    try:
        chosen = _with_outputs(await page.request("read", {}), cell_id)
    except ToolFailure:
        return None  # no such cell: the call says so once allowed
    summary = (f"It clears the outputs and execution count of {len(chosen)} "
               f"cell{'s' if len(chosen) != 1 else ''}. The notebook's undo does not bring "
               "outputs back: only running the cells again does.")
    return ApprovalPreview(summary=summary, cells=preview_cells(chosen))


@tool(category="notebook", label="Clear outputs", requires_approval=True,
      approval_preview=_clear_preview)
async def clear_outputs(ctx: ToolContext, cell_id: str | None = None) -> RichResult:
    """Clear the outputs and execution counts of one code cell, or of all of them. Needs
    the user's approval: cleared outputs come back only by running the cells again.

    Args:
        cell_id: The cell's id, as read_notebook shows it; none: every code cell.
    """
    access = live_page(ctx)
    notebook = await _notebook(access)
    cells = notebook_cells(notebook)
    if cell_id is not None:
        index = _position(cells, cell_id)
        if cells[index].get("cell_type", "code") != "code":
            raise ToolFailure(f"Cell {cell_id} is a {cells[index].get('cell_type')} cell; "
                              "only code cells have outputs.")
        if cell_id == notebook.get("chat_cell_id"):
            raise ToolFailure(f"Cell {cell_id}'s output is this chat; its outputs are not "
                              "cleared.")
    assert access.page is not None
    try:
        answer = await access.page.request("clear_outputs", {"cell_id": cell_id})
    except NotebookError as error:
        raise ToolFailure(f"The outputs could not be cleared: {error}") from error
    cleared = answer.get("cleared")
    count = len(cleared) if isinstance(cleared, list) else 0
    if cell_id is not None:
        return RichResult(text=f"The outputs of cell {cell_id} were cleared.")
    kept = (" (not the cell that shows this chat)"
            if notebook.get("chat_cell_id") is not None else "")
    return RichResult(text=f"The outputs of all code cells{kept} were cleared ({count} "
                           "cells).")
