"""The conversation projection: what it builds from a session's recorded events equals
what it builds from that session's stored history — for a parent with a tool, a skill, an
approval, thinking and a plan, a turn stopped mid-answer, a turn whose process died, a
compaction, and two nested sub-agents (each child, at every depth, against its own stored
session). And its running state, live response and approvals follow the turn."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.messages import Message, Usage
from neta_nb.providers.base import TextDelta
from neta_nb.runtime.projection import ConversationProjection, NullSink

from ..support.delegation import crew_catalog, delegations
from ..support.mid_tools import copy_as_on_disk, start_until_mid_tools
from ..support.sessions import (
    FakeProvider,
    Recorder,
    answer,
    calls,
    count_up,
    make_session,
)
from ..support.timing import wait_until


def replay(events: list[Any]) -> ConversationProjection:
    projection = ConversationProjection()
    sink = NullSink()
    for event in events:
        projection.apply(event, sink)
    return projection


def dumps(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


def assert_same(live: ConversationProjection, stored: ConversationProjection) -> None:
    assert dumps(live.messages) == dumps(stored.messages)
    assert [(c.after_message, c.tokens_before, c.tokens_after, c.messages_folded)
            for c in live.compactions] == [
        (c.after_message, c.tokens_before, c.tokens_after, c.messages_folded)
        for c in stored.compactions]
    for message in stored.messages:
        assert live.index_of(message.id) == stored.index_of(message.id)
        for call in message.tool_calls:
            assert live.owner(call.id) is not None
            assert live.owner(call.id).id == stored.owner(call.id).id  # type: ignore[union-attr]


def stored(store: SessionStore, session_id: str) -> ConversationProjection:
    view = store.load_view(session_id)
    return ConversationProjection.from_history(
        store.load_messages(session_id), view.compactions if view is not None else ())


async def test_a_parent_with_tool_skill_approval_thinking_and_plan(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    plan = {"todos": [{"id": "1", "content": "Add", "status": "in_progress"},
                      {"id": "2", "content": "Count", "status": "pending"}]}
    session, _, _ = make_session(
        [calls(("t1", "todo", plan)),
         calls(("c1", "plus", {"a": 1, "b": 2}), ("k1", "count_up", {"steps": 3}),
               ("g1", "guarded_op", {"x": 7})),
         answer("Done: 3.", thinking="All three calls came back.")],
        extra=[count_up], store=store)
    events = Recorder(history=True)
    session.subscribe(events)
    detach = session.attach_approver()
    task = session.start("add, count and guard")
    await events.wait_for("approval_request")
    live = replay(events.events)
    assert live.running and [a.id for a in live.approvals] == ["g1"]
    session.approve("g1", "allow_once")
    await task
    detach()
    session.flush()

    live = replay(events.events)
    assert_same(live, stored(store, session.id))
    assert dumps(live.messages) == dumps(session.messages)
    assert not live.running and live.approvals == [] and live.live is None
    assert live.todos == [item.model_dump() for item in session.todo.read()]
    assert live.plan == (0, 2)
    assert live.usage == events.of("token_update")[-1].current
    last = live.last_assistant
    assert last is not None and live.streamed[last.id] == ("All three calls came back.",
                                                          "Done: 3.")


async def test_a_turn_stopped_mid_answer(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    hold = asyncio.Event()
    session, _, _ = make_session([answer("First."), [TextDelta("half of a"), hold.wait]],
                                 store=store)
    events = Recorder(history=True)
    session.subscribe(events)
    await session.run("one")
    before = events.types.count("token")
    task = session.start("two")
    await wait_until(lambda: events.types.count("token") > before)
    mid = replay(events.events)
    assert mid.running and mid.live is not None
    session.cancel()
    await task
    session.flush()
    live = replay(events.events)
    assert_same(live, stored(store, session.id))
    assert live.messages[-1].metadata.interrupted == "cancelled"
    assert live.messages[-1].text == "half of a" and live.live is None


async def test_a_turn_whose_process_died(tmp_path: Path) -> None:
    """What the events said until the process died is what its store holds."""
    mid = await start_until_mid_tools(tmp_path, history=True)
    session, events, task = mid.session, mid.recorder, mid.task
    session.flush()
    # The process "dies" now. The events carry the session's own messages, which the
    # cancel below goes on to change: what they said is taken as of this moment.
    live = replay(events.events)
    at_death = dumps(live.messages)
    copy = copy_as_on_disk(mid.db, tmp_path / "killed.db")
    session.cancel()
    await asyncio.wait_for(task, 5)

    assert live.running  # no `done` before the process died
    died = stored(SessionStore(copy), session.id)
    assert at_death == dumps(died.messages)
    assert [live.index_of(m.id) for m in died.messages] == list(range(len(died.messages)))


async def test_a_compaction_is_a_marker_where_the_store_has_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    big = "x" * 3_000
    session, _, _ = make_session(
        [answer(big), answer(big), answer(big), answer("summary"), answer("after")],
        store=store, agent_options={"keep_recent_turns": 1})
    events = Recorder(history=True)
    session.subscribe(events)
    for prompt in ("one", "two", "three"):
        await session.run(prompt)
    assert await session.compact() is not None
    await session.run("four")
    session.flush()
    live = replay(events.events)
    assert len(live.compactions) == 1
    assert_same(live, stored(store, session.id))


async def test_two_nested_sub_agents_each_equal_their_stored_session(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    leaf = Agent("leaf", model=FakeProvider([answer("Leaf fact.", thinking="hmm")]))
    middle = Agent("middle", model=FakeProvider(
        [delegations(("g1", "leaf", "go deeper")), answer("Middle done.")]),
        subagents=[leaf])
    other = Agent("other", model=FakeProvider(
        [calls(("p1", "plus", {"a": 2, "b": 2})), answer("Four.")]))
    top = FakeProvider([delegations(("c1", "middle", "start"), ("c2", "other", "add")),
                        answer("All done.", usage=Usage(input_tokens=5, output_tokens=2))])
    session = AgentSession(Agent("top", model=top, subagents=[middle, other]),
                           crew_catalog(), store)
    events = Recorder(history=True)
    session.subscribe(events)
    await session.run("go")
    session.flush()

    live = replay(events.events)
    assert_same(live, stored(store, session.id))
    assert set(live.children) == {"c1", "c2"}
    children = session.subagents
    for call_id in ("c1", "c2"):
        child = live.children[call_id]
        assert child.status == "done" and child.path == (call_id,)
        assert_same(child, stored(store, children[call_id].id))
    grandchild = live.find(["c1", "g1"])
    assert grandchild is not None and grandchild.path == ("c1", "g1")
    grand_session = children["c1"].subagents["g1"]
    assert_same(grandchild, stored(store, grand_session.id))
    assert grandchild.agent == "leaf" and grandchild.task == "go deeper"
    assert live.find(["c1"]).activity is None  # type: ignore[union-attr]


async def test_of_session_mid_turn_continues_with_the_events() -> None:
    """A projection made from a running session (a view bound mid-answer) ends equal to
    one that followed the whole turn."""
    hold = asyncio.Event()
    session, _, _ = make_session([[TextDelta("Hel"), hold.wait, TextDelta("lo"),
                                   *answer("")[-2:]]])
    whole = Recorder(history=True)
    session.subscribe(whole)
    task = session.start("hi")
    await whole.wait_for("token")
    late = ConversationProjection.of_session(session)
    assert late.running and late.live is not None and "".join(late.live.text) == "Hel"
    session.subscribe(lambda event: late.apply(event, NullSink()))
    hold.set()
    await task
    followed = replay(whole.events)
    assert dumps(late.messages) == dumps(followed.messages) == dumps(session.messages)
    assert not late.running and late.live is None


async def test_a_finished_run_keeps_no_second_copy_of_its_answers() -> None:
    """A long chat keeps every sub-agent run it followed; a finished run holds its
    messages (the child's own objects), not also what the views streamed of them."""
    kid = Agent("kid", model=FakeProvider([answer("x" * 10_000)]))
    top = FakeProvider([delegations(("c1", "kid", "task")), answer("done")])
    session = AgentSession(Agent("top", model=top, subagents=[kid]), crew_catalog())
    events = Recorder(history=True)
    session.subscribe(events)
    task = session.start("go")
    await events.wait_for("subagent_start")
    await task
    live = replay(events.events)
    run = live.children["c1"]
    assert run.status == "done" and run.streamed == {}
    assert run.messages[-1].text == "x" * 10_000
