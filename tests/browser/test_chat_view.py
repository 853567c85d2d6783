"""ChatView in real JupyterLab: streaming, cards, Stop, levels, approvals, reload."""

from __future__ import annotations

import json

import pytest

from . import chat_cells
from .harness import BENIGN_CONSOLE_ERRORS, LabSession

pytestmark = pytest.mark.browser

RUNNING = "() => document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"
IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"


# Opens every folded thinking block of the chat views (a click on its header).
OPEN_THINKING = """() => {
  for (const header of document.querySelectorAll(
      '.neta-chat-list .neta-thinking-block.neta-is-collapsed > .neta-thinking-header')) {
    header.click();
  }
}"""


def _send(lab: LabSession, text: str) -> None:
    lab.send_in_chat(text)


# Each frame: the messages drawn after the plan card (a response there moves the plan when
# it settles into the list above it).
_WATCH_PLAN = """() => {
  const watch = window.__netaWatch = { frames: 0, below: [], stop: false };
  const plan = document.querySelector('.neta-chat-todo');
  const frame = () => {
    if (watch.stop) return;
    watch.frames += 1;
    for (const message of document.querySelectorAll('.neta-chat-view .neta-chat-msg')) {
      if (message.offsetParent !== null
          && plan.compareDocumentPosition(message) & Node.DOCUMENT_POSITION_FOLLOWING) {
        watch.below.push(message.textContent.slice(0, 40));
      }
    }
    requestAnimationFrame(frame);
  };
  requestAnimationFrame(frame);
}"""


def test_a_scripted_turn_streams_and_cards_update_live(lab: LabSession) -> None:
    path = lab.run_notebook("chat_stream.ipynb", [
        chat_cells.IMPORTS, "CPS = 250", chat_cells.RECORDING_DEMO])
    page = lab.page
    page.locator(".neta-chat-empty").wait_for()
    _send(lab, "Profile the data in this folder")
    # The prompt shows at once, then thinking streams open, in the live response.
    page.locator(".neta-chat-user .neta-chat-bubble",
                 has_text="Profile the data in this folder").wait_for()
    page.locator(".neta-is-live .neta-thinking-block.neta-is-streaming:not(.neta-is-collapsed)"
                 ).wait_for()
    assert page.locator(".neta-is-live .neta-chat-text").evaluate(
        "n => n.textContent.trim()") == ""
    # Then the text: the thinking block has folded above it.
    page.wait_for_function("""() => {
      const live = document.querySelector('.neta-is-live');
      if (!live) return false;
      const block = live.querySelector('.neta-thinking-block');
      const text = live.querySelector('.neta-chat-text').textContent;
      return text.includes('Let me plan') && block.classList.contains('neta-is-collapsed')
        && !block.classList.contains('neta-is-streaming');
    }""", timeout=30_000)
    # The plan appears and updates in place, below everything drawn of the conversation
    # (the live response too), so a response settling into the list never makes it jump:
    # every frame from now on, no message is drawn after it.
    page.locator(".neta-chat-todo .neta-todo-row").first.wait_for()
    page.evaluate(_WATCH_PLAN)
    page.locator(".neta-tool-card.neta-tool-card-done", has_text="List files").wait_for(
        timeout=30_000)
    # The skill card: one DOM node from running to done.
    skill = page.locator(".neta-skill-card")
    skill.wait_for(timeout=30_000)
    skill.evaluate("n => { n.dataset.marker = 'first'; }")
    page.locator(".neta-skill-card.neta-skill-card-done").wait_for(timeout=30_000)
    assert skill.evaluate("n => n.dataset.marker") == "first"
    page.wait_for_function(IDLE, timeout=60_000)
    assert page.locator(".neta-chat-todo .neta-todo-count").text_content() == "3/3 done"
    frames, below = page.evaluate("() => { const watch = window.__netaWatch; watch.stop = true;"
                                  " return [watch.frames, watch.below]; }")
    assert frames > 10 and below == [], below
    # Cards stay after the turn (done no longer clears them).
    assert page.locator(".neta-skill-card.neta-skill-card-done").count() == 1
    assert page.locator(".neta-chat-list h2", has_text="Sample data: first look").count() == 1
    answer = lab.execute(path, "print(session.messages[-1].text.split()[-1])").strip()
    dom = page.locator(".neta-chat-assistant .neta-chat-text").last.text_content() or ""
    assert dom.split()[-1] == answer
    assert lab.execute(path, "print(chat.running, len(chat.messages))").split() == ["False", "6"]


