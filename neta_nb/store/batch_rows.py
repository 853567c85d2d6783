"""A batch run as its store keeps it: the run's definition (``batch_runs``) and one row per
input (``batch_rows``) with its state, attempts, lease and result — on SQLite or
PostgreSQL alike, through each database's own transactions.

**At least once, stored exactly once.** A worker claims a row with a *lease* (an owner and
an expiry it renews while it works). Only the lease's holder can store the row's result,
and it does so in one transaction that checks the lease; a worker that lost its lease (it
stalled, another took the row over) stores nothing and deletes the session it made. A row
whose worker died is claimed again once its lease runs out — at once when the owner was a
process on this host that is gone — and the dead attempt's session is deleted before the
new one starts. So a row may run twice after a crash, but the store holds one result and
one session for it.

Every statement of a run takes that run's write lock (the run id's transaction on
PostgreSQL, the database's on SQLite), so claims never race.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .session_store import SessionStore

__all__ = ["BatchRowState", "BatchRows", "ClaimedRow"]

QUEUED, RUNNING, DONE, FAILED = "queued", "running", "done", "failed"


@dataclass(frozen=True)
class ClaimedRow:
    """A row this worker holds the lease of."""

    idx: int
    input: dict[str, Any]
    attempts: int
    """Executions started so far, this one included."""
    stale_session: str | None
    """The session of an attempt that died with its worker (to delete before running)."""


@dataclass(frozen=True)
class BatchRowState:
    """One row as stored."""

    idx: int
    input: dict[str, Any]
    state: str
    attempts: int
    session_id: str | None
    result: dict[str, Any] | None
    lease_owner: str | None = None


class BatchRows:
    """The rows of run ``run_id`` in ``store``."""

    def __init__(self, store: SessionStore, run_id: str) -> None:
        self.store = store
        self.run_id = run_id

    def _transaction(self) -> Any:
        return self.store.database.transaction(self.run_id, immediate=True)

    def _read(self) -> Any:
        """A read: no lock of the run (claims and results go on meanwhile)."""
        return self.store.database.transaction()

    # --- the run --------------------------------------------------------------------------
    def create(self, definition: dict[str, Any], inputs: list[dict[str, Any]]) -> bool:
        """Store the run and its rows (all queued); ``False`` (nothing written) when the
        store has the run already."""
        with self._transaction() as rows:
            if rows.execute("SELECT 1 FROM batch_runs WHERE id = ?", (self.run_id,)):
                return False
            rows.execute("INSERT INTO batch_runs (id, data) VALUES (?, ?)",
                         (self.run_id, json.dumps(definition)))
            for idx, value in enumerate(inputs):
                rows.execute("INSERT INTO batch_rows (run_id, idx, input, state) "
                             "VALUES (?, ?, ?, ?)",
                             (self.run_id, idx, json.dumps(value), QUEUED))
        return True

    def definition(self) -> dict[str, Any] | None:
        with self._read() as rows:
            found = rows.execute("SELECT data FROM batch_runs WHERE id = ?", (self.run_id,))
        return json.loads(found[0][0]) if found else None

    def update_definition(self, definition: dict[str, Any]) -> None:
        with self._transaction() as rows:
            rows.execute("UPDATE batch_runs SET data = ? WHERE id = ?",
                         (json.dumps(definition), self.run_id))

    # --- leases ---------------------------------------------------------------------------
    def claim(self, owner: str, lease: float, *, limit: int = 1,
              owner_dead: Callable[[str], bool] | None = None) -> list[ClaimedRow]:
        """Up to ``limit`` rows for ``owner``, lowest index first: queued ones, and running
        ones whose lease ran out (or whose owner ``owner_dead`` says is gone)."""
        now = time.time()
        with self._transaction() as rows:
            # Through the (run_id, state, idx) index: the running rows (about as many as
            # run at once) and the first queued ones — never the rows done, however many.
            running = rows.execute(
                "SELECT idx, lease_owner, lease_until FROM batch_rows WHERE run_id = ? "
                "AND state = ? ORDER BY idx", (self.run_id, RUNNING))
            queued = rows.execute(
                "SELECT idx FROM batch_rows WHERE run_id = ? AND state = ? ORDER BY idx "
                "LIMIT ?", (self.run_id, QUEUED, limit))
            free = [idx for idx, holder, until in running
                    if holder is None or (until is not None and until < now)
                    or (owner_dead is not None and owner_dead(holder))]
            chosen = sorted([*free, *(idx for (idx,) in queued)])[:limit]
            claimed = []
            for idx in chosen:
                found = rows.execute(
                    "UPDATE batch_rows SET state = ?, lease_owner = ?, lease_until = ?, "
                    "attempts = attempts + 1 WHERE run_id = ? AND idx = ? "
                    "RETURNING input, attempts, session_id",
                    (RUNNING, owner, now + lease, self.run_id, idx))
                value, attempts, stale = found[0]
                claimed.append(ClaimedRow(idx, json.loads(value), int(attempts), stale))
        return claimed

    def started(self, idx: int, owner: str, session_id: str, *, attempt: bool = False) -> bool:
        """Name the session of the row's current attempt (``attempt``: a retry after a
        failure, counted); ``False`` if ``owner`` no longer holds the row."""
        with self._transaction() as rows:
            return bool(rows.execute(
                "UPDATE batch_rows SET session_id = ?, attempts = attempts + ? "
                "WHERE run_id = ? AND idx = ? AND lease_owner = ? AND state = ? "
                "RETURNING idx",
                (session_id, 1 if attempt else 0, self.run_id, idx, owner, RUNNING)))

    def renew(self, owner: str, indices: list[int], lease: float) -> list[int]:
        """Extend ``owner``'s leases; returns the rows it no longer holds."""
        if not indices:
            return []
        with self._transaction() as rows:
            held = {int(row[0]) for row in rows.execute(
                "UPDATE batch_rows SET lease_until = ? WHERE run_id = ? AND lease_owner = ? "
                "AND state = ? RETURNING idx", (time.time() + lease, self.run_id, owner,
                                                RUNNING))}
        return [idx for idx in indices if idx not in held]

    def finish(self, idx: int, owner: str, *, failed: bool, result: dict[str, Any],
               session_id: str | None) -> bool:
        """Store the row's result if ``owner`` still holds it (else nothing: ``False``)."""
        with self._transaction() as rows:
            return bool(rows.execute(
                "UPDATE batch_rows SET state = ?, result = ?, session_id = ?, "
                "lease_owner = NULL, lease_until = NULL WHERE run_id = ? AND idx = ? "
                "AND lease_owner = ? AND state = ? RETURNING idx",
                (FAILED if failed else DONE, json.dumps(result), session_id, self.run_id,
                 idx, owner, RUNNING)))

    def release(self, idx: int, owner: str) -> None:
        """Give a row back unfinished (a cancelled run): queued again, its attempt's
        session forgotten (the caller deletes it)."""
        with self._transaction() as rows:
            rows.execute("UPDATE batch_rows SET state = ?, lease_owner = NULL, "
                         "lease_until = NULL, session_id = NULL WHERE run_id = ? AND idx = ? "
                         "AND lease_owner = ? AND state = ?",
                         (QUEUED, self.run_id, idx, owner, RUNNING))

    # --- reads ----------------------------------------------------------------------------
    def unsettled(self) -> int:
        """Rows neither done nor failed."""
        with self._read() as rows:
            found = rows.execute("SELECT COUNT(*) FROM batch_rows WHERE run_id = ? "
                                 "AND state <> ? AND state <> ?", (self.run_id, DONE, FAILED))
        return int(found[0][0])

    def all(self) -> list[BatchRowState]:
        with self._read() as rows:
            found = rows.execute(
                "SELECT idx, input, state, attempts, session_id, result, lease_owner "
                "FROM batch_rows WHERE run_id = ? ORDER BY idx", (self.run_id,))
        return [BatchRowState(int(idx), json.loads(value), state, int(attempts), session,
                              json.loads(result) if result else None, holder)
                for idx, value, state, attempts, session, result, holder in found]

    def delete(self) -> None:
        """The run's definition and rows (its sessions go with the run's record)."""
        with self._transaction() as rows:
            rows.execute("DELETE FROM batch_rows WHERE run_id = ?", (self.run_id,))
            rows.execute("DELETE FROM batch_runs WHERE id = ?", (self.run_id,))
