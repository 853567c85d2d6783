"""Calls to a database server that may hang, waited for at most a bound.

libpq has no client-side query timeout; a hung server (a stopped host, a partition)
answers neither a query nor a pool's check of an idle connection; and a libpq call cannot
be interrupted safely from another thread. So a call runs on a daemon thread and its
caller waits for it at most the bound. One given up on goes on there and ends when the
server answers, or never: a daemon never holds up the process's exit. Idle threads are
kept for the next calls (starting a thread costs as much as a read on a fast server); a
thread stuck on a call is simply not idle, and the next call gets another.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable
from concurrent.futures import Future
from concurrent.futures import TimeoutError as FutureTimeout
from typing import Any, TypeVar

__all__ = ["IDLE_EXIT", "KEEP_IDLE", "call_within", "submit"]

KEEP_IDLE = 2
"""Threads kept waiting for the next call."""
IDLE_EXIT = 60.0
"""Seconds an idle thread waits for a call before it ends."""

_T = TypeVar("_T")
_Job = tuple[Callable[[], Any], "Future[Any]"]

_lock = threading.Lock()
_idle: list[_Worker] = []
_pid = os.getpid()


def call_within(call: Callable[[], _T], limit: float) -> _T:
    """``call()``'s result or exception; :class:`TimeoutError` after ``limit`` seconds
    (the call goes on, on its thread, its result dropped)."""
    try:
        return submit(call).result(limit)
    except FutureTimeout:
        raise TimeoutError(f"no answer within {limit:g} s") from None


def submit(call: Callable[[], _T]) -> Future[_T]:
    """Run ``call`` on a kept thread; its future (``asyncio.wrap_future`` awaits it)."""
    global _pid
    future: Future[_T] = Future()
    with _lock:
        if os.getpid() != _pid:  # a forked child: the parent's threads are not in it
            _idle.clear()
            _pid = os.getpid()
        worker = _idle.pop() if _idle else None
    (worker or _Worker()).give((call, future))
    return future


class _Worker:
    def __init__(self) -> None:
        self._jobs: queue.SimpleQueue[_Job] = queue.SimpleQueue()
        threading.Thread(target=self._run, name="neta-nb-store-call", daemon=True).start()

    def give(self, job: _Job) -> None:
        self._jobs.put(job)

    def _run(self) -> None:
        while True:
            try:
                call, future = self._jobs.get(timeout=IDLE_EXIT)
            except queue.Empty:
                with _lock:
                    if self not in _idle:
                        continue  # taken for a call just now: its job is on the way
                    _idle.remove(self)
                return
            future.set_running_or_notify_cancel()
            error: BaseException | None = None
            try:
                result = call()
            except BaseException as exc:  # the caller's to raise
                result, error = None, exc
            with _lock:  # idle before the caller hears back: its next call finds this one
                keep = len(_idle) < KEEP_IDLE
                if keep:
                    _idle.append(self)
            if error is None:
                future.set_result(result)
            else:
                future.set_exception(error)
            del call, future, result, error  # nothing of the call kept alive while idle
            if not keep:
                return
