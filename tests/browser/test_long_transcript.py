"""A long stored session in the chat view: the transcript draws only what is near its
viewport (js/src/chat/transcript-window.ts), and nothing of the conversation is lost for it.

The session (tests/support/long_session.py) names its turn in every prompt and answer, so
what the view shows at each scroll step can be checked for order: scrolling back through 12
older pages and down again, every turn's prompt and answer shows, in order, never twice;
the DOM stays bounded; a selection across messages copies whole even after scrolling far
away; an approval the running turn waits for still answers after the reader went 300 items
up and came back; the same in Notebook 7. Light and dark screenshots of a transcript drawn
again mid-way.
"""

from __future__ import annotations

import itertools
import re
from pathlib import Path
from typing import Any

import nbformat
import pytest

from tests.support.long_session import store_long_session

from .chat_cells import IMPORTS
from .harness import JupyterLabServer, LabSession
from .test_agent_cell import OPENED_JS
from .test_notebook_bridge import _FIND_PANEL

pytestmark = pytest.mark.browser

TURNS = 400
# A scroll step, in viewports: the drawn run reaches past the viewport by more than that, so
# every message is drawn at some step.
STEP = 1.5

OPEN = IMPORTS + """
session = AgentSession.resume({session!r}, SessionStore({db!r}),
                              agent=Agent("analyst", model=ScriptedProvider()))
chat = ChatView(session, height="640px")
chat
"""

# A turn of the stored session's agent that waits for approval of a tool call.
OPEN_APPROVAL = IMPORTS + """
deleted = []

@tool(requires_approval=True, label="Delete file")
def delete_file(path: str) -> str:
    \"\"\"Delete a file.\"\"\"
    deleted.append(path)
    return f"Deleted {{path}}."

catalog = ToolCatalog.default()
catalog.register(delete_file)
provider = ScriptedProvider([
    [{{"text": "I will delete it."}},
     {{"tool_call": {{"name": "delete_file", "args": {{"path": "old.csv"}}}}}}],
    [{{"text": "Deleted, as asked."}}],
])
agent = Agent("janitor", model=provider, tools=AgentToolConfig(enabled=["delete_file"]))
session = AgentSession.resume({session!r}, SessionStore({db!r}), agent=agent, catalog=catalog)
chat = ChatView(session, height="640px")
chat
"""

# What the chat view shows now: the turn numbers of the prompts and answers drawn, in DOM
# order, the scroller's place, the loading indicator and the chat's DOM size.
LOOK = """() => {
  const view = document.querySelector('.neta-chat-view');
  const scroller = view.querySelector('.neta-chat-scroll');
  const turn = (node, pattern) => {
    const found = (node.textContent || '').match(pattern);
    return found ? Number(found[1]) : null;
  };
  const all = (selector) => Array.from(view.querySelectorAll(selector));
  const prompts = all('.neta-chat-list .neta-chat-user .neta-chat-bubble')
    .map((node) => turn(node, /Question of turn (\\d+):/)).filter((n) => n !== null);
  const answers = all('.neta-chat-list .neta-chat-assistant .neta-chat-text')
    .map((node) => turn(node, /Answer of turn (\\d+)\\./)).filter((n) => n !== null);
  const indicator = view.querySelector('.neta-chat-older');
  if (!window.__olderPages) {
    // Counts the older pages asked for: each shows the loading indicator.
    window.__olderPages = { count: 0 };
    new MutationObserver(() => {
      if (!indicator.hidden) window.__olderPages.count += 1;
    }).observe(indicator, { attributes: true, attributeFilter: ['hidden'] });
  }
  return { prompts, answers, top: scroller.scrollTop, height: scroller.scrollHeight,
           client: scroller.clientHeight, loading: !indicator.hidden,
           pages: window.__olderPages.count, nodes: view.querySelectorAll('*').length };
}"""

# A scroll by the reader's hand (a wheel event first: the view stops following the answer).
SCROLL_BY = """async (delta) => {
  const scroller = document.querySelector('.neta-chat-view .neta-chat-scroll');
  scroller.dispatchEvent(new WheelEvent('wheel', { deltaY: delta }));
  scroller.scrollTop += delta;
  for (let i = 0; i < 2; i += 1) await new Promise((resolve) => requestAnimationFrame(resolve));
}"""


