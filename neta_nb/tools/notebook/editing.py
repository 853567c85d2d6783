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

import difflib
import json
from typing import Any, Literal

from ...encodable import encodable
from ...messages import DisplayItem
from ..base import ToolContext, ToolFailure, tool
from ..rich import CELL_EDIT_CHARS, CELL_EDIT_TYPE, RichResult
from .page import PAGE_NEEDED, EditDecision, NotebookAccess, NotebookError, NotebookPage
from .reading import cell_label, notebook_cells

__all__ = ["MAX_CELL_CHARS", "ProposalKind", "cell_diff", "cell_source", "decided",
           "edit_cell", "find_cell", "insert_cell", "live_page", "preview_page", "proposal",
           "proposal_item", "proposal_result", "rejected_result", "who_decided"]

MAX_CELL_CHARS = 200_000
"""The longest cell text a proposal may carry (before or after)."""
_DIFF_LINES = 400
"""Diff lines a card shows; the rest is counted."""
_DIFF_LINE_CHARS = 2_000
"""Characters of one diff line a card shows (a cell may be one line of data)."""
_DIFF_CHARS = 100_000
"""Characters of JSON the diff lines of one card take at most; the rest is counted. With
the text before and after (each at most :data:`MAX_CELL_CHARS`) the card's item stays
under its bound (``CELL_EDIT_CHARS``) unless escapes swell the texts; then the card keeps
its diff and decision without them, and offers no Undo."""
_DECISION_WAIT = 24 * 3600.0
"""A proposal waits for the user like an approval does; the tool's timeout is no limit."""


def cell_diff(before: str, after: str, cell_id: str) -> list[str]:
    """The unified diff of a cell's text (``difflib``), lines without their newlines.

    Lines are compared without their ends: a cell's last line has no newline, and a line
    added after it must not show it as removed and added again. Only when the texts
    differ in nothing else (a newline at the end) do the ends count."""
    lines = before.splitlines(), after.splitlines()
    if lines[0] == lines[1]:
        lines = before.splitlines(keepends=True), after.splitlines(keepends=True)
    return [line.rstrip("\r\n") for line in difflib.unified_diff(
        *lines, fromfile=f"cell {cell_id}", tofile=f"cell {cell_id}", lineterm="")]


ProposalKind = Literal["edit", "insert", "delete", "move"]


def proposal(kind: ProposalKind, cell_id: str, before: str, after: str,
             **extra: Any) -> dict[str, Any]:
    """The proposal the user decides on and its card draws. Its texts are made encodable
    (a page's text may hold a lone surrogate no JSON encoder writes); the edit itself is
    made against the cell's real text. A move changes no text: its "diff" is the cell's
    lines, unchanged, so the card shows which cell moves."""
    before, after = encodable(before), encodable(after)
    lines = ([f" {line}" for line in before.splitlines()] if kind == "move"
             else cell_diff(before, after, cell_id))
    shown: list[str] = []
    used = 0
    for line in lines[:_DIFF_LINES]:
        if len(line) > _DIFF_LINE_CHARS:
            line = f"{line[:_DIFF_LINE_CHARS]} … ({len(line) - _DIFF_LINE_CHARS:,} more)"
        used += len(json.dumps(line, ensure_ascii=False))
        if used > _DIFF_CHARS:
            break
        shown.append(line)
    return {"kind": kind, "cell_id": cell_id, "before": before, "after": after,
            "diff": shown, "diff_left_out": len(lines) - len(shown), **extra}


def proposal_item(decided: dict[str, Any]) -> DisplayItem:
    """The card of a decided proposal. One whose texts do not fit its bound keeps its diff
    and decision without them (``undo: false``): a card dropped would leave the chat with
    no trace of what was decided."""
    text = json.dumps(decided, ensure_ascii=False)
    if len(text) > CELL_EDIT_CHARS:
        text = json.dumps({**decided, "before": "", "after": "", "undo": False},
                          ensure_ascii=False)
    return DisplayItem(media_type=CELL_EDIT_TYPE, text=text, size=len(text),
                       name=f"{decided['kind']} of cell {decided['cell_id']}")


