"""One review for the changes a model response proposes together, and the record of the
changes a session made to its notebook.

**Reviewed together.** When one response writes several change calls in a row
(``edit_cell``, ``insert_cell``, ``delete_cell``, ``move_cell``), the user decides them
as one set — the chat shows them in one "Changes" card with Accept all / Reject all and a
decision per change — instead of one card after another. The first of those calls does
the review for all of them:

1. it reads the notebook once and makes each call's proposal against the notebook as the
   calls before it would leave it (a second edit of a cell shows the text after the
   first; a move counts positions after the inserts and deletions before it);
2. it asks about them all at once (``NotebookAccess.decide_edits``: one approval request
   per change, each carrying the set's ``group``) and waits until every one is answered;
3. it makes the accepted ones in one page request (``apply_changes``): checked all
   before any is made, then made as one step of the notebook's undo history — joined to
   the step of the turn's earlier sets when nothing else changed the notebook between —
   so one Undo Cell Operation (Z in command mode) puts the notebook back as it was before
   the turn's sets. A
   change that depended on a rejected one (a second edit of the same cell, a cell put
   after one whose insertion was rejected) is not made, and its call says why;
4. each call's outcome — its result for the model, the card with its diff and decision —
   is kept (``NotebookAccess.reviewed``), and each later call of the set returns its own.

The calls keep their order with the other notebook calls of the response (a
``run_cell`` written between two edits splits them into two sets: it runs the first
edit's text), and a set of one is decided as before, alone.

**The record.** :func:`applied_changes` reads, from a session's stored messages, every
change the user accepted and the notebook received — by call, with the cell's id and
its text before and after — the cards' own data, so it holds after a kernel restart and
a resume as it did live.
"""

from __future__ import annotations

import copy
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any, Literal, cast

from ....messages import Message, ToolCallPart
from ...base import ToolContext, ToolFailure
from ...rich import CELL_EDIT_TYPE, RichResult
from ..page import EditDecision, NotebookAccess, NotebookError
from ..reading import cell_label, notebook_cells, shown_name
from .proposals import (
    cell_source,
    checked_text,
    move_in_place,
    proposal,
    proposal_result,
    rejected_result,
    who_decided,
)

__all__ = ["CHANGE_TOOLS", "AppliedChange", "applied_changes", "grouped_outcome",
           "reviewed_together"]

CHANGE_TOOLS = ("edit_cell", "insert_cell", "delete_cell", "move_cell")
"""The tools whose calls propose a change to the notebook."""
_NOTEBOOK_CALLS = (*CHANGE_TOOLS, "read_notebook", "run_cell", "clear_outputs", "run_all",
                   "interrupt_kernel", "restart_kernel", "list_notebooks",
                   "create_notebook", "cell_status")
"""The notebook tools: their calls of one response run in the order written."""
_CELL_TYPES = ("code", "markdown", "raw")
_SHOWN = "neta_shown"
"""Where a planned cell keeps its position and name in the notebook as read."""


def reviewed_together(calls: Sequence[ToolCallPart], call_id: str) -> list[ToolCallPart]:
    """The calls reviewed with ``call_id``: the run of change calls around it among the
    response's notebook calls (another notebook call between them ends the run: it runs
    between them). Empty when ``call_id`` is no change call of ``calls``."""
    notebook = [call for call in calls if call.name in _NOTEBOOK_CALLS]
    index = next((n for n, call in enumerate(notebook) if call.id == call_id), None)
    if index is None or notebook[index].name not in CHANGE_TOOLS:
        return []
    start = index
    while start > 0 and notebook[start - 1].name in CHANGE_TOOLS:
        start -= 1
    end = index + 1
    while end < len(notebook) and notebook[end].name in CHANGE_TOOLS:
        end += 1
    return notebook[start:end]


