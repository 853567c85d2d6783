"""RateLimiter: what every model call of a batch run waits for — one limiter for the
whole run, however many sessions run at once.

Three rules, checked together each time a call wants to start:

* **in flight**: at most ``concurrency`` calls at a time;
* **rate**: a token bucket refilled at ``rate_limit`` (``"50/s"``, ``"600/min"``), holding
  at most one second's worth (or one token), so a burst never exceeds the provider's own
  per-second window;
* **pause**: a provider that answered 429 (or 503/529) with ``Retry-After`` pauses every
  call of the run until that moment — told by the HTTP client the instant the response
  arrives, before the SDK's own retry of that request (which waits the same time).
"""

from __future__ import annotations

import asyncio
import contextlib
import re
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

__all__ = ["Rate", "RateLimiter", "parse_rate"]

_UNITS = {"s": 1.0, "sec": 1.0, "second": 1.0, "m": 60.0, "min": 60.0, "minute": 60.0,
          "h": 3600.0, "hour": 3600.0}
_RATE = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*/\s*(\d+(?:\.\d+)?)?\s*([a-z]+)\s*$")


@dataclass(frozen=True)
class Rate:
    """``count`` calls per ``seconds``."""

    count: float
    seconds: float

    @property
    def per_second(self) -> float:
        return self.count / self.seconds


def parse_rate(text: str | Rate | None) -> Rate | None:
    """``"50/s"``, ``"600/min"``, ``"1000/h"``, ``"5/10s"`` → :class:`Rate`; ``None`` for
    none. Anything else is a ``ValueError`` that shows the accepted form."""
    if text is None or isinstance(text, Rate):
        return text
    match = _RATE.match(str(text).lower())
    # "min" and "mins", "h" and "hours"…; a plural "s" only after a unit ("ms" is no unit).
    word = match.group(3) if match else ""
    unit = _UNITS.get(word)
    if unit is None and word.endswith("s") and len(word) > 2:
        unit = _UNITS.get(word[:-1])
    span = float(match.group(2)) if match and match.group(2) else 1.0
    if match is None or unit is None or float(match.group(1)) <= 0 or span <= 0:
        raise ValueError(f"rate_limit {text!r} is not a rate like '50/s', '600/min' or "
                         f"'1000/h'")
    return Rate(float(match.group(1)), span * unit)


class RateLimiter:
    """The limits of one run (see the module note). ``clock`` is ``time.monotonic``."""

    def __init__(self, concurrency: int, rate: Rate | None = None) -> None:
        if concurrency < 1:
            raise ValueError("concurrency must be at least 1")
        self.concurrency = concurrency
        self.rate = rate
        self._in_flight = 0
        self._capacity = max(1.0, rate.per_second) if rate else 0.0
        self._tokens = self._capacity
        self._refilled = time.monotonic()
        self._paused_until = 0.0
        self._changed = asyncio.Event()
        self.paused_total = 0.0
        """Seconds of Retry-After pauses so far (for the run's figures)."""
        self.pauses = 0

    # --- what a call does ---------------------------------------------------------------
    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        """Hold one call's place: waits until all three rules allow it."""
        await self.acquire()
        try:
            yield
        finally:
            self.release()

    async def acquire(self) -> None:
        while True:
            wait = self._wait_needed()
            if wait <= 0:
                self._in_flight += 1
                if self.rate is not None:
                    self._tokens -= 1.0
                return
            self._changed.clear()
            with contextlib.suppress(TimeoutError):
                await asyncio.wait_for(self._changed.wait(),
                                       None if wait == float("inf") else wait)

    def release(self) -> None:
        self._in_flight -= 1
        self._changed.set()

    def pause(self, seconds: float) -> None:
        """Nobody starts a call for ``seconds`` from now (a provider's ``Retry-After``)."""
        if seconds <= 0:
            return
        until = time.monotonic() + seconds
        if until > self._paused_until:
            self.paused_total += until - max(self._paused_until, time.monotonic())
            self.pauses += 1
            self._paused_until = until
        self._changed.set()

    async def unpaused(self) -> None:
        """Until no pause holds (what each HTTP request of the run waits for)."""
        while True:
            wait = self._paused_until - time.monotonic()
            if wait <= 0:
                return
            await asyncio.sleep(wait)

    @property
    def in_flight(self) -> int:
        return self._in_flight

    @property
    def paused_until(self) -> float:
        """``time.monotonic()`` at which the current pause ends (0: never paused)."""
        return self._paused_until

    def _wait_needed(self) -> float:
        """Seconds until a call may start (0 or less: now); ``inf``: when one ends."""
        now = time.monotonic()
        if now < self._paused_until:
            return self._paused_until - now
        if self._in_flight >= self.concurrency:
            return float("inf")
        if self.rate is not None:
            self._tokens = min(self._capacity,
                               self._tokens + (now - self._refilled) * self.rate.per_second)
            self._refilled = now
            if self._tokens < 1.0:
                return (1.0 - self._tokens) / self.rate.per_second
        return 0.0
