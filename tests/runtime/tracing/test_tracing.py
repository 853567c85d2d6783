"""OpenTelemetry spans (issue 30): a turn, its model calls, tool calls, approvals, a
sub-agent, an MCP call and a compaction, collected by the OpenTelemetry SDK's own
in-memory exporter; the span ids kept with the cards; nothing made when nobody listens."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from opentelemetry.sdk.trace import ReadableSpan, TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from opentelemetry.trace import SpanKind, StatusCode

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.messages import SkillExecution, ToolExecution, Usage
from neta_nb.providers.base import ProviderError, StreamDone, TextDelta, UsageUpdate
from neta_nb.runtime.tracing import tracing
from neta_nb.runtime.tracing.tracing import UNTRACED, configure_tracing, turn_tracer

from ...support.delegation import crew_catalog, delegations
from ...support.sessions import FakeProvider, answer, calls, make_session, ran

TEST_SERVER = Path(__file__).parents[2] / "support" / "mcp_test_server.py"


@pytest.fixture
def spans() -> Iterator[InMemorySpanExporter]:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure_tracing(tracer_provider=provider)
    try:
        yield exporter
    finally:
        configure_tracing(tracer_provider=None, capture_content=None)


def _named(exporter: InMemorySpanExporter, prefix: str) -> list[ReadableSpan]:
    return [s for s in exporter.get_finished_spans() if s.name.startswith(prefix)]


def _one(exporter: InMemorySpanExporter, name: str) -> ReadableSpan:
    found = [s for s in exporter.get_finished_spans() if s.name == name]
    assert len(found) == 1, [s.name for s in exporter.get_finished_spans()]
    return found[0]


def _ids(span: ReadableSpan) -> dict[str, str]:
    context = span.get_span_context()
    assert context is not None
    return {"trace_id": f"{context.trace_id:032x}", "span_id": f"{context.span_id:016x}"}


def _parent_id(span: ReadableSpan) -> int | None:
    return span.parent.span_id if span.parent is not None else None


def _span_id(span: ReadableSpan) -> int:
    context = span.get_span_context()
    assert context is not None
    return context.span_id


async def test_a_turn_with_a_tool_gives_agent_chat_and_tool_spans_nested_and_kept_on_the_cards(
        spans: InMemorySpanExporter, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    usage = Usage(input_tokens=120, output_tokens=30, cache_read_tokens=50,
                  cache_write_tokens=7)
    session, _, _ = make_session([calls(("c1", "plus", {"a": 2, "b": 3}), usage=usage),
                                  answer("five")], store=store)
    await session.run("add")
    session.flush()

    turn = _one(spans, "invoke_agent reviewer")
    chats = _named(spans, "chat fake")
    tool = _one(spans, "execute_tool plus")
    assert turn.kind is SpanKind.INTERNAL and turn.parent is None
    assert turn.attributes is not None
    assert turn.attributes["gen_ai.operation.name"] == "invoke_agent"
    assert turn.attributes["gen_ai.conversation.id"] == session.id
    assert turn.attributes["neta_nb.stop_reason"] == "end_turn"
    # The turn's own usage: both calls (answer() reports 100 in, 20 out).
    assert turn.attributes["gen_ai.usage.input_tokens"] == 220
    assert turn.attributes["gen_ai.usage.output_tokens"] == 50
    assert len(chats) == 2 and all(_parent_id(c) == _span_id(turn) for c in chats)
    first = chats[0].attributes
    assert first is not None
    assert chats[0].kind is SpanKind.CLIENT
    assert first["gen_ai.provider.name"] == "scripted"
    assert first["gen_ai.request.model"] == "fake"
    assert first["gen_ai.usage.cache_read.input_tokens"] == 50
    assert first["gen_ai.usage.cache_creation.input_tokens"] == 7
    assert first["gen_ai.response.finish_reasons"] == ("tool_use",)
    assert isinstance(first["neta_nb.time_to_first_token"], float)
    assert first["neta_nb.thinking_level"]
    assert _parent_id(tool) == _span_id(turn)
    assert tool.attributes is not None
    assert tool.attributes["gen_ai.tool.call.id"] == "c1"
    assert tool.attributes["gen_ai.tool.type"] == "function"
    assert tool.attributes["neta_nb.tool.result_chars"] == 1
    assert tool.status.status_code is StatusCode.UNSET
    # Contents are off by default.
    everything = [s.attributes or {} for s in spans.get_finished_spans()]
    assert not any(k in a for a in everything for k in (
        "gen_ai.input.messages", "gen_ai.output.messages", "gen_ai.tool.call.arguments",
        "gen_ai.tool.call.result", "gen_ai.system_instructions"))

    # The ids are kept with the card and the message, and stored.
    assistant = session.messages[1]
    assert assistant.metadata.trace is not None
    assert assistant.metadata.trace.model_dump() == _ids(chats[0])
    execution = assistant.metadata.tool_executions[0]
    assert execution.trace is not None and execution.trace.model_dump() == _ids(tool)
    resumed = AgentSession.resume(session.id, store, agent=session.agent,
                                  catalog=session.catalog)
    again = resumed.messages[1].metadata.tool_executions[0].trace
    assert again is not None and again.model_dump() == _ids(tool)
    store.close()


async def test_contents_go_into_spans_only_when_asked(spans: InMemorySpanExporter) -> None:
    configure_tracing(tracer_provider=tracing._provider, capture_content=True)
    session, _, _ = make_session([calls(("c1", "plus", {"a": 2, "b": 3})), answer("five")],
                                 agent_options={"system_prompt": "Be brief."})
    await session.run("add two and three")
    first, second = _named(spans, "chat fake")
    assert first.attributes is not None and second.attributes is not None
    sent = json.loads(str(first.attributes["gen_ai.input.messages"]))
    assert sent == [{"role": "user", "parts": [{"type": "text",
                                                "content": "add two and three"}]}]
    assert "Be brief." in str(first.attributes["gen_ai.system_instructions"])
    out = json.loads(str(first.attributes["gen_ai.output.messages"]))
    assert out[0]["parts"][0] == {"type": "tool_call", "id": "c1", "name": "plus",
                                  "arguments": {"a": 2, "b": 3}}
    replied = json.loads(str(second.attributes["gen_ai.input.messages"]))
    assert replied[-1] == {"role": "tool", "parts": [{"type": "tool_call_response",
                                                      "id": "c1", "response": "5"}]}
    tool = _one(spans, "execute_tool plus")
    assert tool.attributes is not None
    assert json.loads(str(tool.attributes["gen_ai.tool.call.arguments"])) == {"a": 2, "b": 3}
    assert tool.attributes["gen_ai.tool.call.result"] == "5"


async def test_approval_decision_and_wait_are_on_the_tool_span(
        spans: InMemorySpanExporter) -> None:
    ran.clear()
    session, _, _ = make_session([calls(("g1", "guarded_op", {"x": 1}),
                                          ("g2", "guarded_op", {"x": 2})), answer("ok")])
    session.attach_approver()

    def decide(event: Any) -> None:
        if event.type == "approval_request":
            session.approve(event.id, "allow_once" if event.id == "g1" else "reject")
    session.subscribe(decide)
    await asyncio.wait_for(session.run("go"), 10)
    allowed, rejected = sorted(_named(spans, "execute_tool guarded_op"),
                               key=lambda s: str((s.attributes or {})["gen_ai.tool.call.id"]))
    assert allowed.attributes is not None and rejected.attributes is not None
    assert allowed.attributes["neta_nb.approval.decision"] == "allowed"
    assert isinstance(allowed.attributes["neta_nb.approval.wait"], float)
    assert allowed.status.status_code is StatusCode.UNSET
    assert rejected.attributes["neta_nb.approval.decision"] == "rejected"
    assert rejected.status.status_code is StatusCode.ERROR
    assert rejected.attributes["error.type"] == "rejected"
    assert ran == ["guarded_op 1"]


async def test_a_sub_agents_turn_nests_under_its_delegate_call(
        spans: InMemorySpanExporter) -> None:
    child = FakeProvider([answer("found it")], model="child-model")
    planner = FakeProvider([delegations(("d1", "researcher", "look")), answer("done")])
    agent = Agent("planner", model=planner, tools=AgentToolConfig(),
                  subagents=[Agent("researcher", model=child, description="looks things up")])
    session = AgentSession(agent, crew_catalog())
    await session.run("go")
    parent_turn = _one(spans, "invoke_agent planner")
    delegate = _one(spans, "execute_tool delegate")
    child_turn = _one(spans, "invoke_agent researcher")
    child_chat = _one(spans, "chat child-model")
    assert _parent_id(delegate) == _span_id(parent_turn)
    assert _parent_id(child_turn) == _span_id(delegate)
    assert _parent_id(child_chat) == _span_id(child_turn)
    trace_ids = {s.get_span_context().trace_id  # type: ignore[union-attr]
                 for s in spans.get_finished_spans()}
    assert len(trace_ids) == 1
    card = session.messages[1].metadata.tool_executions[0]
    assert card.trace is not None and card.trace.model_dump() == _ids(delegate)


async def test_a_provider_error_and_a_stop_end_their_spans_as_errors(
        spans: InMemorySpanExporter) -> None:
    session, _, _ = make_session([[TextDelta("part"), ProviderError("overloaded")]])
    await session.run("x")
    chat = _one(spans, "chat fake")
    assert chat.status.status_code is StatusCode.ERROR
    assert chat.attributes is not None and chat.attributes["error.type"] == "ProviderError"
    turn = _one(spans, "invoke_agent reviewer")
    assert turn.status.status_code is StatusCode.ERROR
    spans.clear()

    gate = asyncio.Event()
    session, rec, _ = make_session([[TextDelta("a"), gate.wait, TextDelta("b"),
                                     UsageUpdate(Usage()), StreamDone("end_turn")]])
    task = session.start("y")
    await rec.wait_for("token")
    session.cancel()
    await asyncio.wait_for(task, 5)
    chat = _one(spans, "chat fake")
    assert chat.attributes is not None and chat.attributes["error.type"] == "cancelled"
    turn = _one(spans, "invoke_agent reviewer")
    assert turn.attributes is not None and turn.attributes["neta_nb.stop_reason"] == "cancelled"


async def test_a_compaction_has_its_span(spans: InMemorySpanExporter) -> None:
    provider = FakeProvider([answer("one"), answer("two"),
                             [TextDelta("- summary"), UsageUpdate(Usage(input_tokens=900)),
                              StreamDone("end_turn")]], context_window=1_000)
    session = AgentSession(Agent("a", model=provider, keep_recent_turns=1, compact_at=None),
                           ToolCatalog.default())
    await session.run("q1")
    await session.run("q2")
    assert await session.compact() is not None
    span = _one(spans, "neta_nb.compaction")
    assert span.attributes is not None
    assert span.attributes["neta_nb.compaction.folded"] == 2
    assert isinstance(span.attributes["neta_nb.compaction.tokens_after"], int)


async def test_an_mcp_call_nests_under_its_tool_span(spans: InMemorySpanExporter) -> None:
    default_catalog = ToolCatalog.default()
    server = await default_catalog.add_mcp_server("t", command=sys.executable,
                                                  args=[str(TEST_SERVER), "stdio"])
    try:
        name = next(n for n in server.tool_names if n.endswith("__echo"))
        provider = FakeProvider([calls(("m1", name, {"text": "hi"})), answer("ok")])
        session = AgentSession(Agent("a", model=provider,
                                     tools=AgentToolConfig(enabled=[name])), default_catalog)
        await session.run("echo")
        tool = _one(spans, f"execute_tool {name}")
        mcp = _one(spans, "tools/call echo")
        assert _parent_id(mcp) == _span_id(tool)
        assert tool.attributes is not None and mcp.attributes is not None
        assert tool.attributes["gen_ai.tool.type"] == "extension"
        assert mcp.attributes["mcp.method.name"] == "tools/call"
        assert mcp.attributes["neta_nb.mcp.server"] == "t"
    finally:
        await default_catalog.remove_mcp_server("t")


async def test_nobody_listening_means_no_spans_and_nothing_stored() -> None:
    assert turn_tracer() is UNTRACED  # no provider set in this process
    session, _, _ = make_session([calls(("c1", "plus", {"a": 1, "b": 1})), answer("2")])
    await session.run("x")
    dumped = [m.model_dump_json() for m in session.messages]
    assert not any('"trace"' in text for text in dumped)


def test_the_global_provider_is_used_when_the_application_sets_one(tmp_path: Path) -> None:
    """The usual set-up: the application calls ``trace.set_tracer_provider`` (once per
    process, hence a process of its own)."""
    script = textwrap.dedent("""
        import asyncio, json
        from opentelemetry import trace
        from opentelemetry.sdk.trace import TracerProvider
        from opentelemetry.sdk.trace.export import SimpleSpanProcessor
        from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
        from neta_nb import Agent, AgentSession, ToolCatalog
        from neta_nb.providers import ScriptedProvider

        session = AgentSession(Agent("demo", model=ScriptedProvider()), ToolCatalog.default())
        asyncio.run(session.run("before"))  # nobody listens yet
        exporter = InMemorySpanExporter()
        provider = TracerProvider()
        provider.add_span_processor(SimpleSpanProcessor(exporter))
        trace.set_tracer_provider(provider)
        asyncio.run(session.run("after"))
        print(json.dumps(sorted({s.name.split()[0] for s in exporter.get_finished_spans()})))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    names = json.loads(done.stdout.strip().splitlines()[-1])
    assert "invoke_agent" in names and "chat" in names


