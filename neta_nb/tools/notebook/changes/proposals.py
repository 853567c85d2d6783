"""What a proposed change to the notebook is made of, for the tools that propose one
(:mod:`.editing`, :mod:`.structure`) and for the review of several at once
(:mod:`.changes`): the proposal and its diff, the card of a decided one, who decided, and
the result the model reads.
"""

from __future__ import annotations

import difflib
import json
from typing import Any, Literal

from ....encodable import encodable
from ....messages import DisplayItem
from ...base import ToolContext, ToolFailure
from ...rich import CELL_EDIT_CHARS, CELL_EDIT_TYPE, RichResult
from ..page import PAGE_NEEDED, EditDecision, NotebookAccess, NotebookPage
from ..reading import cell_label, notebook_cells

__all__ = ["MAX_CELL_CHARS", "ProposalKind", "cell_diff", "cell_source", "checked_text",
           "decided", "find_cell", "live_page", "move_in_place", "preview_page", "proposal",
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


def move_in_place(cell_id: str, index: int, to_index: int, count: int) -> RichResult | None:
    """A move of the cell at ``index`` (from 0) to position ``to_index`` (from 1) among
    ``count`` cells: the result that it is there already, ``None`` when it moves; a
    :class:`ToolFailure` naming the range when there is no such position."""
    if not 1 <= to_index <= count:
        raise ToolFailure(f"to_index {to_index} is out of range: the notebook has "
                          f"{count} cells, so a position is 1 to {count}.")
    if to_index == index + 1:
        return RichResult(text=f"Cell {cell_id} is at position {to_index} already; "
                               "nothing to move.")
    return None


def checked_text(name: str, text: str) -> None:
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
    checked_text("The accepted text", final)
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