def _contiguous(numbers: list[int]) -> bool:
    return all(b == a + 1 for a, b in itertools.pairwise(numbers))


def _look(page: Any) -> dict[str, Any]:
    shown: dict[str, Any] = page.evaluate(LOOK)
    # Drawn in order, none twice, none missing in between.
    assert _contiguous(shown["prompts"]), shown["prompts"]
    assert _contiguous(shown["answers"]), shown["answers"]
    return shown


def _open(tab: LabSession, path: str, cell: str) -> Any:
    tab.run_notebook(path, [cell], timeout=120)
    page = tab.page
    newest = page.locator(".neta-chat-view .neta-chat-bubble", has_text=f"turn {TURNS}:")
    newest.wait_for(timeout=60_000)
    page.wait_for_timeout(500)
    return page


def _scroll_back(page: Any, pages: int, *,
                 until_turn: int | None = None) -> tuple[set[int], set[int], int, int]:
    """Scroll up a viewport at a time through `pages` older pages (or until the prompt of
    `until_turn` shows); returns the turns whose prompt and answer were seen, the most
    nodes and how many pages came."""
    prompts: set[int] = set()
    answers: set[int] = set()
    most = 0
    start = _look(page)["pages"]
    at_top = 0
    for _step in range(3_000):
        shown = _look(page)
        prompts.update(shown["prompts"])
        answers.update(shown["answers"])
        most = max(most, shown["nodes"])
        loaded = shown["pages"] - start
        if until_turn is not None and until_turn in prompts:
            break
        if shown["loading"]:
            page.wait_for_timeout(50)
            continue
        if loaded >= pages and shown["top"] < shown["client"]:
            break
        at_top = at_top + 1 if shown["top"] == 0 else 0
        if at_top > 20:  # nothing older
            break
        page.evaluate(SCROLL_BY, -int(shown["client"] * STEP))
    return prompts, answers, most, shown["pages"] - start


def _scroll_down(page: Any) -> tuple[set[int], set[int], int]:
    prompts: set[int] = set()
    answers: set[int] = set()
    most = 0
    for _step in range(2_000):
        shown = _look(page)
        prompts.update(shown["prompts"])
        answers.update(shown["answers"])
        most = max(most, shown["nodes"])
        if shown["top"] + shown["client"] >= shown["height"] - 2:
            break
        page.evaluate(SCROLL_BY, int(shown["client"] * STEP))
    return prompts, answers, most


def _back_and_down(page: Any, pages: int) -> None:
    first = _look(page)["nodes"]
    up_prompts, up_answers, most_up, loaded = _scroll_back(page, pages)
    assert loaded >= pages
    oldest = min(up_prompts)
    # Every turn between the oldest reached and the newest showed on the way up, and on
    # the way down again.
    # (The oldest page may begin with the answer of a turn whose prompt is older still.)
    turns = set(range(oldest, TURNS + 1))
    assert up_prompts == turns
    assert up_answers - {oldest - 1} == turns
    assert oldest <= TURNS - 16 * pages, oldest
    down_prompts, down_answers, most_down = _scroll_down(page)
    assert down_prompts == turns
    assert down_answers - {oldest - 1} == turns
    # Bounded wherever the reader was.
    assert max(most_up, most_down) <= 2.5 * first, (first, most_up, most_down)


@pytest.mark.timeout(900)
def test_scrolling_back_twelve_pages_and_down_shows_every_turn_once(lab: LabSession) -> None:
    db = lab.server.root_dir / "long.db"
    session = store_long_session(db, TURNS)
    page = _open(lab, "long_transcript.ipynb", OPEN.format(session=session, db=str(db)))
    _back_and_down(page, 12)


