"""An outside agent's ``/`` commands and session modes in the chat input, in real JupyterLab
with the scripted agent of tests/runtime/acp: ``/`` at the start of the prompt lists the
agent's commands, filtered as typed (arrows, Enter, Escape); the command chosen goes to
the agent as the prompt's text; the mode selector shows the agent's mode and a choice
reaches the agent (``session/set_mode``), a refused one is said and the selector goes
back. Pictures of the menu and the selector, light and
dark."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

AGENT = Path(__file__).resolve().parents[1] / "runtime" / "acp" / "scripted_agent.py"


def _said(text: str) -> list[dict[str, object]]:
    return [{"update": {"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": text}}}]


SCRIPT = {
    "modes": {"currentModeId": "default", "availableModes": [
        {"id": "default", "name": "Default", "description": "Ask before edits"},
        {"id": "acceptEdits", "name": "Accept edits", "description": "Edit without asking"},
        {"id": "plan", "name": "Plan", "description": "Look, change nothing"}]},
    "commands": [{"name": "review", "description": "Review the changes on this branch"},
                 {"name": "init", "description": "Write an AGENTS.md for this folder"},
                 {"name": "pr-comments", "description": "Read the comments of a pull request"}],
    "refuse_modes": ["acceptEdits"],
    "by_prompt": {"Hello": _said("Hello, I am here."),
                  "/review the notebook": _said("Reviewed: all good.")},
}

NOTEBOOK = f"""
import json, sys
from pathlib import Path
from neta_nb import AcpAgent
Path("agent-script.json").write_text({json.dumps(SCRIPT)!r})
agent = AcpAgent("scripted", [sys.executable, {str(AGENT)!r},
                              str(Path("agent-script.json").resolve())])
session = AgentSession(agent)
await session.run("Hello")  # the agent says its commands and modes as it starts
chat = ChatView(session, height="520px")
chat
""".strip()


def test_slash_menu_sends_the_command_and_the_mode_select_sets_the_mode(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("agent-controls.ipynb", [chat_cells.IMPORTS, NOTEBOOK])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    box = chat.locator("textarea.neta-chat-textarea")
    box.wait_for()
    menu = chat.locator(".neta-slash-menu")
    select = chat.locator("select.neta-chat-mode-select")
    select.wait_for()
    assert select.input_value() == "default"
    assert [o.strip() for o in select.locator("option").all_inner_texts()] == [
        "Default", "Accept edits", "Plan"]

    # `/` at the start lists every command; typing filters; Escape closes.
    box.click()
    page.keyboard.type("/")
    options = menu.locator(".neta-slash-option")
    options.first.wait_for()
    assert options.all_inner_texts() == [
        "/review\nReview the changes on this branch",
        "/init\nWrite an AGENTS.md for this folder",
        "/pr-comments\nRead the comments of a pull request"]
    assert box.get_attribute("aria-expanded") == "true"
    page.keyboard.type("r")
    page.wait_for_function("() => [...document.querySelectorAll('.neta-slash-menu "
                           ".neta-slash-key')].map((n) => n.textContent).join() === "
                           "'/review,/pr-comments'")
    page.keyboard.press("ArrowDown")
    assert options.nth(1).get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowUp")
    page.keyboard.press("Escape")
    assert menu.is_hidden()
    page.keyboard.press("Backspace")
    page.keyboard.press("Backspace")
    page.keyboard.type("/")
    options.first.wait_for()
    for dark in (False, True):
        lab.set_theme(dark=dark)
        box.focus()
        page.keyboard.press("End")
        options.first.wait_for()
        lab.wait_for_transitions(chat)
        lab.screenshot(chat, screenshot_dir /
                       f"agent-slash-menu-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    box.focus()
    page.keyboard.press("End")
    page.keyboard.type("rev")
    page.wait_for_function("() => document.querySelectorAll('.neta-slash-menu "
                           ".neta-slash-option').length === 1")
    # Enter chooses: `/review ` is written, the menu closes; the next Enter sends.
    page.keyboard.press("Enter")
    assert box.input_value() == "/review "
    assert menu.is_hidden()
    page.keyboard.type("the notebook")
    page.keyboard.press("Enter")
    chat.locator(".neta-chat-list", has_text="Reviewed: all good.").wait_for()
    sent = lab.execute(path, "print(session.messages[-2].text)").strip()
    assert sent == "/review the notebook"

    # The mode selector: a choice reaches the agent, which says its new mode.
    select.select_option("plan")
    assert lab.wait_for_kernel_value(path, "session.deps.outside.mode", "plan") == "plan"
    calls = lab.execute(path, "print(Path('agent-script.json.calls').read_text())")
    assert "session/set_mode" in calls.split()
    page.wait_for_function("() => document.querySelector('select.neta-chat-mode-select')"
                           ".value === 'plan'")
    toolbar = chat.locator(".neta-chat-toolbar")
    lab.screenshot_themes(toolbar, screenshot_dir, "agent-mode-select")
    assert json.loads(lab.execute(path, "print(json.dumps(chat.agent_mode))")) == "plan"

    # A mode the agent refuses: the input bar says why, the selector goes back.
    select.select_option("acceptEdits")
    error = chat.locator(".neta-chat-input .neta-inline-error")
    error.wait_for()
    assert "not changed to 'acceptEdits'" in error.inner_text()
    assert "mode acceptEdits is not allowed now" in error.inner_text()
    page.wait_for_function("() => document.querySelector('select.neta-chat-mode-select')"
                           ".value === 'plan'")
    assert lab.execute(path, "print(session.deps.outside.mode)").strip() == "plan"
    lab.execute(path, "session.close()")  # the agent's process ends with the test
