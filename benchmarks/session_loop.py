"""The session loop's own overhead: CPU per streamed delta and per tool round trip.

Run: ``.venv/bin/python benchmarks/session_loop.py`` (results are appended to
``benchmarks/results/session_loop.md`` when ``--record`` is given).

* **Per delta**: a provider yields N text deltas with no pacing; we time a full turn with
  one no-op subscriber and subtract the time the provider alone takes to yield the same
  deltas, so the figure is what the session adds (event objects, assembly, dispatch).
* **Per tool round trip**: a provider answers every call with one tool call until a
  count is reached; we time the turn against a growing history (the session is reused,
  so later rounds carry more messages) and report the cost per round in early and late
  windows — it should stay flat.

Targets (DESIGN §7): ≤ 6 µs CPU per delta with one subscriber; ≤ 0.2 ms per tool round
trip, flat as history grows.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import subprocess
import sys
import time
from collections.abc import AsyncIterator
from typing import Any

from recorded import append_result

from neta_nb import Agent, AgentSession, ToolCatalog, tool
from neta_nb.messages import Usage
from neta_nb.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    UsageUpdate,
)

DELTAS = 200_000


class BurstProvider(Provider):
    """Yields ``n`` five-character deltas as fast as it can."""

    supplier = "scripted"
    model = "bench"

    def __init__(self, n: int) -> None:
        self.n = n

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        delta = TextDelta("abcde")
        for _ in range(self.n):
            yield delta
        yield UsageUpdate(Usage(input_tokens=10, output_tokens=self.n))
        yield StreamDone("end_turn")


class ToolLoopProvider(Provider):
    """Calls ``noop`` until ``rounds`` calls were made in the current turn, then answers.
    ``report_usage=False`` is a server that sends no usage (llama-cpp-python): the
    session then estimates the context from the history after every call."""

    supplier = "scripted"
    model = "bench"

    def __init__(self, rounds: int, *, report_usage: bool = True) -> None:
        self.rounds = rounds
        self.calls = 0
        self.report_usage = report_usage

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        self.calls += 1
        if self.calls % (self.rounds + 1):
            yield ToolCallReady(f"c{self.calls}", "noop", {"note": "x" * 40})
        else:
            yield TextDelta("done")
        if self.report_usage:
            yield UsageUpdate(Usage(input_tokens=10, output_tokens=5))
        yield StreamDone("tool_use" if self.calls % (self.rounds + 1) else "end_turn")


@tool(core=True, runs_on_main_thread=True)
def noop(note: str = "") -> str:
    """Does nothing."""
    return "ok"


async def provider_alone(n: int) -> float:
    start = time.process_time()
    async for _ in BurstProvider(n).stream(ModelRequest("", [])):
        pass
    return time.process_time() - start


async def per_delta(n: int) -> float:
    session = AgentSession(Agent("bench", model=BurstProvider(n)), ToolCatalog())
    session.subscribe(lambda event: None)
    start = time.process_time()
    await session.run("go")
    return time.process_time() - start


async def per_tool_round(rounds: int, turns: int) -> list[float]:
    catalog = ToolCatalog([noop])
    session = AgentSession(Agent("bench", model=ToolLoopProvider(rounds),
                                 max_model_calls=rounds + 1), catalog)
    session.subscribe(lambda event: None)
    per_round = []
    for _ in range(turns):
        start = time.process_time()
        await session.run("go")
        per_round.append((time.process_time() - start) / rounds)
    return per_round


async def rounds_in_one_turn(rounds: int, *, report_usage: bool) -> list[float]:
    """CPU of each tool round trip of one turn of ``rounds`` round trips: round k's
    history holds ~3k messages, so a cost that grows with the history shows as a slope."""
    session = AgentSession(Agent("bench", model=ToolLoopProvider(rounds,
                                                                 report_usage=report_usage),
                                 max_model_calls=rounds + 1), ToolCatalog([noop]))
    marks: list[float] = []

    def mark(event: Any) -> None:
        if event.type == "tool_result":
            marks.append(time.process_time())

    session.subscribe(mark)
    start = time.process_time()
    await session.run("go")
    return [b - a for a, b in zip([start, *marks], marks, strict=False)]


CREATE_SESSION = """
import sys, time
from neta_nb import Agent, AgentSession
start = time.perf_counter()
AgentSession(Agent("bench", model="scripted"))
print(time.perf_counter() - start, "IPython" in sys.modules)
"""


def session_creation() -> tuple[float, bool]:
    """Wall time of the first ``AgentSession`` of a fresh interpreter outside a kernel
    (the package already imported), and whether it imported IPython."""
    out = subprocess.run([sys.executable, "-c", CREATE_SESSION], capture_output=True,
                         text=True, check=True).stdout.split()
    return float(out[0]), out[1] == "True"


def window_ms(costs: list[float], first: int, last: int) -> float:
    """Median CPU of round trips ``first``..``last`` (1-based), in ms."""
    return statistics.median(costs[first - 1:last]) * 1e3


async def main(record: bool) -> None:
    baseline = min([await provider_alone(DELTAS) for _ in range(3)])
    total = min([await per_delta(DELTAS) for _ in range(3)])
    delta_us = (total - baseline) / DELTAS * 1e6
    rounds = await per_tool_round(rounds=100, turns=10)
    early, late = statistics.mean(rounds[:2]) * 1e3, statistics.mean(rounds[-2:]) * 1e3
    one_turn = {usage: await rounds_in_one_turn(1600, report_usage=usage)
                for usage in (True, False)}
    created, ipython = min(session_creation() for _ in range(3))
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}",
        "",
        "| measure | result | target |",
        "|---|---|---|",
        f"| session overhead per delta (1 subscriber, {DELTAS:,} deltas) | "
        f"{delta_us:.2f} µs CPU | ≤ 6 µs |",
        f"| provider alone per delta (subtracted) | {baseline / DELTAS * 1e6:.2f} µs | — |",
        f"| tool round trip, first 200 rounds (history ≤ 600 msgs) | {early:.3f} ms | ≤ 0.2 ms |",
        f"| tool round trip, last 200 rounds (history ~3,000 msgs) | {late:.3f} ms | flat |",
        *(f"| one turn of 1,600 round trips{note}: round trips 1–200 / 1,401–1,600 | "
          f"{window_ms(costs, 1, 200):.3f} / {window_ms(costs, 1401, 1600):.3f} ms "
          f"({window_ms(costs, 1401, 1600) / window_ms(costs, 1, 200):.2f}×) | ≤ 1.5× |"
          for note, costs in ((", usage reported", one_turn[True]),
                              (", no usage reported", one_turn[False]))),
        f"| first AgentSession outside a kernel (best of 3) | {created * 1e3:.1f} ms, "
        f"IPython {'imported' if ipython else 'not imported'} | no IPython |",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("session_loop.md", report, "# Session loop overhead\n\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="append to results/")
    args: Any = parser.parse_args()
    asyncio.run(main(args.record))
    sys.exit(0)
