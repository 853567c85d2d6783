"""Sub-agent cards in real JupyterLab (issue 15): a child's transcript streams inside the
parent's message, its own Stop sends the per-child command, the card is one DOM node from
running to done, folded once done and expandable, and a view opened mid-child shows the
child's state; pictures in JupyterLab Light and Dark.

The kernel drives the sub-agent events with the stand-in of ``tests/support/crew.py``
(a ``delegate`` tool publishing them through the parent session's event hub), which
stands in for the runtime half of issue 15 until it lands.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

IDLE = "() => !document.querySelector('.neta-chat-view').classList.contains('neta-is-running')"

CREW = """
from neta_nb.events import (ThinkingDeltaEvent, ThinkingDoneEvent, TokenEvent, ToolCallEvent,
                            ToolResultEvent, SkillStartEvent, SkillEndEvent, DoneEvent)
from tests.support.crew import ChildScript, CrewStandIn, plan, usage
from tests.support.sessions import FakeProvider, answer, calls, plus

def paced(steps, delay):
    out = []
    for step in steps:
        out += [step, lambda: asyncio.sleep(delay)]
    return out

def words(text):
    return [TokenEvent(text=w + " ") for w in text.split()]

go_on = asyncio.Event()
at_text = asyncio.Event()
search_done = asyncio.Event()
researcher = ChildScript(paced([
    ThinkingDeltaEvent(text="Which sources matter? "), ThinkingDeltaEvent(text="Start wide."),
    ThinkingDoneEvent(), plan(0, 3), usage(800, 60, 1),
    ToolCallEvent(id="r1", name="web_search", label="Web search", args={"q": "agent crews"}),
    # Held until the test has seen the running status (a fixed pause could pass unseen
    # on a busy machine).
    lambda: search_done.wait() if HOLD_SEARCH else asyncio.sleep(0.6),
    ToolResultEvent(id="r1", name="web_search", result="12 results"), plan(1, 3),
    *words("Three surveys compare crews of agents; the most cited one measures how "
           "often a parent waits on a child that shows nothing."),
    lambda: at_text.set(), lambda: WAIT_AT_TEXT and go_on.wait(),
    *words("More to come once the rest is read."),
    lambda: researcher.stopped.wait(),
    TokenEvent(text="never shown"),
], 0.08))
coder = ChildScript(paced([
    ThinkingDeltaEvent(text="A table with one row per survey."), ThinkingDoneEvent(),
    plan(0, 2), usage(500, 40, 1),
    SkillStartEvent(id="k1", name="make_table", label="Make table"),
    lambda: asyncio.sleep(0.4),
    SkillEndEvent(id="k1", name="make_table", status="done", result="| survey | year |"),
    plan(2, 2),
    *words("The table has **three rows**, one per survey, sorted by year."),
    usage(900, 120, 2), DoneEvent(stop_reason="end_turn"),
], 0.05))
crew = CrewStandIn({"researcher": researcher, "coder": coder})
provider = FakeProvider([
    calls(("d1", "delegate", {"agent": "researcher", "task": "Find surveys on agent crews"}),
          ("d2", "delegate", {"agent": "coder", "task": "Turn the findings into a table"})),
    answer("Both parts are in: the researcher was stopped, the table is ready."),
])
session = AgentSession(Agent("planner", model=provider), ToolCatalog([crew.tool, plus]),
                       provider=provider)