class _BrokenProcessor(SimpleSpanProcessor):
    """A span processor of the user's that raises wherever it is called."""

    def on_start(self, span: Any, parent_context: Any = None) -> None:
        raise RuntimeError("processor bug")

    def on_end(self, span: Any) -> None:
        raise RuntimeError("processor bug")


async def test_a_tracer_that_raises_costs_the_trace_never_the_turn() -> None:
    provider = TracerProvider()
    provider.add_span_processor(_BrokenProcessor(InMemorySpanExporter()))
    configure_tracing(tracer_provider=provider, capture_content=True)
    try:
        session, rec, _ = make_session([calls(("c1", "plus", {"a": 2, "b": 3})),
                                        answer("five")])
        await session.run("add")
    finally:
        configure_tracing(tracer_provider=None, capture_content=None)
    assert rec.of("done")[-1].stop_reason == "end_turn"
    assert session.messages[-1].text == "five"
    assert session.messages[2].tool_results[0].content == "5"


def test_a_session_nobody_traces_never_imports_opentelemetry() -> None:
    """No provider set and OpenTelemetry not imported by the application: the turn path
    does not import it either (its import and its objects cost nothing)."""
    script = textwrap.dedent("""
        import asyncio, sys
        from neta_nb import Agent, AgentSession, ToolCatalog
        from neta_nb.providers.scripted.scripted import ScriptedProvider
        session = AgentSession(Agent("demo", model=ScriptedProvider()), ToolCatalog.demo(),
                               working_dir="notebooks/data")
        asyncio.run(session.run("go"))
        print(sorted(name for name in sys.modules if name.startswith("opentelemetry")))
    """)
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).parents[3])
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "[]"


