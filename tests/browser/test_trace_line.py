"""The trace line in a tool card, in real JupyterLab: with a tracer provider configured, a
tool call's expanded card shows the OpenTelemetry trace and span ids of its
``execute_tool`` span (as the SDK's in-memory exporter recorded them in the kernel), and
its buttons copy them to the clipboard; a call made without tracing shows no line. A
skill card shows the line under its result. Pictures, light and dark, at the usual width
and a narrow one."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

# An OpenTelemetry SDK provider whose spans the kernel keeps in memory, set for neta_nb.
TRACING = """
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from neta_nb import configure_tracing
from neta_nb.runtime.tracing.tracing import UNTRACED, turn_tracer

exporter = InMemorySpanExporter()
tracer_provider = TracerProvider()
tracer_provider.add_span_processor(SimpleSpanProcessor(exporter))
configure_tracing(tracer_provider=tracer_provider)
""".strip()

TOOL_CHAT = """
provider = ScriptedProvider([
    [{"text": "Let me work that out."},
     {"tool_call": {"name": "calculate", "args": {"expression": "(17.5 * 12) / 3"}}}],
    [{"text": "It is 70."}],
    [{"text": "Once more, untraced."},
     {"tool_call": {"name": "calculate", "args": {"expression": "6 * 7"}}}],
    [{"text": "It is 42."}],
], chars_per_second=4000)
agent = Agent("analyst", model=provider, tools=AgentToolConfig(enabled=["calculate"]))
session = AgentSession(agent, ToolCatalog.demo())
chat = ChatView(session, height="640px")
chat
""".strip()

# The ids of the first turn's `execute_tool calculate` span, as the exporter has them.
SPAN_IDS = """
import json
found = [s for s in exporter.get_finished_spans() if s.name == "execute_tool calculate"]
assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
context = found[0].get_span_context()
print(json.dumps({"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}))
""".strip()

CARD = ".neta-chat-view .neta-tool-card"
IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"

# Nothing in the card sticks out: not the card, its body, nor any part of the trace line.
OVERFLOW = """(card) => {
  const box = card.getBoundingClientRect();
  const line = card.querySelector('.neta-trace-line');
  const parts = [line, ...line.children].map((n) => {
    const r = n.getBoundingClientRect();
    return { name: n.className, left: r.left, right: r.right };
  });
  return {
    card: card.scrollWidth > card.clientWidth + 1,
    body: [...card.querySelectorAll('.neta-tool-body, .neta-tool-sections')]
      .filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.className),
    outside: parts.filter((p) => p.left < box.left - 0.5 || p.right > box.right + 0.5)
      .map((p) => p.name),
  };
}"""

# The element is on screen, not clipped away by its folded body nor transparent.
SHOWN = """(node) => {
  const r = node.getBoundingClientRect();
  const clip = node.closest('.neta-collapsible-inner').getBoundingClientRect();
  const body = node.closest('.neta-collapsible');
  return r.height > 0 && r.top >= clip.top - 0.5 && r.bottom <= clip.bottom + 0.5
    && getComputedStyle(body).opacity === '1';
}"""

# Where the trace line lies beside the card's other sections (left edges, in px).
ALIGNMENT = """(card) => {
  const left = (selector) => card.querySelector(selector).getBoundingClientRect().left;
  return { title: left('.neta-tool-section-title'), args: left('.neta-tool-args'),
           trace: left('.neta-trace-line') };
}"""


def _expand(lab: LabSession, card: Any) -> None:
    card.locator(".neta-tool-header").click()
    card.locator(".neta-tool-body:not(.neta-is-closed)").wait_for()
    lab.wait_for_transitions(card)


def _check_fits(lab: LabSession, card: Any) -> None:
    measured = lab.page.evaluate(OVERFLOW, card.element_handle())
    assert measured == {"card": False, "body": [], "outside": []}, measured


def test_a_traced_call_shows_and_copies_its_ids_and_an_untraced_one_does_not(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("trace_line.ipynb", [chat_cells.IMPORTS, TRACING, TOOL_CHAT])
    page = lab.page
    page.locator(".neta-chat-view").wait_for()
    lab.execute(path, "await session.run('What is 17.5 dozen split three ways?')")
    page.wait_for_function(IDLE, timeout=30_000)
    ids = json.loads(lab.execute(path, SPAN_IDS))
    assert len(ids["trace_id"]) == 32 and len(ids["span_id"]) == 16

    card = page.locator(CARD).first
    card.locator(".neta-tool-tag", has_text="Done").wait_for()
    line = card.locator(".neta-trace-line")
    # The body is folded (a collapsible at zero height, which Playwright counts as
    # visible): the line shows once the card is expanded.
    assert card.locator(".neta-tool-body.neta-is-closed").count() == 1
    _expand(lab, card)
    assert line.is_visible()
    assert page.evaluate(SHOWN, line.element_handle())
    assert line.locator(".neta-trace-title").inner_text().strip().lower() == "trace"
    assert line.locator(".neta-trace-ids").inner_text() == f"{ids['trace_id']} · {ids['span_id']}"
    buttons = line.locator("button.neta-trace-copy")
    assert buttons.all_inner_texts() == ["Copy trace ID", "Copy span ID"]
    # The line sits with the card's other sections, at the same left edge.
    edges = page.evaluate(ALIGNMENT, card.element_handle())
    assert abs(edges["trace"] - edges["title"]) < 1 and abs(edges["trace"] - edges["args"]) < 1
    # Its buttons are the card's small buttons (cut-text.css): same border and radius.
    style = buttons.first.evaluate(
        "b => { const s = getComputedStyle(b); return [s.borderTopStyle, s.borderRadius]; }")
    assert style == ["solid", "6px"]

    # The persistent context is shared by the whole run: grant the clipboard to this
    # server's origin for this test only.
    context = page.context
    context.grant_permissions(["clipboard-read", "clipboard-write"], origin=lab.server.url)
    try:
        page.evaluate("() => navigator.clipboard.writeText('')")
        copy_trace = buttons.nth(0)
        copy_trace.click()
        # The label changes once the write has succeeded.
        # (Read once: "Copied" shows for 1.5 s, and a second read could come after.)
        copy_trace.filter(has_text="Copied").wait_for(timeout=5_000)
        assert page.evaluate("() => navigator.clipboard.readText()") == ids["trace_id"]
        assert buttons.nth(1).inner_text() == "Copy span ID"
        # The click copied; it did not fold the card (the header toggles on click).
        assert card.locator(".neta-tool-body.neta-is-closed").count() == 0
        # "Copied" lasts 1.5 s, then the label comes back.
        card.locator(".neta-trace-copy", has_text="Copy trace ID").wait_for(timeout=5_000)
        buttons.nth(1).click()
        card.locator(".neta-trace-copy", has_text="Copied").wait_for(timeout=5_000)
        assert page.evaluate("() => navigator.clipboard.readText()") == ids["span_id"]
        card.locator(".neta-trace-copy", has_text="Copy span ID").wait_for(timeout=5_000)
    finally:
        context.clear_permissions()

    # Pictures of the expanded traced card, light and dark, at the usual width...
    lab.set_left_area(collapsed=True)
    try:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            _check_fits(lab, card)
            lab.screenshot(card, screenshot_dir /
                           f"tool-card-trace-{'dark' if dark else 'light'}.png")
        # ...and narrow: the ids go to a line of their own, nothing sticks out.
        lab.execute(path, "chat.layout.width = '420px'")
        page.wait_for_function("() => document.querySelector('.neta-chat-view')"
                               ".getBoundingClientRect().width <= 421")
        lab.wait_for_transitions()
        for dark in (False, True):
            lab.set_theme(dark=dark)
            _check_fits(lab, card)
            lab.screenshot(card, screenshot_dir /
                           f"tool-card-trace-narrow-{'dark' if dark else 'light'}.png")
        lab.execute(path, "chat.layout.width = None")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)

    # Tracing off, and no global provider: the next turn's call has no line.
    lab.execute(path, "configure_tracing(tracer_provider=None)")
    assert lab.execute(path, "print(turn_tracer() is UNTRACED)").strip() == "True"
    spans_before = lab.execute(path, "print(len(exporter.get_finished_spans()))").strip()
    lab.execute(path, "await session.run('And six sevens?')")
    page.wait_for_function(IDLE, timeout=30_000)
    page.locator(CARD).nth(1).locator(".neta-tool-tag", has_text="Done").wait_for()
    assert page.locator(CARD).count() == 2
    assert lab.execute(path, "print(len(exporter.get_finished_spans()))").strip() == spans_before
    assert lab.execute(path, "print([t.trace is None for m in session.messages "
                             "for t in m.metadata.tool_executions])").strip() == "[False, True]"
    untraced = page.locator(CARD).nth(1)
    _expand(lab, untraced)
    assert untraced.locator(".neta-tool-result").is_visible()
    assert untraced.locator(".neta-trace-line").count() == 1
    assert untraced.locator(".neta-trace-line").get_attribute("hidden") is not None
    assert untraced.locator(".neta-trace-line").is_hidden()
    # The first card keeps its line, and it speaks the view's language.
    assert page.evaluate(SHOWN, line.element_handle())
    assert line.locator(".neta-trace-ids").inner_text() == f"{ids['trace_id']} · {ids['span_id']}"
    lab.execute(path, "chat.lang = 'zh-CN'")
    line.locator(".neta-trace-copy", has_text="复制 Trace ID").wait_for()
    assert line.locator(".neta-trace-title").inner_text().strip() == "追踪"
    assert buttons.all_inner_texts() == ["复制 Trace ID", "复制 Span ID"]


SKILL_CHAT = """
@tool(visibility="skill", category="skill", label="Profile table")
async def profile_sample(ctx: ToolContext) -> str:
    \"\"\"Profile the sample table.\"\"\"
    ctx.progress(50, "Column 4/8: units")
    return "## Profile of `sample.csv`\\n\\n40 rows × 8 columns; 2 columns have missing values."

catalog = ToolCatalog.default()
catalog.register(profile_sample)
provider = ScriptedProvider([
    [{"tool_call": {"name": "profile_sample", "args": {}}}],
    [{"text": "Profiled."}],
], chars_per_second=4000)
session = AgentSession(Agent("analyst", model=provider,
                             tools=AgentToolConfig(enabled=["profile_sample"])), catalog)
chat = ChatView(session, height="520px")
chat
""".strip()

SKILL_SPAN_IDS = SPAN_IDS.replace("execute_tool calculate", "execute_tool profile_sample")

# Left and right edges of the skill card's result and of its trace line.
SKILL_EDGES = """(card) => {
  const edges = (n) => { const r = n.getBoundingClientRect(); return [r.left, r.right]; };
  return { result: edges(card.querySelector('.neta-skill-result')),
           trace: edges(card.querySelector('.neta-trace-line')) };
}"""


def test_a_traced_skill_card_shows_its_ids_under_its_result(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("trace_line_skill.ipynb", [chat_cells.IMPORTS, TRACING, SKILL_CHAT])
    page = lab.page
    lab.execute(path, "await session.run('Profile the data')")
    page.wait_for_function(IDLE, timeout=30_000)
    ids = json.loads(lab.execute(path, SKILL_SPAN_IDS))
    card = page.locator(".neta-chat-view .neta-skill-card.neta-skill-card-done")
    card.locator(".neta-skill-toggle").click()
    card.locator(".neta-skill-result-wrap:not(.neta-is-closed)").wait_for()
    lab.wait_for_transitions(card)
    line = card.locator(".neta-trace-line")
    assert page.evaluate(SHOWN, line.element_handle())
    assert line.locator(".neta-trace-ids").inner_text() == f"{ids['trace_id']} · {ids['span_id']}"
    lab.set_left_area(collapsed=True)
    try:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.screenshot(card, screenshot_dir /
                           f"skill-card-trace-{'dark' if dark else 'light'}.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)
    # The line lines up with the result above it, inside the card, not against its border
    # (measured after the pictures, so that a misplaced line is there to be seen).
    edges = page.evaluate(SKILL_EDGES, card.element_handle())
    assert abs(edges["trace"][0] - edges["result"][0]) < 1, edges
    assert edges["trace"][1] <= edges["result"][1] + 1, edges


CREW_CHAT = """
researcher = Agent("researcher", description="looks things up",
                   model=ScriptedProvider([[{"text": "Found it."}]], chars_per_second=4000))
planner = Agent("planner", subagents=[researcher],
                tools=AgentToolConfig(enabled=["delegate"]),
                model=ScriptedProvider([
                    [{"tool_call": {"name": "delegate",
                                    "args": {"agent": "researcher", "task": "look"}}}],
                    [{"text": "Done."}]], chars_per_second=4000))
session = AgentSession(planner, ToolCatalog.default())
chat = ChatView(session, height="520px")
chat
""".strip()

CREW_SPAN_IDS = SPAN_IDS.replace("execute_tool calculate", "execute_tool delegate")


def test_a_traced_sub_agent_card_shows_its_delegate_calls_ids(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("trace_line_crew.ipynb", [chat_cells.IMPORTS, TRACING, CREW_CHAT])
    page = lab.page
    lab.execute(path, "await session.run('Look it up')")
    page.wait_for_function(IDLE, timeout=30_000)
    ids = json.loads(lab.execute(path, CREW_SPAN_IDS))
    card = page.locator(".neta-chat-view .neta-subagent-card").first
    if "neta-is-collapsed" in (card.get_attribute("class") or ""):
        card.locator(".neta-subagent-header").click()
    card.locator(".neta-subagent-body:not(.neta-is-closed)").wait_for()
    lab.wait_for_transitions(card)
    line = card.locator(".neta-trace-line")
    assert page.evaluate(SHOWN, line.element_handle())
    assert line.locator(".neta-trace-ids").inner_text() == f"{ids['trace_id']} · {ids['span_id']}"
    lab.set_left_area(collapsed=True)
    try:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.screenshot(card, screenshot_dir /
                           f"subagent-card-trace-{'dark' if dark else 'light'}.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)