crew.install(session)
chat = ChatView(session, height="720px")
chat
""".strip()

CARD = ".neta-subagent-card[data-run='{run}']"


def _card(run: str) -> str:
    return CARD.format(run=run)


def test_nested_cards_stream_stop_per_child_and_stay_one_node(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("crew_cards.ipynb", [
        chat_cells.IMPORTS, "WAIT_AT_TEXT = False\nHOLD_SEARCH = True", CREW])
    page = lab.page
    lab.send_in_chat("Survey agent crews and tabulate them")
    researcher = page.locator(_card("d1"))
    researcher.wait_for(timeout=30_000)
    # In the parent's message, where the delegate call is, and open while it works.
    assert researcher.evaluate("n => !!n.closest('.neta-chat-assistant .neta-chat-cards')")
    researcher.evaluate("n => { n.__netaNode = 'researcher'; }")
    assert "neta-is-collapsed" not in (researcher.get_attribute("class") or "")
    assert researcher.locator(".neta-subagent-agent").text_content() == "researcher"
    assert researcher.locator(".neta-subagent-task").text_content() == (
        "Find surveys on agent crews")
    # The status line names the tool it runs now and its plan.
    page.wait_for_function("""(selector) => {
      const card = document.querySelector(selector);
      const activity = card.querySelector('.neta-subagent-activity');
      return !activity.hidden && activity.textContent === 'Running Web search'
        && card.querySelector('.neta-subagent-plan').textContent === 'Plan 0/3';
    }""", arg=_card("d1"), timeout=30_000)
    lab.execute(path, "search_done.set()")
    # Its nested tool card, then its answer streaming inside the card (live, growing).
    researcher.locator(".neta-tool-card.neta-tool-card-done", has_text="Web search").wait_for(
        timeout=30_000)
    live_text = researcher.locator(".neta-is-live .neta-chat-text")
    live_text.filter(has_text="surveys").wait_for(timeout=30_000)
    first = len(live_text.text_content() or "")
    page.wait_for_function("""([selector, first]) => {
      const node = document.querySelector(selector + ' .neta-is-live .neta-chat-text');
      return node && node.textContent.length > first;
    }""", arg=[_card("d1"), first], timeout=30_000)
    assert researcher.locator(".neta-subagent-plan").text_content() == "Plan 1/3"
    # Only the child streams: the parent has no live response of its own meanwhile.
    assert page.locator(".neta-chat-view > .neta-chat-scroll .neta-chat-content > "
                        ".neta-chat-live > .neta-is-live").count() == 0
    researcher.locator(".neta-is-live .neta-chat-text", has_text="waits on a child").wait_for(
        timeout=30_000)
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-chat-view"),
                       screenshot_dir / f"crew-running-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)

    # Its own Stop: the command names this child only; the parent goes on with the next.
    researcher.locator(".neta-subagent-stop").click()
    assert lab.wait_for_kernel_value(path, "researcher.stopped.is_set()", "True") == "True"
    assert lab.execute(path, "print(coder.stopped.is_set())").strip() == "False"
    page.locator(_card("d1") + ".neta-subagent-card-cancelled").wait_for(timeout=30_000)
    coder = page.locator(_card("d2"))
    coder.wait_for(timeout=30_000)
    coder.evaluate("n => { n.__netaNode = 'coder'; }")
    coder.locator(".neta-skill-card", has_text="Make table").wait_for(timeout=30_000)
    coder.locator(".neta-chat-text", has_text="three rows").wait_for(timeout=30_000)
    page.wait_for_function(IDLE, timeout=60_000)
    page.locator(_card("d2") + ".neta-subagent-card-done").wait_for()

    # The same nodes from running to done, folded now, their status said.
    assert researcher.evaluate("n => n.__netaNode") == "researcher"
    assert coder.evaluate("n => n.__netaNode") == "coder"
    for card, status in ((researcher, "Stopped"), (coder, "Done")):
        assert "neta-is-collapsed" in (card.get_attribute("class") or "")
        assert card.locator(".neta-subagent-status").text_content() == status
        assert card.locator(".neta-subagent-stop").is_hidden()
    assert coder.locator(".neta-subagent-plan").text_content() == "Plan 2/2"
    assert coder.locator(".neta-subagent-tokens").text_content() == "↑650 ↓90"
    # The parent answered after both: one assistant message holds both cards.
    page.locator(".neta-chat-assistant .neta-chat-text", has_text="table is ready").wait_for()
    assert page.locator(".neta-chat-assistant .neta-chat-cards .neta-subagent-card").count() == 2

    # Expandable: the child's whole transcript, drawn like the chat's own messages.
    coder.locator(".neta-subagent-header").click()
    page.wait_for_function("(s) => !document.querySelector(s).classList.contains("
                           "'neta-is-collapsed')", arg=_card("d2"))
    lab.wait_for_transitions(coder)
    body = coder.locator(".neta-subagent-body")
    assert body.locator(".neta-thinking-block").count() == 1
    assert body.locator(".neta-chat-text strong", has_text="three rows").count() == 1
    assert coder.evaluate("n => n.__netaNode") == "coder"
    kernel = lab.execute(path, "print([m['cards'][0]['subagent']['status'] for m in "
                               "chat.messages if m.get('cards')][0])").strip()
    assert kernel == "cancelled"
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-chat-view"),
                       screenshot_dir / f"crew-done-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


def test_a_view_opened_mid_child_shows_the_childs_state(lab: LabSession) -> None:
    # The last cell waits until the researcher has streamed part of its answer (and holds
    # there), then shows the chat a second time: that view asks for a snapshot mid-child.
    path = lab.run_notebook("crew_second_view.ipynb", [
        chat_cells.IMPORTS, "WAIT_AT_TEXT = True\nHOLD_SEARCH = False", CREW,
        "turn = session.start('Survey agent crews')",
        "await asyncio.wait_for(at_text.wait(), 30)\nchat"], timeout=90)
    page = lab.page
    views = page.locator(".neta-chat-view")
    views.nth(1).wait_for()  # the last cell's output, drawn after its run
    assert views.count() == 2
    second = views.nth(1).locator(_card("d1"))
    second.locator(".neta-is-live .neta-chat-text", has_text="shows nothing").wait_for(
        timeout=30_000)
    assert second.locator(".neta-tool-card.neta-tool-card-done", has_text="Web search"
                          ).count() == 1
    assert second.locator(".neta-thinking-block").count() == 1
    assert second.locator(".neta-subagent-plan").text_content() == "Plan 1/3"
    # Both views go on from there alike.
    lab.execute(path, "go_on.set()")
    for n in (0, 1):
        views.nth(n).locator(_card("d1") + " .neta-is-live .neta-chat-text",
                             has_text="rest is read").wait_for(timeout=30_000)
    lab.execute(path, "researcher.stopped.set()")
    lab.execute(path, "await asyncio.wait_for(turn, 60)")
    for n in (0, 1):
        views.nth(n).locator(_card("d2") + ".neta-subagent-card-done").wait_for(timeout=30_000)
        text = views.nth(n).locator(_card("d1") + " .neta-chat-text").last.text_content() or ""
        assert "rest is read" in text and "never shown" not in text


APPROVING_CHILD = """
from tests.support.crew import ChildScript, CrewStandIn, approval_steps
from tests.support.sessions import FakeProvider, answer, calls
from neta_nb.events import TokenEvent
answered = asyncio.Event()
coder = ChildScript([*approval_steps("w1", answered.wait), TokenEvent(text="Saved.")])
crew = CrewStandIn({"coder": coder})
provider = FakeProvider([
    calls(("d1", "delegate", {"agent": "coder", "task": "Write the notes file"})),
    answer("The notes are written."),
])
session = AgentSession(Agent("planner", model=provider), ToolCatalog([crew.tool]),
                       provider=provider)
