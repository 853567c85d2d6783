"""An answer longer than the preview bound of widget state (``TEXT_CHARS``, 20,000
characters) in real JupyterLab ("First hour II", item 10).

The view that streamed it holds the whole text: it keeps showing all of it after the turn,
with no "Showing 20,000 of …" note and no cut mid-word — also when the batch that filed the
response as its message never reached the page (the Jupyter server drops messages under
load) and the view resynced from the kernel's snapshot, which draws the message from its
preview. The saved state keeps the preview. A second view of the same session never
streamed it: it shows the preview with the note, and "Show all" fetches the rest.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

PREVIEW = 20_000  # neta_nb.widgets.state_bounds.TEXT_CHARS

# 21,209 characters of distinct words: the preview's cut at 20,000 falls inside one
# ("word2345" would end as "word23"). It streams in about three seconds. `lose_end`: the
# batch that carries the answer's end (the response became a message) goes missing, as one
# the server dropped — the text before it has arrived — so the view resyncs from a snapshot
# in which the answer is a message drawn from its preview.
LONG_ANSWER = """
from neta_nb.events import MessageAppendedEvent
from neta_nb.widgets.state_bounds import TEXT_CHARS
ANSWER = " ".join(f"word{i}" for i in range(2_480))
assert len(ANSWER) > TEXT_CHARS and ANSWER[TEXT_CHARS - 1] != " " != ANSWER[TEXT_CHARS]
provider = ScriptedProvider([[{"text": " ".join([ANSWER] * TIMES)}]], chars_per_second=8_000)
session = AgentSession(Agent("analyst", model=provider))
lose_end = LOSE_END

def drop_the_end(event):
    # Subscribed before the chat view: runs before it files the answer as its message.
    if lose_end and type(event) is MessageAppendedEvent and event.message.role == "assistant":
        chat._batcher.flush()  # the text so far arrives
        chat._batcher.seq += 1  # the next batch (the end) is "lost": a gap

