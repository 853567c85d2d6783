"""Cost in money on the chat's token line, in real JupyterLab: a priced model's turn shows
what the kernel's last ``token_update`` says it cost (and the session's, once it differs),
on the same line as the other figures, with the split in the details; a model with no
price shows a muted dash and says why; a turn budget warns at 80 % and then stops the turn,
the notice saying so; the details speak Chinese. Pictures, light and dark, at 800 px."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neta_nb.labels import t
from neta_nb.runtime.session.spending import format_usd

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

# Every token_update and warning the session sends, and what its turns ended with; the
# price of the priced models (USD per million tokens).
SETUP = """
import json
from neta_nb import ModelPrice
from neta_nb.events import DoneEvent, TokenUpdateEvent, WarningEvent

PRICE = ModelPrice(input=3, output=15, cache_read=0.3, cache_write=3.75)

def record(session):
    events = []
    session.subscribe(events.append)
    return events

def last_update(events):
    updates = [e.current.model_dump() for e in events if isinstance(e, TokenUpdateEvent)]
    print(json.dumps(updates[-1]))
""".strip()

# Two turns of a tool call then an answer, each call with the usage given here (the
# second turn's larger: its cost is over $0.1, another format), on a priced model.
PRICED = """
USAGE = {1: ({"input_tokens": 1200, "output_tokens": 80, "cache_read_tokens": 3000,
              "cache_write_tokens": 500},
             {"input_tokens": 1400, "output_tokens": 40, "cache_read_tokens": 3500}),
         2: ({"input_tokens": 2100, "output_tokens": 300, "cache_read_tokens": 52000,
              "cache_write_tokens": 4000},
             {"input_tokens": 2600, "output_tokens": 5000, "cache_read_tokens": 56000})}
prompt = lambda messages: sum(m.role == "user" for m in messages)
provider = ScriptedProvider([
    lambda messages: [{"text": "Let me work that out."},
                      {"tool_call": {"name": "calculate", "args": {"expression": "17.5 * 12"}}},
                      {"usage": USAGE[prompt(messages)][0]}],
    lambda messages: [{"text": "It is 210."}, {"usage": USAGE[prompt(messages)][1]}],
], chars_per_second=4000)
provider.price = PRICE
agent = Agent("analyst", model=provider, tools=AgentToolConfig(enabled=["calculate"]))
session = AgentSession(agent, ToolCatalog.demo())
events = record(session)
chat = ChatView(session, height="520px")
chat.layout.width = "800px"
chat
""".strip()

UNPRICED = """
provider = ScriptedProvider([[{"text": "Hello! Nobody told me what I cost."}]],
                            chars_per_second=4000)
assert provider.price is None
session = AgentSession(Agent("analyst", model=provider), ToolCatalog())
events = record(session)
chat = ChatView(session, height="420px")
chat.layout.width = "800px"
chat
""".strip()

# Each call costs $0.0045 (1,000 tokens in, 100 out): the fourth one passes 80 % of the
# $0.02 turn budget, the fifth reaches it. The fourth call's tool waits for the test, so
# the warning can be seen while the turn still runs.
BUDGET = """
gate = asyncio.Event()

@tool(label="Read page")
async def read_page(page: int) -> str:
    \"\"\"Read one page of the report.\"\"\"
    if page == 4:
        await gate.wait()
    return f"Page {page}: 40 rows."

catalog = ToolCatalog.default()
catalog.register(read_page)
step = lambda n: [{"text": f"Reading page {n}."},
                  {"tool_call": {"name": "read_page", "args": {"page": n}}},
                  {"usage": {"input_tokens": 1000, "output_tokens": 100}}]
provider = ScriptedProvider([step(n) for n in range(1, 7)] + [[{"text": "All read."}]],
                            chars_per_second=4000)
provider.price = PRICE
agent = Agent("analyst", model=provider, tools=AgentToolConfig(enabled=["read_page"]),
              turn_budget_usd=0.02)