# --- found by review: each failed before its fix ----------------------------------------

async def test_a_provider_that_cannot_give_a_tracer_costs_the_trace_not_the_turn() -> None:
    exporter = InMemorySpanExporter()
    tracer = TracerProvider().get_tracer("x")  # a tracer where a provider belongs
    configure_tracing(tracer_provider=tracer)  # type: ignore[arg-type]
    try:
        session, rec, _ = make_session([answer("one"), answer("two")])
        await session.run("a")
        assert not session.running and rec.of("done")[-1].stop_reason == "end_turn"
        await session.run("b")
        assert session.messages[-1].text == "two"
    finally:
        configure_tracing(tracer_provider=None)
    assert exporter.get_finished_spans() == ()


async def test_a_turn_started_from_done_is_a_trace_of_its_own(
        spans: InMemorySpanExporter) -> None:
    session, _, _ = make_session([answer("one"), answer("two")])
    started: list[Any] = []

    def next_turn(event: Any) -> None:
        if event.type == "done" and not started:
            started.append(session.start("second"))
    session.subscribe(next_turn)
    await session.run("first")
    await started[0]
    first, second = _named(spans, "invoke_agent")
    assert first.parent is None and second.parent is None
    assert first.get_span_context().trace_id != second.get_span_context().trace_id  # type: ignore[union-attr]