session.subscribe(drop_the_end)
chat = ChatView(session, height="520px")
requests = []  # the kinds of the requests the views made
answer_request = chat._respond
chat._respond = lambda kind, *rest: requests.append(kind) or answer_request(kind, *rest)
chat
""".strip()

IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"
VISIBLE_NOTE = ".neta-cut-note:not([hidden])"
ANSWER_TEXT = ".neta-chat-list .neta-chat-assistant .neta-chat-text"

# The notebook's last cell displays the chat again: a second view, which streamed nothing.
DISPLAY_AGAIN = """async ([path, source]) => {
  const app = window.jupyterapp;
  const panel = Array.from(app.shell.widgets('main')).find((w) => w.context?.path === path);
  const notebook = panel.content;
  notebook.model.sharedModel.insertCell(notebook.model.cells.length,
                                        { cell_type: 'code', source });
  notebook.activeCellIndex = notebook.model.cells.length - 1;
  app.shell.activateById(panel.id);
  await app.commands.execute('notebook:run-cell');
  return true;
}"""


def _answer_text(view: Any) -> str:
    return str(view.locator(ANSWER_TEXT).last.evaluate("n => n.textContent.trim()"))


def _wait_for_answer_length(lab: LabSession, view_index: int, length: int) -> None:
    """The last answer of view `view_index` is drawn final (no cursor) at `length`."""
    lab.page.wait_for_function(
        "([index, n]) => { const view = document.querySelectorAll('.neta-chat-view')[index];"
        f" const all = view ? view.querySelectorAll('{ANSWER_TEXT}') : [];"
        " const last = all[all.length - 1];"
        " return Boolean(last) && !last.querySelector('.neta-chat-cursor')"
        " && last.textContent.trim().length === n; }",
        arg=[view_index, length], timeout=30_000)


def _start_long_answer(lab: LabSession, name: str, *, lose_end: bool = False,
                       times: int = 1) -> str:
    """The notebook with the chat, the prompt sent, the answer streaming; its path."""
    path = lab.run_notebook(name, [chat_cells.IMPORTS, LONG_ANSWER.replace(
        "LOSE_END", str(lose_end)).replace("TIMES", str(times))])
    view = lab.page.locator(".neta-chat-view").first
    view.locator(".neta-chat-empty").wait_for()
    view.locator(".neta-chat-textarea").fill("Write a very long answer")
    view.locator(".neta-chat-send").click()
    view.locator(".neta-is-live .neta-chat-text").wait_for(timeout=30_000)
    return path


def _run_long_answer(lab: LabSession, name: str, *, lose_end: bool) -> tuple[str, str]:
    """Send the prompt, wait for the turn's end: the notebook's path and the whole answer
    as the kernel has it."""
    path = _start_long_answer(lab, name, lose_end=lose_end)
    page = lab.page
    view = page.locator(".neta-chat-view").first
    page.wait_for_function(IDLE, timeout=90_000)
    whole = json.loads(lab.execute(
        path, "import json; print(json.dumps(session.messages[-1].text))"))
    assert len(whole) > PREVIEW
    # The answer is filed into the list (the live slot is empty).
    view.locator(".neta-chat-live .neta-chat-msg").wait_for(state="detached")
    return path, whole


def _assert_whole(view: Any, whole: str) -> str:
    answer = view.locator(".neta-chat-list .neta-chat-assistant").last
    notes = answer.locator(VISIBLE_NOTE)
    assert notes.count() == 0, notes.first.text_content()
    shown = _answer_text(view)
    assert shown.endswith(whole[-200:]), f"the answer ends {shown[-60:]!r}"
    assert len(shown) == len(whole)
    return shown


def test_a_long_answer_streamed_here_stays_whole_after_its_turn(
        lab: LabSession, screenshot_dir: Path) -> None:
    path, whole = _run_long_answer(lab, "long_answer.ipynb", lose_end=False)
    page = lab.page
    view = page.locator(".neta-chat-view").first
    _wait_for_answer_length(lab, 0, len(whole))
    lab.wait_for_frames()
    shown = _assert_whole(view, whole)
    # It came the ordinary way: batches only, no resync.
    assert "sync" not in json.loads(lab.execute(path, "print(json.dumps(requests))"))
    # The state a saved notebook keeps holds the preview, and how long the whole is.
    saved = json.loads(lab.execute(path, (
        "import json; m = chat.messages[-1]\n"
        "print(json.dumps([len(m['text']), m.get('text_chars')]))")))
    assert saved == [PREVIEW, len(whole)]
    # The end of the answer, after the turn: a picture to look at.
    view.locator(".neta-chat-scroll").evaluate("n => { n.scrollTop = n.scrollHeight; }")
    lab.wait_for_transitions()
    lab.screenshot(view, screenshot_dir / "chat-long-answer-end.png")

    # A second view of the same session did not stream the answer: the preview, the note,
    # and "Show all" for the rest.
    page.evaluate(DISPLAY_AGAIN, [path, "chat"])
    second = page.locator(".neta-chat-view").nth(1)
    second.locator(".neta-chat-list .neta-chat-assistant").wait_for(timeout=30_000)
    note = second.locator(".neta-chat-list .neta-chat-assistant").last.locator(VISIBLE_NOTE)
    note.wait_for(timeout=30_000)
    assert note.locator(".neta-cut-note-text").text_content() == (
        f"Showing {PREVIEW:,} of {len(whole):,} characters")
    assert _answer_text(second) == whole[:PREVIEW].strip()
    note.locator("button", has_text="Show all").click()
    note.wait_for(state="hidden", timeout=30_000)
    _wait_for_answer_length(lab, 1, len(whole))
    assert _answer_text(second).endswith(whole[-200:])
    # The first view is still whole, with no note.
    assert _answer_text(view) == shown
    assert view.locator(".neta-chat-list .neta-chat-assistant").last.locator(
        VISIBLE_NOTE).count() == 0


def test_a_long_answer_stays_whole_when_its_end_came_through_a_resync(
        lab: LabSession, screenshot_dir: Path) -> None:
    path, whole = _run_long_answer(lab, "long_answer_resync.ipynb", lose_end=True)
    page = lab.page
    view = page.locator(".neta-chat-view").first
    # The view noticed the gap and took the kernel's snapshot: the answer is a message.
    assert "sync" in json.loads(lab.execute(path, "print(json.dumps(requests))"))
    page.wait_for_function(
        "() => document.querySelectorAll('.neta-chat-view .neta-chat-list"
        " .neta-chat-assistant').length === 1", timeout=30_000)
    lab.wait_for_frames()
    page.wait_for_timeout(500)  # a late redraw from the preview would show by now
    _assert_whole(view, whole)
    view.locator(".neta-chat-scroll").evaluate("n => { n.scrollTop = n.scrollHeight; }")
    lab.wait_for_transitions()
    lab.screenshot(view, screenshot_dir / "chat-long-answer-end-resync.png")


def test_a_long_answer_stopped_past_the_preview_bound_keeps_what_streamed(
        lab: LabSession) -> None:
    # Six times the answer: the Stop comes while it streams, on a loaded machine too.
    path = _start_long_answer(lab, "long_answer_stop.ipynb", times=6)
    page = lab.page
    view = page.locator(".neta-chat-view").first
    page.wait_for_function(
        "(n) => (document.querySelector('.neta-is-live .neta-chat-text')?.textContent.length"
        " ?? 0) > n", arg=PREVIEW + 1_000, timeout=60_000)
    view.locator(".neta-chat-send.neta-is-stop").click()
    page.wait_for_function(IDLE, timeout=30_000)
    partial = json.loads(lab.execute(path, (
        "import json; m = session.messages[-1]\n"
        "print(json.dumps([m.text, m.metadata.interrupted, len(ANSWER) * 6 + 5]))")))
    text, interrupted, full = partial
    assert interrupted == "cancelled" and PREVIEW < len(text) < full
    view.locator(".neta-chat-live .neta-chat-msg").wait_for(state="detached")
    _wait_for_answer_length(lab, 0, len(text.strip()))
    _assert_whole(view, text.strip())
    answer = view.locator(".neta-chat-list .neta-chat-assistant").last
    assert answer.locator(".neta-chat-stopped").text_content() == "Stopped"
