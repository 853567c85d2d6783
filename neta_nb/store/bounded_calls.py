"""Calls to a database server that may hang, waited for at most a bound.

libpq has no client-side query timeout; a hung server (a stopped host, a partition)
answers neither a query nor a pool's check of an idle connection; and a libpq call cannot
be interrupted safely from another thread. So a call runs on a daemon thread
(:class:`~neta_nb.daemon_threads.DaemonThreads`) and its caller waits for it at most the
bound. One given up on goes on there and ends when the server answers, or never: a
daemon never holds up the process's exit.

Each server (each PostgreSQL URL) has its own :class:`BoundedThreads`: a server that
hangs holds its own threads only, never another store's (SQLite files, which never hang,
share one set). At most :data:`MAX_THREADS` per server: a burst (200 turns starting at
once, each taking its claim) waits its turn instead of starting 200 threads. A call still
waiting for a thread when it is given up on is never made.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable
from concurrent.futures import Future
from functools import partial
from typing import ClassVar, TypeVar

from ..daemon_threads import DaemonThreads

__all__ = ["IDLE_EXIT", "MAX_THREADS", "BoundedThreads", "CallTimeout"]

MAX_THREADS = 8
"""Most threads at once per server (a hung server can hold them all; its later calls
then wait)."""
IDLE_EXIT = 20.0
"""Seconds an idle thread waits for a call before it ends."""

_T = TypeVar("_T")


class CallTimeout(TimeoutError):
    """No answer within the bound; ``started``: whether the call had begun (it goes on,
    and may still take effect) or was still waiting for a thread (it is never made)."""

    def __init__(self, limit: float, *, started: bool) -> None:
        super().__init__(f"no answer within {limit:g} s")
        self.started = started


class BoundedThreads:
    """The threads of one server's calls."""

    _by_key: ClassVar[weakref.WeakValueDictionary[str, BoundedThreads]] = (
        weakref.WeakValueDictionary())
    """Kept while a database refers to it."""

    def __init__(self) -> None:
        self.threads = DaemonThreads("neta-nb-store-call", idle_timeout=IDLE_EXIT,
                                     max_threads=MAX_THREADS)

    @classmethod
    def of(cls, key: str) -> BoundedThreads:
        """The threads of the server ``key`` names, shared by every store object of it.
        (No lock: two store objects opened at once may each get a set of their own,
        which only widens the bound.)"""
        found = cls._by_key.get(key)
        if found is None:
            found = cls._by_key.setdefault(key, cls())
        return found

    def call_within(self, call: Callable[[], _T], limit: float, *,
                    must_run: bool = False) -> _T:
        """``call()``'s result or exception; :class:`CallTimeout` after ``limit``
        seconds. One still waiting for a thread then is dropped, unless ``must_run``
        (it is made when a thread is free). A call made on one of these threads (a
        bounded call inside another) runs at once, where it is: waiting for a thread of
        its own could wait on itself."""
        if self.threads.is_current():
            return call()
        future = self.submit(call)
        try:
            return future.result(limit)
        except TimeoutError:
            if not future.done():
                started = must_run or not future.cancel()
                raise CallTimeout(limit, started=started) from None
            return future.result()  # done just now, or a TimeoutError the call raised
        except BaseException:  # interrupted (KeyboardInterrupt): not made, if not begun
            if not must_run:
                future.cancel()
            raise

    def submit(self, call: Callable[[], _T]) -> Future[_T]:
        """Run ``call`` on one of the threads; its future (``asyncio.wrap_future`` awaits
        it). A future cancelled before its call starts skips the call."""
        future: Future[_T] = Future()

        def job() -> Callable[[], None]:
            if not future.set_running_or_notify_cancel():
                return _nothing  # cancelled while it waited: not made
            try:
                result = call()
            except BaseException as exc:  # the caller's to raise
                return partial(future.set_exception, exc)
            # A running future cannot be cancelled: setting it cannot fail.
            return partial(future.set_result, result)

        self.threads.submit(job)
        return future


def _nothing() -> None:
    pass
