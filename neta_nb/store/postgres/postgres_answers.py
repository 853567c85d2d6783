"""The PostgreSQL store's calls made on the kernel's loop — reads (the session list, a
resume) and the few changes the store makes itself — waited for at most
:data:`ANSWER_LIMIT` seconds on the server's kept threads
(:mod:`neta_nb.store.bounded_calls`), failing in plain words: a server that hangs (a
stopped host, a partition) answers neither a query nor the pool's check of an idle
connection, and libpq has no client-side query timeout.

A read given up on, or interrupted (Kernel ▸ Interrupt), is cancelled on the server, so a
slow query (a search over a large store) does not go on holding one of the pool's few
connections, which the running turns' writes need. A change under way is not cancelled:
it is made when the server answers, and its error says so; one that never got a thread
is never made, and its error says that.
"""

from __future__ import annotations

import contextlib
import threading
from collections.abc import Callable, Iterator
from typing import Any, TypeVar

import psycopg
import psycopg_pool

from ..bounded_calls import BoundedThreads, CallTimeout

__all__ = ["ANSWER_LIMIT", "CANCEL_LIMIT", "answered", "read"]

ANSWER_LIMIT = 10.0
"""Seconds a read, or a change the store makes itself, waits for the server's answer
before it fails (the kernel's loop is never held longer by one call)."""
CANCEL_LIMIT = 5.0
"""Seconds a cancel request of a read given up on may take (off the loop)."""

_T = TypeVar("_T")
Connection = psycopg.Connection[Any]


def answered(call: Callable[[], _T], location: str, threads: BoundedThreads, *,
             change: bool = False) -> _T:
    """``call``'s result, if the server answers within :data:`ANSWER_LIMIT` seconds;
    else ``OperationalError`` naming the store. One given up on goes on, on its own
    thread, its connection back in the pool when the server answers."""
    try:
        return threads.call_within(call, ANSWER_LIMIT)
    except psycopg_pool.PoolTimeout as exc:
        raise psycopg.OperationalError(
            f"the session store {location} cannot be reached ({exc})") from None
    except CallTimeout as exc:
        outcome = ""
        if change:
            outcome = (" (the change may still be made when it answers)" if exc.started
                       else " (the change was not made)")
        raise psycopg.OperationalError(f"the session store {location} did not answer "
                                       f"within {ANSWER_LIMIT:g} s{outcome}") from None


def read(pool: psycopg_pool.ConnectionPool[Any], location: str, threads: BoundedThreads,
         work: Callable[[Connection], _T]) -> _T:
    """``work`` on one of the pool's connections, :func:`answered`; cancelled on the
    server when given up on or interrupted."""
    running = _RunningQuery()

    def run() -> _T:
        with pool.connection() as conn, running.on(conn):
            return work(conn)

    try:
        return answered(run, location, threads)
    except BaseException:  # given up on, or KeyboardInterrupt; a finished one is let be
        running.cancel()
        raise


class _RunningQuery:
    """The connection a read runs on, while it runs: a cancel reaches that read only,
    never the query of the connection's next borrower."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._conn: Connection | None = None
        self._given_up = False

    @contextlib.contextmanager
    def on(self, conn: Connection) -> Iterator[None]:
        with self._lock:
            if self._given_up:  # a connection came only after the caller stopped waiting
                raise psycopg.OperationalError("the read was given up on")
            self._conn = conn
        try:
            yield
        finally:
            with self._lock:
                self._conn = None

    def cancel(self) -> None:
        with self._lock:
            self._given_up = True

        def send() -> None:
            with self._lock:  # the read cannot hand its connection back meanwhile
                if self._conn is not None:
                    with contextlib.suppress(psycopg.Error):
                        self._conn.cancel_safe(timeout=CANCEL_LIMIT)

        if self._conn is not None:  # a read under way (one never begun has nothing to stop)
            # On a thread of its own, not one of the server's few kept ones: a hung server
            # holds the cancel too, up to CANCEL_LIMIT.
            threading.Thread(target=send, name="neta-nb-store-cancel", daemon=True).start()
