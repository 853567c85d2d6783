"""A turn's CPU early and late in one long session, with a SQLite store and a chat view.

Run: ``.venv/bin/python benchmarks/long_session_turns.py [--turns 1600] [--record]``
(``--record`` appends to ``benchmarks/results/long_session_turns.md``).

One :class:`~neta_nb.AgentSession` with a SQLite :class:`~neta_nb.SessionStore` (a file
in a scratch folder) and a :class:`~neta_nb.widgets.ChatView` bound (no browser: the
view's projection, batches and traits are updated and serialised as in a kernel; the
messages go nowhere). A scripted offline model makes every turn alike: a prompt, then
four responses each with a little thinking, a line of text and one tool call (a tool that
returns ~300 characters), then a ~600-character answer with code and a table, streamed
in 40-character deltas, usage reported.

Every turn runs through ``AgentSession.run``. The turns of the two windows measured
(1–100 and the last 100, 1,501–1,600 by default) are each followed by a pause of
``SETTLE`` seconds (idle: the chat view's trailing batch and the store's writes land in
it), and a turn's figure is the process's CPU (``time.process_time``: every thread, the
store's writer included) from its start to the end of that pause. The turns between the
windows run back to back (the history is built, not measured) and the store is flushed
before the late window. A turn whose cost grows with the session shows as a late/early
ratio above 1.

Target (issue 53): late / early ≤ 1.3×.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

from recorded import append_result

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog, tool
from neta_nb.messages import Usage
from neta_nb.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.widgets import ChatView, static_form

CALLS_PER_TURN = 4
WINDOW = 100
SETTLE = 0.12
"""Seconds of idle after a measured turn: past the chat view's batch interval (0.1 s)."""

ANSWER = (
    "The **North** region grew fastest this quarter; East stayed flat.\n\n"
    "```python\nsummary = df.groupby('region')['sales'].sum().sort_values()\n"
    "print(summary.tail(3))\n```\n\n"
    "| region | change | share |\n|---|---|---|\n| North | +4.2 % | 31 % |\n"
    "| South | +1.8 % | 27 % |\n| East | 0.0 % | 22 % |\n| West | +1.1 % | 20 % |\n\n"
    "North's growth comes mostly from two large orders in week 9; without them it is "
    "+1.9 %, close to South. I would check whether those orders repeat before planning "
    "on them. The table above uses the cleaned frame (duplicates dropped)."
)


def pieces(text: str, size: int = 40) -> list[str]:
    return [text[i:i + size] for i in range(0, len(text), size)]


class WorkdayProvider(Provider):
    """Every turn: ``CALLS_PER_TURN`` responses with thinking, a line and one tool call,
    then the answer. Which response comes next is read from the request's last message
    (a user prompt starts a turn), so a turn that went wrong cannot shift the next."""

    supplier = "scripted"
    model = "bench"

    def __init__(self) -> None:
        self.calls_this_turn = 0
        self.count = 0
        self.answer = pieces(ANSWER)
        self.thinking = pieces("I should look at the sales frame first, then group it by "
                               "region and compare the quarters.")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.messages and request.messages[-1].role == "user":
            self.calls_this_turn = 0
        self.calls_this_turn += 1
        self.count += 1
        usage = UsageUpdate(Usage(input_tokens=3_000, output_tokens=120))
        if self.calls_this_turn <= CALLS_PER_TURN:
            for piece in self.thinking:
                yield ThinkingDelta(piece)
            yield ThinkingEnd(signature="sig")
            yield TextDelta(f"Reading part {self.calls_this_turn}.")
            yield ToolCallReady(f"call{self.count}", "read_table",
                                {"name": "sales", "part": self.calls_this_turn})
            yield usage
            yield StreamDone("tool_use")
            return
        for piece in self.answer:
            yield TextDelta(piece)
        yield usage
        yield StreamDone("end_turn")


@tool
def read_table(name: str, part: int = 1) -> str:
    """Reads one part of a table."""
    rows = "\n".join(f"{name},{part},{i},{i * 37 % 101}" for i in range(12))
    return f"table,part,row,value\n{rows}"


class KernelSide:
    """What a kernel does with what the chat view sends, minus the socket: every comm
    message and every update of the static form's display JSON-encoded (ipykernel packs
    each message so), its bytes counted. The chat is shown as a cell shows it — a view
    announced open (``view_opened``, as the page sends) and a static form with a display
    id, updated at the end of every turn."""

    def __init__(self, chat: ChatView) -> None:
        self.bytes = 0
        chat.comm.publish_msg = self.publish
        chat._handle_request({"kind": "view_opened", "id": "open-1", "view_id": "page-1"})
        chat._static_form.display_ids = ["neta-form:bench"]
        static_form.send_update = self.update_display  # outside IPython it sends nothing

    def publish(self, msg_type: str, data: Any = None, metadata: Any = None,
                buffers: Any = None, **keys: Any) -> None:
        self.pack({"data": data, "metadata": metadata or {}})

    def update_display(self, bundle: dict[str, str], display_id: str) -> None:
        self.pack({"data": bundle, "metadata": {}, "transient": {"display_id": display_id}})

    def pack(self, content: dict[str, Any]) -> None:
        self.bytes += len(json.dumps(content, ensure_ascii=False, allow_nan=False))