crew.install(session)
commands = []
handle = session.handle_command
def recording(command, **options):
    commands.append(dict(command))
    if command.get("type") == "approve":
        answered.set()  # the runtime routes it to the child's approvals
    return handle(command, **options)
session.handle_command = recording
chat = ChatView(session)
chat
""".strip()


def test_a_childs_approval_shows_in_the_parents_approvals_with_its_name(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("crew_approval.ipynb", [chat_cells.IMPORTS, APPROVING_CHILD])
    page = lab.page
    lab.send_in_chat("Write the notes")
    approval = page.locator(".neta-chat-approval.neta-is-subagent")
    approval.wait_for(timeout=30_000)
    assert approval.locator(".neta-chat-approval-title").text_content() == (
        "coder asks: allow write_file to run?")
    # The child's call waits: its card is behind the approval card until the decision.
    waiting = page.locator(_card("d1") + " .neta-tool-card.neta-tool-card-waiting",
                           has_text="Write file")
    waiting.wait_for(state="attached")
    assert waiting.is_hidden()
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-chat-view"),
                       screenshot_dir / f"crew-approval-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    approval.locator("button[data-decision='allow_once']").click()
    page.wait_for_function(IDLE, timeout=30_000)
    sent = lab.execute(path, "print([c for c in commands if c['type'] == 'approve'])").strip()
    assert sent == ("[{'type': 'approve', 'id': 'w1', 'decision': 'allow_once', "
                    "'subagent': ['d1']}]")
    assert page.locator(".neta-chat-approval").count() == 0
    page.locator(_card("d1") + ".neta-subagent-card-done").wait_for()


def test_the_session_list_badges_how_many_sub_agents_ran(
        lab: LabSession, screenshot_dir: Path) -> None:
    # The store fills `child_count`; the list draws what it is given.
    path = lab.run_notebook("crew_sidebar.ipynb", [chat_cells.IMPORTS, chat_cells.SIDEBAR])
    page = lab.page
    page.locator(".neta-sidebar-item").nth(1).wait_for()
    assert page.locator(".neta-sidebar-children").count() == 0  # absent: none drawn
    lab.execute(path, "sidebar.sessions = [dict(row, child_count=3 if row['id'] == first_id "
                      "else 0) for row in sidebar.sessions]")
    badge = page.locator(".neta-sidebar-children")
    badge.wait_for()
    assert badge.count() == 1 and badge.text_content() == "+3 sub"
    assert badge.get_attribute("title") == "3 sub-agent runs"
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(page.locator(".neta-sidebar"),
                       screenshot_dir / f"crew-sidebar-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


STANDALONE = """
from neta_nb.events import SubagentEndEvent, SubagentEvent, SubagentStartEvent, TurnUsage
from neta_nb.widgets import SubagentCard
from tests.support.crew import complete_stream, research_steps
stops = []
card = SubagentCard.from_event(SubagentStartEvent(id="d7", agent="researcher",
                                                  task="Find three sources"),
                               stop=lambda: stops.append("d7"))