def live_page(ctx: ToolContext) -> NotebookAccess:
    """The call's notebook access, when a page answers; a clear refusal otherwise."""
    access = ctx.notebook
    if not isinstance(access, NotebookAccess) or not access.live:
        raise ToolFailure(f"This tool {PAGE_NEEDED} with the chat open on it; the notebook "
                          "cannot be changed from here.")
    return access


def preview_page(ctx: ToolContext) -> NotebookPage | None:
    """The page an approval's preview reads (``None``: no page, and the approval shows
    no preview)."""
    access = ctx.notebook
    return access.page if isinstance(access, NotebookAccess) else None


def _checked_text(name: str, text: str) -> None:
    if len(text) > MAX_CELL_CHARS:
        raise ToolFailure(f"{name} is {len(text):,} characters; a cell proposal holds at "
                          f"most {MAX_CELL_CHARS:,}.")


async def find_cell(access: NotebookAccess, cell_id: str) -> dict[str, Any]:
    assert access.page is not None
    notebook = await access.page.request("read", {"cell_id": cell_id})
    cells = notebook_cells(notebook)
    for cell in cells:
        if cell.get("id") == cell_id:
            return cell
    ids = ", ".join(cell_label(cell.get("id")) for cell in cells[:40])
    raise ToolFailure(f"No cell has the id {cell_id!r}. The notebook's cell ids: {ids}")


def cell_source(cell: dict[str, Any]) -> str:
    value = cell.get("source", "")
    return "".join(value) if isinstance(value, list) else str(value)


async def decided(ctx: ToolContext, access: NotebookAccess, name: str,
                   args: dict[str, Any], proposed: dict[str, Any]
                   ) -> tuple[EditDecision, str]:
    decision = await access.decide_edit(ctx.tool_call_id, name, args,
                                        {**proposed, "decision": "pending"})
    final = proposed["after"] if decision.text is None else encodable(decision.text)
    _checked_text("The accepted text", final)
    return decision, final


def who_decided(decision: EditDecision) -> str:
    """Who decided, as the model reads it."""
    if decision.by == "agent":
        return "It was accepted without asking (this agent's edits are accepted as made)"
    if decision.by == "policy":
        verdict = "allowed" if decision.accepted else "did not allow"
        return (f"No one was there to decide (no chat view shows this session): the "
                f"approval policy {verdict} it")
    return "The user " + ("accepted it" if decision.accepted else "rejected it")


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
    _checked_text("The new source", source)
    before = cell_source(await find_cell(access, cell_id))
    _checked_text(f"Cell {cell_id}'s text now", before)
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
    _checked_text("The new cell's source", source)
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


def rejected_result(proposed: dict[str, Any], decision: EditDecision, what: str,
                    not_done: str, unchanged: str = "the notebook") -> RichResult:
    """The tool's result when ``proposed`` was not accepted: the user rejected ``what``,
    or who decided instead and that it (``not_done``) was not done."""
    text = (f"The user rejected {what}" if decision.by == "user"
            else f"{who_decided(decision)}. {not_done}")
    return proposal_result(proposed, "rejected", f"{text}; {unchanged} is unchanged.")


def proposal_result(proposed: dict[str, Any], decision: Literal["accepted", "rejected"],
                    text: str, *, final: str | None = None) -> RichResult:
    """The tool's result: ``text`` for the model, the proposal with its decision for the
    card (its diff redone when the user changed the text before accepting)."""
    decided = {**proposed, "decision": decision}
    if final is not None and final != proposed["after"]:
        redone = proposal(proposed["kind"], proposed["cell_id"], proposed["before"], final)
        decided.update(after=final, diff=redone["diff"], diff_left_out=redone["diff_left_out"],
                       changed_by_user=True)
    return RichResult(text=text, items=[proposal_item(decided)],
                      declined=decision == "rejected")