async def grouped_outcome(ctx: ToolContext, access: NotebookAccess) -> RichResult | None:
    """This change call's outcome when it is one of a set reviewed together (the first
    call of the set reviews them all here); ``None``: it is decided alone."""
    outcome = access.reviewed.take(ctx.response_id, ctx.tool_call_id)
    if outcome is None:
        group = reviewed_together(ctx.response_calls, ctx.tool_call_id)
        if (len(group) < 2 or group[0].id != ctx.tool_call_id
                or access.decide_edits is None):
            return None
        try:
            outcomes = await _review(access, group, ctx.turn_id)
        except Exception as error:
            # Every call of the set was asked and answered with this one: none may be
            # asked again alone. Whether the page made the accepted ones is unknown.
            failure = ToolFailure(
                f"The changes proposed together could not be made: the page failed "
                f"({type(error).__name__}: {error}). Read the notebook again to see what "
                "it holds before proposing.")
            outcomes = {call.id: failure for call in group}
        access.reviewed.keep(ctx.response_id, outcomes)
        outcome = access.reviewed.take(ctx.response_id, ctx.tool_call_id)
    if isinstance(outcome, ToolFailure):
        raise outcome
    return cast(RichResult, outcome)


# --- planning -------------------------------------------------------------------------

@dataclass(slots=True)
class _Planned:
    """One change of the set, as proposed: its call, the proposal the user sees, the
    page's operation that makes it and the words for its outcome."""

    call: ToolCallPart
    proposed: dict[str, Any]
    op: dict[str, Any]
    what: str
    """What it does, as the model reads it ("the edit of cell c2")."""

    @property
    def args(self) -> dict[str, Any]:
        """The call's arguments as its tool reads them (defaults filled in): what an
        approval policy is asked about, as it is when the change is decided alone."""
        op = self.op
        if op["op"] == "insert":
            return {"source": op["source"], "cell_type": op["cell_type"],
                    "after_cell_id": op["after_cell_id"]}
        if op["op"] == "edit":
            return {"cell_id": op["cell_id"], "source": op["source"]}
        if op["op"] == "move":
            return {"cell_id": op["cell_id"], "to_index": op["to_index"] + 1}
        return {"cell_id": op["cell_id"]}


def _string(args: dict[str, Any], name: str, default: str | None = None) -> str:
    value = args.get(name, default)
    if not isinstance(value, str):
        raise ToolFailure(f"'{name}' must be a string.")
    return value


def _position(cells: list[dict[str, Any]], cell_id: str) -> int:
    for index, cell in enumerate(cells):
        if cell.get("id") == cell_id:
            return index
    ids = ", ".join(cell_label(cell.get("id")) for cell in cells[:40] if cell.get("id"))
    raise ToolFailure(f"No cell has the id {cell_id!r}. The notebook's cell ids: {ids}")


def _plan(call: ToolCallPart, cells: list[dict[str, Any]]) -> _Planned | RichResult:
    """The change ``call`` proposes against ``cells`` (the notebook as the changes before
    it leave it), which it then changes as if accepted; a refusal as the tool alone would
    give it (:class:`ToolFailure`), or a result when there is nothing to change."""
    args = call.args
    if call.name == "edit_cell":
        cell_id, source = _string(args, "cell_id"), _string(args, "source")
        checked_text("The new source", source)
        cell = cells[_position(cells, cell_id)]
        before = cell_source(cell)
        if before == source:
            return RichResult(text=f"Cell {cell_id} already holds this text; nothing to "
                                   "change.")
        cell["source"] = source
        return _Planned(call, proposal("edit", cell_id, before, source),
                        {"op": "edit", "cell_id": cell_id, "source": source,
                         "expected": before}, f"the edit of cell {cell_id}")
    if call.name == "insert_cell":
        source = _string(args, "source")
        checked_text("The new cell's source", source)
        cell_type = _string(args, "cell_type", "code")
        if cell_type not in _CELL_TYPES:
            raise ToolFailure(f"'cell_type' must be one of {', '.join(_CELL_TYPES)}.")
        after = args.get("after_cell_id")
        if after is not None and not isinstance(after, str):
            raise ToolFailure("'after_cell_id' must be a string or null.")
        index = len(cells) if after is None else _position(cells, after) + 1
        cells.insert(index, {"id": None, "cell_type": cell_type, "source": source})
        where = f"after cell {after}" if after else "at the end"
        return _Planned(call, proposal("insert", after or "end", "", source,
                                       cell_type=cell_type, after_cell_id=after),
                        {"op": "insert", "source": source, "cell_type": cell_type,
                         "after_cell_id": after}, f"the new {cell_type} cell {where}")
    cell_id = _string(args, "cell_id")
    index = _position(cells, cell_id)
    cell = cells[index]
    source = cell_source(cell)
    cell_type = str(cell.get("cell_type") or "code")
    position, label = cell.get(_SHOWN) or (index + 1, shown_name(cell, index + 1))
    if call.name == "delete_cell":
        del cells[index]
        return _Planned(call, proposal("delete", cell_id, source, "", cell_type=cell_type,
                                       position=position, cell_label=label),
                        {"op": "delete", "cell_id": cell_id, "expected": source},
                        f"the deletion of cell {cell_id}")
    to_index = args.get("to_index")
    if not isinstance(to_index, int) or isinstance(to_index, bool):
        raise ToolFailure("'to_index' must be an integer.")
    in_place = move_in_place(cell_id, index, to_index, len(cells))
    if in_place is not None:
        return in_place
    cells.insert(to_index - 1, cells.pop(index))
    return _Planned(call, proposal("move", cell_id, source, source, cell_type=cell_type,
                                   from_index=index + 1, to_index=to_index,
                                   cell_label=label),
                    {"op": "move", "cell_id": cell_id, "expected": source,
                     "from_index": index, "to_index": to_index - 1},
                    f"moving cell {cell_id} from position {index + 1} to position {to_index}")


