"""FrameThrottle through DeltaBatcher: batches by interval (text alone waits longer unless
a batch's worth is pending), numbers batches, a trailing flush through the scheduler seam
(a manual one here, the event loop by default)."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import pytest

from neta_nb.widgets.streaming import (
    TEXT_BATCH_CHARS,
    TEXT_WAIT,
    TEXT_WAIT_INTERVALS,
    DeltaBatcher,
    call_later_on_running_loop,
)

from ..support.timing import ManualClock, ManualScheduler


def make_batcher(interval: float = 0.03) -> tuple[DeltaBatcher, list[tuple[int, str]],
                                                   ManualScheduler]:
    sent: list[tuple[int, str]] = []
    scheduler = ManualScheduler()
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=interval,
                           clock=scheduler.clock, schedule=scheduler)
    return batcher, sent, scheduler


def test_batches_within_an_interval() -> None:
    batcher, sent, _ = make_batcher(interval=3600)
    batcher.push("a")  # first push goes at once
    batcher.push("b")
    batcher.push("c")
    assert sent == [(1, "a")]
    assert batcher.pending == "bc"
    batcher.push("")
    batcher.flush()  # the end of a stream sends what is pending
    assert sent == [(1, "a"), (2, "bc")]
    batcher.flush()
    assert batcher.seq == 2


def test_the_trailing_flush_is_scheduled_once_and_looks_every_interval() -> None:
    batcher, sent, scheduler = make_batcher(interval=0.03)
    batcher.push("a")
    scheduler.advance(0.01)
    batcher.push("b")
    batcher.push("c")
    # One timer, at the end of the interval: a batch could go no earlier.
    assert len(scheduler.pending) == 1
    assert scheduler.pending[0].due == pytest.approx(scheduler.clock.now + 0.02)
    scheduler.advance(0.02)
    # Text alone is not worth its envelope yet: the timer looks again an interval later.
    assert sent == [(1, "a")]
    assert len(scheduler.pending) == 1
    assert scheduler.pending[0].due == pytest.approx(scheduler.clock.now + 0.03)


def test_text_alone_waits_the_text_wait_then_goes() -> None:
    batcher, sent, scheduler = make_batcher(interval=0.03)
    batcher.push("a")
    scheduler.advance(0.001)
    batcher.push("b")
    text_wait = 0.03 * TEXT_WAIT_INTERVALS
    scheduler.advance(text_wait - 0.002)
    assert sent == [(1, "a")]
    scheduler.advance(0.001)
    assert sent == [(1, "a"), (2, "b")]
    assert scheduler.pending == []


def test_text_worth_a_batch_goes_at_the_next_interval() -> None:
    batcher, sent, scheduler = make_batcher(interval=0.03)
    batcher.push("a")
    scheduler.advance(0.01)
    batcher.push("x" * (TEXT_BATCH_CHARS // 2))
    scheduler.advance(0.02)  # the interval is over, half a batch is pending: it waits
    assert sent == [(1, "a")]
    batcher.push("y" * (TEXT_BATCH_CHARS // 2))
    scheduler.advance(0.029)
    assert len(sent) == 1
    scheduler.advance(0.001)  # the next look: a whole batch is pending
    assert sent[1] == (2, "x" * (TEXT_BATCH_CHARS // 2) + "y" * (TEXT_BATCH_CHARS // 2))


def test_the_first_text_after_a_pause_goes_at_once_but_not_after_only_an_interval() -> None:
    batcher, sent, scheduler = make_batcher(interval=0.03)
    batcher.push("a")
    scheduler.advance(0.05)  # past the interval, within the text wait
    batcher.push("b")
    assert sent == [(1, "a")]
    batcher.flush()
    scheduler.advance(0.03 * TEXT_WAIT_INTERVALS)  # a pause as long as the text wait
    batcher.push("c")
    assert sent == [(1, "a"), (2, "b"), (3, "c")]


def test_a_zero_interval_sends_every_push() -> None:
    batcher, sent, scheduler = make_batcher(interval=0)
    batcher.push("a")
    batcher.push("b")
    assert sent == [(1, "a"), (2, "b")]
    assert scheduler.pending == []


def test_a_flush_cancels_the_scheduled_one() -> None:
    batcher, sent, scheduler = make_batcher()
    batcher.push("a")
    batcher.push("b")
    batcher.flush()
    assert scheduler.pending == []
    scheduler.advance(1)
    assert sent == [(1, "a"), (2, "b")]


def test_a_scheduler_that_cannot_schedule_means_every_push_is_sent() -> None:
    sent: list[tuple[int, str]] = []
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=3600,
                           schedule=lambda delay, callback: None)
    batcher.push("a")
    batcher.push("b")
    assert sent == [(1, "a"), (2, "b")]


def test_without_a_running_loop_every_push_is_sent() -> None:
    assert call_later_on_running_loop(1, lambda: None) is None
    sent: list[tuple[int, str]] = []
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=3600)
    batcher.push("a")
    batcher.push("b")
    assert sent == [(1, "a"), (2, "b")]


async def test_trailing_flush_runs_on_the_event_loop() -> None:
    sent: list[tuple[int, str]] = []
    second_batch = asyncio.Event()

    def send(seq: int, text: str) -> None:
        sent.append((seq, text))
        if seq == 2:
            second_batch.set()

    batcher = DeltaBatcher(send, interval=0.01)
    batcher.push("a")
    batcher.push("b")
    assert sent == [(1, "a")]
    await asyncio.wait_for(second_batch.wait(), timeout=30)
    assert sent == [(1, "a"), (2, "b")]


def test_reset_drops_pending() -> None:
    batcher, sent, scheduler = make_batcher(interval=3600)
    batcher.push("a")
    batcher.push("b")
    batcher.reset()
    assert scheduler.pending == []
    batcher.flush()
    assert sent == [(1, "a")]


def test_the_text_wait_is_at_most_half_a_second_whatever_the_interval() -> None:
    batcher, sent, scheduler = make_batcher(interval=0.3)
    batcher.push("a")
    scheduler.advance(0.01)
    batcher.push("b")
    scheduler.advance(TEXT_WAIT - 0.011)
    assert sent == [(1, "a")]
    scheduler.advance(0.002)
    assert sent == [(1, "a"), (2, "b")]


def test_a_batch_goes_when_its_wait_is_over_even_if_the_clock_stands_still() -> None:
    # The timers count the wait down; a clock that does not move (a mocked one, a clock
    # apart from the scheduler's) cannot hold text back for ever.
    sent: list[tuple[int, str]] = []
    scheduler = ManualScheduler()
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=0.03,
                           clock=lambda: 5.0, schedule=scheduler)
    batcher.push("a")
    batcher.push("b")
    scheduler.advance(10)
    assert sent == [(1, "a"), (2, "b")]
    assert scheduler.pending == []


def test_late_timers_do_not_stretch_the_text_wait() -> None:
    # A busy loop runs each timer late: the wait still ends by the clock.
    sent: list[tuple[int, str]] = []
    clock = ManualClock()
    timers: list[tuple[float, Callable[[], None]]] = []

    def schedule(delay: float, callback: Callable[[], None]) -> _Handle:
        timers.append((delay, callback))
        return _Handle()

    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=0.1,
                           clock=clock, schedule=schedule)
    batcher.push("a")
    batcher.push("b")
    while not sent[1:] and timers:
        delay, callback = timers.pop(0)
        clock.now += delay + 0.2  # every timer 0.2 s late
        callback()
    assert sent[1:] == [(2, "b")]
    assert clock.now - 100.0 <= TEXT_WAIT + 0.2 + 0.1 + 1e-9  # one late look, not five


class _Handle:
    def cancel(self) -> None:
        pass
