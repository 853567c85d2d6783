"""The ReAct loop: event sequences per visibility class, tools, limits, errors, cancel,
approval and thinking levels."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ToolCatalog, tool
from neta_nb.events import ApprovalDecision
from neta_nb.messages import TextPart, ThinkingPart, Usage
from neta_nb.providers.base import (
    ProviderError,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    UsageUpdate,
)

from ..support.sessions import (
    FakeProvider,
    Recorder,
    add,
    answer,
    calls,
    count_up,
    hanging_tool,
)
from ..support.timing import wait_until


@tool(core=True)
def explode() -> str:
    """Always fails."""
    raise RuntimeError("boom")


@tool(core=True, timeout=0.05)
async def hang() -> str:
    """Never returns."""
    await asyncio.Event().wait()
    return "unreachable"


ran: list[str] = []


@tool(core=True, requires_approval=True)
def guarded(x: int) -> str:
    """Needs approval."""
    ran.append(f"guarded {x}")
    return f"ran {x}"


@tool(core=False)
def secret() -> str:
    """Globally disabled in the tests."""
    ran.append("secret")
    return "leaked"


def make_session(responses: list[list[Any]], **kwargs: Any) -> tuple[AgentSession, Recorder,
                                                                      FakeProvider]:
    catalog = ToolCatalog.default()
    for extra in (add, count_up, explode, hang, guarded, secret):
        catalog.register(extra)
    catalog.disable("secret")
    provider = FakeProvider(responses, context_window=kwargs.pop("context_window", 10_000))
    agent = Agent("tester", model=provider,
                  tools=kwargs.pop("tools", AgentToolConfig(enabled=["secret"])),
                  **kwargs.pop("agent_options", {}))
    session = AgentSession(agent, catalog, **kwargs)
    recorder = Recorder()
    session.subscribe(recorder)
    return session, recorder, provider


async def test_plain_answer_streams_thinking_then_text() -> None:
    session, rec, _ = make_session([answer("Hello there", thinking="Let me think.")])
    final = await session.run("hi")
    assert rec.types == ["thinking_delta", "thinking_delta", "thinking_done", "token", "token",
                         "token_update", "done"]
    assert "".join(e.text for e in rec.of("thinking_delta")) == "Let me think."
    assert "".join(e.text for e in rec.of("token")) == "Hello there"
    assert rec.of("done")[0].stop_reason == "end_turn"
    assert final is not None and final.text == "Hello there"
    assert final.parts == [ThinkingPart(text="Let me think.", signature="sig"),
                           TextPart(text="Hello there")]
    assert [m.role for m in session.messages] == ["user", "assistant"]


async def test_internal_todo_emits_only_todo_update() -> None:
    plan = {"todos": [{"id": "1", "content": "Look", "status": "in_progress"},
                      {"id": "2", "content": "Answer", "status": "pending"}]}
    session, rec, provider = make_session([calls(("c1", "todo", plan)), answer("Done")])
    await session.run("plan it")
    assert "tool_call" not in rec.types and "tool_result" not in rec.types
    (update,) = rec.of("todo_update")
    assert update.summary == {"total": 2, "pending": 1, "in_progress": 1, "completed": 0,
                              "cancelled": 0}
    assert update.todos[0] == {"id": "1", "content": "Look", "status": "in_progress"}
    # The model still sees the result.
    tool_message = session.messages[2]
    assert tool_message.role == "tool" and tool_message.tool_name == "todo"
    assert '"summary"' in tool_message.tool_results[0].content
    assert provider.requests[1].messages[-1].tool_results[0].tool_call_id == "c1"
    assert session.todo.summary().total == 2


async def test_skill_emits_start_progress_end_and_is_recorded() -> None:
    session, rec, _ = make_session([calls(("s1", "count_up", {"steps": 4})), answer("ok")])
    await session.run("count")
    skill_events = [e for e in rec.events if e.type in ("skill_start", "progress", "skill_end")]
    assert [e.type for e in skill_events] == ["skill_start"] + ["progress"] * 4 + ["skill_end"]
    assert [e.percent for e in rec.of("progress")] == [25.0, 50.0, 75.0, 100.0]
    assert rec.of("progress")[0].step == "step 1"
    end = rec.of("skill_end")[0]
    assert (end.status, end.result, end.name) == ("done", "counted to 4", "count_up")
    assert "tool_call" not in rec.types
    (record,) = session.messages[1].metadata.skill_executions
    assert (record.status, record.percent, record.result, record.label) == (
        "done", 100.0, "counted to 4", "Count up")


async def test_plain_tool_emits_call_and_result_in_call_order() -> None:
    session, rec, _ = make_session([
        calls(("a", "add", {"a": 1, "b": 2}), ("b", "add", {"a": 5, "b": 5})), answer("3, 10")])
    await session.run("add")
    # Two calls of the same tool run one after the other, in call order.
    assert [(e.type, e.id) for e in rec.events if e.type.startswith("tool_")] == [
        ("tool_call", "a"), ("tool_result", "a"), ("tool_call", "b"), ("tool_result", "b")]
    assert [e.result for e in rec.of("tool_result")] == ["3", "10"]
    assert rec.of("tool_call")[0].label == "Add numbers"
    results = [m.tool_results[0] for m in session.messages if m.role == "tool"]
    assert [(r.tool_call_id, r.content, r.is_error) for r in results] == [
        ("a", "3", False), ("b", "10", False)]
    assert [r.status for r in session.messages[1].metadata.tool_executions] == ["done", "done"]


async def test_independent_calls_run_concurrently() -> None:
    gate = asyncio.Event()

    @tool(core=True)
    async def waiter() -> str:
        """Waits for the opener."""
        await gate.wait()
        return "waited"

    @tool(core=True)
    async def opener() -> str:
        """Opens the gate."""
        gate.set()
        return "opened"

    session, rec, _ = make_session([calls(("w", "waiter", {}), ("o", "opener", {})),
                                    answer("fine")])
    session.catalog.register(waiter)
    session.catalog.register(opener)
    # Sequential execution would wait forever on the gate.
    await asyncio.wait_for(session.run("go"), timeout=10)
    # Events arrive as calls finish; results go back to the model in call order.
    assert [e.result for e in rec.of("tool_result")] == ["opened", "waited"]
    assert [m.tool_results[0].content for m in session.messages if m.role == "tool"] == [
        "waited", "opened"]


async def test_bad_calls_become_error_results_and_handlers_never_run() -> None:
    ran.clear()
    session, rec, provider = make_session([
        calls(("u", "nope", {}), ("g", "secret", {}), ("j", "add", {}), ("t", "add",
              {"a": "x", "b": 1}), ("e", "explode", {}), ("h", "hang", {}),
              raw={"j": '{"a": 1,'}),
        answer("sorry")])
    await session.run("break things")
    results = {m.tool_results[0].tool_call_id: m.tool_results[0]
               for m in session.messages if m.role == "tool"}
    assert all(r.is_error for r in results.values())
    # The refusal the model reads is the resolver's own.
    assert results["u"].content == session.preview().resolution.refusal("nope")
    assert "no tool named 'nope'" in results["u"].content
    assert "add" in results["u"].content  # lists what can be called
    assert "not available to this agent" in results["g"].content
    assert "globally" in results["g"].content.lower()
    assert "not a JSON object" in results["j"].content and '{"a": 1,' in results["j"].content
    assert "a:" in results["t"].content and "integer" in results["t"].content
    assert "RuntimeError: boom" in results["e"].content
    assert "did not finish within 0.05 s" in results["h"].content
    assert ran == []
    # The next model call saw every result, in call order.
    sent = [m.tool_results[0].tool_call_id for m in provider.requests[1].messages
            if m.role == "tool"]
    assert sent == ["u", "g", "j", "t", "e", "h"]
    assert rec.of("done")[0].stop_reason == "end_turn"


async def test_provider_error_mid_stream_keeps_partial_and_session_stays_usable() -> None:
    session, rec, _ = make_session([
        [ThinkingDelta("hmm"), TextDelta("Partial an"),
         ProviderError("connection reset", retryable=True)],
        answer("Second try works")])
    result = await session.run("first")
    # The cut call is counted (it may be billed): its usage unknown, as the figures say.
    assert rec.types == ["thinking_delta", "thinking_done", "token", "token_update", "error",
                         "done"]
    assert rec.of("token_update")[0].current.unreported_calls == 1
    error = rec.of("error")[0]
    assert (error.message, error.retryable) == ("connection reset", True)
    assert rec.of("done")[0].stop_reason == "error"
    assert result is not None and result.text == "Partial an"
    assert result.metadata.interrupted == "error"
    assert result.metadata.error == "connection reset"
    await session.run("again")
    assert session.messages[-1].text == "Second try works"
    assert [m.role for m in session.messages] == ["user", "assistant", "user", "assistant"]


async def test_stream_without_terminal_event_is_an_error() -> None:
    session, rec, _ = make_session([[TextDelta("cut")]])
    await session.run("x")
    assert rec.of("error")[0].retryable is True
    assert session.messages[-1].metadata.interrupted == "error"


async def test_tool_calls_of_a_failed_response_are_closed() -> None:
    from neta_nb.providers.base import ToolCallReady

    session, _, provider = make_session([
        [ToolCallReady("c", "add", {"a": 1, "b": 1}), ProviderError("lost", retryable=True)],
        answer("fine")])
    await session.run("x")
    roles = [m.role for m in session.messages]
    assert roles == ["user", "assistant", "tool"]
    assert session.messages[2].tool_results[0].is_error
    await session.run("y")
    assert provider.requests[-1].messages[2].tool_results[0].tool_call_id == "c"


async def _cancel_when(session: AgentSession, rec: Recorder, kind: str, prompt: str) -> Any:
    task = session.start(prompt)
    await rec.wait_for(kind)
    assert session.cancel() is True
    return await asyncio.wait_for(task, timeout=5)


async def test_cancel_mid_thinking() -> None:
    forever = asyncio.Event()
    session, rec, _ = make_session([[ThinkingDelta("deep"), forever.wait], answer("next")])
    message = await _cancel_when(session, rec, "thinking_delta", "q")
    assert rec.types[-3:] == ["thinking_done", "token_update", "done"]
    assert rec.of("token_update")[-1].current.api_calls == 1  # the stopped call counts
    assert rec.of("done")[0].stop_reason == "cancelled"
    assert message.metadata.interrupted == "cancelled"
    assert message.parts == [ThinkingPart(text="deep")]
    assert not session.running
    await session.run("follow-up")
    assert session.messages[-1].text == "next"


async def test_cancel_mid_text() -> None:
    forever = asyncio.Event()
    session, rec, _ = make_session([[TextDelta("half of it"), forever.wait]])
    message = await _cancel_when(session, rec, "token", "q")
    assert message.text == "half of it" and message.metadata.interrupted == "cancelled"
    assert session.cancel() is False  # nothing running any more


async def test_cancel_mid_tool_closes_the_call() -> None:
    slow, started = hanging_tool("slow")
    session, rec, provider = make_session([calls(("s", "slow", {})), answer("after")])
    session.catalog.register(slow)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    session.cancel()
    await asyncio.wait_for(task, 5)
    last = session.messages[-1]
    assert last.role == "tool" and last.tool_results[0].is_error
    assert "cancelled" in last.tool_results[0].content
    assert session.messages[1].metadata.tool_executions[0].status == "cancelled"
    assert rec.of("done")[-1].stop_reason == "cancelled"
    await session.run("next")  # history is valid: the model is called again
    assert len(provider.requests) == 2


async def test_a_stop_keeps_what_finished_and_gives_every_call_a_card() -> None:
    slow, started = hanging_tool("slow")
    # One answer, four calls: `slow` hangs; a skill and `add` finish meanwhile; a second
    # `slow` waits for the first (one at a time) and never starts.
    session, rec, _ = make_session([calls(
        ("s1", "slow", {}), ("k", "count_up", {"steps": 2}), ("p", "add", {"a": 1, "b": 2}),
        ("s2", "slow", {}))])
    session.catalog.register(slow)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    metadata = session.messages[1].metadata
    await wait_until(lambda: {r.status for r in metadata.skill_executions} == {"done"}
                     and [r.status for r in metadata.tool_executions][1:] == ["done"])
    session.cancel()
    await asyncio.wait_for(task, 5)
    assert [(r.id, r.status) for r in metadata.tool_executions] == [
        ("s1", "cancelled"), ("p", "done"), ("s2", "cancelled")]  # s2's card: never started
    assert [(r.id, r.status) for r in metadata.skill_executions] == [("k", "done")]
    assert [e.id for e in rec.of("tool_call")] == ["s1", "p", "s2"]
    # The model is told what the cards say, in call order: finished results are kept.
    results = [m.tool_results[0] for m in session.messages[2:]]
    assert [(r.tool_call_id, r.content.split(":")[0]) for r in results] == [
        ("s1", "This call did not finish"), ("k", "counted to 2"), ("p", "3"),
        ("s2", "This call did not run")]
    assert [r.is_error for r in results] == [True, False, False, True]


async def test_approval_allow_once_always_and_reject() -> None:
    ran.clear()
    session, rec, _ = make_session([
        calls(("g1", "guarded", {"x": 1})), calls(("g2", "guarded", {"x": 2})),
        calls(("g3", "guarded", {"x": 3})), answer("done"),
        calls(("g4", "guarded", {"x": 4})), answer("done")])
    detach = session.attach_approver()
    decisions: Iterator[ApprovalDecision] = iter(["reject", "allow_once", "allow_always"])

    def on_event(event: Any) -> None:
        if event.type == "approval_request":
            asyncio.get_running_loop().call_soon(session.approve, event.id, next(decisions))

    session.subscribe(on_event)
    await session.run("approve things")
    assert [e.id for e in rec.of("approval_request")] == ["g1", "g2", "g3"]
    assert ran == ["guarded 2", "guarded 3"]
    first = session.messages[2].tool_results[0]
    assert first.is_error and "did not allow" in first.content
    # allow_always: the same tool no longer asks in this session.
    await session.run("again")
    assert len(rec.of("approval_request")) == 3 and ran[-1] == "guarded 4"
    detach()


async def test_approval_policy_without_ui() -> None:
    ran.clear()
    session, rec, _ = make_session([calls(("g", "guarded", {"x": 1})), answer("no")])
    await session.run("x")
    assert ran == [] and "approval_request" not in rec.types
    assert "needs the user's approval" in session.messages[2].tool_results[0].content

    seen: list[tuple[str, dict[str, Any]]] = []

    async def policy(name: str, args: dict[str, Any]) -> bool:
        seen.append((name, args))
        return True

    session, _, _ = make_session([calls(("g", "guarded", {"x": 7})), answer("yes")],
                                 approval_policy=policy)
    await session.run("x")
    assert seen == [("guarded", {"x": 7})] and ran == ["guarded 7"]


async def test_max_model_calls_ends_the_turn_with_a_reason() -> None:
    responses = [calls((f"c{n}", "add", {"a": n, "b": 0})) for n in range(3)]
    session, rec, provider = make_session(responses, agent_options={"max_model_calls": 3})
    await session.run("loop forever")
    assert rec.of("done")[-1].stop_reason == "max_model_calls"
    assert len(provider.requests) == 3
    assert session.messages[-1].role == "tool"


async def test_token_update_is_cumulative_with_context_percent() -> None:
    session, rec, _ = make_session([
        calls(("a", "add", {"a": 1, "b": 1}), usage=Usage(input_tokens=1000, output_tokens=50,
                                                            cache_read_tokens=500)),
        answer("2", usage=Usage(input_tokens=1600, output_tokens=400))],
        context_window=10_000)
    await session.run("x")
    first, second = rec.of("token_update")
    assert first.current.model_dump(exclude={"cost_usd", "cost_split",
                                             "session_cost_usd"}) == {
        "input_tokens": 1000, "output_tokens": 50, "total_tokens": 1050, "api_calls": 1,
        "unreported_calls": 0}
    assert first.current.cost_usd is None  # the fake model has no price
    assert first.context.model_dump() == {"used_tokens": 1550, "max_tokens": 10_000,
                                          "percent": 15.5, "estimate": None,
                                          "window_assumed": False}
    assert second.current.model_dump(exclude={"cost_usd", "cost_split",
                                              "session_cost_usd"}) == {
                                           "input_tokens": 2600, "output_tokens": 450,
                                           "total_tokens": 3050, "api_calls": 2,
                                           "unreported_calls": 0}
    assert second.context.percent == 20.0
    assert session.usage.input_tokens == 2600 and session.usage.cache_read_tokens == 500
    # A new turn starts counting again.
    session2, rec2, _ = make_session([answer("a"), answer("b")])
    await session2.run("1")
    await session2.run("2")
    assert [u.current.api_calls for u in rec2.of("token_update")] == [1, 1]


async def test_thinking_level_applies_from_next_call() -> None:
    session, _, provider = make_session([calls(("a", "add", {"a": 1, "b": 1})), answer("x"),
                                         answer("y")])
    session.set_thinking_level("high")
    original = session.catalog.get("add")
    assert original is not None

    levels_seen: list[str] = []

    def switch_level(event: Any) -> None:
        if event.type == "tool_result":
            levels_seen.append(session.think_level)
            session.set_thinking_level("low")

    session.subscribe(switch_level)
    await session.run("x")
    assert [r.think_level for r in provider.requests] == ["high", "low"]
    with pytest.raises(ValueError, match="unknown thinking level"):
        session.set_thinking_level("extreme")


async def test_broken_subscriber_does_not_break_the_turn(caplog: pytest.LogCaptureFixture
                                                         ) -> None:
    session, rec, _ = make_session([answer("fine")])

    def broken(event: Any) -> None:
        raise ValueError("ui bug")

    session.subscribe(broken)
    await session.run("x")
    assert rec.types[-1] == "done"
    assert "ui bug" in caplog.text


async def test_sessions_run_concurrently_without_interfering() -> None:
    gate = asyncio.Event()
    one, rec1, _ = make_session([[TextDelta("one"), gate.wait, UsageUpdate(Usage()),
                                  StreamDone("end_turn")]])
    two, rec2, _ = make_session([answer("two")])
    task = one.start("a")
    await two.run("b")  # finishes while the first is still streaming
    assert one.running and not two.running
    gate.set()
    await task
    assert "".join(e.text for e in rec1.of("token")) == "one"
    assert "".join(e.text for e in rec2.of("token")) == "two"


async def test_starting_a_second_turn_while_running_is_refused() -> None:
    gate = asyncio.Event()
    session, rec, _ = make_session([[TextDelta("x"), gate.wait, UsageUpdate(Usage()),
                                     StreamDone("end_turn")]])
    task = session.start("a")
    with pytest.raises(RuntimeError, match="already running"):
        session.start("b")  # started, not begun yet
    await rec.wait_for("token")
    with pytest.raises(RuntimeError, match="already running"):
        session.start("b")
    gate.set()
    await task


async def test_handle_command_dispatches_ui_commands() -> None:
    forever = asyncio.Event()
    session, rec, _ = make_session([[TextDelta("x"), forever.wait]])
    task = session.handle_command({"type": "send", "text": "hello"})
    assert task is not None
    await rec.wait_for("token")
    session.handle_command({"type": "set_thinking_level", "level": "low"})
    session.handle_command({"type": "stop"})
    await asyncio.wait_for(task, 5)
    assert rec.of("done")[0].stop_reason == "cancelled"
    assert session.think_level == "low"
    # Answering a request that is no longer pending is a harmless race with Stop.
    assert session.handle_command({"type": "approve", "id": "nope", "decision": "reject"}) is None
    assert session.approve("nope", "reject") is False


async def test_cancel_right_after_start_still_ends_the_turn() -> None:
    session, rec, provider = make_session([answer("later")])
    task = session.start("q")
    assert session.running
    assert session.cancel() is True
    await asyncio.wait_for(task, 5)
    assert rec.types == ["done"] and rec.of("done")[0].stop_reason == "cancelled"
    assert not session.running and provider.requests == []
    assert [m.role for m in session.messages] == ["user"]
    await session.run("again")
    assert session.messages[-1].text == "later"


async def test_unexpected_provider_exception_becomes_error_event_and_done() -> None:
    """A provider bug or an unmapped network error type must end the turn like a provider
    error: error + exactly one done, the partial answer kept, the session usable."""
    session, rec, _ = make_session([
        [TextDelta("Partial"), RuntimeError("unmapped transport failure")],
        answer("recovered")])
    result = await session.run("first")  # must not raise
    assert rec.types[-2:] == ["error", "done"]
    assert rec.types.count("done") == 1
    assert rec.of("done")[0].stop_reason == "error"
    assert "unmapped transport failure" in rec.of("error")[0].message
    assert result is not None and result.text == "Partial"
    assert result.metadata.interrupted == "error"
    assert not session.running
    await session.run("second")
    assert session.messages[-1].text == "recovered"


async def test_unsubscribing_during_an_event_skips_no_other_subscriber() -> None:
    """A one-shot subscriber that removes itself must not make the next subscriber miss
    the event being delivered."""
    session, _, _ = make_session([answer("hello")])
    seen: list[str] = []
    unsubscribe: Any = None

    def once(event: Any) -> None:
        unsubscribe()

    unsubscribe = session.subscribe(once)
    session.subscribe(lambda event: seen.append(event.type))
    await session.run("x")
    assert seen[0] == "turn_start"  # the first event of the turn reached it
    assert seen[-1] == "done"
    assert seen.count("token") == 2
