"""Sub-agents under attack (issue 15 review): what a hostile model or an impatient user
can do to a crew — stop a grandchild, answer two children whose calls share an id, stop
a child the moment it starts, make a child answer megabytes — and what must still hold."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore
from neta_nb.events import ApprovalRequestEvent, SubagentStartEvent
from neta_nb.providers.base import TextDelta

from ..support import sessions as support
from ..support.delegation import (
    Gate,
    crew_catalog,
    delegations,
    innermost,
    start_until_a_child_asks,
)
from ..support.sessions import (
    FakeProvider,
    Recorder,
    answer,
    assert_valid_history,
    calls,
)
from ..support.timing import wait_until


async def test_a_grandchilds_stop_reaches_it_through_the_tree() -> None:
    """The chat view offers Stop on every running card, a grandchild's too, and sends its
    id as ``stop {subagent}``: it must stop that grandchild, not be dropped silently."""
    held = Gate()
    leaf = Agent("leaf", model=FakeProvider([[TextDelta("digging"), held, *answer("never")]]))
    middle = Agent("middle", model=FakeProvider([delegations(("g1", "leaf", "dig")),
                                                 answer("middle carried on")]),
                   subagents=[leaf])
    top = FakeProvider([delegations(("c1", "middle", "start")), answer("top done")])
    session = AgentSession(Agent("top", model=top, subagents=[middle]), crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await asyncio.wait_for(held.reached.wait(), 10)
    assert session.stop_subagent("g1") is True
    async with asyncio.timeout(10):
        await task
    grandchild_end = next(innermost(e) for e in recorder.of("subagent_event")
                          if innermost(e).type == "subagent_end")
    assert grandchild_end.id == "g1" and grandchild_end.status == "cancelled"
    assert [e.status for e in recorder.of("subagent_end")] == ["done"]  # middle went on
    assert recorder.events[-1].stop_reason == "end_turn"
    assert session.stop_subagent("g1") is False  # finished: nothing to stop


def _twins_asking() -> AgentSession:
    """Two children whose first calls both need approval under the id ``call_0``."""
    researcher = Agent("researcher", model=FakeProvider(
        [calls(("call_0", "guarded_op", {"x": 1})), answer("r")]),
        tools=AgentToolConfig(enabled=["guarded_op"]))
    coder = Agent("coder", model=FakeProvider(
        [calls(("call_0", "guarded_op", {"x": 2})), answer("c")]),
        tools=AgentToolConfig(enabled=["guarded_op"]))
    planner = FakeProvider([delegations(("d1", "researcher", "a"), ("d2", "coder", "b")),
                            answer("ok")])
    return AgentSession(Agent("planner", model=planner, subagents=[researcher, coder]),
                        crew_catalog())


@pytest.mark.parametrize("by_path", [True, False])
async def test_two_children_asking_with_the_same_call_id_are_each_answered(
        by_path: bool) -> None:
    """A server that sends no call ids gets ``call_0`` for every first call, so two
    children ask for approval under one id. Each answer must reach a child that waits —
    none is left waiting while the view is attached — and an answer that names its child
    by path runs exactly that child's tool."""
    support.ran.clear()
    session = _twins_asking()
    detach = session.attach_approver()
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await wait_until(lambda: sum(isinstance(innermost(e), ApprovalRequestEvent)
                                 for e in recorder.events) == 2)
    if by_path:
        # The coder's request is allowed, then the researcher's refused.
        assert session.handle_command({"type": "approve", "id": "call_0",
                                       "decision": "allow_once", "subagent": ["d2"]}) is None
        assert session.approve("call_0", "reject", subagent=["d1"]) is True
        assert session.approve("call_0", "reject", subagent=["d1"]) is False  # answered
    else:
        assert session.approve("call_0", "allow_once") is True
        assert session.approve("call_0", "allow_once") is True
    async with asyncio.timeout(10):
        await task
    detach()
    assert sorted(support.ran) == (["guarded_op 2"] if by_path
                                   else ["guarded_op 1", "guarded_op 2"])
    for each in (session, *session.subagents.values()):
        assert_valid_history(each.messages)


