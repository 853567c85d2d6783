"""What the widgets weigh on the wire and in the file, measured from a real JupyterLab page.

Run: ``PYTHONPATH=<tree> .venv/bin/python benchmarks/wire_weight.py --label after``
(``--record`` appends the figures to ``benchmarks/results/wire_weight.md``). The kernel
imports neta_nb from ``PYTHONPATH``, so the same script measures another tree (a worktree
of an older commit, with its JS built) by pointing it there. Needs ``/usr/bin/chromium``
and the test extras.

One JupyterLab server (saving widget state, as "Save widget state" does) and one Chromium
tab run a notebook whose cells display a ``ChatView``, a ``TodoCard``, a ``TokenStats``,
then stream one turn of a 21,000-character answer into the chat (by default once the chat's
view is drawn; with ``--run-all`` at once, as Run All does, so the view joins mid-turn).
**Every** websocket frame the page receives is decoded (JupyterLab's binary kernel
protocol: offsets, channel, header, parent header, metadata, content, buffers) and counted
by the request it answers —
its parent header's message id — so each cell's bytes are everything its execution sent
(outputs, ``comm_open``, trait updates, batches, status), plus, apart, the traffic of the
views' own requests (``sync``, ``view_opened``…). Then the page is reloaded with the three
widgets shown (every byte received until they render again), and the notebook is saved
(its size, widget state included).

Byte counts are deterministic up to a few per cent (ids, timestamps, how deltas fall into
batches), so one run per tree is enough; the machine's load does not change them.
"""

from __future__ import annotations

import argparse
import json
import platform
import sys
import tempfile
import time
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser.harness import (  # noqa: E402
    LAB_SETTINGS,
    JupyterLabServer,
    LabSession,
    chromium_missing_reason,
    launch_chromium,
)

RESULTS = REPO / "benchmarks" / "results" / "wire_weight.md"
SAVE_WIDGET_STATE = {"@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings":
                     {"saveState": True}}
ANSWER_CHARS = 21_000
VIEW_REQUESTS = "views' own requests (sync, view_opened…)"

SETUP = f'''
import asyncio
from neta_nb import Agent, AgentSession
from neta_nb.messages import Usage
from neta_nb.providers.base import Provider, StreamDone, TextDelta, UsageUpdate
from neta_nb.widgets import ChatView, TodoCard, TokenStats

WORDS = ("the north region grew while east stayed flat and west rose a little "
         "after the spring campaign ").split()

def answer_text(chars):
    out, n = [], 0
    while sum(map(len, out)) < chars:
        out.append(WORDS[n % len(WORDS)] + ("\\n\\n" if n % 60 == 59 else " "))
        n += 1
    return "".join(out)[:chars]

TEXT = answer_text({ANSWER_CHARS})

class PacedProvider(Provider):
    supplier = "scripted"
    model = "bench"

    async def stream(self, request):
        # Five-character deltas, 2,000 a second (released every 10 ms), as a fast model
        # sends them; or all at once (PACED = False).
        for i in range(0, len(TEXT), 5):
            yield TextDelta(TEXT[i:i + 5])
            if PACED and i % 100 == 95:
                await asyncio.sleep(0.01)
            elif not PACED:
                await asyncio.sleep(0)  # yields to the loop, as a network read would
        yield UsageUpdate(Usage(input_tokens=1200, output_tokens=len(TEXT) // 4))
        yield StreamDone("end_turn")

PACED = True
session = AgentSession(Agent("analyst", model=PacedProvider()))

async def until_drawn(chat):
    # A turn is measured with the chat's view drawn: a view that opens mid-turn asks for a
    # snapshot, and that reply would carry part of the turn's text under the view's request.
    while not chat._presence.views:
        await asyncio.sleep(0.05)
'''.strip()

CELLS = {
    "setup": SETUP,
    "empty cell": "pass",
    "first widget (ChatView)": "chat = ChatView(session, height='420px')\nchat",
    "second widget (TodoCard)": "TodoCard(session.todo)",
    "third widget (TokenStats)": "TokenStats()",
    "views drawn": "await until_drawn(chat)",
    "one streamed turn": "await session.run('Describe the regions in detail.')",
    "one turn as a burst": "PACED = False\nawait session.run('Once more, at once.')",
}


@dataclass
class Frame:
    at: float
    size: int
    channel: str
    msg_type: str
    parent_id: str
    parent_type: str
    comm_id: str | None
    detail: str = ""
    """A comm message's ``method`` (``update``, ``custom``) and custom ``kind``."""


