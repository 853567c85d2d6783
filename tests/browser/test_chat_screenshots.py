"""Pictures of the chat view beside the session list, mid-stream and finished, in
JupyterLab Light and Dark and in Chinese (docs/screenshots/ when
NETA_NB_UPDATE_SCREENSHOTS=1), with checks that nothing overflows."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

ACTIVE_ROW = ".neta-sidebar-item.neta-is-active"
IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"


def _picture(lab: LabSession, path: Path) -> Path:
    page = lab.page
    area = page.locator(".widget-hbox").first
    # Nothing may stick out of the view: no horizontal scrolling anywhere inside it.
    overflowing = page.evaluate("""() => [...document.querySelectorAll(
        '.neta-chat-view, .neta-chat-scroll, .neta-chat-input, .neta-sidebar')]
        .filter(n => n.scrollWidth > n.clientWidth + 1).map(n => n.className)""")
    assert overflowing == []
    return lab.screenshot(area, path)


def _both_themes(lab: LabSession, directory: Path, name: str) -> None:
    for dark in (False, True):
        lab.set_theme(dark=dark)
        _picture(lab, directory / f"{name}-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


def test_chat_view_pictures(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("chat_pictures.ipynb", [chat_cells.IMPORTS, chat_cells.GATED_TURN])
    page = lab.page
    # The file browser closed: the notebook gets the width a chat is usually given.
    page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
    page.locator(".neta-chat-textarea").fill("Profile the data in this folder")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-skill-card.neta-skill-card-running", has_text="Column 5/8").wait_for()
    lab.execute(path, "gates['skill'].set(); gates['thinking'].set()")
    # Mid-stream: the answer is half written, its thinking folded above it.
    page.locator(".neta-is-live .neta-chat-text", has_text="Two columns").wait_for()
    page.locator(ACTIVE_ROW + ".neta-is-running").wait_for()  # the list has caught up
    lab.wait_for_transitions()  # the thinking has folded
    assert page.locator(".neta-is-live .neta-chat-cursor").count() == 1
    assert page.locator(".neta-sidebar-item.neta-is-active .neta-sidebar-running").count() == 1
    _both_themes(lab, screenshot_dir, "chat-midstream")

    lab.execute(path, "gates['text'].set()")
    page.wait_for_function(IDLE)
    # The list refreshes a moment after the turn ends: the row shows the last message.
    page.locator(ACTIVE_ROW + ":not(.neta-is-running) .neta-sidebar-last").wait_for()
    lab.wait_for_transitions()  # the fold transitions
    assert page.locator(".neta-chat-cursor").count() == 0
    _both_themes(lab, screenshot_dir, "chat-finished")

    lab.execute(path, "chat.lang = 'zh-CN'; sidebar.lang = 'zh-CN'")
    page.locator(".neta-chat-send", has_text="发送").wait_for()
    page.locator(".neta-sidebar-heading", has_text="对话").wait_for()  # its own message
    assert page.locator(".neta-sidebar-heading").text_content() == "对话"
    _picture(lab, screenshot_dir / "chat-finished-zh-CN-light.png")
    page.evaluate("() => window.jupyterapp.shell.expandLeft()")


def test_approval_picture(lab: LabSession, screenshot_dir: Path) -> None:
    lab.run_notebook("chat_approval_picture.ipynb", [chat_cells.IMPORTS, chat_cells.APPROVAL])
    page = lab.page
    page.locator(".neta-chat-textarea").fill("Delete old.csv, it is outdated")
    page.locator(".neta-chat-send").click()
    page.locator(".neta-chat-approval").wait_for()
    # The call waits for the user: its card says so, and nothing spins (it has not run).
    # One card asks: the call's own card stays hidden behind its approval card until the
    # decision.
    card = page.locator(".neta-tool-card.neta-tool-card-waiting", has_text="Delete file")
    card.wait_for(state="attached")
    assert card.locator(".neta-tool-tag").text_content() == "Waiting for your approval"
    assert card.is_hidden() and page.locator(".neta-chat-approval").is_visible()
    assert page.locator(".neta-chat-view .neta-spinner").count() == 0
    lab.wait_for_transitions()  # the approval card has come in
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-chat-view"),
                       screenshot_dir / f"chat-approval-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    page.locator(".neta-chat-approval button[data-decision='reject']").click()
    page.wait_for_function(IDLE)
    rejected = page.locator(".neta-tool-card.neta-tool-card-rejected", has_text="Delete file")
    assert rejected.locator(".neta-tool-tag").text_content() == "Rejected"


STORE_BEHIND = """
import pathlib, sqlite3, tempfile
db = pathlib.Path(tempfile.mkdtemp()) / "sessions.sqlite3"
session = AgentSession(Agent("analyst", model=ScriptedProvider(chars_per_second=4000)),
                       store=SessionStore(db))
chat = ChatView(session, height="420px")
chat
"""

WARNING = ".neta-chat-store-warning"


def test_the_store_behind_banner_comes_and_goes(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("chat_store_behind.ipynb", [chat_cells.IMPORTS, STORE_BEHIND])
    page = lab.page
    assert page.locator(WARNING).is_hidden()
    # Another program (a backup tool, a second notebook) holds the store's write lock.
    lab.execute(path, "other = sqlite3.connect(db, isolation_level=None); "
                      "other.execute('BEGIN IMMEDIATE')")
    page.locator(".neta-chat-textarea").fill("Profile the data in this folder")
    page.locator(".neta-chat-send").click()
    page.wait_for_function(IDLE)  # the turn runs and ends although nothing can be saved
    banner = page.locator(WARNING, has_text="Not saved yet")
    banner.wait_for()
    assert "another program holds the session store" in (banner.text_content() or "")
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-chat-view"),
                       screenshot_dir / f"chat-store-behind-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    lab.execute(path, "other.execute('COMMIT'); other.close()")
    page.locator(WARNING).wait_for(state="hidden", timeout=15_000)
    assert lab.execute(path, "session.flush(10) and "
                             "len(SessionStore(db).load_messages(session.id))") != "0"
