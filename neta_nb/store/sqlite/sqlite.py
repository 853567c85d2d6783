"""The SQLite database of a :class:`~neta_nb.store.session_store.SessionStore`: one file
(WAL mode) per user, blobs in a folder beside it, turn claims as ``flock`` files beside it
(:mod:`neta_nb.store.sqlite.turn_claims`). A write takes the database-wide write lock
(``BEGIN IMMEDIATE``), so a read-then-write never deadlocks against another writer.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager, contextmanager, nullcontext, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..blobs import BlobFiles, EncodedMessage
from ..bounded_calls import BoundedThreads
from ..database import Action, Database, Rows, SessionRow, StoreFailure, escape_like
from .rows import SCHEMA, SqliteRows, decode_text, migrate, read_session_row, row_text
from .turn_claims import TurnClaim

if TYPE_CHECKING:
    from ...messages import Message
    from ..records import SessionRecord

__all__ = ["BUSY_TIMEOUT_MS", "WRITER_BUSY_TIMEOUT", "SqliteDatabase"]

log = logging.getLogger(__name__)

BUSY_TIMEOUT_MS = 5000
"""How long the store's own writes (delete, save from outside a session) wait on another
connection's lock before failing."""

WRITER_BUSY_TIMEOUT = 0.1
"""Seconds one attempt of a session's writer waits on another connection's lock. The
writer retries for as long as it takes, off the kernel's loop; short attempts only let
the session say promptly that it is behind."""

_CHILDREN = ("(SELECT COUNT(*) FROM sessions AS child "
             "WHERE child.parent_id = sessions.id)")


