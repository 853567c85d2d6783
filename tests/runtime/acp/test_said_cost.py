"""What an outside agent says its session cost (``usage_update``'s ``cost``, a running
total): with no price of the user's it is the turns' cost — the token line, the stored
messages, the budgets — and a budget it reaches mid-turn stops the turn there, as Stop
does. Played by the scripted agent (``scripted_agent.py``)."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AcpAgent, AgentSession, ModelPrice, SessionStore
from neta_nb.events import Event
from neta_nb.runtime.session.spending import BudgetExceededError

from ...support.outside_agents import driven
from ...support.timing import wait_until

AGENT = Path(__file__).with_name("scripted_agent.py")


def said(total: float, currency: str = "USD") -> dict[str, Any]:
    return {"update": {"sessionUpdate": "usage_update", "used": 1000, "size": 200_000,
                       "cost": {"amount": total, "currency": currency}}}


def chunk(value: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": "agent_message_chunk",
                       "content": {"type": "text", "text": value}}}


def agent_of(tmp_path: Path, script: dict[str, Any], **options: Any) -> AcpAgent:
    path = tmp_path / "script.json"
    path.write_text(json.dumps(script))
    return AcpAgent("costly", [sys.executable, str(AGENT), str(path)], cwd=tmp_path,
                    **options)


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "script.json.calls").read_text().splitlines()


async def test_without_a_price_the_cost_the_agent_says_is_the_turns(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(agent_of(tmp_path, {"by_prompt": {
        "one": [chunk("A."), said(0.02), said(0.05)],
        "two": [chunk("B."), said(0.08), said(0.08, "EUR"), said(float("nan"))]}}),
        store=store)
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        first = [e for e in events if e.type == "token_update"][-1].current
        await asyncio.wait_for(session.run("two"), 30)
    second = [e for e in events if e.type == "token_update"][-1].current
    # Each turn costs the rise of the running total; the session the total.
    assert [first.cost_usd, first.session_cost_usd] == pytest.approx([0.05, 0.05])
    assert [second.cost_usd, second.session_cost_usd] == pytest.approx([0.03, 0.08])
    assert session.cost_usd == pytest.approx(0.08)
    answers = [m for m in session.messages if m.role == "assistant"]
    assert [m.metadata.cost_usd for m in answers] == [pytest.approx(0.05),
                                                      pytest.approx(0.03)]
    # Kept: a resumed session knows what was spent.
    assert session.flush(10)
    again = AgentSession.resume(session.id, store, agent=agent_of(tmp_path, {"steps": []}))
    assert again.cost_usd == pytest.approx(0.08)
    again.close()
    store.close()


async def test_a_price_of_the_users_prices_the_usage_and_the_said_cost_is_not_added(
        tmp_path: Path) -> None:
    session = AgentSession(agent_of(
        tmp_path, {"steps": [chunk("A."), said(5.0)], "usage": {
            "totalTokens": 2_000_000, "inputTokens": 1_000_000, "outputTokens": 1_000_000}},
        price=ModelPrice(input=3.0, output=15.0)))
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    assert session.cost_usd == pytest.approx(18.0)


async def test_a_turn_budget_the_said_cost_reaches_stops_the_turn_there(tmp_path: Path
                                                                      ) -> None:
    session = AgentSession(agent_of(tmp_path, {"steps": [
        chunk("Working"), said(0.02), said(0.045), chunk(" still"), said(0.06),
        chunk(" after the budget"), {"sleep": 30}]}, turn_budget_usd=0.05))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        answer = await asyncio.wait_for(session.run("go"), 15)
    warnings = [e.code for e in events if e.type == "warning"]
    assert warnings == ["budget_warning_turn", "budget_reached_turn"]
    done = events[-1]
    assert done.type == "done" and done.stop_reason == "budget"
    assert "session/cancel" in calls(tmp_path)
    # What the agent said within the budget's grace second shows; then the turn is
    # stopped, what streamed kept; what the turn cost is counted.
    assert answer is not None and answer.text == "Working still after the budget"
    assert answer.metadata.interrupted == "cancelled"
    assert session.cost_usd == pytest.approx(0.06)
    assert not session.running


async def test_a_session_budget_it_reaches_refuses_the_next_turn(tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, {"steps": [
        chunk("Spent."), said(0.11), {"sleep": 30}]}, budget_usd=0.10))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 15)
        done = events[-1]
        assert done.type == "done" and done.stop_reason == "budget"
        with pytest.raises(BudgetExceededError, match="budget"):
            await session.run("more")


def tool(call_id: str) -> list[dict[str, Any]]:
    return [{"update": {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "Read",
                        "kind": "read", "status": "pending", "rawInput": {}}},
            {"update": {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                        "status": "completed"}}]


async def test_a_cost_said_as_the_agent_answers_does_not_cut_the_answer(tmp_path: Path
                                                                      ) -> None:
    """Claude Code says its cost once, just before it answers the prompt: a budget that
    cost reaches keeps the whole answer, says nothing was cut, and cancels nothing (a
    cancel after the answer would reach the agent's next prompt)."""
    session = AgentSession(agent_of(tmp_path, {"by_prompt": {
        "go": [chunk("The whole answer."), said(0.06)],
        "again": [chunk("Fine."), said(0.07)]}}, turn_budget_usd=0.05))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session) as outside:
        answer = await asyncio.wait_for(session.run("go"), 15)
        pid = outside.pid
        # The agent goes on as it was: the next turn costs its own rise.
        again = await asyncio.wait_for(session.run("again"), 15)
        assert outside.pid == pid
    assert answer is not None and answer.text == "The whole answer."
    assert answer.metadata.interrupted is None
    warnings = [e.code for e in events if e.type == "warning"]
    assert warnings == ["budget_reached_turn_answered"]
    assert [e.stop_reason for e in events if e.type == "done"] == ["budget", "end_turn"]
    assert "session/cancel" not in calls(tmp_path)
    assert again is not None and again.text == "Fine."
    assert again.metadata.cost_usd == pytest.approx(0.01)