session = AgentSession(agent, catalog)
events = record(session)
chat = ChatView(session, height="560px")
chat.layout.width = "800px"
chat
""".strip()

WARNINGS = "print(json.dumps([[e.code, e.params] for e in events if isinstance(e, WarningEvent)]))"
STOP_REASONS = "print(json.dumps([e.stop_reason for e in events if isinstance(e, DoneEvent)]))"

VIEW = ".neta-chat-view"
STATS = ".neta-chat-stats .neta-token-stats"
IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"
COST_SPLIT = [("input", "Input"), ("cache_read", "Cache reads"),
              ("cache_write", "Cache writes"), ("output", "Output")]

# The details as [kind, text] or [kind, label, value] rows, labels trimmed.
DETAIL_ROWS = """(panel) => [...panel.children].map((n) =>
  n.classList.contains('neta-token-detail-row')
    ? ['row', n.children[0].textContent.trim(), n.children[1].textContent]
    : [n.className.replace('neta-token-detail-', ''), n.textContent])"""

# Where the labels of the cost rows start (px): "This turn", its parts, "This session".
SPLIT_INDENTS = """(panel) => {
  const rows = [...panel.querySelectorAll('.neta-token-detail-row')];
  const left = (row) => {  // where the text starts, padding excluded
    const range = document.createRange();
    range.selectNodeContents(row.children[0]);
    return range.getBoundingClientRect().left;
  };
  const named = (text) => rows.find((r) => r.children[0].textContent.trim() === text);
  return { turn: left(named('This turn')), session: left(named('This session')),
           parts: rows.filter((r) => r.classList.contains('neta-is-part')).map(left) };
}"""

# Where the line's figures lie (px), and whether anything around them overflows.
LINE_GEOMETRY = """() => {
  const stats = document.querySelector('.neta-chat-stats .neta-token-stats');
  const rect = (n) => { const r = n.getBoundingClientRect();
    return { left: r.left, right: r.right, top: r.top, bottom: r.bottom }; };
  const parts = {};
  for (const name of ['in', 'out', 'calls', 'cost']) {
    parts[name] = rect(stats.querySelector('.neta-token-' + name));
  }
  return {
    parts,
    stats: rect(stats),
    context: rect(stats.querySelector('.neta-token-context-text')),
    send: rect(document.querySelector('.neta-chat-send')),
    input: rect(document.querySelector('.neta-chat-input')),
    view: rect(document.querySelector('.neta-chat-view')),
    overflowing: [...document.querySelectorAll(
      '.neta-chat-view, .neta-chat-input, .neta-chat-toolbar, .neta-chat-stats, '
      + '.neta-token-stats, .neta-token-realtime')]
      .filter((n) => n.scrollWidth > n.clientWidth + 1).map((n) => n.className),
  };
}"""

# The cost's colour, and the muted foreground's as the same element would resolve it.
COST_COLOURS = """(cost) => {
  const probe = document.createElement('span');
  probe.style.color = 'var(--neta-fg-muted)';
  cost.parentElement.append(probe);
  const muted = getComputedStyle(probe).color;
  probe.remove();
  const calls = cost.parentElement.querySelector('.neta-token-calls');
  return { cost: getComputedStyle(cost).color, muted,
           calls: getComputedStyle(calls).color };
}"""


def usd(value: float | None) -> str:
    """Money as the token line shows it (the Python twin of ``formatUsd``); ``—``
    unknown."""
    return "—" if value is None else format_usd(value)


def cost_text(current: dict[str, Any]) -> str:
    """The cost slot as the line should show it for a token_update's ``current``."""
    turn, session = current["cost_usd"], current["session_cost_usd"]
    return f"· {usd(turn)}" + (f" / {usd(session)}" if session != turn else "")


def _last_update(lab: LabSession, path: str) -> dict[str, Any]:
    return dict(json.loads(lab.execute(path, "last_update(events)")))


def _wait_for_cost(lab: LabSession, expected: str) -> None:
    lab.page.wait_for_function(
        "(text) => document.querySelector('.neta-chat-stats .neta-token-cost')"
        "?.textContent === text", arg=expected, timeout=15_000)


def _open_details(lab: LabSession) -> Any:
    page = lab.page
    page.mouse.move(0, 0)
    stats = page.locator(STATS)
    # In view first: a scroll closes the details (hover() would scroll, after opening).
    stats.evaluate("node => node.scrollIntoView({block: 'center'})")
    lab.wait_for_frames()
    stats.hover()
    panel = page.locator(".neta-token-details.neta-is-open")
    panel.wait_for()
    lab.wait_for_transitions()
    return panel


def _close_details(lab: LabSession) -> None:
    lab.page.mouse.move(0, 0)
    lab.page.locator(".neta-token-details").wait_for(state="detached")


def _cost_rows(lab: LabSession, panel: Any, heading: str) -> list[list[str]]:
    """The details' rows from the cost heading to the context row (excluded)."""
    rows: list[list[str]] = lab.page.evaluate(DETAIL_ROWS, panel.element_handle())
    start = rows.index(["heading", heading])
    end = next(i for i, row in enumerate(rows) if i > start and row[0] == "row"
               and row[1] in (t("context_used", "en"), t("context_used", "zh-CN")))
    return rows[start:end]


