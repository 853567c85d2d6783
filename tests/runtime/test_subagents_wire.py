"""Sub-agents through the real SDKs against the local SSE server: a planner on the
Anthropic Messages API delegating to children on the OpenAI Chat Completions API, each
model on a server of its own, so every request a child sends is on record."""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog, tool
from neta_nb.events import SubagentEvent, TokenEvent
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
from ..support.sessions import Recorder, assert_valid_history, plus
from ..support.timing import wait_until

ran: list[str] = []


@tool(core=True)
def forbidden(note: str) -> str:
    """A tool disabled globally in these tests."""
    ran.append(f"forbidden {note}")
    return "should never run"


@tool(core=True)
def secret(note: str) -> str:
    """A core tool the child's own config switches off."""
    ran.append(f"secret {note}")
    return "should never run"


@pytest.fixture
async def servers() -> AsyncIterator[tuple[SSEServer, SSEServer, SSEServer]]:
    async with SSEServer() as planner, SSEServer() as researcher, SSEServer() as coder:
        yield planner, researcher, coder


def _catalog() -> ToolCatalog:
    catalog = ToolCatalog.default()
    for item in (plus, forbidden, secret):
        catalog.register(item)
    catalog.disable("forbidden")
    return catalog


def _planner_delegating(*calls: tuple[str, str, str]) -> AnthropicStream:
    stream = AnthropicStream().text(["I will delegate."])
    for call_id, agent, task in calls:
        args = json.dumps({"agent": agent, "task": task})
        stream.tool_use(call_id, "delegate", [args[:10], args[10:]])
    return stream.finish("tool_use")


def _crew(planner: SSEServer, researcher: SSEServer, coder: SSEServer, **options: Any
          ) -> Agent:
    def openai(server: SSEServer) -> OpenAIProvider:
        return OpenAIProvider("gpt-4.1", api_key="test-key", base_url=server.base_url,
                              max_retries=0)

    return Agent(
        "planner", system_prompt="You plan and delegate.",
        model=AnthropicProvider("claude-sonnet-4-5", api_key="test-key",
                                base_url=planner.base_url, max_retries=0),
        tools=AgentToolConfig(enabled=["python"]),  # a grant the children lack
        subagents=[
            Agent("researcher", model=openai(researcher), description="Finds facts.",
                  system_prompt="You research.",
                  tools=AgentToolConfig(disabled=["read_file", "secret"])),
            Agent("coder", model=openai(coder), description="Writes code.",
                  system_prompt="You write code."),
        ], **options)


def _answer(pieces: list[str]) -> OpenAIStream:
    return OpenAIStream().text(pieces).finish().usage(40, 9).done()


async def test_a_childs_request_carries_its_own_prompt_and_exactly_its_tools(
        servers: tuple[SSEServer, SSEServer, SSEServer]) -> None:
    planner, researcher, coder = servers
    ran.clear()
    planner.add(_planner_delegating(("toolu_1", "researcher", "Find the facts.")).response(),
                AnthropicStream().text(["Thanks."]).finish().response())
    # The child's model calls a globally disabled tool, one its config switched off and
    # one only the parent was granted; then it answers.
    calling = OpenAIStream()
    for index, name in enumerate(("forbidden", "secret", "python")):
        calling.tool_call_start(index, f"call_{index}", name, json.dumps({"note": "x"}))
    researcher.add(calling.finish("tool_calls").usage(50, 10).done().response(),
                   _answer(["The facts: ", "water is wet."]).response())
    session = AgentSession(_crew(planner, researcher, coder), _catalog())
    await session.run("Research something")

    child = session.subagents["toolu_1"]
    first = researcher.requests[0].json
    assert first["messages"][0] == {"role": "system", "content": "You research."}
    assert first["messages"][1] == {"role": "user", "content": "Find the facts."}
    sent = [t["function"]["name"] for t in first["tools"]]
    assert sent == child.preview().tool_names == ["list_files", "todo", "profile_table",
                                                   "plus"]
    parent_sent = [t["name"] for t in planner.requests[0].json["tools"]]
    assert {"python", "delegate"} <= set(parent_sent)
    # Refused, never run: each call got the resolver's refusal as its result.
    assert ran == []
    results = [m for m in researcher.requests[1].json["messages"] if m["role"] == "tool"]
    assert [r["tool_call_id"] for r in results] == ["call_0", "call_1", "call_2"]
    assert "disabled globally" in results[0]["content"]
    assert "switched off for this agent" in results[1]["content"]
    assert "not enabled for this agent" in results[2]["content"]
    # The child's answer is the delegate result in the parent's next request.
    follow_up = planner.requests[1].json["messages"]
    result = follow_up[-1]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    assert result["content"] in ("The facts: water is wet.",
                                 [{"type": "text", "text": "The facts: water is wet."}])
    assert_valid_history(session.messages)
    assert_valid_history(child.messages)


async def _both_streaming(recorder: Recorder, ids: set[str]) -> None:
    await wait_until(lambda: ids <= {e.id for e in recorder.events
                                     if isinstance(e, SubagentEvent)
                                     and isinstance(e.event, TokenEvent)}, 20)