async def test_a_failed_call_keeps_its_span_and_the_providers_spans_nest_under_it(
        spans: InMemorySpanExporter) -> None:
    inner: list[Any] = []

    def instrumentation() -> None:  # what an HTTP client's instrumentation would do
        provider = tracing._provider
        assert provider is not None
        with provider.get_tracer("http").start_as_current_span("POST /v1/messages") as span:
            inner.append(span)

    session, _, _ = make_session([[instrumentation, TextDelta("half"),
                                   ProviderError("overloaded")]])
    await session.run("x")
    chat = _one(spans, "chat fake")
    assert _parent_id(_one(spans, "POST /v1/messages")) == _span_id(chat)
    partial = session.messages[-1]
    assert partial.metadata.interrupted == "error"
    assert partial.metadata.trace is not None
    assert partial.metadata.trace.model_dump() == _ids(chat)


async def test_spans_nobody_records_leave_no_ids() -> None:
    from opentelemetry.sdk.trace.sampling import ALWAYS_OFF

    configure_tracing(tracer_provider=TracerProvider(sampler=ALWAYS_OFF))
    try:
        session, _, _ = make_session([calls(("c1", "plus", {"a": 1, "b": 1})), answer("2")])
        await session.run("x")
    finally:
        configure_tracing(tracer_provider=None)
    assert not any('"trace"' in m.model_dump_json() for m in session.messages)


