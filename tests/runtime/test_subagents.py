"""Sub-agents (issue 15): the ``delegate`` tool, child sessions, their events, approvals,
stopping one child or all, token totals and how children are stored. Models here are
:class:`FakeProvider` s (exact control of every step); ``test_crew_wire.py`` runs the same
paths through the real SDKs."""

from __future__ import annotations

import asyncio
import sqlite3
from pathlib import Path
from typing import Any

import pytest
from pydantic import ValidationError

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.events import (
    ApprovalRequestEvent,
    SubagentEndEvent,
    SubagentEvent,
    TokenEvent,
    TokenUpdateEvent,
    parse_event,
)
from neta_nb.messages import Message, Usage
from neta_nb.providers.base import ProviderError, TextDelta
from neta_nb.runtime.session.tool_calls.subagents import wrap_event
from neta_nb.store.session_store import SessionRecord
from neta_nb.tools import resolve_tools

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


def _crew(parent: list[list[Any]], **children: list[list[Any]]
          ) -> tuple[Agent, FakeProvider, dict[str, FakeProvider]]:
    providers = {name: FakeProvider(responses) for name, responses in children.items()}
    subagents = [Agent(name, model=provider, description=f"does {name} work",
                       system_prompt=f"You are the {name}.")
                 for name, provider in providers.items()]
    planner = FakeProvider(parent)
    return Agent("planner", model=planner, subagents=subagents), planner, providers






# --- the tool and its offer -------------------------------------------------------------

def test_delegate_is_offered_only_to_an_agent_with_subagents() -> None:
    alone = AgentSession(Agent("solo", model=FakeProvider([])), crew_catalog())
    assert "delegate" not in alone.preview().tool_names
    assert alone.preview().resolution.reasons["delegate"].code == "no_subagents"

    agent, _, _ = _crew([], researcher=[], coder=[])
    preview = AgentSession(agent, crew_catalog()).preview()
    definition = next(d for d in preview.tools if d.name == "delegate")
    assert definition.parameters["properties"]["agent"]["enum"] == ["researcher", "coder"]
    assert definition.parameters["required"] == ["agent", "task"]
    assert "- researcher: does researcher work" in definition.description
    # The catalog's own tool is untouched: another agent sees its own roster.
    assert "enum" not in crew_catalog()["delegate"].parameters["properties"]["agent"]


def test_delegate_follows_the_agent_config_and_global_switches_like_any_tool() -> None:
    agent, _, _ = _crew([], researcher=[])
    agent.tools = AgentToolConfig(disabled=["delegate"])
    catalog = crew_catalog()
    assert "delegate" not in AgentSession(agent, catalog).preview().tool_names
    agent.tools = AgentToolConfig()
    catalog.disable("delegate")
    assert "delegate" not in AgentSession(agent, catalog).preview().tool_names
    # The resolver alone (a panel with no session) does not filter by sub-agents.
    assert "delegate" in resolve_tools(ToolCatalog.default(), AgentToolConfig()).names
    assert "delegate" not in resolve_tools(ToolCatalog.default(), AgentToolConfig(),
                                           delegates=False).names