async def one_turn(session: AgentSession, n: int, *, settle: float) -> float:
    """CPU of turn ``n`` and the idle pause after it, in seconds."""
    start = time.process_time()
    await session.run(f"Question {n}: how do the regions compare this quarter?")
    if settle:
        await asyncio.sleep(settle)
    return time.process_time() - start


async def measure(turns: int) -> tuple[list[float], list[float], dict[str, Any]]:
    with tempfile.TemporaryDirectory() as scratch:
        store = SessionStore(Path(scratch) / "sessions.db")
        session = AgentSession(Agent("bench", model=WorkdayProvider(),
                                     max_model_calls=CALLS_PER_TURN + 2),
                               ToolCatalog([read_table]), store)
        kernel = KernelSide(ChatView(session))
        sent = [kernel.bytes]
        early = [await one_turn(session, n, settle=SETTLE) for n in range(1, WINDOW + 1)]
        sent.append(kernel.bytes)
        built = time.perf_counter()
        for n in range(WINDOW + 1, turns - WINDOW + 1):
            await one_turn(session, n, settle=0)
        build_seconds = time.perf_counter() - built
        session.flush()
        gc.collect()
        sent.append(kernel.bytes)
        late = [await one_turn(session, n, settle=SETTLE)
                for n in range(turns - WINDOW + 1, turns + 1)]
        sent.append(kernel.bytes)
        session.flush()
        facts = {"messages": len(session.messages), "build_seconds": build_seconds,
                 "stored": store.count_messages(session.id),
                 "early_bytes": (sent[1] - sent[0]) / WINDOW,
                 "late_bytes": (sent[3] - sent[2]) / WINDOW}
        store.close()
    return early, late, facts


def summary(costs: list[float]) -> tuple[float, float]:
    """Median and mean, in ms."""
    return statistics.median(costs) * 1e3, statistics.mean(costs) * 1e3


async def main(turns: int, runs: int, record: bool) -> None:
    rows = []
    for _ in range(runs):
        early, late, facts = await measure(turns)
        rows.append((summary(early), summary(late), facts))
        (em, ea), (lm, la) = rows[-1][0], rows[-1][1]
        print(f"early {em:.2f} ms (mean {ea:.2f}), late {lm:.2f} ms (mean {la:.2f}), "
              f"{lm / em:.2f}× median, {la / ea:.2f}× mean; {facts['messages']:,} messages, "
              f"{facts['stored']:,} stored, middle turns built in {facts['build_seconds']:.0f} s; "
              f"sent per turn {facts['early_bytes']:,.0f} / {facts['late_bytes']:,.0f} bytes",
              flush=True)
    ratios = [late[0] / early[0] for early, late, _ in rows]
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}, {runs} run{'s' if runs > 1 else ''}",
        "",
        "| run | turns 1–100, median / mean | "
        f"turns {turns - WINDOW + 1:,}–{turns:,}, median / mean | late / early (medians) |",
        "|---|---|---|---|",
        *(f"| {i} | {e[0]:.2f} / {e[1]:.2f} ms | {lt[0]:.2f} / {lt[1]:.2f} ms | "
          f"{lt[0] / e[0]:.2f}× |" for i, (e, lt, _) in enumerate(rows, 1)),
        f"| median of runs | | | {statistics.median(ratios):.2f}× (target ≤ 1.3×) |",
        "",
        f"History at the end: {rows[-1][2]['messages']:,} messages. Sent to the view per "
        f"turn (JSON): {rows[-1][2]['early_bytes']:,.0f} bytes early, "
        f"{rows[-1][2]['late_bytes']:,.0f} late.",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("long_session_turns.md", report,
                      "# A turn's cost in a long session\n\n"
                      "`python benchmarks/long_session_turns.py --record` — CPU "
                      "(process_time, all threads) per turn of one session with a SQLite "
                      "store and a ChatView bound; see the script's docstring.\n\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--turns", type=int, default=1_600, help="turns of the session")
    parser.add_argument("--runs", type=int, default=1, help="sessions to measure")
    parser.add_argument("--record", action="store_true", help="append to results/")
    args: Any = parser.parse_args()
    asyncio.run(main(args.turns, args.runs, args.record))
    sys.exit(0)