def _details_picture(lab: LabSession, panel: Any, path: Path) -> Path:
    """The stats and their open details in one picture (whichever side they opened on)."""
    page = lab.page
    stats = page.locator(STATS).bounding_box()
    box = panel.bounding_box()
    assert stats is not None and box is not None
    # Nothing of the details is cut off by the window.
    viewport = page.viewport_size
    assert box["x"] >= 0 and box["x"] + box["width"] <= viewport["width"]
    assert box["y"] >= 0 and box["y"] + box["height"] <= viewport["height"]
    left = min(stats["x"], box["x"]) - 8
    top = min(stats["y"], box["y"]) - 8
    right = max(stats["x"] + stats["width"], box["x"] + box["width"]) + 8
    bottom = max(stats["y"] + stats["height"], box["y"] + box["height"]) + 8
    path.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(path), animations="disabled", clip={
        "x": max(0, left), "y": max(0, top), "width": right - left, "height": bottom - top})
    return path


def _check_line(lab: LabSession) -> None:
    """The cost sits on the line with the other figures, after the calls, and nothing
    wraps or sticks out of the 800 px view."""
    geometry = lab.page.evaluate(LINE_GEOMETRY)
    assert geometry["overflowing"] == [], geometry["overflowing"]
    assert abs(geometry["view"]["right"] - geometry["view"]["left"] - 800) <= 1, geometry["view"]
    parts = geometry["parts"]
    for name in ("in", "out", "cost"):
        assert abs(parts[name]["top"] - parts["calls"]["top"]) < 1, (name, parts)
        assert abs(parts[name]["bottom"] - parts["calls"]["bottom"]) < 1, (name, parts)
    assert parts["cost"]["left"] >= parts["calls"]["right"], parts
    context = geometry["context"]
    middle = (context["top"] + context["bottom"]) / 2
    assert abs(middle - (parts["cost"]["top"] + parts["cost"]["bottom"]) / 2) < 1.5, geometry
    assert context["left"] > parts["cost"]["right"], geometry
    # One line: the stats are no taller than a line, on the row of the Send button,
    # inside the input bar.
    stats, send, bar = geometry["stats"], geometry["send"], geometry["input"]
    assert stats["bottom"] - stats["top"] < 24, stats
    assert abs((stats["top"] + stats["bottom"]) / 2 - (send["top"] + send["bottom"]) / 2) < 2, \
        geometry
    assert stats["right"] <= send["left"] and stats["left"] >= bar["left"], geometry


