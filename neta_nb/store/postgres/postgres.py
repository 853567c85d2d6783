"""The PostgreSQL database of a :class:`~neta_nb.store.session_store.SessionStore`: a
team's server, shared by kernels on many hosts (``neta-nb[postgres]``: psycopg 3 and its
pool).

What differs from SQLite, and why:

* **Transactions per session.** A write takes a transaction-scoped advisory lock on its
  session only, so one session's writes never wait on another's (SQLite locks the whole
  file); writes of one session stay in order.
* **A small pool.** Every writer of the process shares a few connections, so a thousand
  live sessions do not open a thousand (the server's default limit is 100). A streaming
  draft commits asynchronously (it exists to lose at most a moment); messages never.
* **Text, not JSONB.** Rows are the same JSON text as on SQLite: JSONB refuses ``\\u0000``.
* **Blobs in a table**, with a row per session that names each, so a deletion finds the
  unused ones without scanning any text.
* **Claims across hosts.** A running turn holds a session-level advisory lock on one
  connection per process (:mod:`.postgres_claims`); the server releases it the
  moment that process dies, on whatever host.
* **Other processes' changes** arrive by LISTEN/NOTIFY (:mod:`.postgres_notify`).
* **Failures** are told apart by SQLSTATE and reported with the same codes as SQLite's.
* **Bounded waits.** Reads and the store's own changes are made from the kernel's loop;
  each fails after a bound when the server hangs (:mod:`neta_nb.store.postgres.postgres_answers`;
  SQLite's file never hangs).
"""

from __future__ import annotations

import logging
import re
import socket
import uuid
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from urllib.parse import urlsplit, urlunsplit

from psycopg.conninfo import conninfo_to_dict

try:
    import psycopg
    import psycopg_pool
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("a PostgreSQL session store needs psycopg 3 and its pool: "
                      "pip install 'neta-nb[postgres]'") from exc

from ..blobs import BlobTable, EncodedMessage
from ..bounded_calls import BoundedThreads
from ..database import Action, Database, Rows, SessionRow, StoreFailure, escape_like
from ..process_owner import ProcessOwner, busy_error
from .postgres_answers import answered, read
from .postgres_claims import KEEPALIVE, ClaimsConnection, claim_key
from .postgres_notify import Listener
from .postgres_rows import (
    PostgresRows,
    PostgresWriterConnection,
    drop_unreferenced_blobs,
    failure_of,
    write_key,
)

if TYPE_CHECKING:
    from ...messages import Message
    from ..records import SessionRecord

__all__ = ["MIGRATIONS", "POOL_SIZE", "PostgresDatabase", "close_databases"]

log = logging.getLogger(__name__)

POOL_SIZE = 4
"""Connections the process's writers and reads share (``?pool_size=`` in the URL)."""
CONNECT_TIMEOUT = 5.0
"""Seconds to wait for a connection before the write is retried (the server is down)."""
STORE_LOCK_TIMEOUT_MS = 5000
"""How long the store's own writes (delete, save from outside a session) wait on one."""

