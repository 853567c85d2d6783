"""The SQLite session database's tables and the statements that write one row each —
shared by the store's own connection and the connection of each session's writer thread
(:class:`SqliteRows`), so both write rows the same way.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Literal

if TYPE_CHECKING:
    from ..blobs import BlobFiles, EncodedMessage

__all__ = ["SCHEMA", "SqliteRows", "decode_text", "migrate", "put_draft", "put_message",
           "put_session", "put_view", "read_session_row", "row_text", "session_exists"]

SCHEMA = """
CREATE TABLE IF NOT EXISTS sessions (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL,
    updated_at REAL NOT NULL
);
CREATE TABLE IF NOT EXISTS messages (
    session_id TEXT NOT NULL,
    seq INTEGER NOT NULL,
    id TEXT NOT NULL,
    data TEXT NOT NULL,
    PRIMARY KEY (session_id, seq)
);
CREATE UNIQUE INDEX IF NOT EXISTS messages_by_id ON messages (session_id, id);
CREATE TABLE IF NOT EXISTS drafts (
    session_id TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS views (
    session_id TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_runs (
    id TEXT PRIMARY KEY,
    data TEXT NOT NULL
);
CREATE TABLE IF NOT EXISTS batch_rows (
    run_id TEXT NOT NULL,
    idx INTEGER NOT NULL,
    input TEXT NOT NULL,
    state TEXT NOT NULL,
    attempts INTEGER NOT NULL DEFAULT 0,
    lease_owner TEXT,
    lease_until REAL,
    session_id TEXT,
    result TEXT,
    PRIMARY KEY (run_id, idx)
);
CREATE INDEX IF NOT EXISTS batch_rows_by_state ON batch_rows (run_id, state, idx);
"""



def decode_text(data: bytes) -> str:
    """The text of a TEXT column, whatever bytes a hand edit or a bad disk left in it."""
    return data.decode("utf-8", errors="replace")


def row_text(data: str | bytes) -> str:
    """A row's JSON as text: TEXT columns are decoded by the connection, a BLOB here."""
    return decode_text(data) if isinstance(data, bytes) else data



class SqliteRows:
    """:class:`~neta_nb.store.database.Rows` on one SQLite connection."""

    dialect: Literal["sqlite"] = "sqlite"

    def __init__(self, db: sqlite3.Connection, blobs: BlobFiles) -> None:
        self.db, self._blobs = db, blobs

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return self.db.execute(sql, params).fetchall()

    def put_session(self, session_id: str, data: str, updated_at: float,
                    parent_id: str | None, user: str | None) -> None:
        put_session(self.db, session_id, data, updated_at, parent_id)

    def put_message(self, session_id: str, message_id: str, data: str) -> None:
        put_message(self.db, session_id, message_id, data)

    def put_draft(self, session_id: str, data: str | None) -> None:
        put_draft(self.db, session_id, data)

    def put_view(self, session_id: str, data: str) -> None:
        put_view(self.db, session_id, data)

    def read_session(self, session_id: str) -> str | None:
        return read_session_row(self.db, session_id)

    def session_exists(self, session_id: str) -> bool:
        return session_exists(self.db, session_id)

    def ensure_blobs(self, session_id: str, encoded: EncodedMessage) -> None:
        self._blobs.ensure(encoded)

    def delete_messages(self, session_id: str, message_ids: Sequence[str]) -> None:
        # A file stays while any row names it (delete_session checks): nothing to drop.
        ids = list(message_ids)
        for start in range(0, len(ids), 500):  # under SQLite's bound on parameters
            chunk = ids[start:start + 500]
            marks = ", ".join("?" * len(chunk))
            self.db.execute(f"DELETE FROM messages WHERE session_id = ? AND id IN ({marks})",
                            (session_id, *chunk))


def put_session(db: sqlite3.Connection, session_id: str, data: str, updated_at: float,
                parent_id: str | None = None) -> None:
    db.execute("INSERT OR REPLACE INTO sessions (id, data, updated_at, parent_id) "
               "VALUES (?, ?, ?, ?)", (session_id, data, updated_at, parent_id))


def migrate(db: sqlite3.Connection) -> None:
    """Bring a database written by an older version up to date, once (under the write
    lock, so two kernels opening it at the same time do not both alter it).

    * ``sessions.parent_id`` (sub-agent sessions, issue 15): the column the session list
      filters and counts children by; filled from the records, which carry it too."""
    if "parent_id" in _columns(db, "sessions"):
        return
    db.execute("BEGIN IMMEDIATE")
    try:
        if "parent_id" not in _columns(db, "sessions"):
            db.execute("ALTER TABLE sessions ADD COLUMN parent_id TEXT")
            db.execute("UPDATE sessions SET parent_id = CASE WHEN json_valid(data) "
                       "THEN json_extract(data, '$.parent_id') END")
        db.execute("CREATE INDEX IF NOT EXISTS sessions_by_parent ON sessions (parent_id)")
    except BaseException:
        db.execute("ROLLBACK")
        raise
    db.execute("COMMIT")


def _columns(db: sqlite3.Connection, table: str) -> set[str]:
    return {str(row[1]) for row in db.execute(f"PRAGMA table_info({table})")}


def read_session_row(db: sqlite3.Connection, session_id: str) -> str | None:
    row = db.execute("SELECT data FROM sessions WHERE id = ?", (session_id,)).fetchone()
    return None if row is None else row_text(row[0])


def session_exists(db: sqlite3.Connection, session_id: str) -> bool:
    return db.execute("SELECT 1 FROM sessions WHERE id = ?", (session_id,)).fetchone() is not None


def put_message(db: sqlite3.Connection, session_id: str, message_id: str, data: str) -> None:
    """Replace the stored message ``message_id`` in place, or add it at the end."""
    updated = db.execute("UPDATE messages SET data = ? WHERE session_id = ? AND id = ?",
                         (data, session_id, message_id)).rowcount
    if not updated:
        db.execute(
            "INSERT INTO messages (session_id, seq, id, data) VALUES (?, "
            "(SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = ?),"
            " ?, ?)", (session_id, session_id, message_id, data))


def put_draft(db: sqlite3.Connection, session_id: str, data: str | None) -> None:
    """Replace the session's draft (``None``: remove it)."""
    if data is None:
        db.execute("DELETE FROM drafts WHERE session_id = ?", (session_id,))
    else:
        db.execute("INSERT OR REPLACE INTO drafts (session_id, data) VALUES (?, ?)",
                   (session_id, data))


def put_view(db: sqlite3.Connection, session_id: str, data: str) -> None:
    db.execute("INSERT OR REPLACE INTO views (session_id, data) VALUES (?, ?)",
               (session_id, data))
