"""Message actions in real JupyterLab: hovering a prompt shows Edit, Rewind and Fork, an
answer Retry and Fork; Edit turns the bubble into an editor whose Enter sends the new text
(the old turn is kept as a branch); Rewind puts its prompt back into the input; Retry
asks again; Fork opens the branch in the same view; Tab reaches the buttons; nothing of it
shows while a turn runs; a chat without a store asks before it drops what follows."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

SESSION = """
store = SessionStore(":memory:")
asked = []

def reply(messages):  # an answer for the prompt; a second one when asked again
    prompt = messages[-1].text
    asked.append(prompt)
    if "cats" in prompt:
        return [{"text": "Cats sleep sixteen hours a day."}]
    return [{"text": "Dogs came from wolves." if asked.count(prompt) == 1
             else "Dogs were tamed long ago."}]

model = ScriptedProvider([reply])
session = AgentSession(Agent("analyst", model=model), store=store)
await session.run("Tell me about cats")
chat = ChatView(session, height="460px")
sidebar = SessionSidebar(store, chat=chat, height="460px")
import ipywidgets
ipywidgets.HBox([sidebar, chat])
""".strip()


def test_edit_retry_and_fork_from_a_message(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("message_actions.ipynb", [chat_cells.IMPORTS, SESSION])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    prompt = chat.locator(".neta-chat-user", has_text="Tell me about cats")
    prompt.wait_for()
    bar = prompt.locator(".neta-msg-actions")
    assert [b.inner_text() for b in bar.locator("button").all()] == ["Edit", "Rewind", "Fork"]
    reply = chat.locator(".neta-chat-assistant", has_text="Cats sleep")
    assert [b.inner_text() for b in reply.locator(".neta-msg-actions button").all()] == [
        "Retry", "Fork"]
    assert bar.evaluate("n => getComputedStyle(n).opacity") == "0"  # until hovered
    prompt.hover()
    page.wait_for_function("() => getComputedStyle(document.querySelector("
                           "'.neta-chat-user .neta-msg-actions')).opacity === '1'")
    for dark in (False, True):
        lab.set_theme(dark=dark)
        # The picture scrolls the output into view, which ends a hover: the bar shows as
        # it does for the keyboard, its first button focused.
        bar.locator(".neta-msg-action-edit").focus()
        page.wait_for_function("() => getComputedStyle(document.querySelector("
                               "'.neta-chat-user .neta-msg-actions')).opacity === '1'")
        lab.screenshot(chat, screenshot_dir /
                       f"message-actions-hover-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)

    # Edit: the bubble becomes an editor; Enter sends the new text in its place.
    bar.locator(".neta-msg-action-edit").click()
    editor = prompt.locator("textarea.neta-msg-editor-text")
    editor.wait_for()
    assert editor.input_value() == "Tell me about cats"
    assert editor.evaluate("n => n === document.activeElement")
    editor.fill("Tell me about dogs")
    lab.screenshot(chat, screenshot_dir / "message-actions-edit-light.png")
    editor.press("Enter")
    chat.locator(".neta-chat-assistant", has_text="Dogs came from wolves").wait_for()
    assert chat.locator(".neta-chat-user").all_inner_texts()[0].startswith(
        "Tell me about dogs")
    assert chat.locator(".neta-chat-assistant", has_text="Cats sleep").count() == 0
    assert lab.wait_for_kernel_value(
        path, "len([r for r in store.list_sessions() if r.branch_of == session.id])",
        "1") == "1"  # the cats turn, kept

    # Retry, by keyboard: Tab reaches the answer's buttons.
    answer = chat.locator(".neta-chat-assistant", has_text="Dogs came from wolves")
    retry = answer.locator(".neta-msg-action-retry")
    retry.focus()
    page.wait_for_function("() => getComputedStyle(document.querySelector("
                           "'.neta-chat-assistant .neta-msg-actions')).opacity === '1'")
    page.keyboard.press("Enter")
    chat.locator(".neta-chat-assistant", has_text="Dogs were tamed").wait_for()
    assert chat.locator(".neta-chat-assistant").count() == 1

    # Fork at the prompt: the view shows the branch (the prompt alone).
    chat.locator(".neta-chat-user").first.hover()
    chat.locator(".neta-chat-user .neta-msg-action-fork").click()
    page.wait_for_function("() => document.querySelectorAll("
                           "'.neta-chat-view .neta-chat-assistant').length === 0")
    forked = lab.execute(path, "print(chat.session.branch_of == session.id)").strip()
    assert forked == "True"
    # The session list shows the fork (active) and the kept turns as branches.
    sidebar = page.locator(".neta-sidebar")
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-branch')"
                           ".length === 3")  # the cats turn, the first dogs answer, the fork
    branch = sidebar.locator(".neta-sidebar-item.neta-is-active .neta-sidebar-branch")
    # What it branched from (the edited prompt's session) and when: rows of one title differ.
    made = lab.execute(path, "import datetime as _d\nprint(_d.datetime.fromtimestamp("
                       "store.get_session(chat.session.id).created_at).strftime('%H:%M'))")
    assert branch.inner_text() == f"branch · {made.strip()}"
    assert branch.get_attribute("title") == (
        f"A branch of “Tell me about dogs”, made {made.strip()}")  # the edited prompt's
    page.mouse.move(0, 0)
    lab.set_left_area(collapsed=True)
    box = page.locator(".widget-hbox").first
    lab.screenshot_themes(box, screenshot_dir, "message-actions-branches")
    lab.set_left_area(collapsed=False)


REWIND_SESSION = """
store = SessionStore(":memory:")
session = AgentSession(Agent("analyst", model=ScriptedProvider(chars_per_second=4000)),
                       store=store)
