"""Coalescing streamed text into at most one widget message per frame interval.

Measured in this project (DESIGN §5): syncing a growing string per delta sent up to 1 GB
for 20,000 deltas and the Jupyter server silently dropped thousands of messages (its IOPub
rate limit and ZMQ's high-water mark). Batching deltas per interval and numbering the batches
keeps the traffic near the text's own size, and lets a view that misses a batch notice the
gap and ask for a snapshot. The interval is a trade between the messages' envelopes and
how late the page learns of a change (see ``FLUSH_INTERVAL``).
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from typing import Any, Protocol

__all__ = ["FLUSH_INTERVAL", "TEXT_BATCH_CHARS", "TEXT_WAIT", "TEXT_WAIT_INTERVALS",
           "DeltaBatcher", "FrameThrottle", "Scheduler", "call_later_on_running_loop"]

FLUSH_INTERVAL = 0.1
"""Seconds between two batches of one stream when a batch carries a change of structure (a
card, the start or end of a response): the page learns of it within this long."""

TEXT_WAIT = 0.5
"""Seconds a batch that carries only streamed text may wait after the last batch that
carried text, unless it holds ``TEXT_BATCH_CHARS``. Each batch is a Jupyter message with
~650 bytes of envelope (header, parent header, comm id): at one per 30 ms a fast stream cost
4–5× its text on the wire, at one per 0.1 s about 2×; text alone at most twice a second
costs at most ~1.3 KB/s of envelope whatever the pace. The page does not draw a batch at
once but reveals it steadily until the next one likely comes (``js/src/reveal.ts``), so the
text still flows, a fraction of a second behind the model."""

TEXT_WAIT_INTERVALS = 5
"""A shorter ``interval`` shortens the text wait with it (tests run fast intervals; an
interval of 0 sends everything at once): the wait is at most this many intervals."""

TEXT_BATCH_CHARS = 4_000
"""Pending streamed text that is worth its envelope at once (it is ~6× the envelope): a
fast stream goes out in batches of about this size, every interval at the most."""


class Cancellable(Protocol):
    def cancel(self) -> None: ...


Scheduler = Callable[[float, Callable[[], None]], Cancellable | None]
"""``schedule(delay, callback)`` runs ``callback`` once after ``delay`` seconds and returns
a handle with ``cancel()``, or returns ``None`` when it cannot run anything later (the
caller then flushes at once). Tests pass a manual scheduler and fire it themselves."""


def call_later_on_running_loop(delay: float,
                               callback: Callable[[], None]) -> asyncio.TimerHandle | None:
    """The default :data:`Scheduler`: ``call_later`` on the running event loop (the
    kernel's), or ``None`` outside one (plain scripts)."""
    try:
        loop = asyncio.get_running_loop()
    except RuntimeError:
        return None
    return loop.call_later(delay, callback)


class FrameThrottle:
    """Sends numbered batches, at most one per ``interval``.

    What a batch carries decides how long it may wait: a change of structure
    (:meth:`_schedule`) one ``interval`` after the previous batch; streamed text alone
    (:meth:`_schedule_text`) ``TEXT_WAIT`` after the previous batch of its run, or one
    interval once ``TEXT_BATCH_CHARS`` are pending. A batch that is due at once goes out
    at once (the first token after a pause shows without delay); a later one waits for a
    trailing flush scheduled on the running event loop, so a burst costs one message per
    interval and its last part is never held back longer than its wait. Without a running
    loop every batch goes out at once (plain scripts). ``clock`` and ``schedule`` (a
    :data:`Scheduler`) are the seams tests drive time through. Subclasses collect what a
    batch carries (:meth:`_take`) and send it (:meth:`_deliver`).
    """

    def __init__(self, *, interval: float = FLUSH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 schedule: Scheduler = call_later_on_running_loop) -> None:
        self._interval = interval
        self._text_wait = max(interval, min(TEXT_WAIT, interval * TEXT_WAIT_INTERVALS))
        self._clock = clock
        self._schedule_later = schedule
        self._last_flush = float("-inf")
        self._last_text_flush = float("-inf")
        self._timer: Cancellable | None = None
        self._timer_delay = 0.0
        self._wait_left = 0.0  # of the pending batch's wait, counted down by the timers
        self._deadline = 0.0  # the same wait's end by the clock
        self._text_chars = 0  # streamed text pending since the last batch
        self._structure = False  # something other than text is pending
        self.seq = 0
        """Number of the last batch sent (0 before the first)."""

    def _take(self) -> Any:
        """Remove and return what is pending, or ``None`` when there is nothing to send."""
        raise NotImplementedError

    def _deliver(self, seq: int, payload: Any) -> None:
        raise NotImplementedError

    def _schedule(self) -> None:
        """Something other than streamed text is pending: send it within one interval."""
        self._structure = True
        if self._timer is None:
            self._arm()
        elif self._wait_left > 0 and self._clock() - self._last_flush >= self._interval:
            # Text was waiting for its batch's worth; this change is due now. Sent by a
            # timer of no delay, not from here: what the same handler adds next (the answer
            # right after the end of thinking) goes in the same batch.
            self._timer.cancel()
            self._wait_left = 0.0
            self._start_timer(0.0)

    def _schedule_text(self, chars: int) -> None:
        """``chars`` more characters of streamed text are pending."""
        # Called per delta: the common case (a flush already scheduled) returns at once.
        self._text_chars += chars
        if self._timer is None:
            self._arm()

    def _arm(self) -> None:
        now = self._clock()
        since = now - self._last_flush
        wait = self._interval - since
        if not self._due_soon():
            # Counted from the last batch of this run of text (see flush): the words right
            # after a change of structure, the start of a response, are not held.
            wait = max(wait, self._text_wait - (now - self._last_text_flush))
        if wait <= 0:
            self.flush()
            return
        self._wait_left = wait
        self._deadline = now + wait
        # Look when a batch could first go and then every interval: a fast stream may fill a
        # batch meanwhile, or a change of structure join the text.
        self._start_timer(min(wait, self._interval - since if since < self._interval
                              else self._interval))

    def _start_timer(self, delay: float) -> None:
        self._timer_delay = delay
        self._timer = self._schedule_later(delay, self._on_timer)
        if self._timer is None:
            self.flush()

    def _due_soon(self) -> bool:
        """Whether what is pending may wait only one interval."""
        return self._structure or self._text_chars >= TEXT_BATCH_CHARS

    def _on_timer(self) -> None:
        # The wait is counted down by the timers as well as read from the clock: a batch
        # goes when its wait is over even if the clock stands still.
        self._timer = None
        # A late timer (a busy loop) does not stretch the wait: the clock's deadline, when
        # the clock moves, is the bound too.
        self._wait_left = min(self._wait_left - self._timer_delay,
                              self._deadline - self._clock())
        if self._wait_left <= 1e-9 or self._due_soon():
            self.flush()
        else:
            self._start_timer(min(self._wait_left, self._interval))

    def _cancel_timer(self) -> None:
        """Cancel a scheduled flush: what is pending is being sent or dropped."""
        self._text_chars, self._structure, self._wait_left = 0, False, 0.0
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def flush(self) -> None:
        """Send what is pending now (the end of a stream, before a snapshot)."""
        structure, carries_text = self._structure, self._text_chars > 0
        self._cancel_timer()
        payload = self._take()
        if payload is None:
            return
        self._last_flush = self._clock()
        if structure:
            # A change of structure (a card, the start or end of a response) ends a run of
            # text: the words after it wait one interval at most.
            self._last_text_flush = float("-inf")
        elif carries_text:
            self._last_text_flush = self._last_flush
        self.seq += 1
        self._deliver(self.seq, payload)


class DeltaBatcher(FrameThrottle):
    """Collects text deltas and hands them to ``send(seq, text)`` in numbered batches."""

    def __init__(self, send: Callable[[int, str], None], *, interval: float = FLUSH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 schedule: Scheduler = call_later_on_running_loop) -> None:
        super().__init__(interval=interval, clock=clock, schedule=schedule)
        self._send = send
        self._pending: list[str] = []

    @property
    def pending(self) -> str:
        """Text pushed but not sent yet."""
        return "".join(self._pending)

    def push(self, delta: str) -> None:
        if delta:
            self._pending.append(delta)
            self._schedule_text(len(delta))

    def _take(self) -> str | None:
        if not self._pending:
            return None
        text = "".join(self._pending)
        self._pending.clear()
        return text

    def _deliver(self, seq: int, payload: Any) -> None:
        self._send(seq, payload)

    def reset(self) -> None:
        """Drop pending text and cancel a scheduled flush (the numbering goes on)."""
        self._cancel_timer()
        self._pending.clear()