def test_a_priced_session_shows_the_turns_and_the_sessions_cost(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("cost_line.ipynb", [chat_cells.IMPORTS, SETUP, PRICED])
    page = lab.page
    page.locator(VIEW).wait_for()
    lab.set_left_area(collapsed=True)
    try:
        lab.execute(path, "await session.run('What is 17.5 dozen?')")
        page.wait_for_function(IDLE, timeout=30_000)
        first = _last_update(lab, path)
        assert first["api_calls"] == 2 and first["cost_usd"] > 0
        # The first turn is the whole session: its cost shows once.
        assert first["session_cost_usd"] == first["cost_usd"]
        expected = cost_text(first)
        assert expected == f"· {usd(first['cost_usd'])}" and expected.startswith("· $0.0")
        _wait_for_cost(lab, expected)
        stats = page.locator(STATS)
        # After the calls count, part of the same line.
        assert stats.locator(".neta-token-realtime").inner_text().split() == [
            "↑2.6K", "↓120", "·", "2", "calls", "·", usd(first["cost_usd"])]

        lab.execute(path, "await session.run('And 21 dozen?')")
        page.wait_for_function(IDLE, timeout=30_000)
        second = _last_update(lab, path)
        assert second["cost_usd"] != second["session_cost_usd"]
        expected = cost_text(second)
        assert expected == (f"· {usd(second['cost_usd'])} / "
                            f"{usd(second['session_cost_usd'])}")
        _wait_for_cost(lab, expected)
        assert page.locator(".neta-token-cost.neta-is-unknown").count() == 0
        assert stats.locator(".neta-token-realtime").inner_text().split()[-4:] == [
            "·", usd(second["cost_usd"]), "/", usd(second["session_cost_usd"])]
        _check_line(lab)

        # The details: the turn's cost, its split (the kinds it has), the session's.
        split = second["cost_split"]
        wanted = [["heading", "Cost (USD)"], ["row", "This turn", usd(second["cost_usd"])]]
        wanted += [["row", name, usd(split[kind])] for kind, name in COST_SPLIT
                   if split.get(kind)]
        wanted += [["row", "This session", usd(second["session_cost_usd"])]]
        assert len(wanted) == 7  # all four kinds were used
        panel = _open_details(lab)
        assert _cost_rows(lab, panel, "Cost (USD)") == wanted
        # The split is indented under "This turn"; the session's row is not.
        indents = panel.evaluate(SPLIT_INDENTS)
        assert len(indents["parts"]) == 4, indents
        assert all(left >= indents["turn"] + 8 for left in indents["parts"]), indents
        assert indents["session"] == indents["turn"], indents
        _close_details(lab)

        for dark in (False, True):
            theme = "dark" if dark else "light"
            lab.set_theme(dark=dark)
            _check_line(lab)
            lab.screenshot(page.locator(".neta-chat-input"),
                           screenshot_dir / f"cost-line-stats-{theme}.png")
            panel = _open_details(lab)
            _details_picture(lab, panel, screenshot_dir / f"cost-line-details-{theme}.png")
            _close_details(lab)
        lab.set_theme(dark=False)

        # In Chinese: the details' cost heading and rows.
        lab.execute(path, "chat.lang = 'zh-CN'")
        stats.locator(".neta-token-calls", has_text="次").wait_for()
        panel = _open_details(lab)
        rows = _cost_rows(lab, panel, "费用（美元）")
        assert rows[:2] == [["heading", "费用（美元）"], ["row", "本轮", usd(second["cost_usd"])]]
        assert [row[1] for row in rows[2:]] == ["输入", "缓存读取", "缓存写入", "输出", "本会话"]
        _details_picture(lab, panel, screenshot_dir / "cost-line-details-zh-CN-light.png")
        _close_details(lab)
        _check_line(lab)
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)


def test_an_unpriced_model_shows_a_muted_dash_and_says_why(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("cost_line_unpriced.ipynb", [chat_cells.IMPORTS, SETUP, UNPRICED])
    page = lab.page
    page.locator(VIEW).wait_for()
    lab.set_left_area(collapsed=True)
    try:
        lab.execute(path, "await session.run('Hello')")
        page.wait_for_function(IDLE, timeout=30_000)
        current = _last_update(lab, path)
        assert current["api_calls"] == 1
        assert current["cost_usd"] is None and current["session_cost_usd"] is None
        assert cost_text(current) == "· —"
        _wait_for_cost(lab, "· —")
        cost = page.locator(STATS + " .neta-token-cost")
        assert cost.get_attribute("class") == "neta-token-cost neta-is-unknown"
        # The dash says on hover, and to a screen reader, that the cost is unknown and why.
        assert cost.get_attribute("title") == t("cost_unknown_note", "en")
        assert cost.get_attribute("aria-label") == t("cost_unknown_note", "en")
        _check_line(lab)

        panel = _open_details(lab)
        assert _cost_rows(lab, panel, "Cost (USD)") == [
            ["heading", "Cost (USD)"], ["row", "This turn", "—"], ["row", "This session", "—"],
            ["note", t("cost_unknown_note", "en")]]
        _close_details(lab)

        for dark in (False, True):
            theme = "dark" if dark else "light"
            lab.set_theme(dark=dark)
            colours = cost.evaluate(COST_COLOURS)
            assert colours["cost"] == colours["muted"], colours
            lab.screenshot(page.locator(".neta-chat-input"),
                           screenshot_dir / f"cost-line-unpriced-stats-{theme}.png")
            panel = _open_details(lab)
            _details_picture(lab, panel,
                             screenshot_dir / f"cost-line-unpriced-details-{theme}.png")
            _close_details(lab)
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)


