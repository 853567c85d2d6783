"""Turn claims on PostgreSQL: while this process runs a session's turn it holds a
session-level advisory lock on that session, on one connection it keeps for its claims
(one per database and process, carrying every running turn's lock — not one connection
per turn). The server drops the lock the moment the connection goes, which is the moment
its process dies, on any host: no pid check that cannot see another machine.

The connection is watched while it holds claims (a query every second): if the server
dropped it (a restart, an idle timeout, a cut network), the locks are taken again at once
on a new one, so the window in which another kernel could take a running turn is a
second, not the rest of the turn.

Who holds a claim (pid, host, user) is written beside it, so a refusal can name the owner.
Advisory locks are re-entrant on one connection, so this process remembers which claims it
holds and refuses a second turn of a session it already runs (as ``flock`` does on SQLite).
"""

from __future__ import annotations

import hashlib
import logging
import os
import threading
import time
from typing import Any, ClassVar

import psycopg
from psycopg.conninfo import make_conninfo

from ..bounded_calls import BoundedThreads, CallTimeout
from ..process_owner import ProcessOwner, busy_error

__all__ = ["ClaimsConnection", "PostgresClaim", "claim_key"]

log = logging.getLogger(__name__)

WATCH_INTERVAL = 0.5
"""Seconds between two checks of the claims' connection while it holds claims."""
KEEPALIVE = {"keepalives": 1, "keepalives_idle": 10, "keepalives_interval": 5,
             "keepalives_count": 3, "connect_timeout": 5}
"""A dead peer is found within half a minute even with no query in flight."""
RELEASE_LIMIT = 2.0
"""Seconds the end of a turn (on the kernel's loop) waits for its claim's unlock. A
server that hangs gets the unlock as soon as it answers, or drops it with the
connection."""


def claim_key(session_id: str) -> int:
    """The advisory lock key of a session's turn claim (distinct from its write key)."""
    digest = hashlib.blake2b(session_id.encode("utf-8", "surrogatepass"), digest_size=8,
                             person=b"claim".ljust(16, b"\0")).digest()
    return int.from_bytes(digest, "big", signed=True)


