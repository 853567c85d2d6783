"""The rows of a batch run that has no store: the same leases and results as
:class:`~neta_nb.store.batch_rows.BatchRows`, kept in this process only (nothing to resume
after a crash: pass ``store=`` for that)."""

from __future__ import annotations

import copy
import time
from collections.abc import Callable
from typing import Any

from ..store.batch_rows import DONE, FAILED, QUEUED, RUNNING, BatchRowState, ClaimedRow

__all__ = ["MemoryRows"]


class MemoryRows:
    def __init__(self, run_id: str) -> None:
        self.run_id = run_id
        self._rows: list[dict[str, Any]] = []
        self._definition: dict[str, Any] | None = None

    def create(self, definition: dict[str, Any], inputs: list[dict[str, Any]]) -> bool:
        if self._definition is not None:
            return False
        self._definition = copy.deepcopy(definition)
        self._rows = [{"idx": idx, "input": value, "state": QUEUED, "attempts": 0,
                       "lease_owner": None, "lease_until": None, "session_id": None,
                       "result": None} for idx, value in enumerate(inputs)]
        return True

    def definition(self) -> dict[str, Any] | None:
        return copy.deepcopy(self._definition)

    def update_definition(self, definition: dict[str, Any]) -> None:
        self._definition = copy.deepcopy(definition)

    def claim(self, owner: str, lease: float, *, limit: int = 1,
              owner_dead: Callable[[str], bool] | None = None) -> list[ClaimedRow]:
        now = time.time()
        claimed: list[ClaimedRow] = []
        for row in self._rows:
            if len(claimed) >= limit:
                break
            if row["state"] == QUEUED or (row["state"] == RUNNING and (
                    row["lease_until"] < now
                    or (owner_dead is not None and owner_dead(row["lease_owner"])))):
                row.update(state=RUNNING, lease_owner=owner, lease_until=now + lease,
                           attempts=row["attempts"] + 1)
                claimed.append(ClaimedRow(row["idx"], row["input"], row["attempts"],
                                          row["session_id"]))
        return claimed

    def _held(self, idx: int, owner: str) -> dict[str, Any] | None:
        row = self._rows[idx]
        return row if row["state"] == RUNNING and row["lease_owner"] == owner else None

    def started(self, idx: int, owner: str, session_id: str, *, attempt: bool = False) -> bool:
        row = self._held(idx, owner)
        if row is None:
            return False
        row["session_id"] = session_id
        row["attempts"] += 1 if attempt else 0
        return True

    def renew(self, owner: str, indices: list[int], lease: float) -> list[int]:
        lost = []
        for idx in indices:
            row = self._held(idx, owner)
            if row is None:
                lost.append(idx)
            else:
                row["lease_until"] = time.time() + lease
        return lost

    def finish(self, idx: int, owner: str, *, failed: bool, result: dict[str, Any],
               session_id: str | None) -> bool:
        row = self._held(idx, owner)
        if row is None:
            return False
        row.update(state=FAILED if failed else DONE, result=result, session_id=session_id,
                   lease_owner=None, lease_until=None)
        return True

    def release(self, idx: int, owner: str) -> None:
        row = self._held(idx, owner)
        if row is not None:
            row.update(state=QUEUED, lease_owner=None, lease_until=None, session_id=None)

    def unsettled(self) -> int:
        return sum(1 for row in self._rows if row["state"] not in (DONE, FAILED))

    def all(self) -> list[BatchRowState]:
        return [BatchRowState(row["idx"], row["input"], row["state"], row["attempts"],
                              row["session_id"], row["result"], row["lease_owner"])
                for row in self._rows]