def test_the_level_is_chosen_between_turns_and_applies_to_the_next(lab: LabSession) -> None:
    path = lab.run_notebook("chat_level.ipynb", [
        chat_cells.IMPORTS, "CPS = 300", chat_cells.RECORDING_DEMO])
    page = lab.page
    select = page.locator(".neta-level-select")
    assert select.is_enabled()
    _send(lab, "Profile the data")
    page.wait_for_function(RUNNING)
    # Seed 002 §9.2: disabled while the turn runs, enabled again after it.
    assert select.is_disabled()
    page.wait_for_function(IDLE, timeout=60_000)
    page.wait_for_function("() => !document.querySelector('.neta-level-select').disabled")
    select.select_option("high")
    assert lab.wait_for_kernel_value(path, "session.think_level", "high") == "high"
    _send(lab, "And again")
    page.wait_for_function(RUNNING)
    assert select.is_disabled()
    page.wait_for_function(IDLE, timeout=60_000)
    levels = json.loads(lab.execute(path, "import json; print(json.dumps(provider.levels))"))
    first_turn = levels[: levels.index("high")]
    assert first_turn and set(first_turn) == {"medium"}
    assert set(levels[len(first_turn):]) == {"high"}
    assert select.input_value() == "high" and select.is_enabled()


def test_stop_mid_thinking_and_mid_text_keeps_the_partial_answer(lab: LabSession) -> None:
    path = lab.run_notebook("chat_stop.ipynb", [chat_cells.IMPORTS, chat_cells.LONG_ANSWER])
    page = lab.page
    _send(lab, "Think hard")
    page.locator(".neta-is-live .neta-thinking-block.neta-is-streaming").wait_for()
    page.locator(".neta-chat-send.neta-is-stop").click()
    page.wait_for_function(IDLE)
    state = json.loads(lab.execute(path, (
        "import json; m = session.messages[-1]\n"
        "print(json.dumps([m.metadata.interrupted, len(m.thinking), len(m.text), "
        "len(long_thinking)]))")))
    interrupted, thinking_chars, text_chars, full_thinking = state
    assert interrupted == "cancelled"
    assert 0 < thinking_chars < full_thinking
    assert text_chars == 0
    stopped = page.locator(".neta-chat-assistant").last
    assert stopped.locator(".neta-chat-stopped").text_content() == "Stopped"
    assert stopped.locator(".neta-thinking-block").count() == 1

    # Second turn: stop once the answer text is streaming.
    _send(lab, "Again, and answer")
    page.wait_for_function("""() => {
      const live = document.querySelector('.neta-is-live .neta-chat-text');
      return live && live.textContent.includes('word3');
    }""", timeout=30_000)
    page.locator(".neta-chat-send.neta-is-stop").click()
    page.wait_for_function(IDLE)
    kernel_text = lab.execute(path, "print(session.messages[-1].text)").strip()
    assert kernel_text.startswith("word0 word1 word2 word3")
    assert len(kernel_text) < len(" ".join(f"word{i}" for i in range(600)))
    last = page.locator(".neta-chat-assistant").last
    page.wait_for_function(
        "(expected) => { const all = document.querySelectorAll('.neta-chat-assistant');"
        " return all[all.length - 1].querySelector('.neta-chat-text').textContent.trim()"
        " === expected; }", arg=kernel_text)
    assert last.locator(".neta-chat-stopped").count() == 1
    # The session is usable afterwards and the view shows both turns.
    assert page.locator(".neta-chat-user").count() == 2