MIGRATIONS: list[str] = [
    # 1: the first schema.
    """
    CREATE TABLE sessions (
        id text PRIMARY KEY,
        data text NOT NULL,
        updated_at double precision NOT NULL,
        parent_id text,
        user_name text
    );
    CREATE INDEX sessions_by_parent ON sessions (parent_id);
    CREATE INDEX sessions_top_by_update ON sessions (updated_at DESC) WHERE parent_id IS NULL;
    CREATE TABLE messages (
        session_id text NOT NULL,
        seq integer NOT NULL,
        id text NOT NULL,
        data text NOT NULL,
        PRIMARY KEY (session_id, seq),
        UNIQUE (session_id, id)
    );
    CREATE TABLE drafts (session_id text PRIMARY KEY, data text NOT NULL);
    CREATE TABLE views (session_id text PRIMARY KEY, data text NOT NULL);
    CREATE TABLE blobs (sha256 text PRIMARY KEY, data bytea NOT NULL);
    CREATE TABLE blob_refs (
        session_id text NOT NULL,
        sha256 text NOT NULL,
        PRIMARY KEY (session_id, sha256)
    );
    CREATE INDEX blob_refs_by_blob ON blob_refs (sha256);
    CREATE TABLE turn_claims (session_id text PRIMARY KEY, owner text NOT NULL);
    """,
    # 2: batch runs (neta_nb.batch): a run's definition, and its rows with their leases.
    """
    CREATE TABLE batch_runs (id text PRIMARY KEY, data text NOT NULL);
    CREATE TABLE batch_rows (
        run_id text NOT NULL,
        idx integer NOT NULL,
        input text NOT NULL,
        state text NOT NULL,
        attempts integer NOT NULL DEFAULT 0,
        lease_owner text,
        lease_until double precision,
        session_id text,
        result text,
        PRIMARY KEY (run_id, idx)
    );
    """,
    # 3: a claim finds the next queued row without walking the rows done before it.
    """
    CREATE INDEX batch_rows_by_state ON batch_rows (run_id, state, idx);
    """,
]
"""The schema, one step per version; a database is brought up to date when opened."""

_MIGRATION_LOCK = 0x6E65_7461_6D69_6772  # one key: two kernels never migrate at once

_CHILDREN = "(SELECT COUNT(*) FROM sessions AS child WHERE child.parent_id = sessions.id)"


def display_url(url: str) -> str:
    """``url`` without its password (for messages and ``repr``)."""
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = parts.netloc.rsplit("@", 1)[1]
    user = parts.username or ""
    return urlunsplit(parts._replace(netloc=f"{user}@{netloc}" if user else netloc))