def test_a_selection_across_messages_copies_whole_after_scrolling_away(lab: LabSession) -> None:
    db = lab.server.root_dir / "long.db"
    session = store_long_session(db, TURNS)
    page = _open(lab, "long_selection.ipynb", OPEN.format(session=session, db=str(db)))
    _scroll_back(page, 1)
    shown = _look(page)
    # From the first prompt drawn to the last answer drawn (at most three turns).
    last = shown["answers"][-1]
    first = max(shown["prompts"][0], last - 2)
    assert last > first, shown
    selected = page.evaluate("""([first, last]) => {
      const all = (selector) => Array.from(document.querySelectorAll(selector));
      const bubbles = all('.neta-chat-list .neta-chat-user .neta-chat-bubble');
      const start = bubbles.find((node) => node.textContent.includes(`turn ${first}:`));
      const answers = all('.neta-chat-list .neta-chat-assistant .neta-chat-text');
      const end = answers.find((node) => node.textContent.includes(`Answer of turn ${last}.`));
      const range = document.createRange();
      range.setStart(start.firstChild, 0);
      range.setEndAfter(end);
      const selection = document.getSelection();
      selection.removeAllRanges();
      selection.addRange(range);
      return selection.toString();
    }""", [first, last])
    # Far away and back: the messages holding the selection stayed drawn.
    for _ in range(12):
        page.evaluate(SCROLL_BY, 800)
    for _ in range(12):
        page.evaluate(SCROLL_BY, -800)
    copied = page.evaluate("""() => {
      let copied = '';
      const onCopy = (event) => { copied = document.getSelection().toString(); };
      document.addEventListener('copy', onCopy);
      document.execCommand('copy');
      document.removeEventListener('copy', onCopy);
      return copied;
    }""")
    assert copied == selected
    turns = [int(n) for n in re.findall(r"Question of turn (\d+):", copied)]
    assert turns == list(range(first, last + 1))
    assert [int(n) for n in re.findall(r"Answer of turn (\d+)\.", copied)] == turns


@pytest.mark.timeout(900)
def test_an_approval_answers_after_the_reader_went_300_items_up(lab: LabSession,
                                                                screenshot_dir: Path) -> None:
    db = lab.server.root_dir / "long.db"
    session = store_long_session(db, TURNS)
    path = "long_approval.ipynb"
    page = _open(lab, path, OPEN_APPROVAL.format(session=session, db=str(db)))
    lab.execute(path, "task = asyncio.ensure_future(session.run('Delete old.csv'))")
    view = page.locator(".neta-chat-view")
    approval = view.locator(".neta-chat-approval")
    approval.wait_for(timeout=30_000)
    # 300 items up: 100 turns (a prompt, the calls, the answer each).
    _scroll_back(page, 99, until_turn=TURNS - 100)
    assert _look(page)["nodes"] < 4_000
    # Light and dark pictures of a transcript drawn again far up.
    shots = lab.screenshot_themes(view, screenshot_dir, "long-transcript-far-up")
    assert all(shot.exists() for shot in shots)
    _scroll_down(page)
    approval.locator("button[data-decision=allow_once]").click()
    view.locator(".neta-chat-text", has_text="Deleted, as asked.").wait_for(timeout=30_000)
    assert lab.wait_for_kernel_value(path, "deleted", "['old.csv']") == "['old.csv']"
    lab.execute(path, "await task")


def test_notebook_7_scrolls_back_and_down_the_same(notebook7: JupyterLabServer,
                                                    lab_session: LabSession) -> None:
    db = notebook7.root_dir / "long.db"
    session = store_long_session(db, TURNS)
    path = "long_transcript_nb7.ipynb"
    url = f"{notebook7.url}/notebooks/{path}?token={notebook7.token}"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(OPEN.format(session=session, db=str(db)))]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, notebook7.root_dir / path)
    tab = LabSession(notebook7, lab_session.page.context, url=url)
    try:
        tab.page.wait_for_function(f"(path) => Boolean({_FIND_PANEL}(path))", arg=path,
                                   timeout=60_000)
        tab.page.evaluate(OPENED_JS, path)
        assert tab.page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        tab.run_all(path, timeout=120)
        newest = tab.page.locator(".neta-chat-view .neta-chat-bubble", has_text=f"turn {TURNS}:")
        newest.wait_for(timeout=60_000)
        _back_and_down(tab.page, 4)
        errors = [e.text for e in tab.console_errors if e.type == "error"]
        assert not errors, errors
    finally:
        tab.close()