def test_approval_allow_and_reject(lab: LabSession) -> None:
    path = lab.run_notebook("chat_approval.ipynb", [chat_cells.IMPORTS, chat_cells.APPROVAL])
    page = lab.page
    _send(lab, "Delete old.csv")
    card = page.locator(".neta-chat-approval")
    card.wait_for()
    assert "delete_file" in (card.locator(".neta-chat-approval-title").text_content() or "")
    assert json.loads(card.locator(".neta-chat-approval-args").text_content() or "") == {
        "path": "old.csv"}
    card.locator("button[data-decision='allow_once']").click()
    page.wait_for_function(IDLE)
    assert lab.execute(path, "print(deleted)").strip() == "['old.csv']"
    page.locator(".neta-tool-card.neta-tool-card-done", has_text="Delete file").wait_for()
    assert page.locator(".neta-chat-approval").count() == 0

    _send(lab, "Delete it again")
    card.wait_for()
    card.locator("button[data-decision='reject']").click()
    page.wait_for_function(IDLE)
    assert lab.execute(path, "print(deleted)").strip() == "['old.csv']"
    page.locator(".neta-tool-card.neta-tool-card-rejected", has_text="Delete file").wait_for()
    result = lab.execute(path, "print(session.messages[-2].parts[0].content)").strip()
    assert result == "The user did not allow 'delete_file' to run."


def test_sidebar_switches_sessions_and_restores_their_state(lab: LabSession) -> None:
    path = lab.run_notebook("chat_sidebar.ipynb", [chat_cells.IMPORTS, chat_cells.SIDEBAR])
    page = lab.page
    items = page.locator(".neta-sidebar-item")
    items.nth(1).wait_for()
    assert items.count() == 2
    # Newest first; the shown session is active; the finished plan shows as a badge.
    assert items.nth(0).locator(".neta-sidebar-title").text_content() == "Say hello"
    assert "neta-is-active" in (items.nth(0).get_attribute("class") or "")
    assert items.nth(1).locator(".neta-sidebar-todo").text_content() == "3/3"
    assert page.locator(".neta-level-select").input_value() == "low"
    assert page.locator(".neta-skill-card").count() == 0

    items.nth(1).click()
    first_id = lab.execute(path, "print(first_id)").strip()
    assert lab.wait_for_kernel_value(path, "chat.session_id", first_id) == first_id
    page.locator(".neta-chat-bubble", has_text="Profile the data").wait_for()
    assert page.locator(".neta-chat-bubble", has_text="Say hello").count() == 0
    page.wait_for_function("() => document.querySelector('.neta-level-select').value === 'high'")
    assert page.locator(".neta-chat-todo .neta-todo-count").text_content() == "3/3 done"
    assert page.locator(".neta-skill-card.neta-skill-card-done").count() == 1
    assert page.locator(".neta-tool-card.neta-tool-card-done").count() == 1
    opened = page.locator(f".neta-sidebar-item[data-id='{first_id}']")
    page.wait_for_function("(id) => document.querySelector(`.neta-sidebar-item[data-id='${id}']`)"
                           ".classList.contains('neta-is-active')", arg=first_id)
    assert page.locator(".neta-sidebar-item.neta-is-active").count() == 1
    assert opened.locator(".neta-sidebar-todo").text_content() == "3/3"

    # New chat: an empty session with the same agent, shown and listed.
    page.locator(".neta-sidebar-new").click()
    page.locator(".neta-chat-empty").wait_for()
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-item').length === 3")
    agent = lab.execute(path, "print(chat.session.agent.name, chat.session.id not in "
                              "(first_id, second_id))").split()
    assert agent == ["analyst", "True"]


