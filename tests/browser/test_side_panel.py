"""The chat view's header in real JupyterLab: Chats and Tools open the list of chats and
the agent's tool panel in a drawer over the conversation, and Open in side panel shows the
same chat in JupyterLab's right area (js/labextension/src/side-panel.ts).

The side panel's view is another view of the same widget model: it announces itself
(``view_opened``) and its notebook requests reach the notebook it was opened from; one
panel per chat; closing it disposes its view (``view_closed``); it closes when the kernel
restarts and when its cell runs again; opened from a chat inside a box of widgets, it
shows the chat alone."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ..support.timing import poll_until
from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

SIDE = ".neta-nb-side-panel"
INLINE = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea .neta-chat-view"

CHAT = """
store = SessionStore(":memory:")
earlier = AgentSession(Agent("analyst", model=ScriptedProvider(chars_per_second=4000)),
                       store=store)
await earlier.run("Profile the sample sales data and tell me what stands out.")
session = AgentSession(Agent("analyst", model=ScriptedProvider([[{"text": "Hello there."}]])),
                       store=store)
await session.run("Say hello")
heard = []
chat = ChatView(session, height="520px")
chat.on_msg(lambda widget, content, buffers: heard.append(content))
chat
""".strip()

# The messages the chat widget heard of one kind, as JSON.
HEARD = "import json; print(json.dumps([m for m in heard if m.get('kind') == {kind!r}]))"


def heard(lab: LabSession, path: str, kind: str) -> list[dict[str, Any]]:
    return list(json.loads(lab.execute(path, HEARD.format(kind=kind))))


def side_panels(page: Any) -> int:
    return int(page.evaluate("() => Array.from(window.jupyterapp.shell.widgets('right'))"
                             ".filter((w) => w.hasClass('neta-nb-side-panel')).length"))


def open_side_panel(lab: LabSession, path: str) -> str:
    """Click the header's Open in side panel; returns the side view's id."""
    before = {m["view_id"] for m in heard(lab, path, "view_opened")}
    lab.page.locator(INLINE).locator(".neta-chat-header-side").click()
    lab.page.locator(f"{SIDE} .neta-chat-view").wait_for()
    poll_until(lambda: len(heard(lab, path, "view_opened")) > len(before), within=10,
               what="the side view's view_opened")
    (new,) = [m for m in heard(lab, path, "view_opened") if m["view_id"] not in before]
    assert new["notebook_bridge"] is True
    return str(new["view_id"])


def test_the_side_panel_is_a_view_of_the_same_chat_and_reaches_its_notebook(
        lab: LabSession) -> None:
    path = lab.run_notebook("side.ipynb", [chat_cells.IMPORTS, CHAT, "counter = 0"],
                            timeout=120)
    page = lab.page
    page.locator(INLINE).wait_for()
    side_view = open_side_panel(lab, path)
    side = page.locator(f"{SIDE} .neta-chat-view")
    side.get_by_text("Hello there.").wait_for()
    assert side_panels(page) == 1
    assert page.evaluate("() => !window.jupyterapp.shell.rightCollapsed")
    assert side.locator(".neta-chat-header-side").is_hidden()  # no side panel of its own

    # A notebook request to the side view reaches the notebook it was opened from.
    request = {"kind": "notebook_request", "id": "side-1", "view_id": side_view, "op": "read",
               "args": {}}
    lab.execute(path, f"chat.send({request!r})")
    poll_until(lambda: heard(lab, path, "notebook_reply"), within=10, what="the reply")
    (reply,) = heard(lab, path, "notebook_reply")
    assert reply["ok"] is True and reply["result"]["path"] == path
    assert reply["result"]["cells"][2]["source"] == "counter = 0"
    # The notebook tools ask the newest view, the side panel's: the same notebook answers.
    read = lab.execute(path, "print((await chat._page.request('read', {}))['path'])")
    assert read.strip() == path

    # Asked again: the same panel, revealed (the right area had been collapsed).
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    page.locator(INLINE).locator(".neta-chat-header-side").click()
    page.wait_for_function("() => !window.jupyterapp.shell.rightCollapsed")
    assert side_panels(page) == 1

    # Typed into the side panel, answered in both views.
    lab.execute(path, "session.provider = ScriptedProvider([[{'text': 'Both views.'}]])")
    textarea = side.locator(".neta-chat-textarea")
    textarea.fill("Again")
    textarea.press("Enter")
    page.locator(INLINE).get_by_text("Both views.").wait_for()
    side.get_by_text("Both views.").wait_for()

    # Closed: its view goes, and says so.
    page.locator(f"{SIDE} .neta-nb-side-panel-close").click()
    poll_until(lambda: any(m["view_id"] == side_view for m in heard(lab, path, "view_closed")),
               within=10, what="the side view's view_closed")
    assert side_panels(page) == 0
    assert page.locator(INLINE).is_visible()


def test_the_side_panel_closes_with_its_cell_or_its_kernel(lab: LabSession) -> None:
    path = lab.run_notebook("side_close.ipynb", [chat_cells.IMPORTS, CHAT], timeout=120)
    page = lab.page
    page.locator(INLINE).wait_for()
    open_side_panel(lab, path)
    # The chat's cell runs again: a new chat there, the panel of the old one goes.
    page.evaluate("""async () => {
      const panel = window.jupyterapp.shell.currentWidget;
      panel.content.activeCellIndex = 1;
      await window.jupyterapp.commands.execute('notebook:run-cell');
    }""")
    page.wait_for_function("() => !document.querySelector('.neta-nb-side-panel')")
    page.locator(INLINE).get_by_text("Hello there.").wait_for(timeout=60_000)

    # Opened again on the new chat, then the kernel restarts: the panel goes too.
    open_side_panel(lab, path)
    lab.restart_kernel()
    page.wait_for_function("() => !document.querySelector('.neta-nb-side-panel')")
    assert side_panels(page) == 0

    # Run again and opened again, then the notebook closes: the panel goes with it.
    page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                           ".session?.kernel?.status === 'idle'", timeout=60_000)
    lab.run_all(path, timeout=120)
    page.locator(INLINE).get_by_text("Hello there.").wait_for(timeout=60_000)
    open_side_panel(lab, path)
    page.evaluate("async () => { const panel = window.jupyterapp.shell.currentWidget;"
                  " panel.context.model.dirty = false; await panel.sessionContext.shutdown();"
                  " panel.dispose(); }")
    page.wait_for_function("() => !document.querySelector('.neta-nb-side-panel')")


BOXED = """
from ipywidgets import HBox
sidebar = SessionSidebar(store, chat=chat)
HBox([sidebar, chat])
"""


def test_a_chat_in_a_box_opens_alone_in_the_side_panel(lab: LabSession) -> None:
    cells = [chat_cells.IMPORTS, CHAT.removesuffix("\nchat"), BOXED.strip()]
    path = lab.run_notebook("side_boxed.ipynb", cells, timeout=120)
    page = lab.page
    page.locator(f"{INLINE}").wait_for()
    page.locator(".jp-OutputArea .neta-sidebar").wait_for()  # the box's other child
    assert page.locator(".jp-OutputArea .neta-sidebar").count() == 1
    open_side_panel(lab, path)
    page.locator(f"{SIDE} .neta-chat-view").get_by_text("Hello there.").wait_for()
    # The chat alone: not the box, not the list beside it.
    assert page.locator(f"{SIDE} .neta-sidebar").count() == 0
    assert page.locator(f"{SIDE} .neta-chat-view").count() == 1


def test_the_header_opens_the_list_of_chats_and_the_tool_panel(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("header.ipynb", [chat_cells.IMPORTS, CHAT], timeout=120)
    page = lab.page
    chat = page.locator(INLINE)
    chat.wait_for()
    header = chat.locator(".neta-chat-header")
    assert header.locator(".neta-chat-header-name").inner_text() == "analyst"
    assert [b.get_attribute("aria-label") for b in header.locator("button").all()] == [
        "Chats", "Tools", "Open in side panel"]

    # Chats: the store's sessions, this one marked; a row opens that chat here.
    header.locator(".neta-chat-header-sessions").click()
    drawer = chat.locator(".neta-chat-drawer")
    rows = drawer.locator(".neta-sidebar-item")
    rows.nth(1).wait_for()
    assert rows.count() == 2
    assert header.locator(".neta-chat-header-sessions").get_attribute("aria-expanded") == "true"
    lab.screenshot_themes(chat, screenshot_dir, "chat-header-chats")
    rows.filter(has_text="Profile the sample sales data").click()
    # The chat shows that session, and the drawer makes way for it.
    chat.get_by_text("What the tools returned").first.wait_for()
    drawer.wait_for(state="hidden")
    assert lab.execute(path, "print(chat.session_id == earlier.id)").strip() == "True"

    # Tools: the agent's tool panel; Escape closes it.
    header.locator(".neta-chat-header-tools").click()
    drawer.locator(".neta-tool-config").wait_for()
    lab.screenshot_themes(chat, screenshot_dir, "chat-header-tools")
    drawer.locator(".neta-chat-drawer-close").focus()
    page.keyboard.press("Escape")
    drawer.wait_for(state="hidden")
    assert header.locator(".neta-chat-header-tools").get_attribute("aria-expanded") == "false"


def test_a_chat_kept_in_memory_says_how_to_get_a_list(lab: LabSession,
                                                      screenshot_dir: Path) -> None:
    cells = [chat_cells.IMPORTS, "chat = ChatView(AgentSession(Agent('analyst', "
                                 "model=ScriptedProvider())), lang='zh-CN')\nchat"]
    lab.run_notebook("header_memory.ipynb", cells, timeout=120)
    chat = lab.page.locator(INLINE)
    chat.wait_for()
    button = chat.locator(".neta-chat-header-sessions")
    assert button.get_attribute("aria-label") == "对话"
    button.click()
    # A normal state, drawn as an empty state, not an error.
    empty = chat.locator(".neta-chat-drawer .neta-chat-drawer-empty")
    empty.wait_for()
    assert "AgentSession(agent, store=SessionStore())" in empty.inner_text()
    assert chat.locator(".neta-chat-drawer .neta-chat-drawer-error").is_hidden()
    drawer = chat.locator(".neta-chat-drawer")
    assert not drawer.evaluate("n => n.classList.contains('neta-is-loading')")
    lab.screenshot_themes(chat, screenshot_dir, "chat-header-chats-memory")