class SqliteDatabase:
    """Sessions in one SQLite file (or in memory: ``":memory:"``). Every call on the
    store's own connection is serialised by a lock; each write is its own transaction."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self.location = str(path)
        self.shared = False
        self.calls = BoundedThreads.of("sqlite")  # files never hang: one set for all
        self.in_memory = str(path) == ":memory:"
        if not self.in_memory:
            path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(path), check_same_thread=False,
                                   isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        # A row whose text is not valid UTF-8 (a hand edit, a bad disk) would otherwise
        # fail the whole query — every session of the list, every message of a resume.
        self._db.text_factory = decode_text
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        migrate(self._db)
        self.blobs = BlobFiles(None if self.in_memory
                               else path.with_name(path.name + ".blobs"))

    # --- transactions -----------------------------------------------------------------
    @contextmanager
    def transaction(self, session_id: str | None = None, *,
                    immediate: bool = False) -> Iterator[Rows]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield SqliteRows(self._db, self.blobs)
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    def writer_connection(self) -> SqliteWriterConnection:
        """A connection of its own for a writer thread: its statements never wait on
        the store's lock, and the loop's reads never wait on its writes (WAL)."""
        if self.in_memory:
            return SqliteWriterConnection(self._db, self.blobs, self._lock, shared=True)
        # mode=rw: a store file deleted under the session is an error to report, not an
        # empty database to create and write half a session into.
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=rw", uri=True,
                             timeout=WRITER_BUSY_TIMEOUT, check_same_thread=False,
                             isolation_level=None)
        db.text_factory = decode_text
        db.execute("PRAGMA synchronous=NORMAL")
        return SqliteWriterConnection(db, self.blobs, nullcontext(), shared=False)

    # --- reads ------------------------------------------------------------------------
    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        with self._lock:
            return self._db.execute(sql, params).fetchall()

    def read_session(self, session_id: str) -> tuple[str, int] | None:
        with self._lock:
            data = read_session_row(self._db, session_id)
            if data is None:
                return None
            children = self._db.execute("SELECT COUNT(*) FROM sessions WHERE parent_id = ?",
                                        (session_id,)).fetchone()[0]
        return data, int(children)

    def session_rows(self, *, parent_id: str | None, limit: int | None,
                     users: list[str] | None) -> list[SessionRow]:
        if parent_id is not None:
            rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions "
                             "WHERE parent_id = ?", (parent_id,))
        else:
            where, params = _users_clause(users)
            rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions "
                             f"WHERE parent_id IS NULL{where} ORDER BY updated_at DESC"
                             + (" LIMIT ?" if limit else ""),
                             (*params, limit) if limit else params)
        return [(row[0], row_text(row[1]), int(row[2])) for row in rows]

    def search_rows(self, words: list[str], *, limit: int,
                    users: list[str] | None) -> list[SessionRow]:
        clauses, params = [], []
        for word in words:
            pattern = "%" + escape_like(word) + "%"
            clauses.append(
                "(json_extract(data, '$.title') LIKE ? ESCAPE '\\' OR EXISTS ("
                "SELECT 1 FROM messages WHERE messages.session_id = sessions.id "
                # A cheap scan of the JSON first, then only its texts: never a key or an
                # id ("role", "m_…") matching.
                "AND messages.data LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM "
                "json_tree(messages.data) AS node WHERE node.key = 'text' "
                "AND node.value LIKE ? ESCAPE '\\')))")
            params += [pattern, pattern, pattern]
        where, user_params = _users_clause(users)
        rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions "
                         f"WHERE parent_id IS NULL{where} AND " + " AND ".join(clauses)
                         + " ORDER BY updated_at DESC LIMIT ?",
                         (*user_params, *params, limit))
        return [(row[0], row_text(row[1]), int(row[2])) for row in rows]

    def child_ids(self, session_id: str) -> list[str]:
        return [row[0] for row in self._all("SELECT id FROM sessions WHERE parent_id = ?",
                                            (session_id,))]

    def message_rows(self, session_id: str, offset: int,
                     limit: int | None) -> list[tuple[int, str]]:
        rows = self._all("SELECT seq, data FROM messages WHERE session_id = ? ORDER BY seq "
                         "LIMIT ? OFFSET ?",
                         (session_id, -1 if limit is None else limit, offset))
        return [(int(seq), row_text(data)) for seq, data in rows]

    def count_messages(self, session_id: str) -> int:
        return int(self._all("SELECT COUNT(*) FROM messages WHERE session_id = ?",
                             (session_id,))[0][0])

    def draft_row(self, session_id: str) -> str | None:
        rows = self._all("SELECT data FROM drafts WHERE session_id = ?", (session_id,))
        return row_text(rows[0][0]) if rows else None

    def view_row(self, session_id: str) -> str | None:
        rows = self._all("SELECT data FROM views WHERE session_id = ?", (session_id,))
        return row_text(rows[0][0]) if rows else None

    # --- writes the store makes itself ------------------------------------------------
    def change(self, session_id: str, write: Callable[[Rows], None]) -> None:
        with self.transaction(session_id) as rows:  # a file: waits are its busy timeout
            write(rows)

    def delete_session(self, session_id: str) -> None:
        # The reads stay outside the deleting transaction: a transaction that reads first
        # and then writes fails at once ("database is locked") when another connection
        # writes meanwhile, instead of waiting its turn.
        referenced = self._blob_references(session_id)
        # Immediate: the write lock from the start, so the check of which files are still
        # named and their unlinking happen while no other store can write a row naming
        # one of them (see blobs.py); waiting for the lock is the connection's timeout.
        with self.transaction(immediate=True):
            db = self._db
            for table in ("sessions", "drafts", "views"):
                key = "id" if table == "sessions" else "session_id"
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (session_id,))
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            # A batch run's record: its rows go with it (its sessions are its children).
            db.execute("DELETE FROM batch_rows WHERE run_id = ?", (session_id,))
            db.execute("DELETE FROM batch_runs WHERE id = ?", (session_id,))
            unused = [digest for digest in referenced if not any(
                db.execute(f"SELECT 1 FROM {table} WHERE instr(data, ?) > 0 LIMIT 1",
                           (digest,)).fetchone() for table in ("messages", "drafts"))]
            self.blobs.remove(unused)

    def _blob_references(self, session_id: str) -> set[str]:
        if self.blobs.directory is None:
            return set()
        rows = [row[0] for table in ("messages", "drafts") for row in self._all(
            f"SELECT data FROM {table} WHERE session_id = ?", (session_id,))]
        return self.blobs.referenced(rows)

    def settle(self, session_id: str, data: str) -> None:
        # Only if the store is free right now: a reader (the sidebar) never waits on
        # another program's lock for it; the next read settles it again.
        with self._lock:
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                with self.transaction():
                    self._db.execute("UPDATE sessions SET data = ? WHERE id = ?",
                                     (data, session_id))
            except sqlite3.OperationalError as exc:
                log.info("session %s: its dead owner is settled on the next read (%s)",
                         session_id, exc)
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        return failure_of(exc)

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run a statement on the store's connection (tests and repairs)."""
        return self._all(sql, params)

    # --- blobs ----------------------------------------------------------------------------
    def encode(self, message: Message) -> EncodedMessage:
        return self.blobs.encode(message)

    def restore(self, message: Message) -> Message:
        return self.blobs.restore(message)

    # --- running turns --------------------------------------------------------------------
    def take_claim(self, session_id: str) -> TurnClaim | None:
        return TurnClaim.take(self.path, session_id)

    def check_claim(self, session_id: str, action: Action) -> None:
        TurnClaim.check(self.path, session_id, action=action)

    def owner_alive(self, record: SessionRecord) -> bool:
        return record.owner is not None and record.owner.is_alive()

    def listen(self, callback: Callable[[str], None]) -> Callable[[], None] | None:
        return None  # a file has no channel; each process's writers notify their own

    def same_database(self, other: Database) -> bool:
        # Another store of the same file, however it was named, is the same database;
        # every in-memory store is a database of its own.
        if other is self:
            return True
        if not isinstance(other, SqliteDatabase) or self.in_memory or other.in_memory:
            return False
        return self.path.resolve() == other.path.resolve()

    def close(self) -> None:
        with self._lock:
            self._db.close()