session.set_thinking_level("low")
await session.run("Profile the sample sales data and tell me what stands out.")
session.set_thinking_level("high")
chat = ChatView(session, height="560px")
chat
""".strip()

# What the chat shows, read as a user reads it: scrolled from its top to its end (only the
# messages near the viewport are drawn), each card and prompt taken once, in order; the
# scroll position is put back after.
SNAPSHOT_JS = """async () => {
  const chat = document.querySelector('.neta-chat-view');
  const scroller = chat.querySelector('.neta-chat-scroll');
  const frames = () => new Promise((done) => requestAnimationFrame(
    () => requestAnimationFrame(done)));
  const titles = new Map();
  const cards = new Set();
  const prompts = new Map();
  const look = () => {
    const named = '.neta-chat-msg > .neta-chat-cards .neta-card-title, '
      + '.neta-chat-msg > .neta-chat-cards .neta-tool-card-name';
    for (const node of chat.querySelectorAll(named)) {
      const call = node.closest('[data-call-id]')?.dataset.callId;
      const key = call === undefined ? node : call + ' ' + node.className;
      if (!titles.has(key)) titles.set(key, node.textContent.trim());
    }
    for (const card of chat.querySelectorAll('.neta-tool-card, .neta-skill-card')) {
      cards.add(card.closest('[data-call-id]')?.dataset.callId ?? card);
    }
    for (const bubble of chat.querySelectorAll('.neta-chat-user .neta-chat-bubble')) {
      const id = bubble.closest('.neta-chat-msg').dataset.id;
      if (!prompts.has(id)) prompts.set(id, bubble.textContent.trim());
    }
  };
  const kept = scroller.scrollTop;
  scroller.scrollTop = 0;
  await frames();
  look();
  for (let step = 0; step < 200; step += 1) {
    if (scroller.scrollTop + scroller.clientHeight >= scroller.scrollHeight - 1) break;
    scroller.scrollTop += scroller.clientHeight / 2;
    await frames();
    look();
  }
  scroller.scrollTop = kept;
  await frames();
  const text = (sel) => [...chat.querySelectorAll(sel)].map((n) => n.textContent.trim());
  return {
    todo: text('.neta-todo-card'),
    cards: [...titles.values()],
    cardCount: cards.size,
    tokens: text('.neta-token-stats'),
    level: chat.querySelector('.neta-level-select').value,
    prompts: [...prompts.values()],
  };
}"""


def test_a_rewind_shows_the_plan_cards_figures_and_level_of_that_moment(
        lab: LabSession, screenshot_dir: Path) -> None:
    """A turn with a plan, a skill card and a tool card; the level changed; a second turn
    (another plan update, cards, the figures grown); then Rewind on the second prompt:
    what the view shows equals the snapshot taken when that prompt was about to be sent,
    and the replaced turn is a branch in the store."""
    path = lab.run_notebook("message_rewind.ipynb", [chat_cells.IMPORTS, REWIND_SESSION])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    chat.locator(".neta-skill-card").first.wait_for()
    chat.locator(".neta-tool-card").first.wait_for()
    page.wait_for_function("() => document.querySelector('.neta-level-select')"
                           ".value === 'high'")
    lab.wait_for_transitions()
    before = page.evaluate(SNAPSHOT_JS)
    assert before["cardCount"] == 2 and before["level"] == "high" and before["todo"]

    lab.execute(path, 'task = session.start("Now again, with more detail.")')
    page.wait_for_function("() => document.querySelectorAll('.neta-chat-view "
                           ".neta-skill-card').length === 2")
    assert lab.wait_for_kernel_value(path, "session.running", "False", timeout=60) == "False"
    chat.locator(".neta-level-select").select_option("off")  # as a user would
    assert lab.wait_for_kernel_value(path, "session.think_level", "off") == "off"
    after = page.evaluate(SNAPSHOT_JS)
    assert after["cardCount"] == 4 and after["tokens"] != before["tokens"]

    second = chat.locator(".neta-chat-user", has_text="Now again")
    second.locator(".neta-msg-action-rewind").focus()
    page.keyboard.press("Enter")
    page.wait_for_function("() => document.querySelectorAll('.neta-chat-view "
                           ".neta-skill-card').length === 1")
    lab.wait_for_transitions()
    page.wait_for_function("(want) => document.querySelector('.neta-level-select')"
                           ".value === want", arg=before["level"])
    assert page.evaluate(SNAPSHOT_JS) == before
    # The rewound prompt is back in the input, to send again or change.
    page.wait_for_function("() => document.querySelector('.neta-chat-view "
                           ".neta-chat-textarea').value === 'Now again, with more detail.'")
    # The replaced turn is kept: a branch holding both prompts.
    kept = ("[sum(m.role == 'user' for m in store.load_messages(r.id)) "
            "for r in store.list_sessions() if r.branch_of == session.id]")
    assert lab.wait_for_kernel_value(path, kept, "[2]") == "[2]"
    lab.screenshot(chat, screenshot_dir / "message-rewind-light.png")


MEMORY_SESSION = """
session = AgentSession(Agent("analyst", model=ScriptedProvider(
    [[{"text": "Cats sleep sixteen hours a day."}], [{"text": "Dogs came from wolves."}]])))
