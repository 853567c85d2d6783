"""Switching sessions while a turn runs, in real JupyterLab: clicking another session in the
list shows it at once while the running turn goes on in the background — its row says
"Running…" — and clicking that row again shows the same turn still streaming, then its
whole answer. Nothing asks the user to stop first."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

LONG_ANSWER = " ".join(f"Paragraph {n} of the long report reads the figures again." for n in
                       range(1, 13))

SESSIONS = f"""
store = SessionStore(":memory:")
offsite = AgentSession(Agent("analyst", model=ScriptedProvider(
    [[{{"text": "Book the lakeside venue for Thursday."}}]])), store=store)
await offsite.run("Plan the team offsite")
report = AgentSession(Agent("analyst", model=ScriptedProvider(
    [[{{"text": {LONG_ANSWER!r}}}]], chars_per_second=45)), store=store)
chat = ChatView(report, height="420px")
sidebar = SessionSidebar(store, chat=chat, height="420px")
import ipywidgets
ipywidgets.HBox([sidebar, chat])
""".strip()

ROWS = ".neta-sidebar-item"


def test_a_running_turn_goes_on_while_another_session_is_shown(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("sidebar_background.ipynb", [chat_cells.IMPORTS, SESSIONS])
    page = lab.page
    lab.set_left_area(collapsed=True)
    chat = page.locator(".neta-chat-view")
    sidebar = page.locator(".neta-sidebar")
    chat.wait_for()
    lab.execute(path, 'task = report.start("Write the long report")')
    chat.locator(".neta-chat-assistant", has_text="Paragraph 1").wait_for()

    # Another session, mid-turn: shown at once; the running one's row says so.
    sidebar.locator(ROWS, has_text="Plan the team offsite").click()
    chat.locator(".neta-chat-assistant", has_text="Book the lakeside venue").wait_for()
    running = sidebar.locator(f"{ROWS}.neta-is-running", has_text="Write the long report")
    running.locator(".neta-sidebar-running", has_text="Running…").wait_for()
    assert lab.execute(path, "print(report.running, chat.session.id == offsite.id)"
                       ).split() == ["True", "True"]
    assert sidebar.locator(".neta-sidebar-error").filter(has_text="stop").count() == 0
    page.mouse.move(0, 0)
    box = page.locator(".widget-hbox").first
    lab.wait_for_transitions()
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(box, screenshot_dir /
                       f"sidebar-background-running-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)

    # Back to it: the same turn, still streaming, then its whole answer.
    running.click()
    chat.locator(".neta-chat-user", has_text="Write the long report").wait_for()
    chat.locator(".neta-chat-assistant", has_text="Paragraph 12").wait_for(timeout=60_000)
    assert lab.wait_for_kernel_value(path, "report.running", "False", timeout=30) == "False"
    page.wait_for_function("() => !document.querySelector('.neta-sidebar-item.neta-is-running')")
    assert lab.execute(path, "print(report.messages[-1].text == "
                             f"{LONG_ANSWER!r})").strip() == "True"
    lab.set_left_area(collapsed=False)