def test_a_turn_budget_warns_then_stops_the_turn(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("cost_line_budget.ipynb", [chat_cells.IMPORTS, SETUP, BUDGET])
    page = lab.page
    view = page.locator(VIEW)
    view.wait_for()
    notice = page.locator(".neta-chat-notice")
    lab.set_left_area(collapsed=True)
    try:
        lab.execute(path, "task = asyncio.ensure_future(session.run('Read the whole report'))")
        # 80 % used: the notice warns while the turn goes on (the fourth tool waits).
        page.locator(".neta-chat-notice", has_text="of its budget").wait_for(timeout=30_000)
        warnings = json.loads(lab.execute(path, WARNINGS))
        assert [code for code, _ in warnings] == ["budget_warning_turn"]
        params = warnings[0][1]
        assert params["budget"] == "$0.0200"
        assert params["spent"] == usd(_last_update(lab, path)["cost_usd"])
        assert notice.inner_text() == t("budget_warning_turn", "en", **params)
        assert view.evaluate("v => v.classList.contains('neta-is-running')")
        # A warning, not an error: drawn in the theme's warning colour.
        assert notice.evaluate("n => n.classList.contains('neta-is-warning')")
        lab.wait_for_transitions()
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.screenshot(view, screenshot_dir /
                           f"cost-line-budget-warning-{'dark' if dark else 'light'}.png")
        lab.set_theme(dark=False)

        lab.execute(path, "gate.set()")
        page.wait_for_function(IDLE, timeout=30_000)
        assert lab.execute(path, "print(task.done(), session.running)").split() == [
            "True", "False"]
        assert json.loads(lab.execute(path, STOP_REASONS)) == ["budget"]
        warnings = json.loads(lab.execute(path, WARNINGS))
        assert [code for code, _ in warnings] == ["budget_warning_turn", "budget_reached_turn"]
        params = warnings[1][1]
        current = _last_update(lab, path)
        assert current["api_calls"] == 5  # the fifth call reached the budget: no sixth
        assert params == {"percent": "100", "spent": usd(current["cost_usd"]),
                          "budget": "$0.0200"}
        reached = t("budget_reached_turn", "en", **params)
        assert reached == ("Stopped: this turn reached its budget ($0.0225 of $0.0200). "
                           "What it did is kept.")
        page.locator(".neta-chat-notice", has_text="Stopped:").wait_for()
        assert notice.inner_text() == reached
        assert not notice.evaluate("n => n.classList.contains('neta-is-warning')")  # stopped
        # The turn ended: nothing runs, nothing spins, Send is back.
        assert view.locator(".neta-chat-working").is_hidden()
        assert view.locator(".neta-spinner").count() == 0
        assert page.locator(".neta-chat-send").inner_text() == "Send"
        _wait_for_cost(lab, cost_text(current))
        lab.wait_for_transitions()
        for dark in (False, True):
            lab.set_theme(dark=dark)
            assert notice.is_visible()
            lab.screenshot(view, screenshot_dir /
                           f"cost-line-budget-{'dark' if dark else 'light'}.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)


# One call, a whole answer, that costs $0.0045 of a $0.004 turn budget: reached, nothing cut.
ANSWERED_BUDGET = """
provider = ScriptedProvider([[{"text": "The report has 160 rows in 4 pages."},
                              {"usage": {"input_tokens": 1000, "output_tokens": 100}}]],
                            chars_per_second=4000)
provider.price = PRICE
agent = Agent("analyst", model=provider, turn_budget_usd=0.004)
session = AgentSession(agent, ToolCatalog())
events = record(session)
chat = ChatView(session, height="360px")
chat.layout.width = "800px"
chat
""".strip()


def test_a_budget_reached_by_a_whole_answer_is_a_warning_not_a_stop(
        lab: LabSession, screenshot_dir: Path) -> None:
    """The answer is complete: the notice says the budget was reached and nothing was
    cut, in the theme's warning colour — not a red "Stopped"."""
    path = lab.run_notebook("cost_line_answered.ipynb",
                            [chat_cells.IMPORTS, SETUP, ANSWERED_BUDGET])
    page = lab.page
    view = page.locator(VIEW)
    view.wait_for()
    notice = page.locator(".neta-chat-notice")
    lab.execute(path, "task = asyncio.ensure_future(session.run('How long is the report?'))")
    page.locator(".neta-chat-notice", has_text="nothing was cut").wait_for(timeout=30_000)
    page.wait_for_function(IDLE, timeout=30_000)
    [[code, params]] = json.loads(lab.execute(path, WARNINGS))
    assert code == "budget_reached_turn_answered"
    assert notice.inner_text() == t(code, "en", **params)
    assert "Stopped" not in notice.inner_text()
    assert notice.evaluate("n => n.classList.contains('neta-is-warning')")
    assert page.locator(".neta-chat-stopped").count() == 0
    # The 800 px chat fits the notebook only with the file browser folded, as in the
    # other pictures of this file (else the output area clips its right edge).
    lab.set_left_area(collapsed=True)
    try:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.wait_for_transitions()
            lab.screenshot(view, screenshot_dir /
                           f"cost-line-budget-answered-{'dark' if dark else 'light'}.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)