class PostgresDatabase:
    """Sessions in a PostgreSQL database, through a pool of a few connections."""

    def __init__(self, url: str) -> None:
        url, pool_size = _pool_size(url)
        self.url = url
        self.location = display_url(url)
        self.shared = True
        self.calls = BoundedThreads.of(url)
        """The server's kept threads (:mod:`neta_nb.store.bounded_calls`): its reads,
        changes and claims wait on it at most a bound."""
        self.token = uuid.uuid4().hex[:16]
        """This store object, in its notifications: its own writes reach its own
        listeners directly, every other store object (in this process too) hears them."""
        try:  # the server's own answer when it refuses (no such database, a password)
            psycopg.connect(url, connect_timeout=int(CONNECT_TIMEOUT)).close()
        except psycopg.Error as exc:
            raise ConnectionError(f"cannot connect to the session store {self.location}: "
                                  f"{str(exc).strip()}") from None
        # No connection kept open while idle (min_size=0): a kernel with a store it does
        # not use costs the server nothing.
        self.pool = psycopg_pool.ConnectionPool(
            url, min_size=0, max_size=pool_size, open=True, timeout=CONNECT_TIMEOUT,
            kwargs={"autocommit": True, **KEEPALIVE}, name="neta-nb-store", max_idle=60.0,
            # A connection the server dropped while idle (a restart, a cut network) is
            # replaced before use, so no read fails for it.
            check=psycopg_pool.ConnectionPool.check_connection)
        try:
            self._migrate()
        except (psycopg.OperationalError, psycopg_pool.PoolTimeout) as exc:
            self.pool.close()
            raise ConnectionError(f"cannot connect to the session store {self.location}: "
                                  f"{exc}") from None
        except BaseException:
            self.pool.close()
            raise
        _databases.add(self)
        self._listeners: list[Listener] = []
        self.blobs = BlobTable(self._fetch_blobs)
        self.claims = ClaimsConnection.of(url)

    def _migrate(self) -> None:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            # Created only when missing: a role with no CREATE right opens a store that is
            # up to date (only a migration needs the right).
            found = conn.execute("SELECT to_regclass('neta_nb_schema')").fetchone()
            if not found or found[0] is None:
                conn.execute("CREATE TABLE neta_nb_schema (version integer NOT NULL)")
            row = conn.execute("SELECT COALESCE(MAX(version), 0) FROM neta_nb_schema").fetchone()
            version = int(row[0]) if row else 0
            if version > len(MIGRATIONS):
                raise RuntimeError(
                    f"the session store {self.location} has schema version {version}, newer "
                    f"than this neta_nb knows ({len(MIGRATIONS)}): upgrade neta-nb to use it")
            for number, step in enumerate(MIGRATIONS[version:], version + 1):
                conn.execute(step)
                conn.execute("INSERT INTO neta_nb_schema (version) VALUES (%s)", (number,))

    # --- transactions -----------------------------------------------------------------
    @contextmanager
    def transaction(self, session_id: str | None = None, *,
                    immediate: bool = False) -> Iterator[PostgresRows]:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute(f"SET LOCAL lock_timeout = {int(STORE_LOCK_TIMEOUT_MS)}")
            if session_id is not None:
                conn.execute("SELECT pg_advisory_xact_lock(%s)", (write_key(session_id),))
            rows = PostgresRows(conn, self.token)
            yield rows
            if session_id is not None:
                rows.notify(session_id)

    def writer_connection(self) -> PostgresWriterConnection:
        return PostgresWriterConnection(self.pool, self.url, self.token)

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        return failure_of(exc)

    # --- reads ------------------------------------------------------------------------
    def _all(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        return read(self.pool, self.location, self.calls,
                    lambda conn: conn.execute(sql, params).fetchall())

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        def run(conn: psycopg.Connection[Any]) -> list[Any]:
            cursor = conn.execute(sql, params)
            return cursor.fetchall() if cursor.description is not None else []

        return read(self.pool, self.location, self.calls, run)

    def read_session(self, session_id: str) -> tuple[str, int] | None:
        rows = self._all(f"SELECT data, {_CHILDREN} FROM sessions WHERE id = %s",
                         (session_id,))
        return (rows[0][0], int(rows[0][1])) if rows else None

    def session_rows(self, *, parent_id: str | None, limit: int | None,
                     users: list[str] | None) -> list[SessionRow]:
        if parent_id is not None:
            rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions "
                             "WHERE parent_id = %s", (parent_id,))
        else:
            where, params = _users_clause(users)
            rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions WHERE "
                             f"parent_id IS NULL{where} ORDER BY updated_at DESC LIMIT %s",
                             (*params, limit or None))  # as on SQLite: 0 is no limit
        return [(row[0], row[1], int(row[2])) for row in rows]

    def search_rows(self, words: list[str], *, limit: int,
                    users: list[str] | None) -> list[SessionRow]:
        clauses: list[str] = []
        params: list[Any] = []
        for word in words:
            # Matched in the rows' JSON text (a word with quotes or a backslash is matched
            # as JSON writes it); then only inside a "text" value, never a key or an id.
            escaped = _json_escaped(word)
            pattern = "%" + escape_like(escaped) + "%"
            in_text = r'"text":\s*"([^"\\]|\\.)*' + _regex_literal(escaped)
            in_title = r'"title":\s*"([^"\\]|\\.)*' + _regex_literal(escaped)
            # Case folded for ASCII letters only (``[aA]``), as SQLite's LIKE does.
            clauses.append(
                "(sessions.data ~ %s OR EXISTS (SELECT 1 FROM messages "
                "WHERE messages.session_id = sessions.id AND messages.data ILIKE %s "
                "AND messages.data ~ %s))")
            params += [in_title, pattern, in_text]
        where, user_params = _users_clause(users)
        rows = self._all(f"SELECT id, data, {_CHILDREN} FROM sessions WHERE parent_id IS NULL"
                         f"{where} AND " + " AND ".join(clauses)
                         + " ORDER BY updated_at DESC LIMIT %s",
                         (*user_params, *params, limit))
        return [(row[0], row[1], int(row[2])) for row in rows]

    def child_ids(self, session_id: str) -> list[str]:
        return [row[0] for row in self._all("SELECT id FROM sessions WHERE parent_id = %s",
                                            (session_id,))]

    def message_rows(self, session_id: str, offset: int,
                     limit: int | None) -> list[tuple[int, str]]:
        rows = self._all("SELECT seq, data FROM messages WHERE session_id = %s ORDER BY seq "
                         "LIMIT %s OFFSET %s", (session_id, limit, offset))
        return [(int(seq), data) for seq, data in rows]

    def count_messages(self, session_id: str) -> int:
        return int(self._all("SELECT COUNT(*) FROM messages WHERE session_id = %s",
                             (session_id,))[0][0])

    def draft_row(self, session_id: str) -> str | None:
        rows = self._all("SELECT data FROM drafts WHERE session_id = %s", (session_id,))
        return rows[0][0] if rows else None

    def view_row(self, session_id: str) -> str | None:
        rows = self._all("SELECT data FROM views WHERE session_id = %s", (session_id,))
        return rows[0][0] if rows else None

    # --- writes the store makes itself ------------------------------------------------
    def change(self, session_id: str, write: Callable[[Rows], None]) -> None:
        def run() -> None:
            with self.transaction(session_id) as rows:
                write(rows)

        answered(run, self.location, self.calls, change=True)

    def delete_session(self, session_id: str) -> None:
        answered(lambda: self._delete(session_id), self.location, self.calls,
                 change=True)

    def _delete(self, session_id: str) -> None:
        with self.transaction(session_id) as rows:
            conn = rows.conn
            for table, key in (("sessions", "id"), ("drafts", "session_id"),
                               ("views", "session_id"), ("messages", "session_id"),
                               ("turn_claims", "session_id"),
                               # A batch run's record: its rows go with it.
                               ("batch_rows", "run_id"), ("batch_runs", "id")):
                conn.execute(f"DELETE FROM {table} WHERE {key} = %s", (session_id,))
            drop_unreferenced_blobs(conn, [row[0] for row in conn.execute(
                "DELETE FROM blob_refs WHERE session_id = %s RETURNING sha256",
                (session_id,)).fetchall()])

    def settle(self, session_id: str, data: str) -> None:
        # Only if no write of the session is under way: a reader never waits for it; the
        # next read settles it again.
        try:
            answered(lambda: self._settle(session_id, data), self.location, self.calls,
                     change=True)
        except psycopg.Error as exc:  # answered() says a pool timeout in these words too
            log.info("session %s: its dead owner is settled on the next read (%s)",
                     session_id, exc)

    def _settle(self, session_id: str, data: str) -> None:
        with self.pool.connection() as conn, conn.transaction():
            conn.execute("SET LOCAL lock_timeout = 1")  # never wait: skip instead
            free = conn.execute("SELECT pg_try_advisory_xact_lock(%s)",
                                (write_key(session_id),)).fetchone()
            if free and free[0]:
                conn.execute("UPDATE sessions SET data = %s WHERE id = %s",
                             (data, session_id))
                PostgresRows(conn, self.token).notify(session_id)

    # --- blobs ----------------------------------------------------------------------------
    def encode(self, message: Message) -> EncodedMessage:
        return self.blobs.encode(message)

    def restore(self, message: Message) -> Message:
        return self.blobs.restore(message)

    def _fetch_blobs(self, digests: list[str]) -> dict[str, bytes]:
        rows = self._all("SELECT sha256, data FROM blobs WHERE sha256 = ANY(%s)", (digests,))
        return {digest: bytes(data) for digest, data in rows}

    # --- running turns --------------------------------------------------------------------
    def take_claim(self, session_id: str) -> Any:
        return self.claims.take(session_id)

    def check_claim(self, session_id: str, action: Action) -> None:
        if self.claims.holds(session_id):
            raise busy_error(session_id, ProcessOwner.current(), action=action)
        if self._claim_held(session_id):
            raise busy_error(session_id, self._claim_owner(session_id), action=action)

    def _claim_held(self, session_id: str) -> bool:
        """Whether any connection of the server holds the session's claim."""
        key = claim_key(session_id) & 0xFFFF_FFFF_FFFF_FFFF
        rows = self._all(
            "SELECT 1 FROM pg_locks WHERE locktype = 'advisory' AND granted "
            "AND objsubid = 1 AND classid = %s AND objid = %s "
            "AND database = (SELECT oid FROM pg_database WHERE datname = current_database())",
            (key >> 32, key & 0xFFFF_FFFF))
        return bool(rows)

    def _claim_owner(self, session_id: str) -> ProcessOwner | None:
        rows = self._all("SELECT owner FROM turn_claims WHERE session_id = %s", (session_id,))
        try:
            return ProcessOwner.model_validate_json(rows[0][0]) if rows else None
        except ValueError:
            return None

    def owner_alive(self, record: SessionRecord) -> bool:
        owner = record.owner
        if owner is None:
            return False
        if self.claims.holds(record.id) or self._claim_held(record.id):
            return True
        # No claim: its process is gone — unless it runs here and is just ending its turn
        # (the claim goes a moment before the record says so).
        return owner.host == socket.gethostname() and owner.is_alive()

    # --- other processes' changes -------------------------------------------------------
    def listen(self, callback: Callable[[str], None]) -> Callable[[], None]:
        listener = Listener.start(self.url, callback, self.token)
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)
            listener.stop()

        return stop

    def same_database(self, other: Database) -> bool:
        return isinstance(other, PostgresDatabase) and _same_server(self.url, other.url)

    def close(self) -> None:
        for listener in list(self._listeners):
            listener.stop()
        self._listeners.clear()
        self.pool.close()