async def test_a_running_total_that_dips_is_not_counted_twice(tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, {"by_prompt": {
        "one": [chunk("A."), said(0.05)],
        "two": [chunk("B."), said(0.049), said(0.05), said(0.06), said(1e300)]}}))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        await asyncio.wait_for(session.run("two"), 30)
    assert session.cost_usd == pytest.approx(0.06)


async def test_the_cost_of_a_turn_of_several_responses_comes_back_with_a_resume(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(agent_of(tmp_path, {"steps": [
        chunk("Looking."), *tool("t1"), chunk("Done."), said(0.05)]}), store=store)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    assert session.cost_usd == pytest.approx(0.05)
    assert session.flush(10)
    again = AgentSession.resume(session.id, store, agent=agent_of(tmp_path, {"steps": []}))
    try:
        assert again.cost_usd == pytest.approx(0.05)
    finally:
        again.close()
        store.close()


async def test_a_turn_stopped_before_anything_streamed_keeps_its_cost(tmp_path: Path
                                                                    ) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(agent_of(tmp_path, {"steps": [said(0.2), {"sleep": 30}]},
                                    budget_usd=0.10), store=store)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 15)
    assert session.cost_usd == pytest.approx(0.2)
    assert session.flush(10)
    again = AgentSession.resume(session.id, store, agent=agent_of(
        tmp_path, {"steps": []}, budget_usd=0.10))
    try:
        assert again.cost_usd == pytest.approx(0.2)
        with pytest.raises(BudgetExceededError):
            await again.run("more")
    finally:
        again.close()
        store.close()


async def test_a_restarted_agent_that_continues_its_session_counts_its_new_total(
        tmp_path: Path) -> None:
    """A total is the agent process's (Claude Code 0.23.1 starts it again when a new
    process continues its session: test_claude_code.py): after a budget stop ends the
    process and the next turn continues the session, all the new total says is the new
    turn's — and the turn budget one turn reached does not stop the next ones."""
    session = AgentSession(agent_of(tmp_path, {"can_load": True, "load_ok": True,
                                               "by_prompt": {
        "one": [chunk("A."), said(0.05), {"sleep": 30}],
        "two": [chunk("B."), said(0.03)],
        "three": [chunk("C."), said(0.034)]}}, turn_budget_usd=0.04))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 15)  # stopped by its budget
        assert session.cost_usd == pytest.approx(0.05)
        await asyncio.wait_for(session.run("two"), 30)
        await asyncio.wait_for(session.run("three"), 30)
    assert "session/load" in calls(tmp_path)
    assert [e.stop_reason for e in events if e.type == "done"] == [
        "budget", "end_turn", "end_turn"]
    assert session.cost_usd == pytest.approx(0.084)


