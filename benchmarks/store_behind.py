"""A turn streaming while another program holds the store's write lock: how long the
kernel's event loop stalls, and how long Stop takes to end the turn.

Run: ``.venv/bin/python benchmarks/store_behind.py`` (results are appended to
``benchmarks/results/store_behind.md`` when ``--record`` is given).

Each run makes a fresh store, runs a first turn, then takes the write lock with a
connection of its own (a second notebook, a backup tool) and starts a second turn whose
provider streams a delta every 10 ms until stopped. The lock is held ~3 s in all: the
turn streams under it for 1 s after the session said its store is behind, Stop is
clicked (``session.cancel()``), then the lock is let go and everything is flushed (and
checked to be stored).

* **Loop stall**: a task on the loop sleeps 5 ms at a time and notes the longest gap
  between its wake-ups over the whole time the lock is held — what a widget, a Stop click
  or another cell waits. The same figure for a run with no lock taken is the baseline:
  the machine's own noise plus the stream's work.
* **Stop**: wall time from ``cancel()`` to the turn's ``done`` event, while the lock is
  still held.

The session's writes go through a writer thread (neta_nb/store/writer.py), so neither
should depend on the lock; before that, each write blocked the loop for the lock's whole
5 s busy timeout. Targets: loop stall < 100 ms and Stop < 200 ms under the lock (the
bounds tests/store/test_writer.py once asserted; the test now checks the behaviour —
streaming and Stop go on while the lock is held — and these figures live here).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import sqlite3
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from recorded import append_result

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog
from neta_nb.messages import Usage
from neta_nb.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    UsageUpdate,
)

RUNS = 5
HOLD = 3.0
"""Seconds the lock is held in all."""
STREAM_UNDER_LOCK = 1.0
"""Seconds the turn streams on after the store-behind warning, before Stop."""


class PacedProvider(Provider):
    """A short first answer; then a delta every 10 ms, and a wait until stopped."""

    supplier = "scripted"
    model = "bench"

    def __init__(self) -> None:
        self.calls = 0

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls == 1:
            yield TextDelta("first answer")
            yield UsageUpdate(Usage(input_tokens=10, output_tokens=2))
            yield StreamDone("end_turn")
            return
        for i in range(2_000):
            yield TextDelta(f"word{i} ")
            await asyncio.sleep(0.01)
        await asyncio.Event().wait()  # streams until Stop
        yield StreamDone("end_turn")


class Ticker:
    """A task on the loop that notes the longest gap between its wake-ups."""

    def __init__(self) -> None:
        self.longest = 0.0
        self._task: asyncio.Task[None] | None = None

    async def _run(self) -> None:
        last = time.perf_counter()
        while True:
            await asyncio.sleep(0.005)
            now = time.perf_counter()
            self.longest = max(self.longest, now - last)
            last = now

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        assert self._task is not None
        self._task.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await self._task


async def until(predicate: Any, within: float = 30.0) -> None:
    deadline = time.monotonic() + within
    while not predicate():
        if time.monotonic() > deadline:
            raise RuntimeError(f"not within {within} s: {predicate}")
        await asyncio.sleep(0.002)


@contextlib.contextmanager
def lock_held(db: Path, locked: bool) -> Any:
    if not locked:
        yield
        return
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")
    try:
        yield
    finally:
        other.execute("COMMIT")
        other.close()


async def one_run(directory: Path, *, locked: bool) -> tuple[float, float]:
    """(longest loop stall, Stop to `done`) in seconds."""
    db = directory / "sessions.sqlite3"
    store = SessionStore(db)
    session = AgentSession(Agent("bench", model=PacedProvider()), ToolCatalog(), store)
    events: list[Any] = []
    session.subscribe(events.append)
    await session.run("turn one")

    ticker = Ticker()
    ticker.start()
    began = time.monotonic()
    with lock_held(db, locked):
        task = session.start("turn two")
        await until(lambda: session.streaming_message is not None
                    and len(session.streaming_message.text) > 200)
        if locked:
            await until(lambda: any(e.type == "warning" for e in events))
        await asyncio.sleep(STREAM_UNDER_LOCK)
        clicked = time.perf_counter()
        session.cancel()
        await until(lambda: any(e.type == "done" for e in events[-3:]))
        stop_took = time.perf_counter() - clicked
        await task
        if locked and session.store_failure is None:
            raise RuntimeError("the store was never behind: the lock did not hold")
        await asyncio.sleep(max(0.0, HOLD - (time.monotonic() - began)))
    await ticker.stop()
    if not session.flush(30):
        raise RuntimeError("the turn was not stored once the lock went")
    stored = SessionStore(db).load_messages(session.id)
    if [m.role for m in stored] != ["user", "assistant", "user", "assistant"]:
        raise RuntimeError(f"stored {[m.role for m in stored]}")
    store.close()
    return ticker.longest, stop_took


def summary(values: list[float]) -> str:
    ms = sorted(v * 1e3 for v in values)
    return f"{ms[0]:.1f} / {statistics.median(ms):.1f} / {ms[-1]:.1f} ms"


async def main(record: bool) -> None:
    results: dict[bool, list[tuple[float, float]]] = {True: [], False: []}
    for _ in range(RUNS):
        for locked in (False, True):  # alternated, so both see the same machine
            with tempfile.TemporaryDirectory() as directory:
                results[locked].append(await one_run(Path(directory), locked=locked))
    stalls = {locked: [r[0] for r in runs] for locked, runs in results.items()}
    stops = {locked: [r[1] for r in runs] for locked, runs in results.items()}
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}",
        "",
        f"{RUNS} runs each, locked and unlocked alternated; best / median / worst.",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| longest loop stall, lock held ~{HOLD:g} s | {summary(stalls[True])} | < 100 ms |",
        f"| longest loop stall, no lock (baseline) | {summary(stalls[False])} | — |",
        f"| Stop → `done`, lock held | {summary(stops[True])} | < 200 ms |",
        f"| Stop → `done`, no lock (baseline) | {summary(stops[False])} | — |",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("store_behind.md", report, HEADER)


HEADER = """# A turn while another program holds the store's write lock

`python benchmarks/store_behind.py --record` — a second turn streams (a delta every
10 ms) while another connection holds the SQLite write lock for ~3 s; Stop is clicked
after it has streamed 1 s under the lock.

* **longest loop stall**: the longest gap between wake-ups of a task on the kernel's
  event loop that sleeps 5 ms at a time, over the whole time the lock is held — how long
  a widget update, a Stop click or another cell would have waited. Wake-ups are never
  exactly 5 ms apart, so the floor is a few ms; the *no lock* row is the same run without
  the lock, i.e. the machine's own noise plus the stream's work. A figure near the no-lock
  one means the lock costs the loop nothing; before the writer thread, each write blocked
  the loop for the lock's 5 s busy timeout.
* **Stop → `done`**: wall time from `session.cancel()` (what the Stop button does) to
  the turn's `done` event while the lock is still held; the turn's end does not wait for
  its writes once the session knows its store is behind.

These were the bounds `tests/store/test_writer.py` asserted (stall < 100 ms, Stop <
200 ms); the test now proves the behaviour by ordering (streaming and Stop complete while
the lock is still held, with the store's busy timeouts made unbounded), and the figures
are measured here. Shared 2-core machines are noisy: compare medians, and runs made
alternately.

"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="append to results/")
    args: Any = parser.parse_args()
    asyncio.run(main(args.record))
    sys.exit(0)
