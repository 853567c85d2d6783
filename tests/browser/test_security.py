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
    page.wait_for_timeout(500)  # give any injected handler time to fire
    assert page.evaluate("() => window.__netaPwned === undefined")
    found = page.evaluate("""() => {
      const roots = Array.from(document.querySelectorAll('.neta-root'));
      const all = (sel) => roots.flatMap((r) => Array.from(r.querySelectorAll(sel)));
      const handlers = roots.flatMap((r) => Array.from(r.querySelectorAll('*')))
        .filter((el) => Array.from(el.attributes).some((a) => a.name.startsWith('on')));
      return {
        scripts: all('script').length,
        iframes: all('iframe').length,
        handlers: handlers.length,
        jsLinks: all('a').filter((a) => /^\\s*javascript:/i.test(a.getAttribute('href') || ''))
          .length,
        images: all('img').length,
        text: roots.map((r) => r.textContent).join(' '),
      };
    }""")
    assert found["scripts"] == 0
    assert found["iframes"] == 0
    assert found["handlers"] == 0
    assert found["jsLinks"] == 0
    # The todo card shows the payload as text: the markup is visible, not interpreted.
    assert "<img src=x onerror=" in found["text"]