async def test_nesting_stops_at_the_depth_limit() -> None:
    grandchild = FakeProvider([answer("leaf")])
    child = FakeProvider([delegations(("g1", "leaf", "go deeper")), answer("middle")])
    leaf = Agent("leaf", model=grandchild, subagents=[Agent("deeper", model=FakeProvider([]))])
    middle = Agent("middle", model=child, subagents=[leaf])
    top = FakeProvider([delegations(("c1", "middle", "start")), answer("top")])
    session = AgentSession(Agent("top", model=top, subagents=[middle]), crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("go")
    assert "delegate" in [t.name for t in top.requests[0].tools]
    assert "delegate" in [t.name for t in child.requests[0].tools]  # level 1
    assert "delegate" not in [t.name for t in grandchild.requests[0].tools]  # level 2: limit
    # The grandchild's events arrive wrapped twice.
    twice = [e for e in recorder.of("subagent_event") if isinstance(e.event, SubagentEvent)]
    assert twice and {e.id for e in twice} == {"c1"} and {e.event.id for e in twice} == {"g1"}

    top_only = FakeProvider([])
    limited = AgentSession(Agent("top", model=top_only, subagents=[middle],
                                 max_subagent_depth=0), crew_catalog())
    assert "delegate" not in limited.preview().tool_names


# --- a run -------------------------------------------------------------------------------

async def test_children_run_and_their_answers_are_the_delegate_results() -> None:
    agent, planner, children = _crew(
        [delegations(("d1", "researcher", "find facts"), ("d2", "coder", "write code")),
         answer("Both are done.")],
        researcher=[answer("Facts found.", usage=Usage(input_tokens=10, output_tokens=3))],
        coder=[answer("Code written.", usage=Usage(input_tokens=20, output_tokens=5))])
    session = AgentSession(agent, crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("Plan and delegate")

    # Each child got its own prompt and the task as its user message.
    assert children["researcher"].requests[0].system_prompt == "You are the researcher."
    assert children["researcher"].requests[0].messages[0].text == "find facts"
    assert children["coder"].requests[0].messages[0].text == "write code"
    results = {p.tool_call_id: p for m in planner.requests[1].messages for p in m.tool_results}
    assert results["d1"].content == "Facts found." and not results["d1"].is_error
    assert results["d2"].content == "Code written."

    starts = recorder.of("subagent_start")
    assert [(e.id, e.agent, e.task) for e in starts] == [
        ("d1", "researcher", "find facts"), ("d2", "coder", "write code")]
    ends = {e.id: e for e in recorder.of("subagent_end")}
    assert ends["d1"].status == "done" and ends["d1"].result == "Facts found."
    assert ends["d2"].usage.input_tokens == 20
    # Every child event in between is the child's own, unchanged.
    wrapped = [e for e in recorder.of("subagent_event") if e.id == "d1"]
    assert "".join(e.event.text for e in wrapped if isinstance(e.event, TokenEvent)) == (
        "Facts found.")
    assert wrapped[-1].event.type == "done"
    order = recorder.types
    assert order.index("subagent_end") < order.index("tool_result") < len(order) - 1

    executions = {e.id: e for e in session.messages[1].metadata.tool_executions}
    run = executions["d1"].subagent
    assert run is not None and run.agent == "researcher" and run.status == "done"
    assert run.session_id == session.subagents["d1"].id
    assert (run.input_tokens, run.output_tokens, run.api_calls) == (10, 3, 1)
    for child in (session, *session.subagents.values()):
        assert_valid_history(child.messages)


async def test_turn_total_counts_children_and_the_context_stays_the_parents() -> None:
    agent, _, _ = _crew(
        [delegations(("d1", "researcher", "a"), ("d2", "coder", "b")),
         answer("done", usage=Usage(input_tokens=500, output_tokens=7))],
        researcher=[answer("r", usage=Usage(input_tokens=10, output_tokens=3))],
        coder=[answer("c", usage=Usage(input_tokens=20, output_tokens=5))])
    session = AgentSession(agent, crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("go")
    last = recorder.of("token_update")[-1]
    # Parent: 120 + 500 in, 30 + 7 out over two calls (calls() reports 120/30).
    assert last.current.input_tokens == 120 + 500 + 10 + 20
    assert last.current.output_tokens == 30 + 7 + 3 + 5
    assert last.current.api_calls == 4
    assert last.context.used_tokens == 500 + 7  # the parent's window only
    assert session.subagent_usage["d1"].input_tokens == 10
    assert session.subagent_usage["d2"].output_tokens == 5
    assert session.usage.input_tokens == 620  # the session's own spend
    # A child's figure reaches the parent's total as soon as the child reports it.
    child_update = next(n for n, e in enumerate(recorder.events)
                        if isinstance(e, SubagentEvent) and isinstance(e.event, TokenUpdateEvent))
    following = recorder.events[child_update + 1]
    assert isinstance(following, TokenUpdateEvent) and following.current.input_tokens > 120


async def test_parallel_delegations_respect_the_limit() -> None:
    gate = Gate()
    agent, _, children = _crew(
        [delegations(("d1", "researcher", "a"), ("d2", "coder", "b")), answer("ok")],
        researcher=[[TextDelta("r1"), gate, *answer("r2")]],
        coder=[answer("c")])
    agent.max_parallel_subagents = 1
    session = AgentSession(agent, crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await asyncio.wait_for(gate.reached.wait(), 10)
    assert children["coder"].requests == []  # waiting for the one slot
    gate.opened.set()
    await task
    kinds = [(e.id, innermost(e).type) for e in recorder.events
             if isinstance(e, SubagentEvent | SubagentEndEvent)]
    assert kinds.index(("d1", "subagent_end")) < kinds.index(("d2", "token"))


async def test_unknown_subagent_empty_task_and_failed_child_give_clear_errors() -> None:
    agent, planner, _ = _crew(
        [delegations(("d1", "ghost", "x"), ("d2", "researcher", "  "),
                      ("d3", "coder", "fail please")), answer("ok")],
        researcher=[], coder=[[ProviderError("model overloaded", retryable=True)]])
    session = AgentSession(agent, crew_catalog())
    await session.run("go")
    results = {p.tool_call_id: p for m in planner.requests[1].messages for p in m.tool_results}
    assert all(results[i].is_error for i in ("d1", "d2", "d3"))
    assert results["d1"].content == (
        "There is no sub-agent 'ghost'. Delegate to one of: researcher, coder.")
    assert results["d2"].content.startswith("The task is empty.")
    assert results["d3"].content == ("Sub-agent 'coder' did not finish: it failed: "
                                     "model overloaded.")
    assert session.subagents["d3"].messages[-1].metadata.interrupted == "error"


async def test_a_long_answer_is_bounded_like_any_tool_result() -> None:
    agent, planner, _ = _crew([delegations(("d1", "researcher", "x")), answer("ok")],
                              researcher=[answer("word " * 1000)])
    agent.max_tool_result_chars = 1_000
    await AgentSession(agent, crew_catalog()).run("go")
    result = planner.requests[1].messages[-1].tool_results[0].content
    # The answer is stripped of its trailing space: 4,999 characters.
    assert result.startswith("word word") and "[Result cut: the first 1,000 of 4,999" in result


# --- approvals ---------------------------------------------------------------------------

async def test_a_childs_approval_request_is_answered_through_the_parent() -> None:
    support.ran.clear()
    agent, _, _ = _crew(
        [delegations(("d1", "researcher", "run the guarded op")), answer("ok")],
        researcher=[calls(("g1", "guarded_op", {"x": 7})), answer("ran it")])
    agent.subagents[0].tools = AgentToolConfig(enabled=["guarded_op"])
    session = AgentSession(agent, crew_catalog())
    detach = session.attach_approver()  # the chat view does this
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await wait_until(lambda: any(isinstance(innermost(e), ApprovalRequestEvent)
                                 for e in recorder.events))
    request = next(e for e in recorder.events if isinstance(innermost(e), ApprovalRequestEvent))
    assert request.id == "d1" and innermost(request).id == "g1"
    assert session.handle_command({"type": "approve", "id": "g1",
                                   "decision": "allow_once"}) is None
    await task
    detach()
    assert support.ran == ["guarded_op 7"]
    assert session.subagents["d1"].messages[-2].tool_results[0].content == "ran 7"


async def test_without_a_ui_a_childs_approval_falls_to_the_parents_policy() -> None:
    support.ran.clear()
    agent, _, _ = _crew([delegations(("d1", "researcher", "x")), answer("ok")],
                        researcher=[calls(("g1", "guarded_op", {"x": 1})), answer("no")])
    agent.subagents[0].tools = AgentToolConfig(enabled=["guarded_op"])
    await AgentSession(agent, crew_catalog(), approval_policy="reject").run("go")
    assert support.ran == []
    support.ran.clear()
    agent.subagents[0].model = FakeProvider([calls(("g1", "guarded_op", {"x": 2})),
                                             answer("yes")])
    agent.model = FakeProvider([delegations(("d1", "researcher", "x")), answer("ok")])
    await AgentSession(agent, crew_catalog(), approval_policy="allow").run("go")
    assert support.ran == ["guarded_op 2"]


# --- stopping ----------------------------------------------------------------------------

async def test_stopping_one_child_leaves_the_other_and_the_parent_running() -> None:
    held, other = Gate(), Gate()
    agent, planner, _ = _crew(
        [delegations(("d1", "researcher", "slow"), ("d2", "coder", "quick")),
         answer("Carried on without the researcher.")],
        researcher=[[TextDelta("Partial findings"), held, *answer("never")]],
        coder=[[TextDelta("Quick "), other, *answer("answer")]])
    session = AgentSession(agent, crew_catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await asyncio.wait_for(asyncio.gather(held.reached.wait(), other.reached.wait()), 10)
    assert session.handle_command({"type": "stop", "subagent": "d1"}) is None
    await recorder.wait_for("subagent_end")
    assert session.running and session.subagents["d2"].running
    other.opened.set()
    await task
    ends = {e.id: e for e in recorder.of("subagent_end")}
    assert ends["d1"].status == "cancelled" and ends["d2"].status == "done"
    assert ends["d1"].result == ("The user stopped sub-agent 'researcher' before it "
                                 "finished.\n\nWhat it had written so far:\nPartial findings")
    results = {p.tool_call_id: p for m in planner.requests[1].messages for p in m.tool_results}
    assert results["d1"].is_error and results["d2"].content == "Quick answer"
    assert recorder.of("done")[-1].stop_reason == "end_turn"
    researcher = session.subagents["d1"]
    assert researcher.messages[-1].metadata.interrupted == "cancelled"
    assert researcher.messages[-1].text == "Partial findings"
    for child in (session, *session.subagents.values()):
        assert_valid_history(child.messages)
    assert session.stop_subagent("d1") is False and session.stop_subagent("nope") is False


async def test_the_parents_stop_cancels_every_child_and_keeps_every_history_valid(
        tmp_path: Path) -> None:
    first, second = Gate(), Gate()
    store = SessionStore(tmp_path / "s.sqlite3")
    agent, _, _ = _crew(
        [delegations(("d1", "researcher", "a"), ("d2", "coder", "b"))],
        researcher=[[TextDelta("r"), first]], coder=[[TextDelta("c"), second]])
    session = AgentSession(agent, crew_catalog(), store)
    recorder = Recorder()
    session.subscribe(recorder)
    running_at_done: list[bool] = []

    def at_done(event: Any) -> None:
        if event.type == "done":
            running_at_done.extend(child.running for child in session.subagents.values())

    session.subscribe(at_done)
    task = session.start("go")
    await asyncio.wait_for(asyncio.gather(first.reached.wait(), second.reached.wait()), 10)
    session.handle_command({"type": "stop"})
    await task
    assert recorder.types[-1] == "done" and recorder.events[-1].stop_reason == "cancelled"
    ends = recorder.of("subagent_end")
    assert sorted(e.status for e in ends) == ["cancelled", "cancelled"]
    # Children close before the parent: each child's end comes before the parent closes
    # that call, and no child is still running when the parent says `done`.
    position = {(e.type, e.id): n for n, e in enumerate(recorder.events)
                if e.type in ("subagent_end", "tool_result")}
    for call_id in ("d1", "d2"):
        assert position[("subagent_end", call_id)] < position[("tool_result", call_id)]
    assert running_at_done == [False, False]
    children = session.subagents
    assert all(not child.running for child in children.values())
    session.flush()
    for child in (session, *children.values()):
        child.flush()
        assert_valid_history(child.messages)
        assert_valid_history(store.load_messages(child.id))
    executions = session.messages[1].metadata.tool_executions
    assert {e.subagent.status for e in executions if e.subagent} == {"cancelled"}
    assert {e.status for e in executions} == {"cancelled"}


# --- storage -----------------------------------------------------------------------------

async def test_children_are_stored_linked_and_listed_under_their_parent(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.sqlite3")
    agent, _, _ = _crew([delegations(("d1", "researcher", "a"), ("d2", "coder", "b")),
                         answer("ok")],
                        researcher=[answer("r")], coder=[answer("c")])
    session = AgentSession(agent, crew_catalog(), store)
    await session.run("go")
    for child in (session, *session.subagents.values()):
        child.flush()
    listed = store.list_sessions()
    assert [r.id for r in listed] == [session.id] and listed[0].child_count == 2
    children = store.list_children(session.id)
    assert [(r.parent_id, r.parent_call_id, r.agent["name"]) for r in children] == [
        (session.id, "d1", "researcher"), (session.id, "d2", "coder")]
    assert store.get_session(children[0].id).parent_id == session.id  # type: ignore[union-attr]

    resumed = AgentSession.resume(session.id, store, catalog=crew_catalog())
    runs = [e.subagent for e in resumed.messages[1].metadata.tool_executions]
    assert [(r.agent, r.status, r.session_id) for r in runs if r] == [
        ("researcher", "done", children[0].id), ("coder", "done", children[1].id)]
    assert [m.text for m in store.load_messages(children[0].id)] == ["a", "r"]
    # The resumed parent still has its crew (the definition is stored with it).
    assert [a.name for a in resumed.agent.subagents] == ["researcher", "coder"]
    assert "delegate" in resumed.preview().tool_names

    store.delete_session(session.id)
    assert store.list_children(session.id) == [] and store.get_session(children[0].id) is None


def test_an_old_database_gains_the_parent_column(tmp_path: Path) -> None:
    path = tmp_path / "old.sqlite3"
    with sqlite3.connect(path) as db:
        db.executescript("CREATE TABLE sessions (id TEXT PRIMARY KEY, data TEXT NOT NULL, "
                         "updated_at REAL NOT NULL);")
        db.execute("INSERT INTO sessions VALUES (?, ?, ?)",
                   ("old", SessionRecord(id="old", title="Before sub-agents")
                    .model_dump_json(exclude={"parent_id", "parent_call_id", "child_count"}),
                    1.0))
        db.execute("INSERT INTO sessions VALUES ('broken', '{not json', 2.0)")
    store = SessionStore(path)
    assert [(r.id, r.title, r.child_count) for r in store.list_sessions()] == [
        ("old", "Before sub-agents", 0)]
    store.save_session(SessionRecord(id="kid", parent_id="old", parent_call_id="c1"))
    assert store.list_sessions()[0].child_count == 1
    assert store.get_session("old").child_count == 1  # type: ignore[union-attr]
    assert [r.id for r in SessionStore(path).list_children("old")] == ["kid"]  # reopened


async def test_a_sidebar_row_carries_the_child_count(tmp_path: Path) -> None:
    from neta_nb.widgets import SessionSidebar

    store = SessionStore(tmp_path / "s.sqlite3")
    store.save_session(SessionRecord(id="top"))
    store.append_message("top", Message.user("hi"))
    store.save_session(SessionRecord(id="kid", parent_id="top", parent_call_id="c1"))
    sidebar = SessionSidebar(store)
    assert [(row["id"], row["child_count"]) for row in sidebar.sessions] == [("top", 1)]


@pytest.mark.parametrize("event", [TokenEvent(text="abc"), ApprovalRequestEvent(
    id="g1", name="guarded_op", args={"x": 1}), SubagentEvent(id="g", event=TokenEvent(text="x"))])
def test_a_wrapped_child_event_is_the_validated_event(event: Any) -> None:
    fast, validated = wrap_event("d1", event), SubagentEvent(id="d1", event=event)
    assert fast == validated and fast.event is event
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert fast.model_fields_set == validated.model_fields_set
    assert repr(fast) == repr(validated)
    with pytest.raises(ValidationError):
        fast.id = "changed"  # type: ignore[misc]  # frozen, like any event
    assert parse_event(fast.model_dump_json()) == validated


@pytest.mark.parametrize("bad", [{"max_parallel_subagents": 0}, {"max_subagent_depth": -1}])
def test_crew_limits_are_checked(bad: dict[str, int]) -> None:
    with pytest.raises(ValueError, match="must be"):
        Agent("a", **bad)  # type: ignore[arg-type]


def test_subagent_names_are_unique() -> None:
    with pytest.raises(ValueError, match="repeated: twin"):
        Agent("a", subagents=[Agent("twin"), Agent("twin")])


def test_a_sessions_tool_panel_resolves_delegate_as_the_session_does() -> None:
    from neta_nb.widgets import ToolConfigPanel

    alone = ToolConfigPanel.for_session(AgentSession(Agent("solo", model=FakeProvider([])),
                                                     crew_catalog()))
    assert "delegate" not in alone.enabled_tools
    assert alone.states["delegate"]["reason"] == (
        "Offered only to an agent with sub-agents (within the nesting limit)")
    agent, _, _ = _crew([], researcher=[])
    session = AgentSession(agent, crew_catalog())
    crew = ToolConfigPanel.for_session(session)
    assert "delegate" in crew.enabled_tools
    preview = crew._request_preview({})
    (definition,) = [d for d in preview["tools"] if d["name"] == "delegate"]
    assert definition["parameters"]["properties"]["agent"]["enum"] == ["researcher"]
    assert [d["name"] for d in preview["tools"]] == session.preview().tool_names


async def test_a_kernel_interrupt_in_a_child_stops_the_whole_tree() -> None:
    from neta_nb import tool

    @tool(core=True, runs_on_main_thread=True)
    def stuck() -> str:
        """Stands for code interrupted on the kernel's thread."""
        raise KeyboardInterrupt

    catalog = crew_catalog()
    catalog.register(stuck)
    agent, planner, _ = _crew([delegations(("d1", "researcher", "x")), answer("never")],
                              researcher=[calls(("s1", "stuck", {})), answer("never")])
    session = AgentSession(agent, catalog)
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run("go")
    assert recorder.of("subagent_end")[0].status == "interrupted"
    assert recorder.events[-1].stop_reason == "interrupted"
    assert len(planner.requests) == 1  # the parent stopped instead of reading the result
    for each in (session, *session.subagents.values()):
        assert_valid_history(each.messages)


async def test_a_closed_view_leaves_no_child_waiting_for_an_answer() -> None:
    support.ran.clear()
    agent, _, _ = _crew([delegations(("d1", "researcher", "x")), answer("ok")],
                        researcher=[calls(("g1", "guarded_op", {"x": 3})), answer("no")])
    agent.subagents[0].tools = AgentToolConfig(enabled=["guarded_op"])
    session = AgentSession(agent, crew_catalog(), approval_policy="reject")
    task, _, detach = await start_until_a_child_asks(session)
    detach()  # the chat view closed: the policy decides the child's pending request
    async with asyncio.timeout(10):
        await task
    assert support.ran == []
    refused = session.subagents["d1"].messages[2].tool_results[0]
    assert refused.is_error and "no one was there to give it" in refused.content
