"""Kernel ▸ Interrupt in real JupyterLab ends a turn started from the chat's Send, as it
ends an awaited ``session.run``: the partial answer kept and marked, the one plain line."""

from __future__ import annotations

import json

import pytest

from neta_nb.runtime.session.turn import INTERRUPTED_LINE

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"


def test_kernel_interrupt_ends_a_send_started_turn(lab: LabSession) -> None:
    path = lab.run_notebook("chat_interrupt.ipynb", [chat_cells.IMPORTS, chat_cells.LONG_ANSWER])
    page = lab.page
    page.locator(".neta-chat-textarea").fill("Think hard")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-is-live .neta-thinking-block.neta-is-streaming").wait_for()
    # Kernel ▸ Interrupt, as the menu runs it: no cell executes, the turn is the chat's.
    page.evaluate("async () => { await window.jupyterapp.commands.execute("
                  "'kernelmenu:interrupt'); }")
    page.wait_for_function(IDLE, timeout=10_000)  # the whole answer takes ~20 s
    stopped = page.locator(".neta-chat-assistant").last
    assert stopped.locator(".neta-chat-stopped").text_content() == "Stopped"
    notice = page.locator(".neta-chat-notice")
    assert notice.is_visible() and notice.text_content() == INTERRUPTED_LINE
    state = json.loads(lab.execute(path, (
        "import json; m = session.messages[-1]\n"
        "print(json.dumps([m.metadata.interrupted, len(m.thinking) < len(long_thinking), "
        "session.running]))")))
    assert state == ["cancelled", True, False]
    # The session takes the next turn from the chat; the line goes with the new turn.
    lab.execute(path, "session.provider = ScriptedProvider([[{'text': 'Ready again.'}]])")
    page.locator(".neta-chat-textarea").fill("Again")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-chat-assistant .neta-chat-text", has_text="Ready again.").wait_for(
        timeout=20_000)
    page.wait_for_function(IDLE, timeout=20_000)
    assert notice.is_hidden()