def _blocked(op: dict[str, Any], cells: list[dict[str, Any]]) -> str | None:
    """Why ``op`` cannot be made on ``cells`` (the notebook with the accepted changes
    before it made), which it then changes; ``None``: it can."""
    kind = op["op"]
    if kind == "insert":
        after = op["after_cell_id"]
        index = len(cells)
        if after is not None:
            found = [n for n, cell in enumerate(cells) if cell.get("id") == after]
            if not found:
                return f"cell {after}, which it goes after, is not in the notebook"
            index = found[0] + 1
        cells.insert(index, {"id": None, "source": op["source"]})
        return None
    found = [n for n, cell in enumerate(cells) if cell.get("id") == op["cell_id"]]
    if not found:
        return f"cell {op['cell_id']} is not in the notebook"
    index = found[0]
    if cell_source(cells[index]) != op["expected"]:
        return (f"cell {op['cell_id']} does not hold the text it was proposed against "
                "(it changed, or an earlier change of it was rejected)")
    if kind == "move" and index != op["from_index"]:
        # Its positions were counted with the changes before it made: with one of them
        # rejected, the move would put the cell elsewhere than the user accepted.
        return (f"cell {op['cell_id']} is not at the position it was proposed from "
                "(an earlier change of the set was rejected, or the notebook changed)")
    if kind == "edit":
        cells[index]["source"] = op["source"]
    elif kind == "delete":
        del cells[index]
    else:
        op["to_index"] = min(op["to_index"], len(cells) - 1)
        cells.insert(op["to_index"], cells.pop(index))
    return None


# --- the review -----------------------------------------------------------------------

async def _review(access: NotebookAccess, group: list[ToolCallPart],
                  turn: str) -> dict[str, object]:
    """Propose the changes of ``group`` together, ask about them at once, make the
    accepted ones as one step (with the sets made before in ``turn``); each call's
    outcome by its id."""
    assert access.page is not None
    assert access.decide_edits is not None
    outcomes: dict[str, object] = {}
    try:
        cells = copy.deepcopy(notebook_cells(await access.page.request("read", {})))
    except NotebookError as error:
        failure = ToolFailure(f"The notebook could not be read: {error}")
        return {call.id: failure for call in group}
    for position, cell in enumerate(cells, 1):
        # A card names a cell as the notebook shows it now, before any change of the set.
        cell[_SHOWN] = (position, shown_name(cell, position))
    planned: list[_Planned] = []
    for call in group:
        try:
            made = _plan(call, cells)
        except ToolFailure as refusal:
            outcomes[call.id] = refusal
            continue
        if isinstance(made, RichResult):
            outcomes[call.id] = made
        else:
            planned.append(made)
    if not planned:
        return outcomes
    first = planned[0].call.id
    for index, change in enumerate(planned):
        change.proposed["group"] = {"id": first, "index": index, "size": len(planned)}
    decisions = await access.decide_edits([
        (change.call.id, change.call.name, change.args,
         {**change.proposed, "decision": "pending"}) for change in planned])
    outcomes.update(await _make(access, planned, decisions, turn))
    return outcomes


Fate = Literal["accepted", "rejected", "failed"]


