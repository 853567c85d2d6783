"""Other processes' changes to a PostgreSQL store, as they happen: every write that
changes what a session list or a read-only view shows sends ``NOTIFY`` on one channel
when it commits, and a :class:`Listener` (one connection, one thread) hears them and calls
the store's listeners — so a sidebar follows another kernel's sessions within a second
instead of waiting for a Refresh.

The payload names the session and the store object that wrote it: a store hears its own
writes from its writers already, so it skips only its own notifications (another store
object of the same database in the same process hears them).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Callable
from typing import Any

import psycopg
from psycopg.conninfo import make_conninfo

__all__ = ["CHANNEL", "Listener", "notification"]

log = logging.getLogger(__name__)

CHANNEL = "neta_nb_sessions"
RECONNECT_DELAYS = (0.5, 1.0, 2.0, 5.0)
"""Pause before each attempt to listen again after the connection was lost."""

def notification(token: str, session_id: str) -> str:
    """The payload that says the store object ``token`` changed ``session_id``."""
    return f"{token}|{session_id}"


class Listener:
    """A connection listening on :data:`CHANNEL`, delivering other processes' session
    ids to ``callback`` — on the event loop that was running when it started (a kernel),
    else on its own thread (a plain script)."""

    def __init__(self, url: str, callback: Callable[[str], None],
                 conn: psycopg.Connection[Any], token: str) -> None:
        self._url, self._callback, self._conn = url, callback, conn
        self._token = token
        self._stopped = threading.Event()
        try:
            self._loop: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            self._loop = None
        self._thread = threading.Thread(target=self._run, daemon=True,
                                        name="neta-nb-store-listener")

    @classmethod
    def start(cls, url: str, callback: Callable[[str], None], token: str) -> Listener:
        """Listening when it returns: a change committed after this call is heard.
        ``token``: the listening store's own (its own writes are not delivered twice)."""
        listener = cls(url, callback, _listening(url), token)
        listener._thread.start()
        return listener

    def stop(self) -> None:
        self._stopped.set()
        if threading.current_thread() is self._thread:
            return  # from a callback: the loop ends after it, and closes the connection
        self._thread.join(timeout=2.0)
        with contextlib.suppress(Exception):
            self._conn.close()

    def _run(self) -> None:
        try:
            self._listen()
        finally:
            with contextlib.suppress(Exception):
                self._conn.close()

    def _listen(self) -> None:
        attempt = 0
        while not self._stopped.is_set():
            try:
                for notify in self._conn.notifies(timeout=0.25):
                    self._deliver(notify.payload)
                    if self._stopped.is_set():
                        return
                attempt = 0
            except psycopg.Error as exc:
                if self._stopped.is_set():
                    return
                delay = RECONNECT_DELAYS[min(attempt, len(RECONNECT_DELAYS) - 1)]
                log.warning("the session store's change listener lost its connection "
                            "(%s); listening again in %s s", exc, delay)
                attempt += 1
                if self._stopped.wait(delay):
                    return
                with contextlib.suppress(psycopg.Error):
                    self._conn.close()
                    self._conn = _listening(self._url)
                    # Whatever changed while deaf: one call with no session tells the
                    # listeners to read everything again.
                    self._deliver("|")

    def _deliver(self, payload: str) -> None:
        token, _, session_id = payload.partition("|")
        if token == self._token:
            return  # the store's own write: its writers told its listeners already
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(self._call, session_id)
                return
        self._call(session_id)

    def _call(self, session_id: str) -> None:
        try:
            self._callback(session_id)
        except Exception:
            log.exception("a session store listener failed")


def _listening(url: str) -> psycopg.Connection[Any]:
    from .postgres_claims import KEEPALIVE  # a dead server is noticed, and reconnected to

    conn = psycopg.connect(make_conninfo(url, **KEEPALIVE), autocommit=True)
    conn.execute(f"LISTEN {CHANNEL}")
    return conn