def test_a_second_view_and_a_reload_show_the_current_state(lab: LabSession) -> None:
    path = lab.run_notebook("chat_views.ipynb", [
        chat_cells.IMPORTS, chat_cells.GATED_TURN,
        "task = session.start('Profile the data in this folder')\n"
        "await asyncio.wait_for(skill_waiting.wait(), 30)\nchat",
    ])
    page = lab.page
    views = page.locator(".neta-chat-view")
    views.nth(1).wait_for()
    # Both views show the skill running (the second one learnt it from a sync), then the
    # final response paused mid-thought.
    for index in (0, 1):
        views.nth(index).locator(".neta-skill-card.neta-skill-card-running",
                                 has_text="Column 5/8").wait_for()
    lab.execute(path, "gates['skill'].set()")
    for index in (0, 1):
        views.nth(index).locator(".neta-is-live .neta-thinking-block.neta-is-streaming").wait_for()
        views.nth(index).locator(".neta-skill-card.neta-skill-card-done").wait_for()
    lab.execute(path, "gates['thinking'].set()")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.neta-is-live .neta-chat-text')]"
        ".filter(n => n.textContent.includes('40 rows')).length === 2")
    lab.execute(path, "gates['text'].set()")
    # Each view applies the turn's end on its own: both are waited for, not the first alone.
    page.wait_for_function(
        "() => { const views = [...document.querySelectorAll('.neta-chat-view')];"
        " return views.length === 2 && views.every(v => !v.classList.contains('neta-is-running')"
        " && !v.querySelector('.neta-is-live')); }")
    # The folded thinking blocks are opened, as a user does to read them: a view drawn
    # from the saved state renders a folded block's text when it is first opened.
    page.evaluate(OPEN_THINKING)
    texts = [view.locator(".neta-chat-list").evaluate("n => n.textContent") for view in
             (views.nth(0), views.nth(1))]
    assert texts[0] == texts[1]
    assert "Next, I can chart the numeric columns" in texts[0]

    # A fresh page (what a reload is): the saved outputs reconnect to the live kernel's
    # widgets and show the same conversation. A second tab keeps this tab's state intact.
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    fresh = page.context.new_page()
    errors: list[str] = []
    fresh.on("console", lambda message: errors.append(message.text)
             if message.type == "error" and not any(b in message.text
                                                    for b in BENIGN_CONSOLE_ERRORS) else None)
    try:
        # A workspace of its own: the default one is in use by the first tab.
        fresh.goto(f"{lab.server.url}/lab/workspaces/fresh-view/tree/{path}"
                   f"?token={lab.server.token}", wait_until="domcontentloaded")
        fresh_views = fresh.locator(".neta-chat-view")
        fresh_views.nth(1).wait_for(timeout=60_000)
        fresh.wait_for_function(
            "() => [...document.querySelectorAll('.neta-chat-list')].filter(n => n.textContent"
            ".includes('All three steps of the plan are done.')).length === 2", timeout=30_000)
        fresh.evaluate(OPEN_THINKING)
        fresh.wait_for_function(
            "(expected) => [...document.querySelectorAll('.neta-chat-list')]"
            ".every(n => n.textContent === expected)", arg=texts[0], timeout=30_000)
        counts = fresh.locator(".neta-chat-todo .neta-todo-count").all_text_contents()
        assert counts == ["3/3 done", "3/3 done"]
        assert errors == []
    finally:
        fresh.close()


def test_a_lost_batch_mid_stream_is_recovered_from_the_kernel(lab: LabSession) -> None:
    path = lab.run_notebook("chat_gap.ipynb", [chat_cells.IMPORTS, chat_cells.LONG_ANSWER])
    page = lab.page
    _send(lab, "Write a long answer")
    page.wait_for_function(
        "() => (document.querySelector('.neta-is-live .neta-chat-text')?.textContent ?? '')"
        ".includes('word20 ')", timeout=60_000)
    # Simulate a batch the server dropped: the next one arrives with a number skipped.
    lab.execute(path, "chat._batcher.seq += 1")
    page.wait_for_function(IDLE, timeout=60_000)
    kernel_text = lab.execute(path, "print(session.messages[-1].text)").strip()
    assert kernel_text.endswith("word599")
    page.wait_for_function(
        "(expected) => { const nodes = document.querySelectorAll("
        "'.neta-chat-assistant .neta-chat-text');"
        " const last = nodes[nodes.length - 1];"
        " return last && last.textContent.trim() === expected; }",
        arg=kernel_text, timeout=10_000)