async def _make(access: NotebookAccess, planned: list[_Planned],
                decisions: list[EditDecision], turn: str) -> dict[str, object]:
    """Make the accepted changes in one page request; every change's outcome."""
    assert access.page is not None
    fates: list[Fate] = []
    why: dict[int, str] = {}
    ops: list[tuple[int, dict[str, Any]]] = []
    for index, (change, decision) in enumerate(zip(planned, decisions, strict=True)):
        if not decision.accepted:
            fates.append("rejected")
            continue
        op = dict(change.op)
        if decision.text is not None and op["op"] in ("edit", "insert"):
            try:
                checked_text("The accepted text", decision.text)
            except ToolFailure as refusal:
                fates.append("failed")
                why[index] = str(refusal)
                continue
            op["source"] = decision.text
        fates.append("accepted")
        ops.append((index, op))
    made = await _apply(access, ops, fates, why, turn) if ops else {}
    return _outcomes(planned, decisions, fates, why, made)


async def _apply(access: NotebookAccess, ops: list[tuple[int, dict[str, Any]]],
                 fates: list[Fate], why: dict[int, str], turn: str
                 ) -> dict[int, dict[str, Any]]:
    """Make ``ops`` (each with its change's index) in one page request, those that can
    still be made on the notebook as it is now; the page's answer for each made, and
    ``fates``/``why`` updated for those that were not. ``turn`` lets the page join the
    step to the one of an earlier set of the same turn (when nothing came between)."""
    assert access.page is not None
    try:
        cells = notebook_cells(await access.page.request("read", {}))
    except NotebookError as error:
        for index, _ in ops:
            fates[index], why[index] = "failed", f"the notebook could not be read: {error}"
        return {}
    kept = []
    for index, op in ops:
        blocked = _blocked(op, cells)
        if blocked is None:
            kept.append((index, op))
        else:
            fates[index], why[index] = "failed", blocked
    if not kept:
        return {}
    try:
        answer = await access.page.request(
            "apply_changes", {"changes": [_sent(op) for _, op in kept], "turn": turn})
    except NotebookError as error:
        reason = ("the notebook changed while the user decided" if error.code == "changed"
                  else f"the page could not make it: {error}")
        for index, _ in kept:
            fates[index], why[index] = "failed", reason
        return {}
    results = answer.get("results")
    results = results if isinstance(results, list) else []
    return {index: (results[n] if n < len(results) and isinstance(results[n], dict) else {})
            for n, (index, _) in enumerate(kept)}


def _sent(op: dict[str, Any]) -> dict[str, Any]:
    """``op`` as the page takes it (the position a move was proposed from is checked
    here, against the notebook read just before)."""
    return {key: value for key, value in op.items() if key != "from_index"}


def _outcomes(planned: list[_Planned], decisions: list[EditDecision], fates: list[Fate],
              why: dict[int, str], made: dict[int, dict[str, Any]]) -> dict[str, object]:
    size = len(planned)
    accepted = sum(fate == "accepted" for fate in fates)
    together = (f" It was one of {size} changes proposed together and reviewed as one; "
                f"the {accepted} made were one step of the notebook's undo history (the "
                "notebook's Undo Cell Operation, Z in command mode, undoes them together).")
    summary = [_summary(change, fate, made.get(index, {}))
               for index, (change, fate) in enumerate(zip(planned, fates, strict=True))]
    outcomes: dict[str, object] = {}
    for index, (change, decision, fate) in enumerate(zip(planned, decisions, fates,
                                                         strict=True)):
        proposed = change.proposed
        if index == 0:
            proposed["group"] = {**proposed["group"], "changes": summary}
        if fate == "rejected":
            outcomes[change.call.id] = rejected_result(
                proposed, decision, change.what, f"{change.what[0].upper()}{change.what[1:]} "
                "was not made")
        elif fate == "failed":
            outcomes[change.call.id] = ToolFailure(
                f"{_who(decision)} accepted {change.what}, but it was not made: "
                f"{why[index]}. Read the notebook again before proposing.")
        else:
            outcomes[change.call.id] = _accepted(change, decision, made.get(index, {}),
                                                 together)
    return outcomes


def _who(decision: EditDecision) -> str:
    return "The user" if decision.by == "user" else f"{who_decided(decision)}; it was"


