"""Driving time in tests without sleeping: a manual clock and scheduler for the frame
throttles (and a loop facade on them for code that takes ``loop.call_later``),
:func:`wait_until` for async tests that wait for a condition, and
:func:`finishes_in_thread` for a call that must not wait on something the test holds."""

from __future__ import annotations

import asyncio
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

__all__ = ["ManualClock", "ManualLoop", "ManualScheduler", "finishes_in_thread", "poll_until",
           "wait_until"]

T = TypeVar("T")


class ManualClock:
    """A monotonic clock that moves only when told to."""

    def __init__(self, now: float = 100.0) -> None:
        self.now = now

    def __call__(self) -> float:
        return self.now


@dataclass
class _Timer:
    due: float
    callback: Callable[[], None]
    cancelled: bool = False

    def cancel(self) -> None:
        self.cancelled = True


@dataclass
class ManualScheduler:
    """A :data:`neta_nb.widgets.streaming.Scheduler` on a :class:`ManualClock`:
    :meth:`advance` moves the clock and runs the callbacks that fell due, in order."""

    clock: ManualClock = field(default_factory=ManualClock)
    timers: list[_Timer] = field(default_factory=list)

    def __call__(self, delay: float, callback: Callable[[], None]) -> _Timer:
        timer = _Timer(self.clock.now + delay, callback)
        self.timers.append(timer)
        return timer

    @property
    def pending(self) -> list[_Timer]:
        """Timers scheduled and neither run nor cancelled."""
        return [timer for timer in self.timers if not timer.cancelled]

    def advance(self, seconds: float) -> None:
        target = self.clock.now + seconds
        while due := sorted((t for t in self.pending if t.due <= target), key=lambda t: t.due):
            timer = due[0]
            self.timers.remove(timer)
            self.clock.now = max(self.clock.now, timer.due)
            timer.callback()
        self.clock.now = target


@dataclass
class ManualLoop:
    """The part of an event loop a timer user calls (``call_later``, ``is_closed``), on a
    :class:`ManualScheduler`: a grace period runs out when the test advances the
    scheduler, never because the machine was slow (or fast)."""

    scheduler: ManualScheduler = field(default_factory=ManualScheduler)

    def call_later(self, delay: float, callback: Callable[..., object], *args: Any) -> _Timer:
        def fire() -> None:
            callback(*args)

        return self.scheduler(delay, fire)

    def is_closed(self) -> bool:
        return False

    def advance(self, seconds: float) -> None:
        self.scheduler.advance(seconds)


async def wait_until(predicate: Callable[[], object], within: float = 10.0,
                     interval: float = 0.002) -> None:
    """Let the event loop run until ``predicate()`` is true; fail after ``within``
    seconds. The short interval only bounds how often the condition is checked; nothing
    depends on how many times the loop turned."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"condition not met within {within} s: {predicate}")
        await asyncio.sleep(interval)


def poll_until(predicate: Callable[[], object], within: float, what: str,
               interval: float = 0.05) -> None:
    """The blocking form, for another process's state (a file, a server, a database):
    return once ``predicate()`` is true, raise ``AssertionError`` naming ``what`` after
    ``within`` seconds."""
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"{what}: not within {within:.0f} s")
        time.sleep(interval)


def finishes_in_thread(call: Callable[[], T], within: float, what: str) -> T:
    """Run the blocking ``call`` in a worker thread; return its result (or raise its
    exception) once it has ended. ``AssertionError`` naming ``what`` if it is still running
    after ``within`` seconds: a bound against hanging for ever, not a measure — the test
    makes whatever ``call`` must not wait for unbounded (a lock it holds, a timeout set to
    hours), so ``call`` ending at all, while that still holds, proves it did not wait.
    A thread left running ends by itself once the test lets go of what it held."""
    outcome: list[Any] = []

    def run() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:  # handed to the caller
            outcome.append((False, exc))

    worker = threading.Thread(target=run, daemon=True, name=f"finishes_in_thread: {what}")
    worker.start()
    worker.join(within)
    if worker.is_alive():
        raise AssertionError(f"{what}: still waiting after {within:.0f} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value  # type: ignore[no-any-return]