def decode(payload: str | bytes) -> dict[str, Any]:
    """A frame of JupyterLab's kernel websocket: its channel, header, parent header and
    content, from the binary protocol or the JSON one."""
    data = payload.encode() if isinstance(payload, str) else payload
    if data[:1] == b"{":
        message = json.loads(data)
        return {"channel": message.get("channel", ""), "header": message.get("header", {}),
                "parent": message.get("parent_header", {}),
                "content": message.get("content", {})}
    count = int.from_bytes(data[:8], "little")
    offsets = [int.from_bytes(data[8 + 8 * i:16 + 8 * i], "little") for i in range(count)]
    ends = [*offsets[1:], len(data)]
    parts = [data[offsets[i]:ends[i]] for i in range(count)]
    parsed = [json.loads(part) if index in (1, 2, 4) else part
              for index, part in enumerate(parts[:5])]
    return {"channel": parts[0].decode(), "header": parsed[1], "parent": parsed[2],
            "content": parsed[4]}


@dataclass
class Recorder:
    frames: list[Frame] = field(default_factory=list)
    code_by_request: dict[str, str] = field(default_factory=dict)
    comm_of_request: dict[str, str] = field(default_factory=dict)
    kernel_comms: set[str] = field(default_factory=set)

    def attach(self, page: Any) -> None:
        def on_socket(socket: Any) -> None:
            socket.on("framereceived", self._on_frame)
            socket.on("framesent", self._on_sent)
        page.on("websocket", on_socket)

    def _on_sent(self, payload: str | bytes) -> None:
        """The page's comm messages: which comm each went to, so the kernel's answers to
        messages for a comm the kernel never opened (JupyterLab's widget manager opening
        its control comm before the kernel imported ipywidgets: "No such comm") are not
        counted as the views' requests."""
        try:
            message = decode(payload)
        except (ValueError, IndexError, UnicodeDecodeError):
            return
        if message["header"].get("msg_type") == "comm_msg":
            self.comm_of_request[message["header"].get("msg_id", "")] = str(
                message["content"].get("comm_id", ""))

    def _views_request(self, frame: Frame) -> bool:
        """A frame the kernel sent in answer to a page's message to a widget's comm."""
        return (frame.parent_type == "comm_msg"
                and self.comm_of_request.get(frame.parent_id, "") in self.kernel_comms)

    def _on_frame(self, payload: str | bytes) -> None:
        size = len(payload.encode() if isinstance(payload, str) else payload)
        try:
            message = decode(payload)
        except (ValueError, IndexError, UnicodeDecodeError):
            self.frames.append(Frame(time.time(), size, "?", "?", "", "", None))
            return
        header, parent, content = message["header"], message["parent"], message["content"]
        msg_type = header.get("msg_type", "")
        if msg_type == "execute_input":
            self.code_by_request[parent.get("msg_id", "")] = content.get("code", "")
        if msg_type == "comm_open":
            self.kernel_comms.add(str(content.get("comm_id", "")))
        detail = ""
        data = content.get("data") if isinstance(content, dict) else None
        if msg_type.startswith("comm") and isinstance(data, dict):
            inner = data.get("content")
            kind = inner.get("kind", "") if isinstance(inner, dict) else ""
            keys = ",".join(sorted(data.get("state", {}))) if data.get("method") == "update" else ""
            detail = " ".join(part for part in (data.get("method", ""), kind, keys) if part)
        self.frames.append(Frame(time.time(), size, message["channel"], msg_type,
                                 parent.get("msg_id", ""), parent.get("msg_type", ""),
                                 content.get("comm_id") if isinstance(content, dict) else None,
                                 detail))

    def by_cell(self) -> dict[str, int]:
        totals: dict[str, int] = defaultdict(int)
        names = {code: name for name, code in CELLS.items()}
        for frame in self.frames:
            code = self.code_by_request.get(frame.parent_id)
            if code is not None and code in names:
                totals[names[code]] += frame.size
            elif self._views_request(frame):
                totals[VIEW_REQUESTS] += frame.size
            else:
                totals["other (kernel info, comm info, session)"] += frame.size
        return dict(totals)

    def kinds(self, cell: str | None) -> dict[str, int]:
        """One cell's bytes (``None``: the views' own requests) by message type, a comm
        message by its ``method`` and custom ``kind`` or updated traits."""
        totals: dict[str, int] = defaultdict(int)
        for frame in self.frames:
            mine = (self.code_by_request.get(frame.parent_id) == CELLS[cell] if cell
                    else self._views_request(frame))
            if mine:
                totals[" ".join(part for part in (frame.msg_type, frame.detail) if part)] += (
                    frame.size)
        return dict(sorted(totals.items(), key=lambda item: -item[1]))

    def batches(self, cell: str) -> int:
        """How many numbered batches (streamed ops) one cell's execution sent."""
        return sum(1 for frame in self.frames
                   if self.code_by_request.get(frame.parent_id) == CELLS[cell]
                   and frame.detail == "custom batch")

    def since(self, moment: float) -> int:
        return sum(frame.size for frame in self.frames if frame.at >= moment)


