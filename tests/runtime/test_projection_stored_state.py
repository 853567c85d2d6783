"""A projection built from a stored history holds the state the events gave the live one:
the plan (from the history's ``todo`` results), and for a sub-agent run nobody followed
(``of_run``) the status and figures of the parent's record of it. Made from a session
mid-turn, the approvals it waits for are the ones its sessions hold — with what each
asked (a proposed edit's proposal too), not what the message metadata says."""

from __future__ import annotations

from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.events import TokenUpdateEvent
from neta_nb.messages import Message, Usage
from neta_nb.providers.prices import ModelPrice
from neta_nb.runtime.projection import ConversationProjection

from ..support.delegation import crew_catalog, delegations, start_until_a_child_asks
from ..support.sessions import FakeProvider, Recorder, answer, calls
from .test_projection import replay

PLAN = {"todos": [{"id": "1", "content": "Look", "status": "completed"},
                  {"id": "2", "content": "Tell", "status": "in_progress"}]}


async def test_the_stored_plan_and_a_runs_record_are_what_the_events_said(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    kid = Agent("kid", model=FakeProvider([calls(("t1", "todo", PLAN)), answer("Told.")]))
    top = FakeProvider([calls(("t0", "todo", PLAN)), delegations(("c1", "kid", "look")),
                        answer("done")])
    session = AgentSession(Agent("top", model=top, subagents=[kid]), crew_catalog(), store)
    events = Recorder(history=True)
    session.subscribe(events)
    await session.run("go")
    session.flush()
    live = replay(events.events)
    stored = ConversationProjection.from_history(store.load_messages(session.id))
    assert (stored.todos, stored.plan) == (live.todos, live.plan) == (PLAN["todos"], (1, 2))

    [execution] = [e for m in stored.messages for e in m.metadata.tool_executions
                   if e.subagent is not None]
    record = execution.subagent
    assert record is not None
    run = ConversationProjection.of_run(record, store.load_messages(record.session_id),
                                        path=("c1",))
    followed = live.children["c1"]
    assert (run.status, run.plan, run.todos, run.agent, run.task, run.session_id) == (
        followed.status, followed.plan, followed.todos, followed.agent, followed.task,
        followed.session_id)
    assert (run.usage.input_tokens, run.usage.output_tokens, run.usage.api_calls) == (
        followed.usage.input_tokens, followed.usage.output_tokens, followed.usage.api_calls)
    assert run.usage.api_calls > 0 and not run.running


async def test_a_projection_made_mid_turn_takes_the_approvals_from_their_sessions() -> None:
    child = Agent("guard", model=FakeProvider([calls(("g1", "guarded_op", {"x": 7})),
                                               answer("ok")]))
    top = FakeProvider([delegations(("c1", "guard", "guard it")), answer("done")])
    session = AgentSession(Agent("top", model=top, subagents=[child]), crew_catalog())
    task, _, detach = await start_until_a_child_asks(session)
    mid = ConversationProjection.of_session(session)
    [pending] = mid.approvals
    asked = session.subagents["c1"].pending_approvals()
    assert [(r.id, r.name, r.args) for r in asked] == [("g1", "guarded_op", {"x": 7})]
    assert (pending.id, pending.name, pending.args, pending.path, pending.agent) == (
        "g1", "guarded_op", {"x": 7}, ["c1"], "guard")
    assert session.approve("g1", "allow_once", subagent=["c1"])
    await task
    detach()
    assert session.subagents["c1"].pending_approvals() == []
    assert ConversationProjection.of_session(session).approvals == []


async def test_the_stored_figures_are_the_last_turns_as_its_token_update_said(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    kid_model = FakeProvider([answer("Looked.", usage=Usage(input_tokens=40, output_tokens=9))])
    kid_model.price = ModelPrice(input=2.0, output=8.0)
    top = FakeProvider([answer("first"),
                        delegations(("c1", "kid", "look")),
                        answer("done", usage=Usage(input_tokens=300, output_tokens=50))])
    top.price = ModelPrice(input=3.0, output=15.0)
    session = AgentSession(Agent("top", model=top, subagents=[Agent("kid", model=kid_model)]),
                           crew_catalog(), store)
    await session.run("one")
    events = Recorder(history=True)
    session.subscribe(events)
    await session.run("two")
    session.flush()
    said = [e for e in events.events if isinstance(e, TokenUpdateEvent)][-1].current
    assert said.api_calls == 3 and said.cost_usd  # two own calls and the kid's one

    record = store.get_session(session.id)
    assert record is not None
    # The session's cost comes from its owner: the stored record, the live session.
    live = ConversationProjection.of_session(session).usage.session_cost_usd
    for messages, compactions, session_cost in (
            (store.load_messages(session.id), (), record.cost_usd),
            (session.messages, session.compactions, live)):
        shown = ConversationProjection.from_history(messages, compactions).usage
        shown = shown.model_copy(update={"session_cost_usd": session_cost})
        assert (shown.input_tokens, shown.output_tokens, shown.total_tokens,
                shown.api_calls, shown.unreported_calls) == (
            said.input_tokens, said.output_tokens, said.total_tokens, said.api_calls,
            said.unreported_calls)
        assert shown.cost_usd == pytest.approx(said.cost_usd)
        assert shown.session_cost_usd == pytest.approx(said.session_cost_usd)
        assert shown.cost_split == pytest.approx({"subagents": kid_model.price.input * 40e-6
                                                  + kid_model.price.output * 9e-6})


def test_a_call_without_a_price_leaves_the_stored_costs_unknown() -> None:
    unpriced = Message.assistant([], usage=Usage(input_tokens=5, output_tokens=1), model="m")
    shown = ConversationProjection.from_history([Message.user("hi"), unpriced]).usage
    assert (shown.api_calls, shown.input_tokens, shown.cost_usd, shown.session_cost_usd) == (
        1, 5, None, None)
    assert ConversationProjection.from_history([Message.user("hi")]).usage.api_calls == 0