async def test_a_child_stopped_before_its_task_first_runs_still_ends() -> None:
    """Stop lands between the child's start and its runner's first step (a second
    delegation of the same response starting in that gap): the child still says
    ``subagent_end`` and its record is final, not "running" forever."""
    researcher = Agent("researcher", model=FakeProvider([answer("r")]))
    coder = Agent("coder", model=FakeProvider([answer("c")]))
    planner = FakeProvider([delegations(("d1", "researcher", "a"), ("d2", "coder", "b")),
                            answer("ok")])
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher, coder]),
                           crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)

    def stop_first_when_second_starts(event: Any) -> None:
        if isinstance(event, SubagentStartEvent) and event.id == "d2":
            session.stop_subagent("d1")

    session.subscribe(stop_first_when_second_starts)
    async with asyncio.timeout(10):
        await session.run("go")
    ends = {e.id: e.status for e in recorder.of("subagent_end")}
    assert ends == {"d1": "cancelled", "d2": "done"}
    runs = {e.id: e.subagent for e in session.messages[1].metadata.tool_executions}
    assert runs["d1"] is not None and runs["d1"].status == "cancelled"


async def test_a_childs_huge_answer_is_bounded_in_its_end_event() -> None:
    """The ``subagent_end`` result goes to every view (the nested card's state): a child's
    5 MB answer is bounded there as in the ``delegate`` result."""
    huge = "x" * 5_000_000
    researcher = Agent("researcher", model=FakeProvider([answer(huge)]))
    planner = FakeProvider([delegations(("d1", "researcher", "a")), answer("ok")])
    agent = Agent("planner", model=planner, subagents=[researcher])
    session = AgentSession(agent, crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("go")
    (end,) = recorder.of("subagent_end")
    assert len(end.result) <= agent.max_tool_result_chars + 500
    read = planner.requests[1].messages[-1].tool_results[0].content
    assert len(read) <= agent.max_tool_result_chars + 500


async def test_a_child_never_runs_a_tool_only_its_parent_has() -> None:
    """The parent may use ``plus``; the child's own config allows only ``list_files``.
    The child's model calls ``plus`` anyway, and ``delegate`` (it has no sub-agents): both
    are refused, neither runs, the refusal is the child's to read."""
    support.ran.clear()
    researcher = Agent("researcher", model=FakeProvider(
        [calls(("p1", "plus", {"a": 1, "b": 2}), ("p2", "guarded_op", {"x": 9}),
               ("p3", "delegate", {"agent": "researcher", "task": "again"})),
         answer("could not")]),
        tools=AgentToolConfig(inherit_core_tools=False, enabled=["list_files"]))
    planner = FakeProvider([delegations(("d1", "researcher", "add")), answer("ok")])
    agent = Agent("planner", model=planner, subagents=[researcher],
                  tools=AgentToolConfig(enabled=["plus", "guarded_op"]))
    session = AgentSession(agent, crew_catalog(), approval_policy="allow")
    await session.run("go")
    child = session.subagents["d1"]
    sent = {t.name for t in child.provider.requests[0].tools}  # type: ignore[attr-defined]
    assert sent == {"list_files"}
    results = [r for m in child.messages for r in m.tool_results]
    assert [(r.tool_call_id, r.is_error) for r in results] == [
        ("p1", True), ("p2", True), ("p3", True)]
    assert support.ran == []
    assert child.subagents == {}


async def test_fifty_delegations_keep_the_limit_and_their_order() -> None:
    """A model that calls ``delegate`` 50 times in one response: never more than the
    limit run at once, and every result comes back at its own call."""
    running = 0
    most = 0

    async def count() -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        await asyncio.sleep(0)
        await asyncio.sleep(0)
        running -= 1

    class Worker(FakeProvider):
        def __init__(self) -> None:
            super().__init__([])

        async def stream(self, request: Any) -> Any:
            task = request.messages[0].text
            self.responses = [[count, *answer(f"answer to {task}")]]
            async for event in super().stream(request):
                yield event

    worker = Agent("worker", model=Worker())
    planner = FakeProvider([delegations(*[(f"d{n}", "worker", f"task {n}")
                                           for n in range(50)]), answer("ok")])
    agent = Agent("planner", model=planner, subagents=[worker], max_parallel_subagents=4)
    await AgentSession(agent, crew_catalog()).run("go")
    results = [r for m in planner.requests[1].messages for r in m.tool_results]
    assert [r.tool_call_id for r in results] == [f"d{n}" for n in range(50)]
    assert [r.content for r in results] == [f"answer to task {n}" for n in range(50)]
    assert 1 < most <= 4


async def test_the_parents_stop_while_a_child_waits_for_approval() -> None:
    support.ran.clear()
    researcher = Agent("researcher", model=FakeProvider(
        [calls(("g1", "guarded_op", {"x": 1})), answer("never")]),
        tools=AgentToolConfig(enabled=["guarded_op"]))
    planner = FakeProvider([delegations(("d1", "researcher", "a"))])
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher]),
                           crew_catalog())
    task, recorder, detach = await start_until_a_child_asks(session)
    session.cancel()
    async with asyncio.timeout(10):
        await task
    detach()
    assert support.ran == []
    assert session.approve("g1", "allow_once") is False  # nothing waits any more
    assert [e.status for e in recorder.of("subagent_end")] == ["cancelled"]
    for each in (session, *session.subagents.values()):
        assert_valid_history(each.messages)