def measure(label: str) -> dict[str, Any]:
    with tempfile.TemporaryDirectory(prefix="neta-wire-") as tmp:
        server = JupyterLabServer(Path(tmp), settings={**LAB_SETTINGS, **SAVE_WIDGET_STATE})
        server.start()
        try:
            with launch_chromium(Path(tmp) / "chromium", device_scale_factor=1) as context:
                lab = LabSession(server, context)
                recorder = Recorder()
                recorder.attach(lab.page)
                path = lab.run_notebook("wire.ipynb", list(CELLS.values()), timeout=180)
                page = lab.page
                page.locator(".neta-chat-view .neta-chat-text").last.wait_for(timeout=60_000)
                page.wait_for_timeout(2_000)  # the views' last requests
                text = int(lab.execute(path, "print(len(TEXT))"))
                cells = recorder.by_cell()
                kinds = {name: recorder.kinds(name) for name in CELLS
                         if name not in ("setup", "views drawn")}
                kinds[VIEW_REQUESTS] = recorder.kinds(None)
                batches = {name: recorder.batches(name)
                            for name in ("one streamed turn", "one turn as a burst")}

                page.evaluate("async () => { await window.jupyterapp.commands.execute("
                              "'docmanager:save'); }")
                page.wait_for_timeout(1_500)
                saved = (server.root_dir / path).stat().st_size

                reload_from = time.time()
                page.reload(wait_until="domcontentloaded")
                page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
                page.evaluate("async () => { await window.jupyterapp.started; "
                              "await window.jupyterapp.restored; }")
                page.locator(".neta-chat-view .neta-chat-text").last.wait_for(timeout=60_000)
                for card in (".neta-todo-card", ".neta-token-stats"):
                    page.locator(card).first.wait_for(state="attached", timeout=30_000)
                page.wait_for_timeout(3_000)
                reload_bytes = recorder.since(reload_from)
                lab.close()
        finally:
            server.stop()
    return {"label": label, "cells": cells, "text_chars": text, "saved_bytes": saved,
            "reload_bytes": reload_bytes, "kinds": kinds, "batches": batches}


def report(result: dict[str, Any]) -> str:
    cells, text = result["cells"], result["text_chars"]
    baseline = cells.get("empty cell", 0)
    lines = [f"### {result['label']}", "",
             f"{platform.python_version()} · {time.strftime('%Y-%m-%d')} · streamed answer "
             f"{text:,} characters; an empty cell's own traffic {baseline:,} bytes", "",
             "| what | bytes received by the page | less an empty cell's |", "|---|---|---|"]
    for name in CELLS:
        if name in ("setup", "empty cell", "views drawn"):
            continue
        value = cells.get(name, 0)
        lines.append(f"| {name} | {value:,} | {value - baseline:,} |")
    for name, value in cells.items():
        if name not in CELLS:
            lines.append(f"| {name} | {value:,} | |")
    lines += [f"| page reload with the three widgets | {result['reload_bytes']:,} | |",
              f"| the saved notebook (widget state on) | {result['saved_bytes']:,} | |", ""]
    for name, label in (("one streamed turn", "The paced turn"),
                        ("one turn as a burst", "The burst")):
        whole = cells.get(name, 0) - baseline
        # The static form, sent once at the turn's end so a saved notebook shows it.
        form = result["kinds"].get(name, {}).get("update_display_data", 0)
        lines.append(f"{label} is {whole / text:.2f}× its streamed text: "
                     f"{(whole - form) / text:.2f}× in {result['batches'].get(name, 0)} "
                     f"batches and the cell's own messages, and {form / text:.2f}× "
                     f"({form:,} bytes) for its static form at the end.")
    if "views drawn" not in CELLS:
        # Run All: the chat's view is drawn while the paced turn already streams, and
        # whatever the views asked for (a snapshot, their announcements) counts too.
        whole = cells.get("one streamed turn", 0) - baseline
        asked = cells.get(VIEW_REQUESTS, 0)
        form = result["kinds"].get("one streamed turn", {}).get("update_display_data", 0)
        lines.append(f"Run All: the paced turn with every request of the views is "
                     f"{(whole + asked) / text:.2f}× its streamed text: "
                     f"{(whole + asked - form) / text:.2f}× without its static form "
                     f"({asked:,} bytes of the views' own requests).")
    lines += ["", "<details><summary>By message type</summary>", ""]
    for name, kinds in result["kinds"].items():
        lines.append(f"- {name}: " + ", ".join(f"{kind} {size:,}" for kind, size in kinds.items()))
    lines += ["", "</details>", ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--run-all", action="store_true",
                        help="as Run All runs the notebook: the turn starts before the chat's "
                             "view is drawn, which then joins it mid-turn")
    args = parser.parse_args()
    if args.run_all:
        del CELLS["views drawn"]
    reason = chromium_missing_reason()
    if reason:
        sys.exit(reason)
    text = report(measure(args.label))
    print(text)
    if args.record:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