release = asyncio.Event()

async def feed():
    # The child's events as the runtime sends them: its history events among them.
    for event in complete_stream(research_steps("Found **three** sources, all from this year."),
                                 "Find three sources"):
        card.apply(SubagentEvent(id="d7", event=event))
        await asyncio.sleep(0.15)
    await release.wait()
    card.apply(SubagentEndEvent(id="d7", agent="researcher", status="done", result="ok",
                                usage=TurnUsage(input_tokens=650, output_tokens=90,
                                                total_tokens=740, api_calls=3)))

feeding = asyncio.get_running_loop().create_task(feed())
card
""".strip()


def test_subagent_card_on_its_own(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("crew_card.ipynb", [chat_cells.IMPORTS, STANDALONE])
    page = lab.page
    card = page.locator(_card("d7"))
    card.wait_for(timeout=30_000)
    card.evaluate("n => { n.__netaNode = 'card'; }")
    card.locator(".neta-chat-text", has_text="all from this year").wait_for(timeout=30_000)
    assert card.locator(".neta-tool-card", has_text="Web search").count() == 1
    card.locator(".neta-subagent-stop").click()
    assert lab.wait_for_kernel_value(path, "stops", "['d7']") == "['d7']"
    lab.execute(path, "release.set()")
    page.locator(_card("d7") + ".neta-subagent-card-done.neta-is-collapsed").wait_for(
        timeout=30_000)
    assert card.evaluate("n => n.__netaNode") == "card"
    card.locator(".neta-subagent-header").click()
    card.locator(".neta-chat-text strong", has_text="three").wait_for()
    assert lab.wait_for_kernel_value(path, "card.expanded", "True") == "True"
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(card, screenshot_dir / f"subagent-card-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