class ClaimsConnection:
    """This process's connection for turn claims on one database.

    Two locks: ``_lock`` is held while the connection talks to the server (which may
    hang), ``_state`` only while the claim sets change. So ``holds`` and ``release``,
    asked on the kernel's loop, never wait for the server: a release takes the session
    out of the running turns at once and leaves its unlock pending, made within
    :data:`RELEASE_LIMIT` seconds on a healthy server, else as soon as the server
    answers (the watcher retries) — never lost."""

    _by_url: ClassVar[dict[tuple[str, int], ClaimsConnection]] = {}
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, url: str) -> None:
        self.url = url
        self.calls = BoundedThreads.of(url)
        self._lock = threading.Lock()
        self._state = threading.Lock()
        self._conn: psycopg.Connection[Any] | None = None
        self._held: set[str] = set()
        """Sessions whose turn runs here, their claims held."""
        self._unlocking: set[str] = set()
        """Sessions whose turn ended here, their lock still on the connection."""
        self._watcher: threading.Thread | None = None

    @classmethod
    def of(cls, url: str) -> ClaimsConnection:
        """The one claims connection of this process for ``url`` (opened on first use; a
        forked child gets its own: a connection is never shared across processes)."""
        key = (url, os.getpid())
        with cls._registry_lock:
            found = cls._by_url.get(key)
            if found is None:
                found = cls._by_url[key] = cls(url)
            return found

    @classmethod
    def forget(cls, url: str) -> None:
        """Close this process's claims connection to ``url`` (its claims go with it)."""
        with cls._registry_lock:
            found = cls._by_url.pop((url, os.getpid()), None)
        if found is not None:
            with found._lock:
                with found._state:
                    found._held.clear()
                    found._unlocking.clear()
                if found._conn is not None:
                    found._conn.close()

    def _connection(self) -> psycopg.Connection[Any]:
        """The live connection (``_lock`` held): a new one takes the claims of the
        running turns again."""
        conn = self._conn
        if conn is not None and not (conn.closed or conn.broken):
            return conn
        lost = conn is not None
        conn = self._conn = psycopg.connect(make_conninfo(self.url, **KEEPALIVE),
                                            autocommit=True)
        with self._state:
            self._unlocking.clear()  # those locks went with the old connection
            held = sorted(self._held)
        for session_id in held:
            row = conn.execute("SELECT pg_try_advisory_lock(%s)",
                               (claim_key(session_id),)).fetchone()
            taken = bool(row and row[0])
            with self._state:
                running = session_id in self._held
                if taken and not running:
                    self._unlocking.add(session_id)  # its turn ended meanwhile
                elif not taken and running:
                    self._held.discard(session_id)
            if not taken and running:
                log.error("session %s: another process claimed its turn while the "
                          "connection holding the claim was lost; the turn running here "
                          "goes on, unguarded", session_id)
        if lost and held:
            # The server dropped them with the old connection: until now nobody was kept
            # out of those sessions.
            log.warning("the turn claims of sessions %s were lost with their connection "
                        "and are taken again", held)
        return conn

    def _watch(self) -> None:
        """While claims are held or unlocks pending: check the connection every interval,
        claim again on a new one when it was lost (said once an outage, not at every
        try), and make the pending unlocks."""
        trying = False
        while True:
            time.sleep(WATCH_INTERVAL)
            with self._lock:
                with self._state:
                    if not (self._held or self._unlocking):
                        self._watcher = None
                        return
                    running = bool(self._held)
                conn = self._conn
                alive = conn is not None and not (conn.closed or conn.broken)
                if alive and conn is not None:
                    try:
                        conn.execute("SELECT 1")
                    except psycopg.Error:
                        conn.close()  # its locks went with it: taken again below
                        alive = False
                if not alive and not running:
                    with self._state:
                        self._unlocking.clear()  # they went with the connection
                elif not alive:
                    try:
                        self._connection()
                        alive, trying = True, False
                    except psycopg.Error as exc:
                        if not trying:
                            log.warning("the turn claims' connection is lost (%s); trying "
                                        "again until the server answers", exc)
                        trying = True
            if alive:
                self._unlock_ended()

    def _ensure_watcher(self) -> None:
        """Start the watcher if it does not run (``_state`` held)."""
        if self._watcher is None:
            self._watcher = threading.Thread(target=self._watch, daemon=True,
                                             name="neta-nb-turn-claims")
            self._watcher.start()

    def holds(self, session_id: str) -> bool:
        """Whether a turn of this process holds the session's claim (never waits for
        the server: asked on the kernel's loop)."""
        return session_id in self._held

    def take(self, session_id: str) -> PostgresClaim | None:
        """Claim the session's turn; :class:`SessionBusyError` while a turn holds it
        (here or in any process on any host). ``None`` when the server cannot be reached:
        the turn runs unclaimed (its writes wait and retry), as where no claim can be made
        on SQLite."""
        try:
            return self._take(session_id)
        except psycopg.OperationalError as exc:
            log.warning("session %s: its turn runs unclaimed, the session store cannot be "
                        "reached (%s)", session_id, exc)
            return None

    def _take(self, session_id: str) -> PostgresClaim:
        owner = ProcessOwner.current()
        with self._lock:
            if session_id in self._held:
                raise busy_error(session_id, owner)
            try:
                conn = self._connection()
                row = conn.execute("SELECT pg_try_advisory_lock(%s)",
                                   (claim_key(session_id),)).fetchone()
            except psycopg.OperationalError:
                # The connection died while idle (a server restart, a cut network): its
                # locks went with it. Once more on a new one.
                if self._conn is not None:
                    self._conn.close()
                conn = self._connection()
                row = conn.execute("SELECT pg_try_advisory_lock(%s)",
                                   (claim_key(session_id),)).fetchone()
            if not (row and row[0]):
                holder = conn.execute("SELECT owner FROM turn_claims WHERE session_id = %s",
                                      (session_id,)).fetchone()
                raise busy_error(session_id, _owner(holder[0] if holder else None))
            # Taken again while the previous turn's unlock is pending: the lock counts
            # twice on this connection, and that unlock takes one off.
            with self._state:
                self._held.add(session_id)
                self._ensure_watcher()
            try:
                conn.execute("INSERT INTO turn_claims (session_id, owner) VALUES (%s, %s) "
                             "ON CONFLICT (session_id) DO UPDATE SET owner = EXCLUDED.owner",
                             (session_id, owner.model_dump_json()))
            except psycopg.Error as exc:  # the name is a courtesy; the lock is the claim
                log.info("session %s: the claim's owner was not written (%s)",
                         session_id, exc)
        return PostgresClaim(self, session_id)

    def release(self, session_id: str) -> None:
        """End the session's turn here at once; its unlock is made within
        :data:`RELEASE_LIMIT` seconds, or as soon as the server answers."""
        with self._state:
            if session_id not in self._held:
                return
            self._held.discard(session_id)
            self._unlocking.add(session_id)
            self._ensure_watcher()  # it retries if this try gets no answer
        try:
            self.calls.call_within(self._unlock_ended, RELEASE_LIMIT, must_run=True)
        except CallTimeout:
            log.warning("session %s: the session store did not answer the release of its "
                        "turn claim within %g s; it is released as soon as the server "
                        "answers", session_id, RELEASE_LIMIT)

    def _unlock_ended(self) -> None:
        """Make the pending unlocks of ended turns."""
        with self._lock:
            with self._state:
                pending = sorted(self._unlocking)
            conn = self._conn
            if not pending:
                return
            if conn is None or conn.closed or conn.broken:
                with self._state:
                    self._unlocking.clear()  # the server dropped them with it
                return
            for session_id in pending:
                try:
                    conn.execute("SELECT pg_advisory_unlock(%s)", (claim_key(session_id),))
                except psycopg.Error as exc:
                    log.warning("session %s: its turn claim could not be released (%s); "
                                "the connection is closed, which releases it",
                                session_id, exc)
                    conn.close()
                    with self._state:
                        self._unlocking.clear()
                    return
                with self._state:
                    self._unlocking.discard(session_id)


class PostgresClaim:
    """One running turn's claim."""

    def __init__(self, connection: ClaimsConnection, session_id: str) -> None:
        self._connection: ClaimsConnection | None = connection
        self.session_id = session_id

    def release(self) -> None:
        """Let the session's turn go (waits at most :data:`RELEASE_LIMIT` seconds)."""
        if self._connection is not None:
            connection, self._connection = self._connection, None
            connection.release(self.session_id)


def _owner(data: str | None) -> ProcessOwner | None:
    if data is None:
        return None
    try:
        return ProcessOwner.model_validate_json(data)
    except ValueError:
        return None
