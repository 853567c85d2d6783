"""Calls to a database server that may hang, waited for at most a bound.

libpq has no client-side query timeout; a hung server (a stopped host, a partition)
answers neither a query nor a pool's check of an idle connection; and a libpq call cannot
be interrupted safely from another thread. So a call runs on a daemon thread and its
caller waits for it at most the bound. One given up on goes on there and ends when the
server answers, or never: a daemon never holds up the process's exit.

Each server (each PostgreSQL URL) has its own :class:`BoundedThreads`: a server that
hangs holds its own threads only, never another store's (SQLite files, which never hang,
share one set). Threads are kept idle for the
next calls (starting one costs as much as a read on a fast server), at most
:data:`MAX_THREADS` per server: a burst (200 turns starting at once, each taking its
claim) waits its turn instead of starting 200 threads. A call still waiting for a thread
when it is given up on is never made.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, ClassVar, TypeVar

__all__ = ["IDLE_EXIT", "MAX_THREADS", "BoundedThreads", "CallTimeout"]

MAX_THREADS = 8
"""Most threads at once per server (a hung server can hold them all; its later calls
then wait)."""
IDLE_EXIT = 20.0
"""Seconds an idle thread waits for a call before it ends."""

_T = TypeVar("_T")
_Job = tuple[Callable[[], Any], "Future[Any]"]
_worker_of = threading.local()
"""On a kept thread: the :class:`BoundedThreads` it belongs to."""


class CallTimeout(TimeoutError):
    """No answer within the bound; ``started``: whether the call had begun (it goes on,
    and may still take effect) or was still waiting for a thread (it is never made)."""

    def __init__(self, limit: float, *, started: bool) -> None:
        super().__init__(f"no answer within {limit:g} s")
        self.started = started


class BoundedThreads:
    """The kept threads of one server's calls."""

    _by_key: ClassVar[weakref.WeakValueDictionary[str, BoundedThreads]] = (
        weakref.WeakValueDictionary())
    """Kept while a database or a thread of it refers to it."""
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()
    _every: ClassVar[weakref.WeakSet[BoundedThreads]] = weakref.WeakSet()

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._idle: list[_Worker] = []
        """Threads waiting for a call, the one idle last at the end (the next call takes
        it)."""
        self._waiting: deque[_Job] = deque()
        """Calls no thread was free for, in order."""
        self._threads = 0
        BoundedThreads._every.add(self)

    @classmethod
    def of(cls, key: str) -> BoundedThreads:
        """The threads of the server ``key`` names, shared by every store object of it."""
        with cls._registry_lock:
            found = cls._by_key.get(key)
            if found is None:
                found = cls._by_key[key] = cls()
            return found

    def call_within(self, call: Callable[[], _T], limit: float, *,
                    must_run: bool = False) -> _T:
        """``call()``'s result or exception; :class:`CallTimeout` after ``limit``
        seconds. One still waiting for a thread then is dropped, unless ``must_run``
        (it is made when a thread is free). A call made on one of these threads (a
        bounded call inside another) runs at once, where it is: waiting for a thread of
        its own could wait on itself."""
        if getattr(_worker_of, "threads", None) is self:
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
        """Run ``call`` on a kept thread; its future (``asyncio.wrap_future`` awaits it).
        A future cancelled before its call starts skips the call."""
        future: Future[_T] = Future()
        job: _Job = (call, future)
        with self._lock:
            if self._idle:
                worker: _Worker | None = self._idle.pop()
            elif self._threads < MAX_THREADS:
                self._threads += 1
                worker = None
            else:
                self._waiting.append(job)
                return future
        (worker or _Worker(self)).give(job)
        return future

    def _next(self, worker: _Worker) -> _Job | None:
        """After a call: the next waiting one, or ``None`` with ``worker`` listed idle."""
        with self._lock:
            if self._waiting:
                return self._waiting.popleft()
            self._idle.append(worker)
            return None

    def _retire(self, worker: _Worker) -> bool:
        """Whether ``worker``, idle too long, ends (not if taken for a call just now)."""
        with self._lock:
            if worker not in self._idle:
                return False
            self._idle.remove(worker)
            self._threads -= 1
            return True

    def _after_fork_in_child(self) -> None:
        # The parent's threads are not in the child, and the lock may have been held.
        self._lock = threading.Lock()
        self._idle, self._waiting, self._threads = [], deque(), 0


def _after_fork_in_child() -> None:
    BoundedThreads._registry_lock = threading.Lock()
    for threads in list(BoundedThreads._every):
        threads._after_fork_in_child()


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Worker:
    def __init__(self, threads: BoundedThreads) -> None:
        self._threads = threads
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="neta-nb-store-call", daemon=True).start()

    def give(self, job: _Job) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        _worker_of.threads = self._threads
        job: _Job | None = None
        while True:
            if job is None:
                try:
                    job = self._jobs.get(timeout=IDLE_EXIT)
                except queue.Empty:
                    if self._threads._retire(self):
                        return
                    continue  # taken for a call just now: its job is on the way
            call, future = job
            ran = future.set_running_or_notify_cancel()  # False: cancelled, not made
            error: BaseException | None = None
            result: Any = None
            if ran:
                try:
                    result = call()
                except BaseException as exc:  # the caller's to raise
                    error = exc
            # The next waiting call, or idle before the caller hears back (its next call
            # finds this thread). A running future cannot be cancelled: setting it cannot
            # fail.
            job = self._threads._next(self)
            if ran and error is None:
                future.set_result(result)
            elif ran:
                future.set_exception(error)
            del call, future, result, error  # nothing of the call kept alive while idle
