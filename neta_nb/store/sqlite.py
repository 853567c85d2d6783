"""SessionStore: SQLite persistence of sessions and their messages (DESIGN §6).

One database file (WAL mode) holds every session of a user. Messages are written at each
message boundary; the assistant message being streamed is checkpointed as a *draft* a
few times a second, so a kernel that dies mid-turn loses at most the last fraction of a
second, and :meth:`AgentSession.resume` turns the draft into a message marked
``interrupted="killed"``.

Rows are JSON documents validated on read. A row that no longer validates (a corrupt
write, a hand edit) is skipped with a warning instead of making the session unreadable.
"""

from __future__ import annotations

import logging
import sqlite3
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from ..messages import Message
from .blobs import BlobFiles
from .records import CompactedView, CompactionRecord, SessionRecord, automatic_title
from .rows import (
    SCHEMA,
    decode_text,
    migrate,
    put_draft,
    put_message,
    put_session,
    put_view,
    read_session_row,
    row_text,
)
from .turn_claims import TurnClaim
from .writer import writers_of

log = logging.getLogger(__name__)

__all__ = ["UNREADABLE_MESSAGE", "WRITER_BUSY_TIMEOUT", "CompactedView", "CompactionRecord",
           "SessionRecord", "SessionStore", "WriterConnection", "default_store_path"]

UNREADABLE_MESSAGE = "This message could not be read from the store (its row is damaged)."


def default_store_path() -> Path:
    """The per-user default: ``$NETA_NB_HOME/sessions.sqlite3`` if set, else the
    platform's user data directory."""
    import os

    home = os.environ.get("NETA_NB_HOME")
    base = Path(home) if home else Path(platformdirs.user_data_dir("neta_nb", appauthor=False))
    return base / "sessions.sqlite3"


DELETE_FLUSH_LIMIT = 5.0
"""Seconds a deletion waits for this process's pending writes of the session."""
BUSY_TIMEOUT_MS = 5000
"""How long the store's own writes (delete, save from outside a session) wait on another
connection's lock before failing."""

WRITER_BUSY_TIMEOUT = 0.1
"""Seconds one attempt of a session's writer waits on another connection's lock. The
writer retries for as long as it takes, off the kernel's loop; short attempts only let
the session say promptly that it is behind."""


@dataclass
class WriterConnection:
    """The connection a session's writer thread writes with, and what guards it."""

    db: sqlite3.Connection
    guard: AbstractContextManager[Any]
    shared: bool
    """The store's own connection (an in-memory store has no second one)."""

    def close(self) -> None:
        if not self.shared:
            self.db.close()