async def test_after_a_budget_stop_with_a_running_call_the_session_goes_on(
        tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, {"by_prompt": {
        "one": [chunk("Working"),
                {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Bash",
                            "kind": "execute", "status": "in_progress",
                            "rawInput": {"command": "sleep 100"}}},
                said(0.06), {"sleep": 30}],
        "two": [chunk("Fine."), said(0.02)]}}, turn_budget_usd=0.05))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 15)
        answer = await asyncio.wait_for(session.run("two"), 30)
    assert [e.stop_reason for e in events if e.type == "done"] == ["budget", "end_turn"]
    assert answer is not None and answer.text == "Fine."
    # The stopped call has its result: the history stays valid.
    called = {p.id for m in session.messages for p in m.tool_calls}
    answered = {r.tool_call_id for m in session.messages for r in m.tool_results}
    assert called == answered == {"t1"}
    # A new agent process with a new session of its own (nothing to continue): its
    # total starts again, and all of it is the turn's.
    assert session.cost_usd == pytest.approx(0.08)


def budget_reached(session: AgentSession) -> bool:
    """The running turn's said cost reached its budget (its grace second has begun)."""
    turn = session.state.turn
    return turn is not None and turn.budget_stop


async def test_within_the_grace_second_the_agent_is_still_shown_and_not_obeyed(
        tmp_path: Path) -> None:
    """Once its said cost reached a budget, the agent has a second to answer: what it
    says and reports of its calls in that second shows (a whole answer is kept whole),
    but it is asked nothing more — a permission request is refused."""
    options = [{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
               {"optionId": "r1", "name": "Reject", "kind": "reject_once"}]
    session = AgentSession(agent_of(tmp_path, {"steps": [
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Read",
                    "kind": "read", "status": "in_progress", "rawInput": {}}},
        chunk("Part one."), said(0.06), chunk(" Part two."),
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                    "status": "completed"}},
        {"permission": {"toolCall": {"toolCallId": "t2", "title": "rm -rf build",
                                     "kind": "execute"}, "options": options}}]},
        turn_budget_usd=0.05))
    session.attach_approver()
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        answer = await asyncio.wait_for(session.run("go"), 15)
    assert [e.code for e in events if e.type == "warning"] == ["budget_reached_turn_answered"]
    assert not [e for e in events if e.type == "approval_request"]
    assert (tmp_path / "script.json.answers").read_text().strip() == '{"outcome": "cancelled"}'
    [card] = [e for m in session.messages for e in m.metadata.tool_executions]
    assert card.status == "done"
    assert answer is not None and answer.metadata.interrupted is None
    assert "".join(m.text for m in session.messages if m.role == "assistant") == (
        "Part one. Part two.")


async def test_a_stop_within_the_grace_second_says_the_budget(tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, {"steps": [
        chunk("Working"), said(0.06), {"sleep": 30}]}, turn_budget_usd=0.05))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        task = asyncio.ensure_future(session.run("go"))
        await wait_until(lambda: budget_reached(session))
        session.cancel()
        await asyncio.wait_for(task, 15)
    done = events[-1]
    assert done.type == "done" and done.stop_reason == "budget"
    assert [e.code for e in events if e.type == "warning"] == ["budget_reached_turn"]
    assert session.cost_usd == pytest.approx(0.06)


async def test_an_agent_that_dies_within_the_grace_second_is_counted_and_said(
        tmp_path: Path) -> None:
    import os
    import signal

    session = AgentSession(agent_of(tmp_path, {"steps": [
        chunk("Working"), said(0.06), {"sleep": 30}]}, turn_budget_usd=0.05))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session) as turns:
        task = asyncio.ensure_future(session.run("go"))
        await wait_until(lambda: budget_reached(session))
        assert turns.pid is not None
        os.kill(turns.pid, signal.SIGKILL)
        await asyncio.wait_for(task, 15)
    assert session.cost_usd == pytest.approx(0.06)
    assert "budget_reached_turn" in [e.code for e in events if e.type == "warning"]
    assert not session.running