async def test_a_child_whose_model_breaks_mid_stream_counts_its_tokens() -> None:
    """A child's model raises an unexpected exception after some output: the parent
    reads an error result, the child's history is valid, the turn total still holds
    what the child's calls reported before."""
    researcher = Agent("researcher", model=FakeProvider(
        [answer("first"), [TextDelta("partial "), RuntimeError("socket gone")]]))
    planner = FakeProvider([delegations(("d1", "researcher", "a")), answer("ok")])
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher]),
                           crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    # The child answers its first turn; a second delegation breaks mid-stream.
    planner.responses = [delegations(("d1", "researcher", "a")),
                         delegations(("d2", "researcher", "b")), answer("ok")]
    await session.run("go")
    results = {p.tool_call_id: p for m in planner.requests[2].messages for p in m.tool_results}
    assert not results["d1"].is_error and results["d2"].is_error
    assert "socket gone" in results["d2"].content
    assert "partial" in results["d2"].content
    # The parent's three calls (120, 120, 100 in) and the child's one answered call.
    assert recorder.of("token_update")[-1].current.input_tokens == 120 + 120 + 100 + 100
    assert session.subagent_usage["d1"].input_tokens == 100
    assert session.subagent_usage["d2"].input_tokens == 0
    for each in (session, *session.subagents.values()):
        assert_valid_history(each.messages)


async def test_a_tool_disabled_globally_while_the_childs_call_streams_never_runs() -> None:
    """The child's model was offered ``guarded_op`` and calls it; the tool is disabled
    globally before the call runs (the user's panel, mid-run): the call is refused."""
    support.ran.clear()
    catalog = crew_catalog()
    researcher = Agent("researcher", model=FakeProvider(
        [[*calls(("g1", "guarded_op", {"x": 5})), lambda: catalog.disable("guarded_op")],
         answer("refused")]),
        tools=AgentToolConfig(enabled=["guarded_op"]))
    planner = FakeProvider([delegations(("d1", "researcher", "a")), answer("ok")])
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher]), catalog,
                           approval_policy="allow")
    await session.run("go")
    child = session.subagents["d1"]
    (result,) = [r for m in child.messages for r in m.tool_results]
    assert result.is_error and support.ran == []
    sent = [t.name for t in child.provider.requests[1].tools]  # type: ignore[attr-defined]
    assert "guarded_op" not in sent


async def test_a_child_resumed_on_its_own_keeps_its_place_in_the_tree(tmp_path: Path) -> None:
    """The depth limit holds for the whole tree: a grandchild at the limit, resumed
    directly (its session opened from the store), must not gain ``delegate``; a child
    above the limit keeps it."""
    store = SessionStore(tmp_path / "s.sqlite3")
    leaf = Agent("leaf", model=FakeProvider([answer("leaf done")]),
                 subagents=[Agent("deeper", model="scripted")])
    middle = Agent("middle", model=FakeProvider([delegations(("g1", "leaf", "dig")),
                                                 answer("middle done")]),
                   subagents=[leaf])
    top = Agent("top", model=FakeProvider([delegations(("c1", "middle", "go")),
                                           answer("top done")]), subagents=[middle])
    session = AgentSession(top, crew_catalog(), store)
    await session.run("go")
    child = session.subagents["c1"]
    grandchild = child.subagents["g1"]
    assert child.can_delegate and not grandchild.can_delegate
    for each in (session, child, grandchild):
        each.flush()
    resumed_leaf = AgentSession.resume(grandchild.id, store, catalog=crew_catalog(),
                                       provider=FakeProvider([]))
    assert not resumed_leaf.can_delegate
    assert "delegate" not in resumed_leaf.preview().tool_names
    resumed_middle = AgentSession.resume(child.id, store, catalog=crew_catalog(),
                                         provider=FakeProvider([]))
    assert resumed_middle.can_delegate