class SessionStore:
    """SQLite-backed store. Safe to share between sessions of one process; every call is
    serialised by a lock, and each write is its own transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        self.path = Path(path) if path is not None else default_store_path()
        if str(self.path) != ":memory:":
            self.path.parent.mkdir(parents=True, exist_ok=True)
        self._lock = threading.RLock()
        self._db = sqlite3.connect(str(self.path), check_same_thread=False,
                                   isolation_level=None, timeout=BUSY_TIMEOUT_MS / 1000)
        # A row whose text is not valid UTF-8 (a hand edit, a bad disk) would otherwise
        # fail the whole query — every session of the list, every message of a resume.
        self._db.text_factory = decode_text
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=NORMAL")
        self._db.executescript(SCHEMA)
        migrate(self._db)
        self.blobs = BlobFiles(None if str(self.path) == ":memory:"
                               else self.path.with_name(self.path.name + ".blobs"))
        """Where large images and documents of messages are kept (see
        :mod:`neta_nb.store.blobs`)."""
        self._listeners: list[Callable[[str], None]] = []
        self.warnings: list[str] = []
        """Problems met while reading (corrupt rows skipped), newest last."""

    def writer_connection(self) -> WriterConnection:
        """A connection of its own for a writer thread: its statements never wait on
        this store's lock, and the loop's reads never wait on its writes (WAL)."""
        if str(self.path) == ":memory:":
            return WriterConnection(self._db, self._lock, shared=True)
        # mode=rw: a store file deleted under the session is an error to report, not an
        # empty database to create and write half a session into.
        db = sqlite3.connect(f"{self.path.resolve().as_uri()}?mode=rw", uri=True,
                             timeout=WRITER_BUSY_TIMEOUT, check_same_thread=False,
                             isolation_level=None)
        db.text_factory = decode_text
        db.execute("PRAGMA synchronous=NORMAL")
        return WriterConnection(db, nullcontext(), shared=False)

    # --- change notification ---------------------------------------------------------
    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(session_id)`` after any change to a session or its messages
        (the session list follows the store this way)."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def notify_changed(self, session_id: str) -> None:
        """Tell the listeners that ``session_id`` changed (a writer that wrote it with a
        connection of its own calls this)."""
        self._changed(session_id)

    def _changed(self, session_id: str) -> None:
        for listener in list(self._listeners):
            listener(session_id)

    @contextmanager
    def _transaction(self, *, immediate: bool = False) -> Iterator[sqlite3.Connection]:
        with self._lock:
            self._db.execute("BEGIN IMMEDIATE" if immediate else "BEGIN")
            try:
                yield self._db
            except BaseException:
                self._db.execute("ROLLBACK")
                raise
            self._db.execute("COMMIT")

    # --- sessions ---------------------------------------------------------------------
    def save_session(self, record: SessionRecord) -> None:
        """Insert or replace a session's record."""
        with self._transaction() as db:
            put_session(db, record.id, record.model_dump_json(), record.updated_at,
                        record.parent_id)
        self._changed(record.id)

    def update_session(self, session_id: str, **fields: Any) -> SessionRecord:
        """Change some fields of a session's record (``updated_at`` is refreshed)."""
        with self._lock:
            record = self.get_session(session_id)
            if record is None:
                raise KeyError(f"no session {session_id!r} in {self.path}")
            record = record.model_copy(update={**fields, "updated_at": time.time()})
            self.save_session(record)
        return record

    def rename_session(self, session_id: str, title: str | None) -> SessionRecord:
        """Give a session the user's title, kept whenever the session is saved again;
        ``None`` or blank: back to the automatic one (its first prompt). ``KeyError``
        for a session the store does not have."""
        text = " ".join((title or "").split())[:TITLE_CHARS]
        if text:
            return self.update_session(session_id, title=text, title_by_user=True)
        return self.update_session(session_id, title_by_user=False,
                                   title=automatic_title(self.load_messages(session_id)))

    def search_sessions(self, query: str, *, limit: int = 50) -> list[SessionRecord]:
        """Top-level sessions whose title or messages contain ``query`` (case-insensitive
        for ASCII letters; every word of it, anywhere), most recently updated first, at
        most ``limit``. A blank query lists the sessions as :meth:`list_sessions`."""
        words = query.split()
        if not words:
            return self.list_sessions(limit)
        clauses, params = [], []
        for word in words[:8]:
            pattern = "%" + _escape_like(word) + "%"
            clauses.append(
                "(json_extract(data, '$.title') LIKE ? ESCAPE '\\' OR EXISTS ("
                "SELECT 1 FROM messages WHERE messages.session_id = sessions.id "
                # A cheap scan of the JSON first, then only its texts: never a key or an
                # id ("role", "m_…") matching.
                "AND messages.data LIKE ? ESCAPE '\\' AND EXISTS (SELECT 1 FROM "
                "json_tree(messages.data) AS node WHERE node.key = 'text' "
                "AND node.value LIKE ? ESCAPE '\\')))")
            params += [pattern, pattern, pattern]
        sql = ("SELECT id, data, (SELECT COUNT(*) FROM sessions AS child "
               "WHERE child.parent_id = sessions.id) FROM sessions "
               "WHERE parent_id IS NULL AND " + " AND ".join(clauses)
               + " ORDER BY updated_at DESC LIMIT ?")
        with self._lock:
            rows = self._db.execute(sql, (*params, max(1, limit))).fetchall()
        return self._records(rows)

    def get_session(self, session_id: str) -> SessionRecord | None:
        with self._lock:
            data = read_session_row(self._db, session_id)
            children = self._db.execute("SELECT COUNT(*) FROM sessions WHERE parent_id = ?",
                                        (session_id,)).fetchone()[0] if data else 0
        if data is None:
            return None
        try:
            record = SessionRecord.model_validate_json(data)
        except ValidationError as exc:
            self._warn(f"session {session_id}: unreadable record skipped ({_first_error(exc)})")
            return None
        record.child_count = int(children)
        return self._settle_owner(record)

    def list_sessions(self, limit: int | None = None) -> list[SessionRecord]:
        """Top-level sessions (not sub-agents' own), most recently updated first, each
        with :attr:`SessionRecord.child_count`. Unreadable records are skipped."""
        query = ("SELECT id, data, (SELECT COUNT(*) FROM sessions AS child "
                 "WHERE child.parent_id = sessions.id) FROM sessions "
                 "WHERE parent_id IS NULL ORDER BY updated_at DESC")
        with self._lock:
            rows = self._db.execute(query + (" LIMIT ?" if limit else ""),
                                    (limit,) if limit else ()).fetchall()
        return self._records(rows)

    def list_children(self, session_id: str) -> list[SessionRecord]:
        """The sub-agent sessions ``session_id`` ran, oldest first, each with its own
        :attr:`SessionRecord.child_count`."""
        query = ("SELECT id, data, (SELECT COUNT(*) FROM sessions AS child "
                 "WHERE child.parent_id = sessions.id) FROM sessions "
                 "WHERE parent_id = ?")
        with self._lock:
            rows = self._db.execute(query, (session_id,)).fetchall()
        return sorted(self._records(rows), key=lambda record: record.created_at)

    def _records(self, rows: list[Any]) -> list[SessionRecord]:
        records = []
        for session_id, data, children in rows:
            try:
                record = SessionRecord.model_validate_json(row_text(data))
            except ValidationError as exc:
                self._warn(f"session {session_id}: unreadable record skipped "
                           f"({_first_error(exc)})")
                continue
            record.child_count = int(children)
            records.append(self._settle_owner(record))
        return records

    def _settle_owner(self, record: SessionRecord) -> SessionRecord:
        """A running record whose owner died is no longer running; that is written back
        the first time anyone reads it (the sidebar, ``resume``), so the session list
        never shows a dead kernel's turn as running."""
        if not record.running or record.owner is None or record.owner.is_alive():
            return record
        settled = record.model_copy(update={"running": False, "owner": None,
                                            "owner_died": True})
        # Written back only if the store is free right now: a reader (the sidebar) never
        # waits on another program's lock for it; the next read settles it again.
        with self._lock:
            self._db.execute("PRAGMA busy_timeout = 0")
            try:
                with self._transaction() as db:
                    db.execute("UPDATE sessions SET data = ? WHERE id = ?",
                               (settled.model_dump_json(), record.id))
            except sqlite3.OperationalError as exc:
                log.info("session %s: its dead owner is settled on the next read (%s)",
                         record.id, exc)
            finally:
                self._db.execute(f"PRAGMA busy_timeout = {BUSY_TIMEOUT_MS}")
        return settled

    def delete_session(self, session_id: str) -> None:
        """Delete a session and the sub-agent sessions it ran (theirs too), and the blob
        files no other session uses. Raises :class:`SessionBusyError`, deleting nothing,
        while a turn of the session or of one of its sub-agents runs in a live process
        (this one included): stop the turn first. A session object that is still open
        (idle here, or in another kernel) stores nothing more of it afterwards."""
        tree = self._session_tree(session_id)
        for doomed in tree:
            self._check_idle(doomed)
        for doomed in reversed(tree):  # children first: a parent never outlives them
            self._delete_one(doomed)

    def _session_tree(self, session_id: str) -> list[str]:
        """The session and every sub-agent session under it (a damaged store's cycle of
        parent links included only once)."""
        tree, queue = [session_id], [session_id]
        while queue:
            with self._lock:
                children = [row[0] for row in self._db.execute(
                    "SELECT id FROM sessions WHERE parent_id = ?", (queue.pop(),)).fetchall()]
            fresh = [child for child in children if child not in tree]
            tree += fresh
            queue += fresh
        return tree

    def _check_idle(self, session_id: str) -> None:
        # This process's own writes of it first: a turn that just started may not have
        # stored its running flag yet (where no turn claim can be made, e.g. in memory).
        for writer in writers_of(self, session_id):
            writer.flush(DELETE_FLUSH_LIMIT)
        TurnClaim.check(self.path, session_id, action="delete")
        record = self.get_session(session_id)  # a dead owner's turn is settled here
        if record is not None and record.running and record.owner is not None:
            record.owner.check_not_busy(session_id, action="delete")

    def _delete_one(self, session_id: str) -> None:
        # The reads stay outside the deleting transaction: a transaction that reads first
        # and then writes fails at once ("database is locked") when another connection
        # writes meanwhile, instead of waiting its turn.
        referenced = self._blob_references(session_id)
        # Immediate: the write lock from the start, so the check of which files are still
        # named and their unlinking happen while no other store can write a row naming
        # one of them (see blobs.py); waiting for the lock is the connection's timeout.
        with self._transaction(immediate=True) as db:
            for table in ("sessions", "drafts", "views"):
                key = "id" if table == "sessions" else "session_id"
                db.execute(f"DELETE FROM {table} WHERE {key} = ?", (session_id,))
            db.execute("DELETE FROM messages WHERE session_id = ?", (session_id,))
            unused = [digest for digest in referenced if not any(
                db.execute(f"SELECT 1 FROM {table} WHERE instr(data, ?) > 0 LIMIT 1",
                           (digest,)).fetchone() for table in ("messages", "drafts"))]
            self.blobs.remove(unused)
        self._changed(session_id)

    def _blob_references(self, session_id: str) -> set[str]:
        if self.blobs.directory is None:
            return set()
        with self._lock:
            rows = [row[0] for table in ("messages", "drafts") for row in self._db.execute(
                f"SELECT data FROM {table} WHERE session_id = ?", (session_id,)).fetchall()]
        return self.blobs.referenced(rows)

    # --- messages ---------------------------------------------------------------------
    def append_message(self, session_id: str, message: Message) -> None:
        """Add a message at the end of a session's history; a message whose id is already
        stored is replaced in place (metadata updates after tool runs)."""
        encoded = self.blobs.encode(message)
        with self._transaction() as db:
            put_message(db, session_id, message.id, encoded.json)
            self.blobs.ensure(encoded)
        self._changed(session_id)

    def load_messages(self, session_id: str, *, offset: int = 0,
                      limit: int | None = None) -> list[Message]:
        """A session's messages in order (a window when ``offset``/``limit`` are given).
        Rows that fail validation are skipped and reported in :attr:`warnings`."""
        with self._lock:
            rows = self._db.execute(
                "SELECT seq, data FROM messages WHERE session_id = ? ORDER BY seq "
                "LIMIT ? OFFSET ?", (session_id, -1 if limit is None else limit, offset)
            ).fetchall()
        messages = []
        for seq, data in rows:
            try:
                messages.append(self.blobs.restore(Message.model_validate_json(row_text(data))))
            except ValidationError as exc:
                # Shown where it was (an empty message carrying the error: it never goes
                # to the model), not dropped without a trace.
                self._warn(f"session {session_id}: message #{seq} is unreadable "
                           f"({_first_error(exc)})")
                placeholder = Message.assistant([], error=UNREADABLE_MESSAGE)
                placeholder.id = f"m_unreadable_{seq}"
                messages.append(placeholder)
        return messages

    def count_messages(self, session_id: str) -> int:
        with self._lock:
            row = self._db.execute("SELECT COUNT(*) FROM messages WHERE session_id = ?",
                                   (session_id,)).fetchone()
        return int(row[0])

    # --- the streaming draft ----------------------------------------------------------
    def save_draft(self, session_id: str, message: Message) -> None:
        """Checkpoint the assistant message being streamed (replaced on each call)."""
        encoded = self.blobs.encode(message)
        with self._transaction() as db:
            put_draft(db, session_id, encoded.json)
            self.blobs.ensure(encoded)

    def take_draft(self, session_id: str) -> Message | None:
        """Remove and return the draft left by a turn that never finished, if any."""
        draft = self.load_draft(session_id)
        self.clear_draft(session_id)
        return draft

    def load_draft(self, session_id: str) -> Message | None:
        """The draft left by a turn that never finished, if any (read only)."""
        with self._lock:
            row = self._db.execute("SELECT data FROM drafts WHERE session_id = ?",
                                   (session_id,)).fetchone()
        if row is None:
            return None
        try:
            return self.blobs.restore(Message.model_validate_json(row_text(row[0])))
        except ValidationError as exc:
            self._warn(f"session {session_id}: unreadable draft dropped ({_first_error(exc)})")
            return None

    def clear_draft(self, session_id: str) -> None:
        with self._transaction() as db:
            put_draft(db, session_id, None)

    # --- the compacted view -----------------------------------------------------------
    def save_view(self, session_id: str, view: CompactedView) -> None:
        """Store what the model sees after compaction; the full history stays in
        ``messages``."""
        with self._transaction() as db:
            put_view(db, session_id, view.model_dump_json())
        self._changed(session_id)

    def load_view(self, session_id: str) -> CompactedView | None:
        with self._lock:
            row = self._db.execute("SELECT data FROM views WHERE session_id = ?",
                                   (session_id,)).fetchone()
        if row is None:
            return None
        try:
            return CompactedView.model_validate_json(row_text(row[0]))
        except ValidationError as exc:
            self._warn(f"session {session_id}: unreadable compacted view ignored "
                       f"({_first_error(exc)}); the model will see the full history")
            return None

    # --- housekeeping -----------------------------------------------------------------
    def _warn(self, text: str) -> None:
        self.warnings.append(text)

    def close(self) -> None:
        with self._lock:
            self._db.close()

    def __repr__(self) -> str:
        return f"SessionStore({str(self.path)!r})"


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    return errors[0]["msg"] if errors else str(exc)


TITLE_CHARS = 200
"""The longest title a user can give a session."""


def _escape_like(text: str) -> str:
    """``text`` matched literally by LIKE (``%``, ``_`` and the escape itself escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
