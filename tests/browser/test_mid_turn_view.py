"""A chat view drawn while its turn already streams (Run All draws the chat's output after
the next cell started the turn), in real JupyterLab: it builds from the batches its model
received before it was drawn — the tool card, the text so far — and asks the kernel for no
snapshot; the turn then goes on in it to the end. A model created mid-turn has not received
the turn's start: its view asks for a snapshot, and shows the whole turn too."""

from __future__ import annotations

import re
from collections import Counter
from typing import Any

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

SETUP = """
FIRST = " ".join(f"first{i}" for i in range(1500))
SECOND = " " + " ".join(f"second{i}" for i in range(300))
chunks = lambda text: [TextDelta(text[i:i + 40]) for i in range(0, len(text), 40)]

def new_session(gate, reached):
    # reached: FIRST is all streamed; then the answer waits for gate.
    provider = FakeProvider([
        [ThinkingDelta("The files first."), ThinkingEnd(None),
         ToolCallReady("c1", "list_files", {"path": "."}),
         UsageUpdate(Usage(input_tokens=900, output_tokens=20)), StreamDone("tool_use")],
        [*chunks(FIRST), reached.set, gate.wait, *chunks(SECOND),
         UsageUpdate(Usage(input_tokens=1400, output_tokens=900)), StreamDone("end_turn")],
    ])
    return AgentSession(Agent("analyst", model=provider,
                              tools=AgentToolConfig(enabled=["list_files"])))

gate, reached = asyncio.Event(), asyncio.Event()
session = new_session(gate, reached)
chat = ChatView(session, height="420px")  # its model is on the page; no view drawn yet
""".strip()

START = """
turn = session.start("Go through the files, then write it all up.")
await reached.wait()
await asyncio.sleep(0.8)  # the text's last batch has gone (0.5 s after the one before)
""".strip()

SHOW = "chat"

# A model created after its turn started: it never received the turn's first batches.
LATE = """
late_gate, late_reached = asyncio.Event(), asyncio.Event()
late_session = new_session(late_gate, late_reached)
late_turn = late_session.start("Again, please.")
await late_reached.wait()
late = ChatView(late_session, height="420px")
late
""".strip()

WHOLE = [f"first{i}" for i in range(1500)] + [f"second{i}" for i in range(300)]
VIEW = ".neta-chat-view"
IDLE = ("(n) => !document.querySelectorAll('.neta-chat-view')[n]"
        ".classList.contains('neta-is-running')")
SYNC = re.compile(rb'"comm_id":\s*"([^"]+)"')


def _count_snapshot_requests(page: Any) -> tuple[Counter[str], Any]:
    """Snapshot requests (``{"kind":"sync"}``) the page sends its kernels, by the comm (the
    widget model) they go to, counted from the websocket frames as they leave the page."""
    sent: Counter[str] = Counter()

    def on_frame(payload: str | bytes) -> None:
        data = payload.encode() if isinstance(payload, str) else payload
        if b'"kind":"sync"' in data:
            match = SYNC.search(data)
            sent[match.group(1).decode() if match else "?"] += 1

    def on_socket(socket: Any) -> None:
        socket.on("framesent", on_frame)

    page.on("websocket", on_socket)
    return sent, on_socket


def test_a_view_drawn_mid_turn_builds_from_what_its_model_received(lab: LabSession) -> None:
    page = lab.page
    sent, listener = _count_snapshot_requests(page)
    try:
        path = lab.run_notebook("mid_turn.ipynb",
                                [chat_cells.IMPORTS, SETUP, START, SHOW, LATE])
        ids = lab.execute(path, "print(chat.model_id, late.model_id, chat._batcher.seq)")
        chat_id, late_id, batches = ids.split()
        assert int(batches) >= 3, ids  # several batches came before the view was drawn
        view, late = page.locator(VIEW).nth(0), page.locator(VIEW).nth(1)
        # Drawn from what the model received: the tool card, the text so far.
        view.locator(".neta-is-live .neta-chat-text", has_text="first1499").wait_for()
        assert view.locator(".neta-tool-card", has_text="list_files").count() == 1
        shown = view.locator(".neta-is-live .neta-chat-text").inner_text().split()
        assert shown == WHOLE[:1500]
        # The model created mid-turn missed the turn's start: its view asked (once).
        late.locator(".neta-is-live .neta-chat-text", has_text="first1499").wait_for()
        assert late.locator(".neta-tool-card", has_text="list_files").count() == 1
        assert sent == {late_id: 1}, (sent, chat_id)

        lab.execute(path, "gate.set(); late_gate.set()")
        for index, each in enumerate((view, late)):
            page.wait_for_function(IDLE, arg=index, timeout=60_000)
            words = each.locator(".neta-chat-assistant .neta-chat-text").last.inner_text()
            assert words.split() == WHOLE
        assert sent == {late_id: 1}, (sent, chat_id)
        assert not lab.console_errors, lab.console_errors
    finally:
        page.remove_listener("websocket", listener)
