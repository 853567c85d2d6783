"""DeltaBatcher: batches by interval, numbers batches, trailing flush on the loop."""

from __future__ import annotations

import asyncio

from neta_nb.widgets._streaming import DeltaBatcher


class FakeClock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


async def test_batches_within_an_interval() -> None:
    clock = FakeClock()
    sent: list[tuple[int, str]] = []
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=3600,
                           clock=clock)
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


def test_without_a_running_loop_every_push_is_sent() -> None:
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


async def test_reset_drops_pending() -> None:
    sent: list[tuple[int, str]] = []
    batcher = DeltaBatcher(lambda seq, text: sent.append((seq, text)), interval=3600)
    batcher.push("a")
    batcher.push("b")
    batcher.reset()
    batcher.flush()
    assert sent == [(1, "a")]
