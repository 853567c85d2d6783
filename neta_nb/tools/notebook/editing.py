"""``edit_cell`` and ``insert_cell``: changes to the notebook the user decides on.

Neither writes. Each makes a *proposal* — the cell, its text before and after, their
unified diff — that the chat shows as a card with Accept and Reject (and a box to change
the text before accepting), and waits for the decision (``ctx.notebook.decide_edit``:
the session's approvals; an agent with ``accept_notebook_edits`` accepts at once). Only
an accepted proposal reaches the page, as one undoable edit of the live notebook, made
against the text the proposal was made from: if the user changed the cell meanwhile, the
edit is not applied and the model is told. The result says what the user decided (and the
text they accepted, when they changed it) and carries the proposal with its decision, so
the card, a resumed chat and a saved notebook all show the diff and what became of it.
"""

from __future__ import annotations

from typing import Literal

from ..base import ToolContext, ToolFailure, tool
from ..rich import RichResult
from .changes import grouped_outcome
from .changes.proposals import (
    MAX_CELL_CHARS,
    ProposalKind,
    cell_diff,
    cell_source,
    checked_text,
    decided,
    find_cell,
    live_page,
    preview_page,
    proposal,
    proposal_item,
    proposal_result,
    rejected_result,
    who_decided,
)
from .page import NotebookError

__all__ = ["MAX_CELL_CHARS", "ProposalKind", "cell_diff", "cell_source", "decided",
           "edit_cell", "find_cell", "insert_cell", "live_page", "preview_page", "proposal",
           "proposal_item", "proposal_result", "rejected_result", "who_decided"]

_DECISION_WAIT = 24 * 3600.0
"""A proposal waits for the user like an approval does; the tool's timeout is no limit."""


@tool(category="notebook", label="Edit cell", timeout=_DECISION_WAIT)
async def edit_cell(ctx: ToolContext, cell_id: str, source: str) -> RichResult:
    """Propose new text for a notebook cell. The user sees the diff and accepts or
    rejects it (or changes it first); the result says which, and the cell's text if it
    was changed. Read the notebook first: ``cell_id`` is an id ``read_notebook`` shows.

    Args:
        cell_id: The cell's id, as read_notebook shows it.
        source: The cell's whole new text.
    """
    access = live_page(ctx)
    grouped = await grouped_outcome(ctx, access)
    if grouped is not None:
        return grouped
    checked_text("The new source", source)
    before = cell_source(await find_cell(access, cell_id))
    checked_text(f"Cell {cell_id}'s text now", before)
    if before == source:
        return RichResult(text=f"Cell {cell_id} already holds this text; nothing to change.")
    proposed = proposal("edit", cell_id, before, source)
    decision, final = await decided(ctx, access, "edit_cell",
                                     {"cell_id": cell_id, "source": source}, proposed)
    if not decision.accepted:
        return rejected_result(proposed, decision, f"the edit of cell {cell_id}",
                               f"The edit of cell {cell_id} was not made", "the cell")
    assert access.page is not None
    try:
        await access.page.request("edit", {"cell_id": cell_id, "source": final,
                                           "expected": before})
    except NotebookError as error:
        raise ToolFailure(_not_applied(cell_id, error)) from error
    text = _accepted_text(cell_id, proposed["after"], final)
    if decision.by != "user":
        text = f"{who_decided(decision)}; cell {cell_id} now holds the proposed text."
    return proposal_result(proposed, "accepted", text, final=final)


@tool(category="notebook", label="Insert cell", timeout=_DECISION_WAIT)
async def insert_cell(ctx: ToolContext, source: str,
                      cell_type: Literal["code", "markdown", "raw"] = "code",
                      after_cell_id: str | None = None) -> RichResult:
    """Propose a new notebook cell. The user sees it and accepts or rejects it (or
    changes it first); the result says which, and the new cell's id.

    Args:
        source: The new cell's text.
        cell_type: code, markdown or raw.
        after_cell_id: The id of the cell it goes after; none: at the end.
    """
    access = live_page(ctx)
    grouped = await grouped_outcome(ctx, access)
    if grouped is not None:
        return grouped
    checked_text("The new cell's source", source)
    if after_cell_id is not None:
        await find_cell(access, after_cell_id)  # a clear error before the user is asked
    where = f"after cell {after_cell_id}" if after_cell_id else "at the end"
    proposed = proposal("insert", after_cell_id or "end", "", source,
                        cell_type=cell_type, after_cell_id=after_cell_id)
    decision, final = await decided(
        ctx, access, "insert_cell",
        {"source": source, "cell_type": cell_type, "after_cell_id": after_cell_id},
        proposed)
    if not decision.accepted:
        return rejected_result(proposed, decision, f"the new {cell_type} cell {where}",
                               f"The new {cell_type} cell {where} was not added")
    assert access.page is not None
    try:
        answer = await access.page.request("insert", {"source": final,
                                                      "cell_type": cell_type,
                                                      "after_cell_id": after_cell_id})
    except NotebookError as error:
        raise ToolFailure(f"The new cell was accepted but could not be added: "
                          f"{error}") from error
    new_id = str(answer.get("cell_id", ""))
    if decision.by == "user":
        text = (f"The user accepted the new {cell_type} cell; it was added {where} with "
                f"the id {new_id}.")
    else:
        text = (f"{who_decided(decision)}. The new {cell_type} cell was added {where} with the id "
                f"{new_id}.")
    if final != source:
        text += f" They changed it before accepting; it holds:\n{final}"
    return proposal_result({**proposed, "cell_id": new_id}, "accepted", text, final=final)


def _accepted_text(cell_id: str, proposed: str, final: str) -> str:
    if final == proposed:
        return f"The user accepted the edit; cell {cell_id} now holds the proposed text."
    return (f"The user changed the proposal before accepting it; cell {cell_id} now "
            f"holds:\n{final}")


def _not_applied(cell_id: str, error: NotebookError) -> str:
    if error.code == "changed":
        return (f"The user accepted the edit, but cell {cell_id} changed while they were "
                f"deciding, so it was not applied. Read the cell again before proposing.")
    return f"The user accepted the edit, but it could not be applied: {error}"


