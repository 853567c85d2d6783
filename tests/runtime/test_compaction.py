"""Context compaction: what is folded, the summary request, the injected plan, the event,
the refreshed context figure, persistence and resume."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, ModelPrice, ScriptedProvider, SessionStore, ToolCatalog
from neta_nb.messages import Message, TextPart, ToolCallPart, Usage
from neta_nb.providers.base import ProviderError, StreamDone, TextDelta, UsageUpdate
from neta_nb.runtime.compaction import (
    SUMMARY_HEADER,
    SUMMARY_SYSTEM_PROMPT,
    CompactionError,
    plan_compaction,
    render_transcript,
)

from ..support.sessions import FakeProvider, Recorder, answer, calls, make_session

PLAN = {"todos": [{"id": "1", "content": "Collect data", "status": "completed"},
                  {"id": "2", "content": "Fit the model", "status": "in_progress"},
                  {"id": "3", "content": "Report", "status": "pending"}]}


def summary(text: str = "- The user studies sales.", output_tokens: int = 30) -> list[Any]:
    return [TextDelta(text), UsageUpdate(Usage(input_tokens=900, output_tokens=output_tokens)),
            StreamDone("end_turn")]


def turn(n: int) -> list[Message]:
    call = ToolCallPart(id=f"c{n}", name="list_files", args={"path": "."})
    return [Message.user(f"question {n}"), Message.assistant([call]),
            Message.tool_result(f"c{n}", "list_files", f"files {n}"),
            Message.assistant([TextPart(text=f"answer {n}")])]


def test_plan_keeps_recent_turns_and_never_splits_a_call_from_its_result() -> None:
    history = turn(1) + turn(2) + turn(3)
    plan = plan_compaction(history, keep_turns=2)
    assert plan is not None
    assert plan.folded == history[:4] and plan.kept == history[4:]
    # One long agentic turn: the cut falls between blocks, never inside one.
    long_turn = [Message.user("do it all")]
    for n in range(6):
        long_turn += turn(n)[1:3]
    plan = plan_compaction(long_turn, keep_turns=2, min_kept_blocks=2)
    assert plan is not None
    assert plan.kept[0].role == "assistant" and plan.kept[1].role == "tool"
    assert [m.role for m in plan.kept] == ["assistant", "tool", "assistant", "tool"]
    assert plan_compaction(turn(1), keep_turns=2, min_kept_blocks=8) is None
    # Two turns that together are the whole history: the older one is folded.
    plan = plan_compaction(turn(1) + turn(2), keep_turns=2)
    assert plan is not None and plan.kept == turn_messages(plan.kept, "question 2")
    with pytest.raises(ValueError, match="at least 1"):
        plan_compaction(history, keep_turns=0)


def turn_messages(kept: list[Message], first: str) -> list[Message]:
    assert kept[0].text == first
    return kept


def test_transcript_is_readable_and_bounded() -> None:
    history = turn(1)
    history[2].parts[0].content = "x" * 5000  # type: ignore[union-attr]
    text = render_transcript(history)
    assert text.startswith("User: question 1")
    assert 'Assistant called list_files({"path": "."})' in text
    assert "5,000 characters" in text and len(text) < 2600


def make(responses: list[list[Any]], store: SessionStore | None = None,
         **agent_options: Any) -> tuple[AgentSession, Recorder, FakeProvider]:
    provider = FakeProvider(responses, context_window=1_000)
    agent = Agent("a", model=provider, keep_recent_turns=1, **agent_options)
    session = AgentSession(agent, ToolCatalog.default(), store)
    recorder = Recorder()
    session.subscribe(recorder)
    return session, recorder, provider


async def test_crossing_the_threshold_compacts_and_injects_the_plan(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, rec, provider = make([
        calls(("t", "todo", PLAN), usage=Usage(input_tokens=300, output_tokens=50)),
        answer("first answer", usage=Usage(input_tokens=400, output_tokens=50)),
        answer("second answer", usage=Usage(input_tokens=800, output_tokens=50)),  # 85 %
        summary(output_tokens=30),
        answer("third answer", usage=Usage(input_tokens=300, output_tokens=20)),
    ], store)
    await session.run("first question")
    await session.run("second question")
    assert "compaction" not in rec.types
    await session.run("third question")

    summary_request = provider.requests[3]
    assert summary_request.purpose == "summary"
    assert summary_request.system_prompt == SUMMARY_SYSTEM_PROMPT
    assert summary_request.tools == []
    transcript = summary_request.messages[0].text
    assert "User: first question" in transcript and "first answer" in transcript
    assert "third question" not in transcript  # the current turn is kept verbatim

    (compaction,) = rec.of("compaction")
    # The last real figure plus what the model would read on top of it now: the third
    # question (~4 characters a token).
    assert compaction.tokens_before == 850 + len("third question") // 4
    # Turns one (user, todo call, its result, answer) and two (user, answer).
    assert compaction.messages_folded == 6
    assert 0 < compaction.tokens_after < compaction.tokens_before
    following = rec.events[rec.events.index(compaction) + 1]
    assert following.type == "token_update"
    assert following.context.used_tokens == compaction.tokens_after
    assert following.context.percent == round(compaction.tokens_after / 10, 1)

    view = provider.requests[4].messages
    assert view[0].text.startswith(SUMMARY_HEADER) and "sales" in view[0].text
    assert view[1].text == session.todo.format_for_injection()
    assert "[>] 2. Fit the model" in view[1].text
    assert [m.text for m in view[2:]] == ["third question"]
    # The full history is untouched; the store has both.
    assert [m.text for m in session.messages if m.role == "user"] == [
        "first question", "second question", "third question"]
    assert len(store.load_messages(session.id)) == len(session.messages)
    stored_view = store.load_view(session.id)
    assert stored_view is not None and stored_view.prefix[0].text == view[0].text

    resumed = AgentSession.resume(session.id, store=store, agent=session.agent)
    assert resumed.compactions == session.compactions
    provider.responses.append(answer("after resume"))
    await resumed.run("fourth question")
    resumed_view = provider.requests[-1].messages
    assert resumed_view[0].text.startswith(SUMMARY_HEADER)
    assert [m.text for m in resumed_view[2:]][-1] == "fourth question"
    assert "first question" not in [m.text for m in resumed_view]


async def test_failed_summary_leaves_history_and_the_turn_goes_on() -> None:
    session, rec, provider = make([
        answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
        answer("two", usage=Usage(input_tokens=820, output_tokens=10)),
        [ProviderError("overloaded", retryable=True)],
        answer("three"),
    ])
    await session.run("q1")
    await session.run("q2")
    before = session.messages
    await session.run("q3")
    error = rec.of("error")[0]
    assert "Compacting the conversation failed: overloaded" in error.message
    assert "compaction" not in rec.types
    assert session.messages[:len(before)] == before
    assert session.messages[-1].text == "three"
    assert [m.text for m in provider.requests[-1].messages if m.role == "user"] == [
        "q1", "q2", "q3"]


async def test_compact_on_demand_and_nothing_to_fold() -> None:
    session, rec, provider = make([answer("one"), answer("two"), summary("- short"),
                                   answer("three"), [ProviderError("down")]],
                                  compact_at=None)
    assert await session.compact() is None  # nothing yet
    await session.run("q1")
    await session.run("q2")
    event = await session.compact()
    assert event is not None and event.messages_folded == 2
    assert rec.types[-2:] == ["compaction", "token_update"]
    # Only the summary itself is older than the kept turn: nothing to fold, no call.
    calls_before = len(provider.requests)
    assert await session.compact() is None
    assert len(provider.requests) == calls_before
    await session.run("q3")
    view_before = session.model_view
    with pytest.raises(CompactionError, match="down"):
        await session.compact()
    assert session.model_view == view_before


async def test_scripted_model_summarises_and_keeps_its_script_after_compaction() -> None:
    session = AgentSession(Agent("demo", model=ScriptedProvider(), keep_recent_turns=1,
                                 compact_at=None))
    await session.run("Profile the data")
    await session.run("And again")
    event = await session.compact()
    assert event is not None
    first = session.model_view[0].text
    assert "The user asked: Profile the data" in first
    rec = Recorder()
    session.subscribe(rec)
    await session.run("Third time")
    assert rec.of("done")[0].stop_reason == "end_turn"
    assert "skill_end" in rec.types


async def test_a_large_tool_result_counts_before_the_next_call() -> None:
    from neta_nb import tool

    @tool(core=True)
    def dump_table() -> str:
        """Returns a lot of text."""
        return "x" * 2_000  # ~500 tokens: half the window

    session, rec, provider = make([
        answer("one", usage=Usage(input_tokens=200, output_tokens=50)),
        calls(("d", "dump_table", {}), usage=Usage(input_tokens=300, output_tokens=50)),
        summary(output_tokens=20),
        answer("done", usage=Usage(input_tokens=400, output_tokens=10)),
    ])
    session.catalog.register(dump_table)
    await session.run("q1")
    await session.run("q2")
    # 35 % reported by the last call + ~50 % of new tool output ≥ 80 %: compact first.
    assert provider.requests[2].purpose == "summary"
    assert rec.types.count("compaction") == 1
    assert session.messages[-1].text == "done"


# --- failures and resume (shared session builder) ----------------------------------


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


# --- summaries that cannot be encoded ----------------------------------------------------

async def test_a_summary_with_a_lone_surrogate_is_made_encodable(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _, _ = make_session([answer("one"), answer("two"), summary(text="- file \udcff.csv")],
                                 store=store, agent_options={"compact_at": None,
                                                             "keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    await session.compact()
    assert "\udcff" not in session.model_view[0].text
    assert "\ufffd" in session.model_view[0].text


async def test_automatic_compaction_with_such_a_summary_keeps_the_turn_and_the_store(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, rec, _ = make_session(
        [answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
         answer("two", usage=Usage(input_tokens=820, output_tokens=10)),
         summary(text="- name \udcff"), answer("three")],
        store=store, context_window=1_000, agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    await session.run("q3")
    assert [e.stop_reason for e in rec.of("done")][-1] == "end_turn", rec.of("error")
    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog)
    assert [m.text for m in resumed.model_view] == [m.text for m in session.model_view]


async def test_a_rewind_after_a_compaction_keeps_it_and_resumes_the_same(
        tmp_path: Path) -> None:
    # Rewinding to a prompt after a compaction: what the model is sent stays compacted,
    # in memory and in the store alike; rewinding to before it leaves the messages.
    store = SessionStore(tmp_path / "s.db")
    session, _rec, _provider = make([answer("one"), answer("two"), summary("- short"),
                                     answer("three")], store=store, compact_at=None)
    await session.run("q1")
    await session.run("q2")
    assert await session.compact() is not None
    view_before_q3 = [m.text for m in session.model_view]
    await session.run("q3")
    session.rewind(next(m.id for m in session.messages if m.text == "q3"))
    assert [m.text for m in session.model_view] == view_before_q3
    assert len(session.compactions) == 1
    session.flush()
    resumed = AgentSession.resume(session.id, store, catalog=session.catalog)
    assert [m.text for m in resumed.model_view] == view_before_q3
    assert len(resumed.compactions) == 1

    resumed.rewind(next(m.id for m in resumed.messages if m.text == "q2"))
    assert [m.text for m in resumed.model_view] == ["q1", "one"]
    assert resumed.compactions == []
    resumed.flush()
    again = AgentSession.resume(session.id, store, catalog=session.catalog)
    assert [m.text for m in again.model_view] == ["q1", "one"]


async def test_a_summary_with_unusable_usage_costs_unknown_and_is_said_once() -> None:
    session, rec, provider = make(
        [answer("one"), answer("two"),
         [TextDelta("- short"), UsageUpdate(None, "output_tokens=-5"), StreamDone("end_turn")],
         [TextDelta("three"), UsageUpdate(None, "input_tokens='x'"), StreamDone("end_turn")]],
        compact_at=None)
    provider.price = ModelPrice(input=3.0, output=15.0)
    await session.run("q1")
    await session.run("q2")
    assert session.cost_usd is not None and session.cost_usd > 0
    assert await session.compact() is not None
    assert session.compactions[-1].usage is None
    assert session.compactions[-1].cost_usd is None
    assert session.cost_usd is None  # unknown, never a credit
    await session.run("q3")  # a second unusable report: not said again
    said = [w for w in rec.of("warning") if w.code == "usage_unusable"]
    assert [w.params for w in said] == [{"detail": "output_tokens=-5"}]
