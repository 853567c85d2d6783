"""Every card renders from kernel state in real JupyterLab and follows Python changes."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import gallery
from .harness import LabSession

pytestmark = pytest.mark.browser


def texts(lab: LabSession, selector: str) -> list[str]:
    return [text.strip() for text in lab.page.locator(selector).all_inner_texts()]


def test_every_card_renders_from_kernel_state(lab: LabSession) -> None:
    lab.run_notebook("render.ipynb", gallery.CELLS)
    page = lab.page

    todo = page.locator(".neta-todo-card")
    todo.wait_for()
    # Each cell's widget is drawn on its own: wait for the last ones before reading them.
    page.locator(".neta-tool-card").nth(2).wait_for()
    page.locator(".neta-token-stats").nth(2).wait_for()
    page.locator(".neta-level-select option").nth(4).wait_for(state="attached")
    assert todo.locator(".neta-todo-title").inner_text() == "Plan"
    assert todo.locator(".neta-todo-count").inner_text() == "2/5 done"
    assert todo.locator(".neta-todo-row").count() == 5
    active = todo.locator(".neta-todo-row-in_progress")
    assert active.locator(".neta-todo-content").inner_text() == "Fit a seasonal model per region"
    assert active.locator(".neta-spinner").count() == 1
    assert active.locator(".neta-todo-tag").inner_text() == "In progress"
    assert todo.locator(".neta-todo-row-completed").count() == 2
    assert todo.locator(".neta-todo-row-cancelled").count() == 1
    assert todo.locator(".neta-progress-fill").evaluate("e => e.style.width") == "40%"

    tools = page.locator(".neta-tool-card")
    assert tools.count() == 3
    assert texts(lab, ".neta-tool-card .neta-tool-label") == ["Web search", "Read file", "Run SQL"]
    assert texts(lab, ".neta-tool-card .neta-tool-tag") == ["Running", "Done", "Failed"]
    assert tools.nth(0).locator(".neta-spinner").count() == 1
    assert tools.nth(1).locator(".neta-tool-result table td").first.inner_text() == "North"

    skill = page.locator(".neta-skill-card").first
    assert skill.locator(".neta-skill-step").inner_text() == "Rendering charts (3/8)"
    assert skill.locator(".neta-skill-percent").inner_text() == "40%"

    thinking = page.locator(".neta-thinking-block").first
    page.wait_for_function(
        "() => document.querySelector('.neta-thinking-block').textContent"
        ".includes('The seasonal pattern looks')")
    assert "neta-is-streaming" in (thinking.get_attribute("class") or "")
    assert thinking.locator(".neta-thinking-cursor").count() == 1
    assert thinking.locator("strong").inner_text() == "quarterly forecast"

    stats = page.locator(".neta-token-stats")
    assert stats.nth(0).locator(".neta-token-realtime").inner_text().split() == [
        "↑12.3K", "↓340", "·", "3", "calls", "·", "—"]  # no price given: cost unknown
    assert stats.nth(0).locator(".neta-token-context-text").inner_text() == "Context 32%"
    assert stats.nth(1).locator(".neta-token-realtime").is_hidden()
    assert [stats.nth(i).locator(".neta-token-dot").get_attribute("data-level")
            for i in range(3)] == ["ok", "warn", "high"]
    assert stats.nth(2).locator(".neta-token-in").inner_text() == "↑1.2M"

    options = page.locator(".neta-level-select option")
    assert options.all_inner_texts() == ["Off", "Minimal", "Low", "Medium", "High"]
    assert page.locator(".neta-level-select").input_value() == "medium"


def test_cards_follow_python_changes_live(lab: LabSession) -> None:
    path = lab.run_notebook("live.ipynb", gallery.CELLS)
    page = lab.page
    page.locator(".neta-todo-card").wait_for()

    lab.execute(path, 'store.write([{"id": "3", "status": "completed"},'
                      ' {"id": "4", "status": "in_progress"},'
                      ' {"id": "6", "content": "Archive the notebook", "status": "pending"}],'
                      ' merge=True)')
    page.wait_for_function("() => document.querySelector('.neta-todo-count').textContent"
                           " === '3/6 done'")
    assert page.locator(".neta-todo-row").count() == 6
    active = page.locator(".neta-todo-row-in_progress .neta-todo-content")
    assert active.inner_text() == "Write the summary report"
    assert page.locator(".neta-todo-row").nth(5).inner_text() == "Archive the notebook"
    assert page.locator(".neta-todo-row-in_progress .neta-spinner").count() == 1
    # Nothing works on the plan any more (a session's turn ended): the step stops spinning.
    lab.execute(path, "todo.working = False")
    page.locator(".neta-todo-row.neta-is-paused .neta-todo-paused-mark").wait_for()
    assert page.locator(".neta-todo-card .neta-spinner").count() == 0
    lab.execute(path, "todo.working = True")
    page.locator(".neta-todo-row-in_progress .neta-spinner").wait_for()

    lab.execute(path, 'from neta_nb.events import ToolResultEvent\n'
                      'tool.apply(ToolResultEvent(id="t1", name="web_search", result="3 hits"))')
    first_tool = page.locator(".neta-tool-card").first
    first_tool.locator(".neta-tool-tag", has_text="Done").wait_for()
    assert "neta-tool-card-done" in (first_tool.get_attribute("class") or "")
    first_tool.locator(".neta-tool-header").click()
    first_tool.locator(".neta-tool-result", has_text="3 hits").wait_for()
    assert lab.wait_for_kernel_value(path, "tool.expanded", "True") == "True"

    lab.execute(path, 'tokens.apply({"current": {"input_tokens": 20000, "output_tokens": 1500,'
                      ' "total_tokens": 21500, "api_calls": 4}, "context": {"used_tokens":'
                      ' 170000, "max_tokens": 200000, "percent": 85}})')
    stats = page.locator(".neta-token-stats").first
    stats.locator(".neta-token-in", has_text="↑20K").wait_for()
    assert stats.locator(".neta-token-dot").get_attribute("data-level") == "high"
    lab.execute(path, "tokens.running = False")
    # The turn ended: its figures stay as the last turn's, muted with the rest.
    page.wait_for_function("() => !document.querySelector('.neta-token-stats')"
                           ".classList.contains('neta-is-running')")
    assert stats.locator(".neta-token-in").inner_text() == "↑20K"
    assert stats.locator(".neta-token-context-text").inner_text() == "Context 85%"

    lab.execute(path, 'selector.supplier = "deepseek"; selector.model = "deepseek-reasoner"')
    page.wait_for_function("() => document.querySelectorAll('.neta-level-select option')"
                           ".length === 4")
    lab.execute(path, 'selector.model = "deepseek-chat"')
    page.wait_for_function("() => document.querySelector('.neta-level-select').disabled")
    assert lab.execute(path, "print(selector.level)").strip() == "off"
    # "off" is supported by the new model too, so it stays.
    lab.execute(path, 'selector.set_model("anthropic", "claude-sonnet-4-6");'
                      ' selector.disabled = True')
    page.wait_for_function("() => document.querySelectorAll('.neta-level-select option')"
                           ".length === 6")
    assert page.locator(".neta-level-select").input_value() == "off"
    assert page.locator(".neta-level-select").is_disabled()

    lab.execute(path, 'thinking.append(" strong in Q4.")\nthinking.done()')
    block = page.locator(".neta-thinking-block").first
    page.wait_for_function("() => !document.querySelector('.neta-thinking-block')"
                           ".classList.contains('neta-is-streaming')")
    assert "neta-is-collapsed" in (block.get_attribute("class") or "")
    assert block.locator(".neta-thinking-cursor").count() == 0
    assert block.locator(".neta-thinking-title").inner_text() == "Thinking"
    assert "strong in Q4." in block.locator(".neta-thinking-content").text_content()


def test_skill_card_is_one_node_from_running_to_done(lab: LabSession) -> None:
    path = lab.run_notebook("skill.ipynb", [gallery.SETUP, gallery.SKILL])
    page = lab.page
    card = page.locator(".neta-skill-card")
    card.wait_for()
    card.evaluate("node => { node.__netaMark = 'same-node'; }")
    height_running = card.evaluate("node => node.getBoundingClientRect().height")

    lab.execute(path, 'from neta_nb.events import ProgressEvent, SkillEndEvent\n'
                      'skill.apply(ProgressEvent(id="s", percent=90, step="Writing PDF"))')
    card.locator(".neta-skill-step", has_text="Writing PDF").wait_for()
    lab.execute(path, 'skill.apply(SkillEndEvent(id="s", name="report", status="done",'
                      ' result="Report saved to **report.pdf**"))')
    page.wait_for_function("() => document.querySelector('.neta-skill-card')"
                           ".classList.contains('neta-skill-card-done')")
    assert page.locator(".neta-skill-card").count() == 1
    assert card.evaluate("node => node.__netaMark") == "same-node"
    toggle = card.locator(".neta-skill-toggle")
    toggle.wait_for()
    assert toggle.inner_text() == "View result"
    # Progress and the toggle share one place: the card keeps its height (no jump), also
    # once every transition inside it has ended.
    lab.wait_for_transitions(card)
    assert card.evaluate("node => node.getBoundingClientRect().height") == pytest.approx(
        height_running, abs=1)
    border = card.evaluate("node => getComputedStyle(node).borderLeftColor")
    success = card.evaluate("node => getComputedStyle(node.querySelector("
                            "'.neta-status-mark')).backgroundColor")
    assert border == success

    toggle.click()
    card.locator(".neta-skill-result strong", has_text="report.pdf").wait_for()
    assert toggle.inner_text() == "Hide"
    assert lab.wait_for_kernel_value(path, "skill.expanded", "True") == "True"

    lab.execute(path, 'skill.status = "error"')
    page.wait_for_function("() => document.querySelector('.neta-skill-card')"
                           ".classList.contains('neta-skill-card-error')")
    assert card.evaluate("node => node.__netaMark") == "same-node"


def test_language_switch(lab: LabSession) -> None:
    path = lab.run_notebook("lang.ipynb", gallery.CELLS)
    page = lab.page
    page.locator(".neta-todo-card").wait_for()
    lab.execute(path, "for w in (todo, tool, tool_done, tool_error, skill, skill_done, thinking,"
                      " thinking_done, tokens, selector): w.lang = 'zh-CN'")
    page.locator(".neta-todo-title", has_text="任务规划").wait_for()
    # One message per widget, applied in turn: the last widget's switch is waited for.
    page.locator(".neta-level-select option", has_text="极简").wait_for(state="attached")
    page.locator(".neta-token-stats").first.locator(".neta-token-calls", has_text="次").wait_for()
    page.locator(".neta-thinking-title", has_text="思考过程").wait_for()
    page.locator(".neta-skill-card-done .neta-skill-tag", has_text="完成").wait_for()
    page.locator(".neta-tool-card .neta-tool-tag", has_text="失败").wait_for()
    assert page.locator(".neta-todo-count").inner_text() == "2/5 完成"
    assert page.locator(".neta-todo-row-in_progress .neta-todo-tag").inner_text() == "进行中"
    assert texts(lab, ".neta-tool-card .neta-tool-tag") == ["执行中", "完成", "失败"]
    assert page.locator(".neta-skill-card-done .neta-skill-tag").inner_text() == "完成"
    assert page.locator(".neta-skill-card-done .neta-skill-toggle").inner_text() == "收起"
    assert page.locator(".neta-thinking-title").nth(0).inner_text() == "思考中…"
    assert page.locator(".neta-thinking-title").nth(1).inner_text() == "思考过程"
    stats = page.locator(".neta-token-stats").first
    assert stats.locator(".neta-token-context-text").inner_text() == "上下文 32%"
    assert stats.locator(".neta-token-calls").inner_text() == "· 3次"
    assert page.locator(".neta-level-select option").all_inner_texts() == [
        "关闭", "极简", "低", "中等", "高"]

    lab.execute(path, "todo.lang = 'en'")
    page.locator(".neta-todo-title", has_text="Plan").wait_for()


def _luminance(css_colour: str) -> float:
    """Relative brightness 0..1 of a computed colour: ``rgb(…)`` (0–255) or, for
    color-mix results, ``color(srgb …)`` (0–1)."""
    inner = css_colour[css_colour.index("(") + 1:css_colour.index(")")]
    scale = 1.0 if css_colour.startswith("color(") else 255.0
    parts = [float(p) / scale for p in inner.replace("srgb", "").replace(",", " ").split()[:3]]
    return 0.2126 * parts[0] + 0.7152 * parts[1] + 0.0722 * parts[2]


def test_dark_theme_uses_jupyterlab_variables(lab: LabSession) -> None:
    lab.run_notebook("theme.ipynb", [gallery.SETUP, gallery.TODO, gallery.SKILL])
    page = lab.page
    card = page.locator(".neta-todo-card")
    card.wait_for()
    text = card.locator(".neta-todo-content").first

    def colours() -> tuple[float, float]:
        return (_luminance(card.evaluate("n => getComputedStyle(n).backgroundColor")),
                _luminance(text.evaluate("n => getComputedStyle(n).color")))

    light_bg, _light_fg = colours()
    lab.set_theme(dark=True)
    dark_bg, dark_fg = colours()
    assert light_bg > 0.8 and dark_bg < 0.3
    assert dark_fg > dark_bg + 0.3
    lab_brand = page.evaluate("getComputedStyle(document.body).getPropertyValue("
                              "'--jp-brand-color1').trim()")
    accent = card.evaluate("n => getComputedStyle(n).getPropertyValue('--neta-accent').trim()")
    assert accent == lab_brand


def test_streaming_cursor_follows_the_text_into_nested_lists(lab: LabSession) -> None:
    # The thinking block and the chat answer share one streaming renderer: in both, the
    # cursor sits at the end of the text, inside the deepest list item, not after the list.
    path = lab.run_notebook("cursor.ipynb", [
        "from neta_nb.widgets import ThinkingBlock\n"
        "block = ThinkingBlock()\n"
        "block.start()\n"
        "block.append('Plan:\\n\\n- load the data\\n- check it\\n  - nulls\\n  - outl')\n"
        "block.flush()\n"
        "block",
    ])
    page = lab.page
    cursor = page.locator(".neta-thinking-block.neta-is-streaming .neta-thinking-cursor")
    cursor.wait_for()
    # The text is revealed over a few frames (js/src/reveal.ts): wait for all of it.
    page.wait_for_function("() => document.querySelector('.neta-thinking-cursor')"
                           "?.parentElement?.textContent === 'outl'")
    host = cursor.evaluate("c => [c.parentElement.tagName,"
                           " c.parentElement.parentElement.parentElement.tagName,"
                           " c.parentElement.textContent]")
    assert host == ["LI", "LI", "outl"]
    lab.execute(path, "block.append('iers\\n\\nDone.')\nblock.flush()")
    page.wait_for_function("() => document.querySelector('.neta-thinking-cursor')"
                           "?.parentElement?.textContent === 'Done.'")
    assert cursor.evaluate("c => c.parentElement.tagName") == "P"
    # The finished list rendered once, above the growing tail, and keeps its last item.
    stable = page.locator(".neta-thinking-stable")
    assert "outliers" in stable.inner_text()


# Per 100 ms window while a stream runs, whether the shown text grew: sampled every frame.
_GROWTH_JS = """async ([selector, seconds]) => {
    const node = document.querySelector(selector);
    const windows = new Map();
    const start = performance.now();
    let last = node.textContent.length;
    while (performance.now() - start < seconds * 1000) {
        await new Promise((resolve) => requestAnimationFrame(resolve));
        const now = node.textContent.length;
        const slot = Math.floor((performance.now() - start) / 100);
        windows.set(slot, (windows.get(slot) || false) || now > last);
        last = now;
    }
    return [...windows.values()];
}"""


def test_text_alone_streamed_slowly_flows_between_batches(lab: LabSession,
                                                         screenshot_dir: Path) -> None:
    # A slow model's text goes at most every 0.5 s (neta_nb/widgets/streaming.py); the
    # page reveals each batch over about the time the last one took (js/src/reveal.ts), so
    # the text grows all the time instead of a burst every half second.
    path = lab.run_notebook("flow.ipynb", [
        "import asyncio\n"
        "from neta_nb.widgets import ThinkingBlock\n"
        "block = ThinkingBlock()\n"
        "block.start()\n"
        "async def feed():\n"
        "    for n in range(400):\n"
        "        block.append(f'word{n % 10} ')  # ~6 characters every 20 ms\n"
        "        await asyncio.sleep(0.02)\n"
        "    block.finish()\n"
        "block",
    ])
    page = lab.page
    page.locator(".neta-thinking-block.neta-is-streaming").wait_for()
    lab.execute(path, "task = asyncio.ensure_future(feed())")
    page.wait_for_function("() => document.querySelector('.neta-thinking-block')"
                           "?.textContent.length > 300", timeout=20_000)
    grew = page.evaluate(_GROWTH_JS, [".neta-thinking-block", 3])
    lab.screenshot(page.locator(".neta-thinking-block").first,
                   screenshot_dir / "thinking-flowing.png")
    # Drawn a batch at a time, the text would grow in ~1 of every 5 windows.
    assert sum(grew) >= 0.7 * len(grew), grew
    assert int(lab.execute(path, "print(block.seq if hasattr(block, 'seq') else 0)")) >= 0


# Per card on the page, the inline widths of the elements around it up to its output (the
# widget view's element among them, where a Layout puts its styles).
_WIDTHS_JS = """() => [...document.querySelectorAll('.neta-todo-card')].map((card) => {
    const widths = [];
    for (let node = card; node && !node.classList.contains('jp-OutputArea-output');
         node = node.parentElement) {
        if (node.style.width) widths.push(node.style.width);
    }
    return widths.join(' ');
})"""


def test_a_layout_first_used_after_the_card_rendered_styles_its_views(lab: LabSession,
                                                                      screenshot_dir: Path
                                                                      ) -> None:
    # A card opens with no Layout model (lighter wire); the first `card.layout` read
    # creates one and sends the reference. The views already drawn take it on.
    path = lab.run_notebook("layout.ipynb", [
        "from neta_nb.widgets import TodoCard\n"
        "card = TodoCard(todos=[{'id': '1', 'content': 'Draw the chart',"
        " 'status': 'in_progress'}])\ncard",
        "card",  # a second view of the same widget
    ])
    page = lab.page
    page.locator(".neta-todo-card").nth(1).wait_for()
    assert lab.execute(path, "print(card.has_layout)").strip() == "False"
    before = page.evaluate(_WIDTHS_JS)
    assert len(before) == 2 and not any("321px" in widths for widths in before)

    lab.execute(path, "card.layout.width = '321px'")
    page.wait_for_function(f"() => ({_WIDTHS_JS})().every((w) => w.split(' ').includes('321px'))")
    box = page.locator(".neta-todo-card").first.bounding_box()
    assert box is not None and box["width"] <= 321
    lab.screenshot(page.locator(".neta-todo-card").first, screenshot_dir / "todo-card-layout.png")

    # A new Layout replaces it; the card still follows its own changes afterwards.
    lab.execute(path, "from ipywidgets import Layout\ncard.layout = Layout(width='222px')")
    page.wait_for_function(f"() => ({_WIDTHS_JS})().every((w) => w.split(' ').includes('222px')"
                           " && !w.split(' ').includes('321px'))")
    lab.execute(path, "card.todos = [{'id': '1', 'content': 'Chart drawn',"
                      " 'status': 'completed'}]")
    page.wait_for_function("() => [...document.querySelectorAll('.neta-todo-content')]"
                           ".every((e) => e.textContent === 'Chart drawn')")
