"""DaemonThreads: daemon threads that run submitted jobs, kept idle a while for the next.

Shared by the sync tools' threads (:mod:`neta_nb.tools.threads`) and the store's bounded
calls (:mod:`neta_nb.store.bounded_calls`): both run calls that may never return (a tool
stuck in a loop, a query to a hung server). Why not ``concurrent.futures``' executor or
asyncio's default one: their threads are joined at the interpreter's exit (a stuck one
would keep the kernel from exiting), and their few threads are shared, so a few stuck
calls delay every later one. Here a call gets an idle thread or a new one; past
``max_threads`` (when given) calls wait for a thread in order. Idle threads end after
``idle_timeout`` seconds; a forked child starts with none (the parent's are not in it).

A job is a callable that makes the call and returns how to hand back its outcome: the
thread is counted free first, so whoever hears of the outcome sees it free.
"""

from __future__ import annotations

import os
import queue
import threading
import weakref
from collections.abc import Callable
from typing import ClassVar

__all__ = ["DaemonThreads", "Job"]

Job = Callable[[], Callable[[], None]]
"""Makes the call; returns what hands back its outcome (run once the thread is free)."""

_current = threading.local()
"""On one of the threads: the :class:`DaemonThreads` it belongs to."""


class DaemonThreads:
    """A growing set of daemon threads for one kind of call."""

    _every: ClassVar[weakref.WeakSet[DaemonThreads]] = weakref.WeakSet()

    def __init__(self, name: str, *, idle_timeout: float,
                 max_threads: int | None = None) -> None:
        self.name = name
        self.idle_timeout = idle_timeout
        self.max_threads = max_threads
        self._start_empty()
        DaemonThreads._every.add(self)

    def _start_empty(self) -> None:
        self._jobs: queue.SimpleQueue[Job] = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._threads = 0
        self._idle = 0
        """Threads waiting for a job and not yet promised to one submitted."""
        self._unserved = 0
        """Jobs queued with no thread promised to them (``max_threads`` reached)."""
        self._busy = 0

    @property
    def busy(self) -> int:
        """Jobs submitted and not done yet (stuck ones and waiting ones included)."""
        return self._busy

    @property
    def threads(self) -> int:
        """Threads alive (busy or idle)."""
        return self._threads

    @property
    def idle(self) -> int:
        """Threads waiting for a job."""
        return self._idle

    def is_current(self) -> bool:
        """Whether the calling thread is one of these."""
        return getattr(_current, "threads", None) is self

    def submit(self, job: Job) -> None:
        """Run ``job`` on an idle thread, a new one, or (at ``max_threads``) the first
        one free. ``RuntimeError`` when no thread can be started (nothing is queued)."""
        with self._lock:
            self._busy += 1
            if self._idle > 0:
                self._idle -= 1  # promised to this job
                spawn = False
            elif self.max_threads is None or self._threads < self.max_threads:
                self._threads += 1
                spawn = True
            else:
                self._unserved += 1
                spawn = False
        if spawn:
            # Started before the job is queued: a thread that cannot start leaves no job
            # behind for another thread to run later.
            try:
                threading.Thread(target=self._serve, name=self.name, daemon=True).start()
            except RuntimeError:
                with self._lock:
                    self._busy -= 1
                    self._threads -= 1
                raise
        self._jobs.put(job)

    def _serve(self) -> None:
        _current.threads = self
        while True:
            try:
                job = self._jobs.get(timeout=self.idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # not promised to a job on its way: retire
                        self._idle -= 1
                        self._threads -= 1
                        return
                continue
            deliver = job()
            with self._lock:  # free before the outcome is heard
                self._busy -= 1
                if self._unserved > 0:
                    self._unserved -= 1  # takes a waiting job next
                else:
                    self._idle += 1
            deliver()
            del job, deliver  # nothing of the call kept alive while idle


def _after_fork_in_child() -> None:
    for threads in list(DaemonThreads._every):
        threads._start_empty()


os.register_at_fork(after_in_child=_after_fork_in_child)
