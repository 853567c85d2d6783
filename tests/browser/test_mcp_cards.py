"""An MCP server's calls in the chat view, in real JupyterLab: with the default visibility
(``tool``) a call starts as a tool card; the server's first progress notification turns it
into a skill card in the same place, whose bar moves forward and which ends in place with
the server's result; a call the server's schema refuses (no progress) ends as an error tool
card. Pictures, light and dark."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from .harness import LabSession

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

pytestmark = pytest.mark.browser

SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"

SETUP = f"""
from neta_nb import Agent, AgentSession, AgentToolConfig, ScriptedProvider, ToolCatalog
from neta_nb.widgets import ChatView
catalog = ToolCatalog.default()
await catalog.add_mcp_server("t", command={sys.executable!r}, args=[{str(SERVER)!r}, "stdio"])
script = [
    [{{"text": "Counting on the server."}},
     {{"tool_call": {{"name": "t__count", "args": {{"steps": 50}}}}}}],
    [{{"tool_call": {{"name": "t__count", "args": {{"steps": "many"}}}}}}],
    [{{"text": "Counted to 50."}}],
]
agent = Agent("counter", model=ScriptedProvider(script),
              tools=AgentToolConfig(enabled=["t__count"]))
session = AgentSession(agent, catalog)
chat = ChatView(session)
chat
""".strip()

# Records every width the first skill card's bar is given, from the first one on.
WATCH = """() => {
  window.__netaWidths = [];
  const watch = () => {
    const fill = document.querySelector('.neta-chat-view .neta-skill-card .neta-progress-fill');
    if (!fill) { requestAnimationFrame(watch); return; }
    window.__netaWidths.push(fill.style.width);
    new MutationObserver(() => window.__netaWidths.push(fill.style.width))
      .observe(fill, {attributes: true, attributeFilter: ['style']});
  };
  watch();
}"""


def test_mcp_progress_is_one_skill_card_and_errors_end_as_error_cards(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("mcp_cards.ipynb", [SETUP], timeout=120)
    page = lab.page
    page.locator(".neta-chat-view").wait_for()
    page.evaluate(WATCH)
    lab.execute(path, "task = session.start('Count to 50 on the server')")
    page.wait_for_function("""() => {
        const cards = document.querySelectorAll(
          '.neta-chat-view .neta-chat-card > :is(.neta-skill-card, .neta-tool-card)');
        return cards.length === 2 && cards[0].classList.contains('neta-skill-card-done')
          && cards[1].classList.contains('neta-tool-card-error');
    }""", timeout=60_000)
    lab.wait_for_kernel_value(path, "task.done()", "True", timeout=60)
    first = page.locator(".neta-chat-view .neta-skill-card")
    second = page.locator(".neta-chat-view .neta-tool-card")
    assert first.count() == 1 and second.count() == 1
    assert "neta-skill-card-done" in (first.get_attribute("class") or "")
    assert "neta-tool-card-error" in (second.get_attribute("class") or "")
    widths = [float(w.rstrip("%")) for w in page.evaluate("() => window.__netaWidths") if w]
    # Real percentages from the server, in order: the bar only moves forward.
    assert widths == sorted(widths) and len(set(widths)) >= 3, widths
    assert widths[-1] == 100.0
    # Its message is in the folded body, built when the card is opened (as a user does);
    # folded again for the pictures.
    second.locator(".neta-tool-header").click()
    second.locator(".neta-tool-body:not(.neta-is-closed) .neta-tool-result").wait_for()
    assert "steps" in (second.text_content() or "")
    second.locator(".neta-tool-header").click()

    chat = page.locator(".neta-chat-view")
    lab.set_left_area(collapsed=True)
    pictures = [lab.screenshot(chat, screenshot_dir / "chat-mcp-skill-light.png")]
    lab.set_theme(dark=True)
    pictures.append(lab.screenshot(chat, screenshot_dir / "chat-mcp-skill-dark.png"))
    lab.set_theme(dark=False)
    lab.set_left_area(collapsed=False)
    lab.execute(path, "await catalog.remove_mcp_server('t')")
    assert all(picture.stat().st_size > 1000 for picture in pictures)
