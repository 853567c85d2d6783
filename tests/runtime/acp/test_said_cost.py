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
    # What streamed until then is kept (not what the agent sent before it read the
    # cancel); what the turn cost is counted.
    assert answer is not None and answer.text == "Working still"
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