def _semconv_names() -> set[str]:
    from opentelemetry.semconv._incubating.attributes import (
        error_attributes,
        gen_ai_attributes,
        mcp_attributes,
    )
    names: set[str] = set()
    for module in (gen_ai_attributes, mcp_attributes, error_attributes):
        names |= {value for key, value in vars(module).items()
                  if key.isupper() and isinstance(value, str) and "." in value}
    return names


async def test_the_span_tree_of_a_full_turn_maps_one_to_one_onto_its_events(
        spans: InMemorySpanExporter) -> None:
    """Thinking, a tool, a skill, an approval, a sub-agent and an MCP call in one turn:
    each card of the event log has its span (by call id), each model call its chat span,
    the child's turn sits under its delegate call and the MCP call under its tool call;
    every standard-looking attribute is a GenAI (or MCP, error) convention name."""
    from ...support.sessions import Recorder, count_up, guarded_op, plus

    catalog = crew_catalog()
    catalog.register(count_up)
    server = await catalog.add_mcp_server("t", command=sys.executable,
                                          args=[str(TEST_SERVER), "stdio"])
    try:
        echo = next(n for n in server.tool_names if n.endswith("__echo"))
        child = FakeProvider([answer("found", thinking="Let me look.")], model="child-model")
        parent = FakeProvider([
            [*answer("", thinking="I plan the work.")[:3],
             *calls(("c_tool", "plus", {"a": 1, "b": 2}), ("c_skill", "count_up", {"steps": 2}),
                    ("c_ask", "guarded_op", {"x": 1}), ("c_mcp", echo, {"text": "hi"}),
                    ("c_sub", "delegate", {"agent": "researcher", "task": "look"}))],
            answer("all done")])
        tools = AgentToolConfig(enabled=["plus", "count_up", "guarded_op", echo, "delegate"])
        agent = Agent("planner", model=parent, tools=tools,
                      subagents=[Agent("researcher", model=child, description="looks")])
        session = AgentSession(agent, catalog)
        session.attach_approver()
        events = Recorder(history=True)
        session.subscribe(events)

        def approve(event: Any) -> None:
            if event.type == "approval_request":
                session.approve(event.id, "allow_once")
        session.subscribe(approve)
        await asyncio.wait_for(session.run("go"), 30)
    finally:
        await catalog.remove_mcp_server("t")
    assert plus and guarded_op  # the catalog's test tools

    finished = spans.get_finished_spans()
    by_call = {str((s.attributes or {})["gen_ai.tool.call.id"]): s for s in finished
               if s.name.startswith("execute_tool")}
    carded = {e.id for e in events.events if e.type in ("tool_call", "skill_start")}
    assert carded == set(by_call) == {"c_tool", "c_skill", "c_ask", "c_mcp", "c_sub"}
    assert [e.id for e in events.of("approval_request")] == ["c_ask"]
    assert (by_call["c_ask"].attributes or {})["neta_nb.approval.decision"] == "allowed"
    assert [e.id for e in events.of("subagent_start")] == ["c_sub"]
    turn = _one(spans, "invoke_agent planner")
    child_turn = _one(spans, "invoke_agent researcher")
    assert _parent_id(child_turn) == _span_id(by_call["c_sub"])
    assert _parent_id(_one(spans, "tools/call echo")) == _span_id(by_call["c_mcp"])
    assert all(_parent_id(by_call[c]) == _span_id(turn) for c in by_call)
    # One chat span per model call: the parent's two responses and the child's one.
    responses = [e for e in events.events if e.type == "message_appended"
                 and e.message.role == "assistant"]
    assert len(_named(spans, "chat fake")) == len(responses) == 2
    assert len(_named(spans, "chat child-model")) == 1
    # The cards keep their spans' ids.
    message = session.messages[1]
    cards: list[ToolExecution | SkillExecution] = [*message.metadata.tool_executions,
                                                   *message.metadata.skill_executions]
    for card in cards:
        assert card.trace is not None and card.trace.model_dump() == _ids(by_call[card.id])
    # Names: the conventions' own (or ours, under neta_nb.*).
    known = _semconv_names()
    for span in finished:
        for key in span.attributes or {}:
            assert key.startswith("neta_nb.") or key in known, (span.name, key)
    operations = {str((s.attributes or {})["gen_ai.operation.name"]) for s in finished
                  if s.attributes and "gen_ai.operation.name" in s.attributes}
    assert operations == {"invoke_agent", "chat", "execute_tool"}