async def test_two_children_stream_at_the_same_time(
        servers: tuple[SSEServer, SSEServer, SSEServer]) -> None:
    planner, researcher, coder = servers
    planner.add(_planner_delegating(("toolu_r", "researcher", "a"),
                                    ("toolu_c", "coder", "b")).response(),
                AnthropicStream().text(["Both answered."]).finish().response())
    # Each child's stream stops before its end until the other child has streamed:
    # run one after the other, the first would wait forever.
    researcher_gate, coder_gate = asyncio.Event(), asyncio.Event()
    held_r = _answer(["Research ", "result"]).response()
    held_r.hold_open = researcher_gate
    held_c = _answer(["Code ", "result"]).response()
    held_c.hold_open = coder_gate
    researcher.add(held_r)
    coder.add(held_c)
    session = AgentSession(_crew(planner, researcher, coder), _catalog())
    recorder = Recorder()

    def open_the_other(event: Any) -> None:
        if isinstance(event, SubagentEvent) and isinstance(event.event, TokenEvent):
            (coder_gate if event.id == "toolu_r" else researcher_gate).set()

    session.subscribe(recorder)
    session.subscribe(open_the_other)
    async with asyncio.timeout(30):
        await session.run("Delegate both")
    streamed = [(n, e.id) for n, e in enumerate(recorder.events)
                if isinstance(e, SubagentEvent) and isinstance(e.event, TokenEvent)]
    ends = {e.id: n for n, e in enumerate(recorder.events) if e.type == "subagent_end"}
    # Interleaved: each child streamed before the other one ended.
    assert min(n for n, i in streamed if i == "toolu_c") < ends["toolu_r"]
    assert min(n for n, i in streamed if i == "toolu_r") < ends["toolu_c"]
    results = {b["tool_use_id"]: b for b in planner.requests[1].json["messages"][-1]["content"]}
    assert set(results) == {"toolu_r", "toolu_c"}


async def test_stopping_one_child_leaves_the_other_and_the_parent_running(
        servers: tuple[SSEServer, SSEServer, SSEServer]) -> None:
    planner, researcher, coder = servers
    planner.add(_planner_delegating(("toolu_r", "researcher", "slow"),
                                    ("toolu_c", "coder", "quick")).response(),
                AnthropicStream().text(["Went on without it."]).finish().response())
    never = asyncio.Event()
    held = _answer(["Half ", "way"]).response()
    held.hold_open = never  # this child only ends by being stopped
    researcher.add(held)
    coder_gate = asyncio.Event()
    quick = _answer(["Quick ", "answer"]).response()
    quick.hold_open = coder_gate
    coder.add(quick)
    session = AgentSession(_crew(planner, researcher, coder), _catalog())
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("Delegate both")
    await _both_streaming(recorder, {"toolu_r", "toolu_c"})
    session.handle_command({"type": "stop", "subagent": "toolu_r"})
    await recorder.wait_for("subagent_end")
    assert session.running and session.subagents["toolu_c"].running
    coder_gate.set()
    async with asyncio.timeout(20):
        await task
    ends = {e.id: e.status for e in recorder.of("subagent_end")}
    assert ends == {"toolu_r": "cancelled", "toolu_c": "done"}
    results = {b["tool_use_id"]: b for b in planner.requests[1].json["messages"][-1]["content"]}
    assert results["toolu_r"]["is_error"] is True
    stopped = json.dumps(results["toolu_r"]["content"])
    assert "The user stopped sub-agent 'researcher' before it finished." in stopped
    assert "Quick answer" in json.dumps(results["toolu_c"]["content"])
    assert recorder.of("done")[-1].stop_reason == "end_turn"
    assert len(researcher.requests) == 1  # the stopped child made no further call
    for each in (session, *session.subagents.values()):
        assert_valid_history(each.messages)


async def test_the_parents_stop_cancels_every_child_and_every_history_stays_valid(
        servers: tuple[SSEServer, SSEServer, SSEServer], tmp_path: Any) -> None:
    planner, researcher, coder = servers
    planner.add(_planner_delegating(("toolu_r", "researcher", "a"),
                                    ("toolu_c", "coder", "b")).response())
    for server in (researcher, coder):
        held = _answer(["Some ", "text"]).response()
        held.hold_open = asyncio.Event()
        server.add(held)
    store = SessionStore(tmp_path / "s.sqlite3")
    session = AgentSession(_crew(planner, researcher, coder), _catalog(), store)
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("Delegate both")
    await _both_streaming(recorder, {"toolu_r", "toolu_c"})
    session.handle_command({"type": "stop"})
    async with asyncio.timeout(20):
        await task
    assert recorder.events[-1].type == "done" and recorder.events[-1].stop_reason == "cancelled"
    assert sorted(e.status for e in recorder.of("subagent_end")) == ["cancelled", "cancelled"]
    assert len(planner.requests) == 1
    children = list(session.subagents.values())
    for each in (session, *children):
        each.flush()
        assert not each.running
        assert_valid_history(each.messages)
        assert_valid_history(store.load_messages(each.id))
    # What each had streamed when Stop came is kept (its second piece may not be in yet).
    assert all(c.messages[-1].text in ("Some ", "Some text") for c in children)
    assert {c.messages[-1].metadata.interrupted for c in children} == {"cancelled"}
    resumed = AgentSession.resume(session.id, store, catalog=_catalog())
    runs = [e.subagent for e in resumed.messages[1].metadata.tool_executions]
    assert {r.status for r in runs if r} == {"cancelled"}
