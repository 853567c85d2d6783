"""Model and tool text renders inert: no script runs, no handler attribute survives,
no javascript: link is left."""

from __future__ import annotations

import pytest

from .harness import LabSession

pytestmark = pytest.mark.browser

PAYLOAD = (
    "Hi <img src=x onerror=\"window.__netaPwned = 'img'\"> "
    "<script>window.__netaPwned = 'script'</script> "
    "[click](javascript:window.__netaPwned='link') "
    "<a href=\"javascript:window.__netaPwned='a'\">a</a> "
    "<svg onload=\"window.__netaPwned='svg'\"></svg> "
    "<iframe src=\"javascript:window.__netaPwned='iframe'\"></iframe>"
)

CELLS = [
    f"PAYLOAD = {PAYLOAD!r}\n"
    "from neta_nb.widgets import SkillCard, ThinkingBlock, TodoCard, ToolCard",
    "TodoCard(todos=[{'id': '1', 'content': PAYLOAD, 'status': 'in_progress'}])",
    "ToolCard(name=PAYLOAD, label=PAYLOAD, status='done', args={'q': PAYLOAD},"
    " result=PAYLOAD, expanded=True)",
    "ToolCard(name='t', status='error', result='{\"error\": ' + repr(PAYLOAD).replace(\"'\", '\"')"
    " + '}', expanded=True)",
    "SkillCard(name='s', label=PAYLOAD, status='done', result=PAYLOAD, expanded=True)",
    "ThinkingBlock(PAYLOAD, collapsed=False)",
    "streaming = ThinkingBlock()\nstreaming.append(PAYLOAD)\nstreaming.flush()\nstreaming",
]


def test_hostile_text_renders_inert(lab: LabSession) -> None:
    lab.run_notebook("security.ipynb", CELLS)
    page = lab.page
    page.wait_for_function("() => document.querySelectorAll('.neta-root').length >= 6")
    page.locator(".neta-thinking-block.neta-is-streaming .neta-thinking-content",
                 has_text="Hi").wait_for()
    # Structurally inert: nothing that could run is left in any widget's DOM.
    active = lab.active_content(".neta-root")
    assert active.pop("roots") >= 6
    assert active == {"scripts": 0, "frames": 0, "handlers": 0, "js_urls": 0}
    # And nothing ran: every image has loaded or failed (its error event has fired) and
    # two frames have passed before the tripwire is read.
    lab.wait_for_handlers_to_have_run(".neta-root")
    assert page.evaluate("() => window.__netaPwned === undefined")
    found = page.evaluate("""() => {
      const roots = Array.from(document.querySelectorAll('.neta-root'));
      const all = (sel) => roots.flatMap((r) => Array.from(r.querySelectorAll(sel)));
      return {
        jsLinks: all('a').filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') || ''))
          .length,
        text: roots.map((r) => r.textContent).join(' '),
      };
    }""")
    assert found["jsLinks"] == 0
    # The todo card shows the payload as text: the markup is visible, not interpreted.
    assert "<img src=x onerror=" in found["text"]
