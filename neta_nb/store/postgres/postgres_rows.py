"""The PostgreSQL store's statements: :class:`PostgresRows` (the row writes of one
transaction), :class:`PostgresWriterConnection` (what a session's writer thread writes
with) and :func:`failure_of` (a failure, by SQLSTATE, as the codes the chat view shows).
"""

from __future__ import annotations

import contextlib
import hashlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, Literal

import psycopg
import psycopg_pool

from ..blobs import BlobTable, EncodedMessage
from ..database import Rows, StoreFailure
from .postgres_notify import CHANNEL, notification

__all__ = ["PostgresRows", "PostgresWriterConnection", "drop_unreferenced_blobs", "failure_of",
           "write_key"]

WRITER_LOCK_TIMEOUT_MS = 100
"""How long one attempt of a session's writer waits on a lock another program holds (a
``LOCK TABLE``, a long migration); the writer retries, off the kernel's loop, and says
promptly that it is behind (as on SQLite)."""


def write_key(session_id: str) -> int:
    """The advisory lock a write of the session holds for its transaction."""
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=8,
                             person=b"write".ljust(16, b"\0")).digest()
    return int.from_bytes(digest, "big", signed=True)


class PostgresRows:
    """:class:`~neta_nb.store.database.Rows` on one connection, inside its transaction."""

    dialect: Literal["postgresql"] = "postgresql"

    def __init__(self, conn: psycopg.Connection[Any], token: str) -> None:
        self.conn = conn
        self._token = token

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        cursor = self.conn.execute(sql.replace("?", "%s"), params)
        return cursor.fetchall() if cursor.description is not None else []

    def put_session(self, session_id: str, data: str, updated_at: float,
                    parent_id: str | None, user: str | None) -> None:
        self.conn.execute(
            "INSERT INTO sessions (id, data, updated_at, parent_id, user_name) "
            "VALUES (%s, %s, %s, %s, %s) ON CONFLICT (id) DO UPDATE SET "
            "data = EXCLUDED.data, updated_at = EXCLUDED.updated_at, "
            "parent_id = EXCLUDED.parent_id, "
            "user_name = COALESCE(sessions.user_name, EXCLUDED.user_name)",
            (session_id, data, updated_at, parent_id, user))

    def put_message(self, session_id: str, message_id: str, data: str) -> None:
        # The transaction holds the session's write lock: no other writer appends to
        # it between the two statements.
        updated = self.conn.execute(
            "UPDATE messages SET data = %s WHERE session_id = %s AND id = %s",
            (data, session_id, message_id)).rowcount
        if not updated:
            self.conn.execute(
                "INSERT INTO messages (session_id, seq, id, data) VALUES (%s, "
                "(SELECT COALESCE(MAX(seq), -1) + 1 FROM messages WHERE session_id = %s),"
                " %s, %s)", (session_id, session_id, message_id, data))

    def put_draft(self, session_id: str, data: str | None) -> None:
        if data is None:
            self.conn.execute("DELETE FROM drafts WHERE session_id = %s", (session_id,))
        else:
            self.conn.execute("INSERT INTO drafts (session_id, data) VALUES (%s, %s) "
                              "ON CONFLICT (session_id) DO UPDATE SET data = EXCLUDED.data",
                              (session_id, data))

    def put_view(self, session_id: str, data: str) -> None:
        self.conn.execute("INSERT INTO views (session_id, data) VALUES (%s, %s) "
                          "ON CONFLICT (session_id) DO UPDATE SET data = EXCLUDED.data",
                          (session_id, data))

    def read_session(self, session_id: str) -> str | None:
        row = self.conn.execute("SELECT data FROM sessions WHERE id = %s",
                                (session_id,)).fetchone()
        return None if row is None else str(row[0])

    def session_exists(self, session_id: str) -> bool:
        return self.conn.execute("SELECT 1 FROM sessions WHERE id = %s",
                                 (session_id,)).fetchone() is not None

    def ensure_blobs(self, session_id: str, encoded: EncodedMessage) -> None:
        if not encoded.files:
            return
        digests = sorted(encoded.files)
        # A share lock on each blob that is there (a deletion locks them for update and
        # waits for this transaction); only the missing ones travel to the server.
        present = {row[0] for row in self.conn.execute(
            "SELECT sha256 FROM blobs WHERE sha256 = ANY(%s) FOR KEY SHARE",
            (digests,)).fetchall()}
        for digest in digests:
            if digest not in present:
                self.conn.execute("INSERT INTO blobs (sha256, data) VALUES (%s, %s) "
                                  "ON CONFLICT (sha256) DO NOTHING",
                                  (digest, BlobTable.decoded(encoded.files[digest])))
        self.conn.execute("INSERT INTO blob_refs (session_id, sha256) "
                          "SELECT %s, unnest(%s::text[]) ON CONFLICT DO NOTHING",
                          (session_id, digests))

    def delete_messages(self, session_id: str, message_ids: Sequence[str]) -> None:
        deleted = self.conn.execute(
            "DELETE FROM messages WHERE session_id = %s AND id = ANY(%s) RETURNING data",
            (session_id, list(message_ids))).fetchall()
        # The blobs only those messages named are no longer the session's (the branch
        # holding copies holds its own references); one nobody holds any more goes. Only
        # what the deleted rows name is looked for in the rest (a rewind stays cheap in a
        # long session).
        named = sorted(BlobTable.referenced(row[0] for row in deleted))
        if not named:
            return
        drop_unreferenced_blobs(self.conn, [row[0] for row in self.conn.execute(
            "DELETE FROM blob_refs r WHERE r.session_id = %s AND r.sha256 = ANY(%s)"
            " AND NOT EXISTS (SELECT 1 FROM messages m WHERE m.session_id = r.session_id"
            "                 AND strpos(m.data, r.sha256) > 0)"
            " AND NOT EXISTS (SELECT 1 FROM drafts d WHERE d.session_id = r.session_id"
            "                 AND strpos(d.data, r.sha256) > 0)"
            " RETURNING sha256", (session_id, named)).fetchall()])

    def notify(self, session_id: str) -> None:
        """Tell other processes' listeners, when this transaction commits."""
        self.conn.execute("SELECT pg_notify(%s, %s)",
                          (CHANNEL, notification(self._token, session_id)))


