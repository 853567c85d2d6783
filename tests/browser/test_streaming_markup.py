"""While an answer streams, its unfinished last block renders as it will once whole: an
opened ``**``, backtick or ``~~`` is closed for the moment instead of showing as raw
characters, and an unfinished link shows its text (no placeholder address), in real
JupyterLab. Every render of the streaming tail is recorded by a MutationObserver."""

from __future__ import annotations

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

# One paragraph, streamed slowly: each marker stays open for many renders of the tail.
STREAMED = """
TEXT = ("Missing values: **customer_rating is empty in 13 of 40 rows**, so run "
        "`df.dropna(subset=['customer_rating'])` first; the ~~old advice~~ is gone. "
        "See [the pandas guide](http://127.0.0.1:9/guide) for more.")
provider = ScriptedProvider([[{"text": TEXT}]], chars_per_second=120)
session = AgentSession(Agent("analyst", model=provider))
chat = ChatView(session)
chat
""".strip()

# Records the tail's text and its links' addresses after each change, until the turn ends.
WATCH = """() => {
  window.__netaTails = [];
  const list = document.querySelector('.neta-chat-view');
  const observer = new MutationObserver(() => {
    for (const tail of list.querySelectorAll('.neta-chat-text-tail')) {
      if (!tail.textContent) continue;
      window.__netaTails.push({
        text: tail.textContent,
        hrefs: Array.from(tail.querySelectorAll('a')).map((a) => a.getAttribute('href')),
      });
    }
  });
  observer.observe(list, { childList: true, subtree: true, characterData: true });
  window.__netaStopWatching = () => observer.disconnect();
}"""

IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"


def test_an_answer_streams_without_raw_markup(lab: LabSession) -> None:
    path = lab.run_notebook("streaming_markup.ipynb", [chat_cells.IMPORTS, STREAMED])
    page = lab.page
    page.locator(".neta-chat-view").wait_for()
    page.evaluate(WATCH)
    lab.execute(path, "await session.run('What stands out?')")
    page.wait_for_function(IDLE, timeout=60_000, polling=200)
    page.wait_for_function("() => !document.querySelector('.neta-chat-text-tail')?.textContent",
                           timeout=10_000)
    page.evaluate("() => window.__netaStopWatching()")
    tails = page.evaluate("() => window.__netaTails")
    # Renders all along the way (the text takes ~1.7 s): the markers were open in several.
    opened = [tail for tail in tails if "customer_rating" in tail["text"]
              and "rows," not in tail["text"]]
    assert len(tails) > 8 and opened, len(tails)
    for tail in tails:
        assert "**" not in tail["text"] and "`" not in tail["text"], tail
        assert "~~" not in tail["text"] and "](" not in tail["text"], tail
        assert all(href == "http://127.0.0.1:9/guide" for href in tail["hrefs"]), tail
    # The whole answer: bold, code, strikethrough and the link, as markdown renders them.
    answer = page.locator(".neta-chat-assistant .neta-chat-text")
    assert answer.locator("strong").inner_text() == "customer_rating is empty in 13 of 40 rows"
    assert answer.locator("code").inner_text() == "df.dropna(subset=['customer_rating'])"
    assert answer.locator("del").inner_text() == "old advice"
    assert answer.locator("a").get_attribute("href") == "http://127.0.0.1:9/guide"
