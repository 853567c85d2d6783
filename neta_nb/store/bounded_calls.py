"""Calls to a database server that may hang, waited for at most a bound.

libpq has no client-side query timeout; a hung server (a stopped host, a partition)
answers neither a query nor a pool's check of an idle connection; and a libpq call cannot
be interrupted safely from another thread. So a call runs on a daemon thread and its
caller waits for it at most the bound. One given up on goes on there and ends when the
server answers, or never: a daemon never holds up the process's exit.

Threads are kept idle for the next calls (starting one costs as much as a read on a fast
server), and there are at most :data:`MAX_THREADS`: a burst (200 turns starting at once,
each taking its claim) waits its turn instead of starting 200 threads. A call that waits
for a thread and is given up on before one is free is never made.
"""

from __future__ import annotations

import os
import queue
import threading
from collections import deque
from collections.abc import Callable
from concurrent.futures import Future
from typing import Any, TypeVar

__all__ = ["IDLE_EXIT", "MAX_THREADS", "call_within", "submit"]

MAX_THREADS = 8
"""Most threads at once (a hung server can hold them all; later calls then wait)."""
IDLE_EXIT = 60.0
"""Seconds an idle thread waits for a call before it ends."""

_T = TypeVar("_T")
_Job = tuple[Callable[[], Any], "Future[Any]"]

_lock = threading.Lock()
_idle: list[_Worker] = []
"""Threads waiting for a call, the one idle last at the end (the next call takes it)."""
_waiting: deque[_Job] = deque()
"""Calls no thread was free for, in order."""
_threads = 0


def call_within(call: Callable[[], _T], limit: float) -> _T:
    """``call()``'s result or exception; :class:`TimeoutError` after ``limit`` seconds
    (a call under way goes on, on its thread, its result dropped; one still waiting for
    a thread is dropped)."""
    future = submit(call)
    try:
        return future.result(limit)
    except TimeoutError:
        if not future.done():
            future.cancel()
            raise TimeoutError(f"no answer within {limit:g} s") from None
        return future.result()  # done just now, or a TimeoutError the call raised


def submit(call: Callable[[], _T]) -> Future[_T]:
    """Run ``call`` on a kept thread; its future (``asyncio.wrap_future`` awaits it). A
    future cancelled before its call starts skips the call."""
    global _threads
    future: Future[_T] = Future()
    job: _Job = (call, future)
    with _lock:
        if _idle:
            worker: _Worker | None = _idle.pop()
        elif _threads < MAX_THREADS:
            _threads += 1
            worker = None
        else:
            _waiting.append(job)
            return future
    (worker or _Worker()).give(job)
    return future


def _after_fork_in_child() -> None:
    # The parent's threads are not in the child, and its lock may have been held by one.
    global _lock, _idle, _waiting, _threads
    _lock = threading.Lock()
    _idle, _waiting, _threads = [], deque(), 0


os.register_at_fork(after_in_child=_after_fork_in_child)


class _Worker:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="neta-nb-store-call", daemon=True).start()

    def give(self, job: _Job) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        global _threads
        job: _Job | None = None
        while True:
            if job is None:
                try:
                    job = self._jobs.get(timeout=IDLE_EXIT)
                except queue.Empty:
                    with _lock:
                        if self not in _idle:
                            continue  # taken for a call just now: its job is on the way
                        _idle.remove(self)
                        _threads -= 1
                    return
            call, future = job
            job = None
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
            with _lock:
                if _waiting:
                    job = _waiting.popleft()
                else:
                    _idle.append(self)
            if ran and error is None:
                future.set_result(result)
            elif ran:
                future.set_exception(error)
            del call, future, result, error  # nothing of the call kept alive while idle
