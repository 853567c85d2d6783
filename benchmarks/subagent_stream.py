"""What a sub-agent's streamed delta costs on its way to the parent's chat view, next to
a delta the parent streams itself.

Run: ``.venv/bin/python benchmarks/subagent_stream.py [--deltas N] [--record]``
(``--record`` appends to ``benchmarks/results/subagent_stream.md``).

Kernel CPU (``process_time``) of whole turns, no browser, minus the provider alone
yielding the same deltas:

* **top-level**: the parent's own model streams N five-character deltas;
* **child**: the parent's model calls ``delegate`` once and the child's model streams the
  same N deltas; each reaches the parent as ``subagent_event {id, event}``.

Each is measured with one no-op subscriber on the parent and with a
:class:`~neta_nb.widgets.ChatView` bound to the parent (its comm goes nowhere, as in
``chat_stream.py``'s kernel figure). The child's fixed costs (its session, its record, one
extra model call of the parent) are spread over N deltas and are small next to them.
``--repeats`` rounds each run every case once (round-robin); a case's figure is its best
round.

Target (issue 15): a child's delta costs at most 2× a top-level delta.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import sys
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from recorded import append_result  # noqa: E402

from neta_nb import Agent, AgentSession, ToolCatalog  # noqa: E402
from neta_nb.messages import Usage  # noqa: E402
from neta_nb.providers.base import (  # noqa: E402
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.tools.builtin import delegate  # noqa: E402


class Burst(Provider):
    """Streams ``n`` deltas, yielding to the loop every 64 as a socket read would."""

    supplier = "scripted"
    model = "bench"

    def __init__(self, n: int) -> None:
        self.n = n

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        piece = TextDelta("abcde")
        for i in range(self.n):
            yield piece
            if i % 64 == 0:
                await asyncio.sleep(0)
        yield UsageUpdate(Usage(input_tokens=10, output_tokens=self.n))
        yield StreamDone("end_turn")


class DelegateOnce(Provider):
    """Calls ``delegate`` once, then answers in one delta."""

    supplier = "scripted"
    model = "bench"

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if any(m.tool_results for m in request.messages):
            yield TextDelta("done")
            yield StreamDone("end_turn")
            return
        yield ToolCallReady("d1", "delegate", {"agent": "child", "task": "stream"})
        yield UsageUpdate(Usage(input_tokens=10, output_tokens=5))
        yield StreamDone("tool_use")


def _agents(n: int) -> dict[str, Agent]:
    return {"top-level": Agent("bench", model=Burst(n)),
            "child": Agent("bench", model=DelegateOnce(),
                           subagents=[Agent("child", model=Burst(n))],
                           max_tool_result_chars=10 * n)}


async def _alone(n: int) -> float:
    start = time.process_time()
    async for _ in Burst(n).stream(ModelRequest("", [])):
        pass
    return time.process_time() - start


async def _turn(agent: Agent, bind: Callable[[AgentSession], Any]) -> float:
    session = AgentSession(agent, ToolCatalog([delegate]))
    bound = bind(session)
    start = time.process_time()
    await session.run("go")
    elapsed = time.process_time() - start
    del bound
    return elapsed


def _subscriber(session: AgentSession) -> Any:
    return session.subscribe(lambda event: None)


def _chat_view(session: AgentSession) -> Any:
    from neta_nb.widgets import ChatView

    return ChatView(session)


def measure(n: int, repeats: int) -> dict[tuple[str, str], float]:
    # Round-robin: each round runs every case once, so a busy spell of a shared machine
    # slows all cases alike instead of the one whose repeats it happens to fall on (the
    # best of each case, then its ratio, was off by up to 2x that way).
    cases = [(view, bind, kind)
             for view, bind in (("one subscriber", _subscriber), ("chat view bound", _chat_view))
             for kind in ("top-level", "child")]
    base = float("inf")
    best = {(view, kind): float("inf") for view, _, kind in cases}
    for _ in range(repeats):
        base = min(base, asyncio.run(_alone(n)))
        for view, bind, kind in cases:
            best[(view, kind)] = min(best[(view, kind)],
                                     asyncio.run(_turn(_agents(n)[kind], bind)))
    return {case: (total - base) / n * 1e6 for case, total in best.items()}


def main(n: int, repeats: int, record: bool) -> None:
    results = measure(n, repeats)
    lines = [f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
             f"{platform.machine()}, {n:,} deltas, best of {repeats}", "",
             "| parent's subscriber | top-level delta | child's delta | ratio | target |",
             "|---|---|---|---|---|"]
    for view in ("one subscriber", "chat view bound"):
        top, child = results[(view, "top-level")], results[(view, "child")]
        lines.append(f"| {view} | {top:.2f} µs | {child:.2f} µs | {child / top:.2f}× | ≤ 2× |")
    report = "\n".join(lines) + "\n"
    print(report)
    if record:
        append_result("subagent_stream.md", report, (
            "# Sub-agent deltas to the parent's chat view\n\n"
            "`python benchmarks/subagent_stream.py --record` — kernel CPU per delta "
            "(process_time of whole turns minus the provider alone), no browser.\n\n"))


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--deltas", type=int, default=50_000)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--record", action="store_true", help="append to results/")
    args = parser.parse_args()
    main(args.deltas, args.repeats, args.record)