def drop_unreferenced_blobs(conn: psycopg.Connection[Any], digests: list[str]) -> None:
    """Delete those of these blobs no session references any more. Locked first: a
    writer naming one of them meanwhile (its ``ensure_blobs`` holds a share lock on the
    blob) is waited for, and then seen."""
    if not digests:
        return
    conn.execute("SELECT 1 FROM blobs WHERE sha256 = ANY(%s) FOR UPDATE", (digests,))
    conn.execute("DELETE FROM blobs WHERE sha256 = ANY(%s) AND NOT EXISTS "
                 "(SELECT 1 FROM blob_refs WHERE blob_refs.sha256 = blobs.sha256)",
                 (digests,))


class PostgresWriterConnection:
    """What one session's writer thread writes with: a connection from the pool per
    write, so idle sessions hold none."""

    def __init__(self, pool: psycopg_pool.ConnectionPool[Any], url: str, token: str) -> None:
        self._pool = pool
        self._url = url
        self._token = token

    def transact(self, batch: Sequence[tuple[str, Sequence[Callable[[Rows], None]]]], *,
                 durable: bool = True) -> list[list[BaseException | None]]:
        # Sessions in the order of their lock keys: two processes storing the same
        # sessions take their locks in the same order, and never deadlock.
        order = sorted(range(len(batch)), key=lambda i: write_key(batch[i][0]))
        outcomes: list[list[BaseException | None]] = [[] for _ in batch]
        with self._connection() as conn, conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = {int(WRITER_LOCK_TIMEOUT_MS)}")
            if not durable:
                conn.execute("SET LOCAL synchronous_commit = off")
            rows = PostgresRows(conn, self._token)
            for index in order:
                session_id, applies = batch[index]
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (write_key(session_id),))
                for apply in applies:
                    try:
                        with conn.transaction():  # a savepoint
                            apply(rows)
                    except Exception as exc:
                        if failure_of(exc) is not None:
                            raise
                        outcomes[index].append(exc)
                    else:
                        outcomes[index].append(None)
                if durable:  # a batch of streaming drafts alone is not announced
                    rows.notify(session_id)
        return outcomes

    @contextlib.contextmanager
    def _connection(self) -> Iterator[psycopg.Connection[Any]]:
        pool = self._pool
        if not pool.closed:
            with pool.connection() as conn:
                yield conn
            return
        # The store was closed while sessions of it still write (as a SQLite store's
        # writers keep their own connections): a connection for this write alone.
        with psycopg.connect(self._url, autocommit=True) as conn:
            yield conn

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        return failure_of(exc)

    def close(self) -> None:
        pass  # the pool's connections are the pool's


_LOCKED = {"55P03", "40P01", "40001", "57014"}
"""lock_not_available, deadlock_detected, serialization_failure, query_canceled (a
statement or lock timeout)."""
_MISSING = {"3D000", "42P01"}
_NEVER = {"22", "23", "54"}
"""SQLSTATE classes no retry mends: data exception, integrity constraint, program limit
exceeded (an index row too large)."""
"""invalid_catalog_name (the database was dropped), undefined_table."""


def failure_of(exc: Exception) -> StoreFailure | None:
    """Why a write failed, by SQLSTATE, with the codes the chat view shows for SQLite;
    ``None`` for a write that no retry can mend (it is dropped, and logged)."""
    if isinstance(exc, psycopg_pool.PoolClosed):
        return None
    if isinstance(exc, psycopg_pool.PoolTimeout):
        return StoreFailure("error", f"the database server cannot be reached ({exc})")
    if not isinstance(exc, psycopg.Error):
        return None
    state = exc.sqlstate or ""
    text = str(exc).strip() or type(exc).__name__
    if state == "53100":
        return StoreFailure("disk_full", text)
    if state in _LOCKED:
        return StoreFailure("locked", text)
    if state in _MISSING:
        return StoreFailure("missing", text)
    if state[:2] in _NEVER or isinstance(exc, (psycopg.DataError, psycopg.IntegrityError,
                                                psycopg.ProgrammingError)):
        return None  # the write itself is wrong (too long, invalid, a bug): never retried
    if isinstance(exc, psycopg.OperationalError) or state[:2] in ("08", "57", "53", "58"):
        return StoreFailure("error", f"the connection to the database server failed ({text})")
    return StoreFailure("error", text)