await session.run("Tell me about cats")
await session.run("And dogs?")
chat = ChatView(session, height="460px")
chat
""".strip()


def test_a_chat_without_a_store_asks_before_it_drops_what_follows(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("message_memory.ipynb", [chat_cells.IMPORTS, MEMORY_SESSION])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    first = chat.locator(".neta-chat-user", has_text="Tell me about cats")
    first.wait_for()
    rewind = first.locator(".neta-msg-action-rewind")
    assert "no store" in (rewind.get_attribute("title") or "")  # its hint says so too
    rewind.focus()
    page.keyboard.press("Enter")
    confirm = first.locator(".neta-msg-confirm")
    confirm.wait_for()
    assert "gone for good" in confirm.inner_text()
    # The focus is on Cancel, as the session list's delete asks: a second Enter drops nothing.
    assert confirm.locator(".neta-msg-confirm-cancel").evaluate("b => b === document.activeElement")
    lab.screenshot_themes(first, screenshot_dir, "message-confirm-memory")
    # Cancel leaves everything as it was.
    confirm.locator(".neta-msg-confirm-cancel").click()
    confirm.wait_for(state="detached")
    assert lab.execute(path, "print(len(session.messages))").strip() == "4"
    # Confirmed, the rewind runs: the prompt goes back into the input.
    first.locator(".neta-msg-action-rewind").focus()
    page.keyboard.press("Enter")
    confirm.locator(".neta-msg-confirm-go").click()
    assert lab.wait_for_kernel_value(path, "len(session.messages)", "0") == "0"
    page.wait_for_function("() => document.querySelector('.neta-chat-view "
                           ".neta-chat-textarea').value === 'Tell me about cats'")


def test_a_fork_is_marked_as_one_with_a_way_back(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("message_fork_back.ipynb", [chat_cells.IMPORTS, MEMORY_SESSION])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    bar = chat.locator(".neta-chat-fork-bar")
    first = chat.locator(".neta-chat-user", has_text="Tell me about cats")
    first.wait_for()
    assert bar.is_hidden()
    # A fork drops nothing: no store, and still no question; the original is a click away.
    first.locator(".neta-msg-action-fork").focus()
    page.keyboard.press("Enter")
    bar.wait_for()
    assert "A fork" in bar.inner_text()
    assert chat.locator(".neta-chat-user").count() == 1  # up to the message forked at
    assert lab.execute(path, "print(chat.session is not session)").strip() == "True"
    lab.screenshot_themes(chat, screenshot_dir, "chat-fork-marker")
    bar.locator(".neta-chat-fork-back").click()
    bar.wait_for(state="hidden")
    chat.locator(".neta-chat-user", has_text="And dogs?").wait_for()
    assert lab.execute(path, "print(chat.session is session)").strip() == "True"
