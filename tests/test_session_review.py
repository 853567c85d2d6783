"""Edge cases of the runtime: exceptions that are not provider errors, cancel and approval
races, histories that must stay valid for the next model call, persistence of a turn that
dies mid-tools, resume and compaction corner cases."""

from __future__ import annotations

import asyncio
import sqlite3
import threading
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog, tool
from neta_nb.messages import Message, TextPart, ToolCallPart, Usage
from neta_nb.providers.base import (
    ProviderError,
    StreamDone,
    TextDelta,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.store import SessionRecord
from neta_nb.tools import ToolContext

from .session_support import FakeProvider, Recorder, answer, calls

ran: list[str] = []


@tool(core=True)
def plus(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(core=True, requires_approval=True)
def guarded_op(x: int) -> str:
    """Needs the user's approval."""
    ran.append(f"guarded_op {x}")
    return f"ran {x}"


def make_session(responses: list[list[Any]], *, extra: Sequence[Any] = (),
                 store: SessionStore | None = None, context_window: int = 10_000,
                 **options: Any) -> tuple[AgentSession, Recorder, FakeProvider]:
    catalog = ToolCatalog.default()
    for item in (plus, guarded_op, *extra):
        catalog.register(item)
    provider = FakeProvider(responses, context_window=context_window)
    agent = Agent("reviewer", model=provider, tools=AgentToolConfig(),
                  **options.pop("agent_options", {}))
    session = AgentSession(agent, catalog, store, **options)
    recorder = Recorder()
    session.subscribe(recorder)
    return session, recorder, provider


def assert_valid_history(messages: Sequence[Message]) -> None:
    """What every provider API demands: each tool call is answered by the tool messages
    that directly follow its assistant message, and no result answers a call that is not
    right before it."""
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.role == "tool":
            raise AssertionError(f"tool result at {index} answers no call right before it")
        index += 1
        if message.role == "assistant" and message.tool_calls:
            answered: list[str] = []
            while index < len(messages) and messages[index].role == "tool":
                answered += [p.tool_call_id for p in messages[index].tool_results]
                index += 1
            assert sorted(answered) == sorted(c.id for c in message.tool_calls), (
                f"calls {[c.id for c in message.tool_calls]} answered by {answered}")


# --- exceptions other than ProviderError ---------------------------------------------


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


async def test_unexpected_exception_in_summary_call_is_a_compaction_error() -> None:
    """The summarising call fails with something other than ProviderError: history is
    left untouched, an error is reported and the turn goes on."""
    session, rec, _ = make_session([
        answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
        answer("two", usage=Usage(input_tokens=820, output_tokens=10)),
        [RuntimeError("summary client bug")],
        answer("three")],
        context_window=1_000, agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    await session.run("q3")  # must not raise
    assert any("summary client bug" in e.message for e in rec.of("error"))
    assert session.messages[-1].text == "three"
    assert rec.of("done")[-1].stop_reason == "end_turn"


async def test_approval_policy_that_raises_gives_an_error_result() -> None:
    """An approval policy function is user code; when it raises, the call must get an
    error result — not escape run() and leave a tool call without a result."""
    ran.clear()

    def broken_policy(name: str, args: dict[str, Any]) -> bool:
        raise ValueError("policy bug")

    session, rec, provider = make_session(
        [calls(("g", "guarded_op", {"x": 1})), answer("carried on"), answer("next")],
        approval_policy=broken_policy)
    await session.run("x")  # must not raise
    assert ran == []
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "g" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"
    await session.run("y")
    assert_valid_history(provider.requests[-1].messages)


async def test_cancelled_error_raised_by_a_tool_is_an_error_result() -> None:
    """A tool awaiting something that was cancelled (not the turn) raises CancelledError;
    that is the tool failing, not the user stopping the turn."""

    @tool(core=True)
    async def awaits_cancelled() -> str:
        """Awaits a future someone else cancelled."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    session, rec, _ = make_session([calls(("c", "awaits_cancelled", {})), answer("ok")],
                                   extra=[awaits_cancelled])
    await session.run("go")  # must not raise CancelledError
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "c" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"
    assert session.messages[-1].text == "ok"


# --- cancel and start races ----------------------------------------------------------


async def test_stop_while_idle_after_an_awaited_run_does_not_cancel_the_next_turn() -> None:
    """`await session.run(...)` leaves the caller's (long-lived) task as the session's
    task. A Stop pressed while nothing runs must report False and must not cancel the
    next turn before it starts."""
    session, rec, provider = make_session([answer("a"), answer("b")])
    await session.run("first")
    assert session.cancel() is False
    await session.run("second")
    assert session.messages[-1].text == "b"
    assert [d.stop_reason for d in rec.of("done")] == ["end_turn", "end_turn"]
    assert len(provider.requests) == 2


async def test_start_after_an_awaited_run_is_accepted() -> None:
    """`await session.run(...)` in a cell, then a turn from the chat view: the caller's
    task (long-lived in a kernel) must not count as a turn in flight."""
    session, _, _ = make_session([answer("a"), answer("b")])
    await session.run("first")
    task = session.start("second")
    await asyncio.wait_for(task, 5)
    assert session.messages[-1].text == "b"


async def test_start_during_compact_keeps_the_turn_in_the_model_view() -> None:
    """compact() awaits the summary call without marking the session busy; a turn started
    meanwhile must either be refused or survive in the view compaction installs."""
    gate = asyncio.Event()
    summary_started = asyncio.Event()

    async def hold_summary() -> None:
        summary_started.set()
        await gate.wait()

    session, _, _ = make_session(
        [answer("one"), answer("two"),
         [hold_summary, TextDelta("- summary"), UsageUpdate(Usage(output_tokens=5)),
          StreamDone("end_turn")],
         answer("three")],
        agent_options={"keep_recent_turns": 1, "compact_at": None})
    await session.start("q1")  # start(), so no caller task is left as the turn's task
    await session.start("q2")
    compaction = asyncio.ensure_future(session.compact())
    await asyncio.wait_for(summary_started.wait(), 10)
    try:
        task = session.start("q3")
    except RuntimeError:
        gate.set()
        await compaction
        return  # refusing the turn is a correct answer
    await asyncio.wait_for(task, 5)
    gate.set()
    await asyncio.wait_for(compaction, 5)
    view_texts = [m.text for m in session.model_view]
    assert "q3" in view_texts and "three" in view_texts


async def test_progress_from_an_abandoned_thread_tool_is_not_emitted_after_done() -> None:
    """A sync skill runs in a worker thread that cancel cannot stop; what it reports after
    the turn ended must not reach the UI as events of a finished turn."""
    release = threading.Event()
    finished = threading.Event()
    started = threading.Event()

    @tool(visibility="skill", category="skill", core=True)
    def crunch(ctx: ToolContext) -> str:
        """Works in a thread."""
        started.set()
        release.wait(10)
        ctx.progress(50, step="late")
        finished.set()
        return "late result"

    session, rec, _ = make_session([calls(("k", "crunch", {}))], extra=[crunch])
    task = session.start("go")
    await asyncio.to_thread(started.wait, 10)
    session.cancel()
    await asyncio.wait_for(task, 5)
    assert rec.types[-1] == "done"
    release.set()
    await asyncio.to_thread(finished.wait, 10)
    for _ in range(5):
        await asyncio.sleep(0)
    assert rec.types[-1] == "done", rec.types[rec.types.index("done"):]


# --- approval ---------------------------------------------------------------------------


async def test_detaching_the_approver_while_a_request_is_pending_does_not_hang() -> None:
    """The chat view is closed while it shows an approval request: nobody will answer, so
    the policy (reject by default) must decide instead of the turn waiting forever."""
    ran.clear()
    session, rec, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("fine")])
    detach = session.attach_approver()
    task = session.start("x")
    await rec.wait_for("approval_request")
    detach()
    await asyncio.wait_for(task, 5)
    assert ran == []
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "g" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"


# --- history validity -------------------------------------------------------------------


async def test_reused_tool_call_ids_are_still_closed_after_a_failed_response() -> None:
    """OpenAI-compatible servers that send no call ids get `call_0` in every response.
    A call of a failed response must get its result even if an earlier, answered call
    had the same id."""
    session, _, provider = make_session([
        calls(("call_0", "plus", {"a": 1, "b": 1})), answer("2"),
        [ToolCallReady("call_0", "plus", {"a": 2, "b": 2}), ProviderError("cut")],
        answer("next")])
    await session.run("first")
    await session.run("second")
    await session.run("third")
    assert_valid_history(provider.requests[-1].messages)


def test_resume_closes_tool_calls_of_the_checkpointed_draft(tmp_path: Path) -> None:
    """The kernel died while the model was streaming a response whose tool call had
    already arrived: the draft holds that call, and resume must answer it too."""
    store = SessionStore(tmp_path / "s.db")
    store.save_session(SessionRecord(id="x", agent={"name": "a", "model": "scripted"},
                                     running=True))
    store.append_message("x", Message.user("go"))
    store.save_draft("x", Message.assistant([TextPart(text="Let me look"),
                                             ToolCallPart(id="d1", name="list_files")]))
    resumed = AgentSession.resume("x", store=store)
    assert_valid_history(resumed.messages)
    assert_valid_history(resumed.model_view)
    assert_valid_history(store.load_messages("x"))


# --- persistence of a turn killed mid-tools ------------------------------------------


async def test_kill_mid_tools_keeps_finished_results_and_running_cards(tmp_path: Path) -> None:
    """Two calls of one response; the first finishes, the second is still running when
    the process dies. The finished result is a completed message and must survive; the
    running call's card must come back (marked as not finished)."""
    gate = asyncio.Event()
    started = asyncio.Event()

    @tool(core=True)
    async def slow_job() -> str:
        """Takes a while."""
        started.set()
        await gate.wait()
        return "slow done"

    db = tmp_path / "s.db"
    store = SessionStore(db)
    session, rec, _ = make_session([calls(("a", "plus", {"a": 1, "b": 2}),
                                          ("b", "slow_job", {}))],
                                   extra=[slow_job], store=store)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    await rec.wait_for("tool_result")  # the fast call has finished
    for _ in range(5):
        await asyncio.sleep(0)
    # The process "dies" now: take a consistent copy of the database as it is on disk.
    copy = tmp_path / "killed.db"
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    session.cancel()
    await asyncio.wait_for(task, 5)

    resumed = AgentSession.resume(session.id, store=SessionStore(copy))
    results = {m.tool_results[0].tool_call_id: m.tool_results[0]
               for m in resumed.messages if m.role == "tool"}
    assert results["a"].content == "3" and not results["a"].is_error
    assert results["b"].is_error
    records = {r.id: r for r in resumed.messages[1].metadata.tool_executions}
    assert records["a"].status == "done"
    assert records["b"].status == "error"
    assert_valid_history(resumed.messages)


# --- resume: context figure and usage -------------------------------------------------


async def test_resumed_session_compacts_before_a_call_that_would_start_too_full(
        tmp_path: Path) -> None:
    """The context figure is lost on resume, so the first call of a resumed session that
    was at 83 % goes out uncompacted (and would fail at the provider when over the
    window)."""
    store = SessionStore(tmp_path / "s.db")
    session, _, provider = make_session(
        [answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
         answer("two", usage=Usage(input_tokens=820, output_tokens=10))],
        store=store, context_window=1_000, agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    assert session.context.used_tokens == 830

    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog)
    assert resumed.context.used_tokens == 830
    rec = Recorder()
    resumed.subscribe(rec)
    provider.responses += [
        [TextDelta("- summary"), UsageUpdate(Usage(output_tokens=5)), StreamDone("end_turn")],
        answer("three")]
    await resumed.run("q3")
    assert provider.requests[2].purpose == "summary"
    assert "compaction" in rec.types


async def test_resumed_usage_matches_the_live_session(tmp_path: Path) -> None:
    """`session.usage` counts every call the provider billed; the resumed session must
    report the same total — including the summary call and a failed call's usage."""
    store = SessionStore(tmp_path / "s.db")
    session, _, _ = make_session(
        [answer("one"), answer("two"),
         [TextDelta("- summary"), UsageUpdate(Usage(input_tokens=700, output_tokens=40)),
          StreamDone("end_turn")],
         [TextDelta("cut"), ProviderError("reset", usage=Usage(input_tokens=300,
                                                                output_tokens=3))]],
        store=store, agent_options={"keep_recent_turns": 1, "compact_at": None})
    await session.run("q1")
    await session.run("q2")
    assert await session.compact() is not None
    await session.run("q3")
    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog)
    assert resumed.usage == session.usage


# --- events ------------------------------------------------------------------------------


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
    assert seen[0] == "token"
    assert seen[-1] == "done"
    assert seen.count("token") == 2


async def test_an_unknown_approval_decision_is_refused_not_taken_as_allow() -> None:
    """`approve(id, "deny")` from Python (no pydantic check on this path) must not run
    the tool: anything but allow_once / allow_always is not a permission."""
    ran.clear()
    session, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    session.attach_approver()
    refused: list[BaseException] = []

    def decide(event: Any) -> None:
        if event.type == "approval_request":
            try:
                session.approve(event.id, "deny")  # type: ignore[arg-type]
            except ValueError as exc:
                refused.append(exc)
                session.approve(event.id, "reject")

    session.subscribe(decide)
    await asyncio.wait_for(session.run("x"), 5)
    assert ran == []
    assert len(refused) == 1
    assert session.messages[2].tool_results[0].is_error
