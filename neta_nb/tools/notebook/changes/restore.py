"""Putting the notebook back: the cells the agent changed after a message, restored to
their text at that message (a rewind or a fork with ``notebook=True``).

What the agent changed is in the session's history already: every accepted proposal of
:mod:`.editing` and :mod:`.structure` is a card (``CELL_EDIT_TYPE``) among its call's
outputs, holding the cell's id and its text before and after (the text accepted, when the
user changed the proposal first). :func:`.changes.applied_changes` reads them from the
messages a rewind drops, so a resumed session puts the cells back as the live one would.

:func:`restore_notebook` undoes them newest first against the notebook as the page holds
it now: an edit's text is put back, an inserted cell removed, a deleted cell put back
(with its id, type and text, at its place), a moved cell moved back. A cell whose live
text (or place) is not what the agent left there was changed by the user since: it is
left exactly as it is and reported as a conflict, and so are the agent's earlier changes
of it. The page applies the whole restore as one step of the notebook's undo history
(``restore`` op: all or nothing, each change made only while the cell is as planned); a
user's edit that lands between the read and the apply makes the page refuse, and the
restore is planned again from a fresh read.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from ..page import NotebookError, NotebookPage
from ..reading import notebook_cells
from .sets import AppliedChange

__all__ = ["CellConflict", "NotebookRestore", "RestoredCell", "plan_restore",
           "restore_notebook"]

ChangeKind = Literal["edit", "insert", "delete", "move"]
ConflictReason = Literal["edited", "moved", "deleted", "not_kept"]

_ATTEMPTS = 3
"""Reads and plans before giving up while the user keeps changing the notebook."""


@dataclass(frozen=True)
class RestoredCell:
    """A cell the restore put back: ``edit`` (text), ``insert`` (removed), ``delete``
    (put back) or ``move`` (moved back)."""

    cell_id: str
    kind: ChangeKind


@dataclass(frozen=True)
class CellConflict:
    """A cell the restore left alone, and why (``edited``: the user changed its text since;
    ``moved``: its place; ``deleted``: the user deleted it; ``not_kept``: the change's
    texts were too large to keep)."""

    cell_id: str
    kind: ChangeKind
    reason: ConflictReason


@dataclass
class NotebookRestore:
    """What a restore did: the cells put back, those left alone (conflicts), and an error
    when the page could not do it (``None``: done)."""

    restored: list[RestoredCell] = field(default_factory=list)
    conflicts: list[CellConflict] = field(default_factory=list)
    error: str | None = None

    def to_json(self) -> dict[str, Any]:
        return {"restored": [{"cell_id": c.cell_id, "kind": c.kind} for c in self.restored],
                "conflicts": [{"cell_id": c.cell_id, "kind": c.kind, "reason": c.reason}
                              for c in self.conflicts],
                "error": self.error}

    @classmethod
    def from_json(cls, data: Any) -> NotebookRestore | None:
        """The outcome :meth:`to_json` gave (as a store kept it); ``None`` if malformed."""
        if not isinstance(data, dict):
            return None
        restored, conflicts = data.get("restored"), data.get("conflicts")
        if not isinstance(restored, list) or not isinstance(conflicts, list):
            return None
        error = data.get("error")
        try:
            return cls(restored=[RestoredCell(str(c["cell_id"]), c["kind"]) for c in restored],
                       conflicts=[CellConflict(str(c["cell_id"]), c["kind"], c["reason"])
                                  for c in conflicts],
                       error=error if isinstance(error, str) else None)
        except (KeyError, TypeError):
            return None

    def summary(self) -> str:
        """One paragraph for a person: what was put back and what was left, by cell."""
        if self.error is not None:
            return f"The notebook was not restored: {self.error}"
        cells = {c.cell_id for c in self.restored}
        text = (f"{len(cells)} cell{'s' if len(cells) != 1 else ''} put back"
                if cells else "No cell needed putting back")
        if self.conflicts:
            left = ", ".join(f"{c.cell_id} ({_REASONS[c.reason]})" for c in self.conflicts)
            text += f"; left as they are: {left}"
        return text + "."


_REASONS = {"edited": "changed since", "moved": "moved since", "deleted": "deleted since",
            "not_kept": "too large to keep its text"}


@dataclass
class _Cell:
    id: str
    source: str


class _Planner:
    """The notebook as the restore leaves it, step by step (newest change first), and the
    operations that get it there."""

    def __init__(self, cells: Sequence[dict[str, Any]]) -> None:
        self.notebook = [_Cell(str(c.get("id", "")), _source(c)) for c in cells]
        self.outcome = NotebookRestore()
        self.operations: list[dict[str, Any]] = []
        self.left: set[str] = set()  # cells in conflict: none of their earlier changes undone

    def find(self, cell_id: str) -> int | None:
        return next((i for i, c in enumerate(self.notebook) if c.id == cell_id), None)

    def conflict(self, change: AppliedChange, reason: ConflictReason) -> None:
        self.left.add(change.cell_id)
        if all(c.cell_id != change.cell_id for c in self.outcome.conflicts):
            self.outcome.conflicts.append(CellConflict(change.cell_id, change.kind, reason))

    def done(self, operation: dict[str, Any], change: AppliedChange) -> None:
        self.operations.append(operation)
        self.outcome.restored.append(RestoredCell(change.cell_id, change.kind))

    def undo(self, change: AppliedChange) -> None:
        if change.cell_id in self.left:
            return
        if not change.kept:
            self.conflict(change, "not_kept")
            return
        index = self.find(change.cell_id)
        if change.kind == "delete":
            if index is None:  # else back already (the notebook's undo)
                self.put_back(change)
        elif index is None:
            if change.kind != "insert":  # an inserted cell gone is removed already
                self.conflict(change, "deleted")
        elif self.notebook[index].source == change.before and change.kind == "edit":
            return  # put back already (the card's Undo)
        elif self.notebook[index].source != change.after:
            self.conflict(change, "edited")
        elif change.kind == "edit":
            self.done({"op": "set_source", "cell_id": change.cell_id,
                       "expected": change.after, "source": change.before}, change)
            self.notebook[index].source = change.before
        elif change.kind == "insert":
            self.done({"op": "delete", "cell_id": change.cell_id, "expected": change.after},
                      change)
            del self.notebook[index]
        else:
            self.move_back(change, index)

    def put_back(self, change: AppliedChange) -> None:
        """A deleted cell, at its place (or the nearest there is), with its id."""
        at = min(max((change.from_index or len(self.notebook) + 1) - 1, 0), len(self.notebook))
        self.done({"op": "insert", "cell_id": change.cell_id, "index": at,
                   "cell_type": change.cell_type or "code", "source": change.before}, change)
        self.notebook.insert(at, _Cell(change.cell_id, change.before))

    def move_back(self, change: AppliedChange, index: int) -> None:
        origin, moved_to = (change.from_index or 0) - 1, (change.to_index or 0) - 1
        if index == origin:
            return  # moved back already
        if index != moved_to or not 0 <= origin < len(self.notebook):
            self.conflict(change, "moved")
            return
        self.done({"op": "move", "cell_id": change.cell_id, "from_index": index,
                   "to_index": origin}, change)
        self.notebook.insert(origin, self.notebook.pop(index))


def plan_restore(cells: Sequence[dict[str, Any]], changes: Sequence[AppliedChange]
                 ) -> tuple[list[dict[str, Any]], NotebookRestore]:
    """The page's operations that undo ``changes`` (oldest first) on a notebook holding
    ``cells`` now, in the order they are made, and what they will do. Each operation
    carries what it expects of the cell (its text, its place), which the page checks."""
    planner = _Planner(cells)
    for change in reversed(changes):
        planner.undo(change)
    return planner.operations, planner.outcome


def _source(cell: dict[str, Any]) -> str:
    value = cell.get("source", "")
    return "".join(value) if isinstance(value, list) else str(value)


async def restore_notebook(page: NotebookPage, changes: Sequence[AppliedChange]
                           ) -> NotebookRestore:
    """Undo ``changes`` (oldest first) in the notebook on ``page`` as one undo step; what
    was put back and what was left. A page that cannot do it leaves the notebook as it was
    and the outcome says why (``error``)."""
    for _ in range(_ATTEMPTS):
        try:
            cells = notebook_cells(await page.request("read", {}))
        except NotebookError as error:
            return NotebookRestore(error=str(error))
        operations, outcome = plan_restore(cells, changes)
        if not operations:
            return outcome
        try:
            await page.request("restore", {"operations": operations})
        except NotebookError as error:
            if error.code == "changed":
                continue  # the user changed a cell between the read and the apply
            return NotebookRestore(error=str(error))
        return outcome
    return NotebookRestore(error="the notebook kept changing while it was being restored; "
                                 "nothing was changed")
