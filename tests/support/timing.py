"""Driving time in tests without sleeping: a manual clock and scheduler for the frame
throttles, and :func:`wait_until` for async tests that wait for a condition."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass, field

__all__ = ["ManualClock", "ManualScheduler", "poll_until", "wait_until"]


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