def _accepted(change: _Planned, decision: EditDecision, made: dict[str, Any],
              together: str) -> RichResult:
    proposed, op = change.proposed, change.op
    final = decision.text if decision.text is not None else proposed["after"]
    kind = proposed["kind"]
    if kind == "edit":
        text = f"cell {op['cell_id']} now holds the proposed text."
    elif kind == "insert":
        new_id = str(made.get("cell_id", ""))
        proposed = {**proposed, "cell_id": new_id}
        where = (f"after cell {op['after_cell_id']}" if op["after_cell_id"] else "at the end")
        text = f"the new {op['cell_type']} cell was added {where} with the id {new_id}."
    elif kind == "delete":
        text = f"cell {op['cell_id']} was deleted."
    else:
        text = (f"cell {op['cell_id']} moved to position {proposed['to_index']}.")
    lead = ("The user accepted " + change.what if decision.by == "user"
            else who_decided(decision))
    text = f"{lead}; {text}"
    if final != proposed["after"] and kind in ("edit", "insert"):
        text += f" They changed it before accepting; it holds:\n{final}"
    return proposal_result(proposed, "accepted", text + together,
                           final=final if kind in ("edit", "insert") else None)


def _summary(change: _Planned, fate: Fate, made: dict[str, Any]) -> dict[str, Any]:
    """One line of the set's summary, as the Changes card lists it."""
    proposed = change.proposed
    line: dict[str, Any] = {"kind": proposed["kind"], "cell_id": proposed["cell_id"],
                            "decision": fate, "call_id": change.call.id}
    for key in ("cell_type", "cell_label", "from_index", "to_index", "after_cell_id"):
        if key in proposed:
            line[key] = proposed[key]
    if proposed["kind"] == "insert" and made.get("cell_id"):
        line["cell_id"] = str(made["cell_id"])
    rows = proposed["diff"]
    line["added"] = sum(row[:1] == "+" and row[:3] != "+++" for row in rows)
    line["removed"] = sum(row[:1] == "-" and row[:3] != "---" for row in rows)
    return line


# --- the record -----------------------------------------------------------------------

@dataclass(frozen=True, slots=True)
class AppliedChange:
    """A change the user accepted and the notebook received."""

    call_id: str
    """The tool call that proposed it (its assistant message holds it)."""
    kind: Literal["edit", "insert", "delete", "move"]
    cell_id: str
    """The cell changed, deleted or moved; for an insert, the new cell's id."""
    before: str
    """The cell's text before ("" for an insert)."""
    after: str
    """Its text after (what the user accepted; "" for a deletion)."""
    cell_type: str | None = None
    group: str | None = None
    """The id of the set it was reviewed with (its first call's), if any."""
    from_index: int | None = None
    to_index: int | None = None
    """A move's positions (1 the first); a deletion's position is ``from_index``."""
    kept: bool = True
    """``False``: the card was too large to keep the texts (``before`` and ``after`` are
    empty): listed only when asked for (``unkept=True``), as a change that cannot be put
    back."""


def applied_changes(messages: Iterable[Message], *,
                    unkept: bool = False) -> list[AppliedChange]:
    """The changes of ``messages`` (a session's history, or part of it) that the user
    accepted and the notebook received, in the order made, read from their cards. A card
    whose texts were too large to keep (``undo: false``) has no texts to give: it is left
    out unless ``unkept`` (a rewind reports it: ``kept`` is ``False``), as is anything not
    accepted."""
    found: list[AppliedChange] = []
    for message in messages:
        for record in message.metadata.tool_executions:
            if record.status != "done":
                continue
            for item in record.outputs:
                if item.media_type != CELL_EDIT_TYPE or not item.text:
                    continue
                try:
                    data = json.loads(item.text)
                except ValueError:
                    continue
                change = _applied(record.id, data, unkept)
                if change is not None:
                    found.append(change)
    return found


def _applied(call_id: str, data: Any, unkept: bool) -> AppliedChange | None:
    if (not isinstance(data, dict) or data.get("decision") != "accepted"
            or (data.get("undo") is False and not unkept)
            or data.get("kind") not in ("edit", "insert", "delete", "move")):
        return None
    group = data.get("group")
    position = data.get("from_index", data.get("position"))
    return AppliedChange(
        call_id=call_id, kind=data["kind"], cell_id=str(data.get("cell_id", "")),
        before=str(data.get("before", "")), after=str(data.get("after", "")),
        cell_type=data.get("cell_type"),
        group=str(group["id"]) if isinstance(group, dict) and "id" in group else None,
        from_index=position if isinstance(position, int) else None,
        kept=data.get("undo") is not False,
        to_index=data.get("to_index") if isinstance(data.get("to_index"), int) else None)