_databases: weakref.WeakSet[PostgresDatabase] = weakref.WeakSet()


def close_databases(url: str) -> None:
    """Close every open store of this process on ``url`` (before the database is
    dropped), and this process's claims connection to it."""
    for database in list(_databases):
        if database.url == url:
            database.close()
    ClaimsConnection.forget(url)


def _users_clause(users: list[str] | None) -> tuple[str, tuple[Any, ...]]:
    if users is None:
        return "", ()
    return " AND (user_name IS NULL OR user_name = ANY(%s))", (users,)


def _pool_size(url: str) -> tuple[str, int]:
    """The URL without ``pool_size`` (not a libpq parameter), and that size."""
    match = re.search(r"([?&])pool_size=(\d+)&?", url)
    if match is None:
        return url, POOL_SIZE
    cleaned = url[:match.start()] + (match.group(1) if url[match.end():] else "") \
        + url[match.end():]
    return cleaned.rstrip("?&"), max(1, int(match.group(2)))


def _same_server(one: str, other: str) -> bool:
    """Whether two URLs name the same database (hosts, ports, database name; any number of
    hosts, as libpq takes them for failover)."""
    try:
        a, b = conninfo_to_dict(one), conninfo_to_dict(other)
    except psycopg.Error:
        return one == other
    def key(info: dict[str, Any]) -> tuple[str, str, str]:
        return (str(info.get("host") or ""), str(info.get("port") or "5432"),
                str(info.get("dbname") or info.get("user") or ""))
    return key(a) == key(b)


def _json_escaped(word: str) -> str:
    """``word`` as it appears inside a JSON string of a row."""
    import json

    return json.dumps(word, ensure_ascii=False)[1:-1]


def _regex_literal(text: str) -> str:
    """``text`` matched literally by a PostgreSQL regular expression, ASCII letters in
    either case."""
    escaped = re.sub(r"([\\.^$|?*+()\[\]{}])", r"\\\1", text)
    return re.sub(r"[A-Za-z]", lambda m: f"[{m.group().lower()}{m.group().upper()}]", escaped)