class SqliteWriterConnection:
    """The connection a session's writer thread writes with, and what guards it."""

    def __init__(self, db: sqlite3.Connection, blobs: BlobFiles,
                 guard: AbstractContextManager[Any], *, shared: bool) -> None:
        self.db, self._blobs, self._guard = db, blobs, guard
        self.shared = shared
        """The store's own connection (an in-memory store has no second one)."""

    def transact(self, batch: Sequence[tuple[str, Sequence[Callable[[Rows], None]]]], *,
                 durable: bool = True) -> list[list[BaseException | None]]:
        # BEGIN IMMEDIATE: the write lock before anything is read, so a read-then-write
        # never deadlocks against another connection.
        with self._guard:
            db = self.db
            rows = SqliteRows(db, self._blobs)
            outcomes: list[list[BaseException | None]] = []
            db.execute("BEGIN IMMEDIATE")
            try:
                for _session_id, applies in batch:
                    done: list[BaseException | None] = []
                    for apply in applies:
                        db.execute("SAVEPOINT write")
                        try:
                            apply(rows)
                        except Exception as exc:
                            if failure_of(exc) is not None:
                                raise
                            db.execute("ROLLBACK TO write")
                            done.append(exc)
                        else:
                            done.append(None)
                        db.execute("RELEASE write")
                    outcomes.append(done)
                db.execute("COMMIT")
            except BaseException:
                with suppress(sqlite3.Error):
                    db.execute("ROLLBACK")
                raise
            return outcomes

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        return failure_of(exc)

    def close(self) -> None:
        if not self.shared:
            self.db.close()


def failure_of(exc: Exception) -> StoreFailure | None:
    """Why a write failed, if a retry can mend it."""
    if isinstance(exc, (sqlite3.ProgrammingError, sqlite3.InterfaceError)):
        # The store was closed under the session, or a write is malformed: no retry can
        # mend either.
        return None
    if isinstance(exc, sqlite3.Error):
        return StoreFailure.of(exc)
    return None  # not the store's fault: retrying would block every later write


def _users_clause(users: list[str] | None) -> tuple[str, tuple[Any, ...]]:
    if users is None:
        return "", ()
    marks = ", ".join("?" for _ in users)
    user = "(CASE WHEN json_valid(data) THEN json_extract(data, '$.user') END)"
    return f" AND ({user} IS NULL OR {user} IN ({marks}))", tuple(users)
