"""Replaying a stored session as an evaluation (issue 30): the scripted provider replays a
stored session's event stream exactly; a replay under another tool configuration reports
the resolver's own difference; stored tool results can be kept fixed; checks and an LLM
judge give verdicts; the report becomes a table, a DataFrame and a pydantic-evals
dataset."""

from __future__ import annotations

import asyncio
import re
from pathlib import Path
from typing import Any

import pytest

from neta_nb import (
    Agent,
    AgentSession,
    AgentToolConfig,
    ScriptedProvider,
    SessionStore,
    ToolCatalog,
    llm_judge,
    replay,
    replay_all,
    resolve_tools,
    tool,
)
from neta_nb.runtime.replay.replay_report import ReplayTurn

from ...support.timing import wait_until

ran: list[str] = []


@tool(core=True, label="Look up")
def look_up(key: str) -> str:
    """Look a key up (records that it really ran)."""
    ran.append(key)
    return f"value of {key}: {len(ran)}"


@tool(core=True, requires_approval=True)
def risky(x: int) -> str:
    """Needs approval."""
    ran.append(f"risky {x}")
    return f"risky ran {x}"


def _catalog() -> ToolCatalog:
    catalog = ToolCatalog.default()
    catalog.register(look_up)
    catalog.register(risky)
    return catalog


SCRIPT = [
    [{"thinking": "I will look it up."}, {"text": "Looking."},
     {"tool_call": {"name": "look_up", "args": {"key": "alpha"}}}],
    [{"text": "Alpha is known now."}],
]


async def _stored(tmp_path: Path, prompts: tuple[str, ...] = ("What is alpha?", "Again?"),
                  **agent_options: Any) -> tuple[SessionStore, AgentSession, list[Any]]:
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("analyst", model=ScriptedProvider(SCRIPT), **agent_options)
    session = AgentSession(agent, _catalog(), store)
    events: list[Any] = []
    session.subscribe(events.append)
    for prompt in prompts:
        await session.run(prompt)
    session.flush()
    return store, session, events


_IDS = re.compile(r"\b(m|s)_[0-9a-f]{8,32}\b")


def _normalised(events: list[Any]) -> list[Any]:
    """Events with what differs between two sessions by construction blanked: message
    and session ids, creation times, and the trace ids none of these have."""
    out = []
    for event in events:
        data = event.model_dump(mode="json")
        text = _IDS.sub(lambda m: f"{m.group(1)}_*", repr(data))
        text = re.sub(r"'created_at': [0-9.e+]+", "'created_at': *", text)
        out.append(text)
    return out


async def test_the_scripted_provider_replays_a_stored_session_event_for_event(
        tmp_path: Path) -> None:
    ran.clear()
    store, session, original = await _stored(tmp_path)
    assert ran == ["alpha", "alpha"]
    replayed: list[Any] = []
    report = await replay(session.id, store=store, catalog=_catalog(), keep_tool_results=True,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)),
                          on_event=replayed.append)
    assert ran == ["alpha", "alpha"]  # every result came from the record
    assert len(replayed) == len(original) > 20
    assert _normalised(replayed) == _normalised(original)
    assert [t.same_answer and t.same_tools for t in report.turns] == [True, True]
    assert [(t.fixed_results, t.live_results) for t in report.turns] == [(1, 0), (1, 0)]
    before, after = report.turns[0].before, report.turns[0].after
    assert before.usage == after.usage and before.model_calls == after.model_calls == 2
    store.close()


async def test_a_replay_under_another_tool_set_reports_the_resolvers_difference(
        tmp_path: Path) -> None:
    ran.clear()
    store, session, _ = await _stored(tmp_path, ("What is alpha?",))
    catalog = _catalog()
    narrower = AgentToolConfig(disabled=["look_up"])
    report = await replay(session.id, store=store, catalog=catalog, tools=narrower,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    expected = resolve_tools(catalog, AgentToolConfig()).diff(resolve_tools(catalog, narrower))
    assert report.tool_diff.added == expected.added == []
    assert report.tool_diff.removed == expected.removed == ["look_up"]
    assert report.tool_diff.changes == expected.changes
    # The model still calls look_up (the script says so); the tool is not offered, so the
    # replay's call is refused: the same tools called, not run, and the report shows it.
    turn = report.turns[0]
    assert turn.after.tools == ["look_up"]
    assert (turn.before.failed_tools, turn.after.failed_tools) == ([], ["look_up"])
    assert ran == ["alpha"]
    html = report._repr_html_()
    assert "removed: look_up" in html
    assert "<td style='text-align:left;vertical-align:top'>look_up ✗</td>" in html
    store.close()


async def test_fixed_results_answer_only_the_same_call_and_approval_is_never_assumed(
        tmp_path: Path) -> None:
    ran.clear()
    store, session, _ = await _stored(tmp_path, ("What is alpha?",))
    # Another model asks for another key and for a gated tool.
    other = ScriptedProvider([
        [{"tool_call": {"name": "look_up", "args": {"key": "alpha"}}},
         {"tool_call": {"name": "look_up", "args": {"key": "beta"}}},
         {"tool_call": {"name": "risky", "args": {"x": 1}}}],
        [{"text": "done"}]])
    kept = SessionStore(tmp_path / "replays.db")
    report = await replay(session.id, store=store, catalog=_catalog(), model=other,
                          keep_tool_results=True, replay_store=kept)
    turn = report.turns[0]
    assert turn.after.tools == ["look_up", "look_up", "risky"]
    assert turn.after.failed_tools == ["risky"]
    assert (turn.fixed_results, turn.live_results) == (1, 1)
    assert ran == ["alpha", "beta"]  # beta ran for real; risky was refused, never ran
    results = [p for m in kept.load_messages(report.replay_session_id) for p in m.tool_results]
    assert [(r.is_error, r.content[:14]) for r in results] == [
        (False, "value of alpha"), (False, "value of beta:"), (True, results[2].content[:14])]
    assert "risky" not in " ".join(ran)
    # The stored session is only read.
    assert len(store.load_messages(session.id)) == 4
    kept.close()
    store.close()


async def test_checks_give_verdicts_and_one_that_raises_costs_only_its_verdict(
        tmp_path: Path) -> None:
    ran.clear()
    store, session, _ = await _stored(tmp_path, ("What is alpha?",))

    def mentions_alpha(turn: ReplayTurn) -> bool:
        return "Alpha" in turn.after.answer

    async def length_ratio(turn: ReplayTurn) -> float:
        await asyncio.sleep(0)
        return len(turn.after.answer) / max(1, len(turn.before.answer))

    def broken(turn: ReplayTurn) -> bool:
        raise ValueError("bug in the check")

    verdicts = ScriptedProvider([[{"text": "PASS: it names alpha."}]], model="judge")
    report = await replay(session.id, store=store, catalog=_catalog(),
                          model=ScriptedProvider([[{"text": "Something else entirely."}]]),
                          checks=[mentions_alpha, length_ratio, broken,
                                  llm_judge("names alpha", model=verdicts)])
    checks = report.turns[0].checks
    assert checks["mentions_alpha"] is False
    assert checks["length_ratio"] == pytest.approx(24 / 19)
    assert checks["broken"] == "check failed: ValueError: bug in the check"
    assert checks["judge"] is True
    failing = llm_judge("x", model=ScriptedProvider([[{"text": "FAIL — it does not."}]]))
    unclear = llm_judge("x", model=ScriptedProvider([[{"text": "Maybe."}]]))
    assert await failing(report.turns[0]) is False
    assert await unclear(report.turns[0]) == "Maybe."
    store.close()


async def test_the_report_as_a_dataframe_a_dataset_and_an_escaped_table(
        tmp_path: Path) -> None:
    ran.clear()
    hostile = "<img src=x onerror=alert(1)> what is alpha?"
    store, session, _ = await _stored(tmp_path, (hostile, "Again?"))
    reports = await replay_all([session.id], store=store, catalog=_catalog(),
                               keep_tool_results=True,
                               model=ScriptedProvider.from_history(
                                   store.load_messages(session.id)))
    report = reports[0]
    frame = report.to_dataframe()
    assert list(frame["turn"]) == [1, 2]
    assert list(frame["prompt"]) == [hostile, "Again?"]
    assert list(frame["same_answer"]) == [True, True]
    assert frame["tools_after"][0] == ["look_up"]
    assert (frame["input_tokens_after"] == frame["input_tokens_before"]).all()
    dataset = report.to_pydantic_evals()
    assert [case.inputs for case in dataset.cases] == [hostile, "Again?"]
    assert dataset.cases[0].expected_output == "Alpha is known now."
    html = report._repr_html_()
    assert "<img" not in html and "&lt;img src=x onerror=alert(1)&gt;" in html
    totals = report.totals()
    assert totals["before"]["model_calls"] == totals["after"]["model_calls"] == 4
    store.close()


async def test_a_stored_failure_replays_as_the_same_failure(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    failing = ScriptedProvider([[{"text": "Half an ans"},
                                 {"error": {"message": "overloaded", "retryable": True}}]])
    session = AgentSession(Agent("a", model=failing), _catalog(), store)
    await session.run("go")
    session.flush()
    report = await replay(session.id, store=store, catalog=_catalog(),
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    turn = report.turns[0]
    assert turn.before.stop_reason == "error" and turn.after.stop_reason == "error"
    assert turn.after.error is not None and "overloaded" in turn.after.error
    assert turn.after.answer == turn.before.answer == "Half an ans"
    store.close()


async def test_a_live_session_replays_between_turns_and_unknown_ids_are_clear(
        tmp_path: Path) -> None:
    ran.clear()
    session = AgentSession(Agent("a", model=ScriptedProvider(SCRIPT)), _catalog())
    await session.run("What is alpha?")
    report = await replay(session, model=ScriptedProvider.from_history(session.messages),
                          keep_tool_results=True)
    assert report.turns[0].same_answer
    with pytest.raises(ValueError, match="needs its store"):
        await replay("s_missing")
    store = SessionStore(tmp_path / "s.db")
    with pytest.raises(KeyError, match="no session 's_missing'"):
        await replay("s_missing", store=store)
    store.close()


# --- found by review: each failed before its fix ----------------------------------------

async def test_fixed_results_follow_the_response_when_call_ids_repeat(tmp_path: Path) -> None:
    """Servers that number calls per response (call_0 in each): a stored result answers
    the call of the response right before it."""
    ran.clear()
    store = SessionStore(tmp_path / "s.db")
    stored = ScriptedProvider([[{"tool_call": {"name": "look_up", "args": {"key": "a"},
                                               "id": "call_0"}}],
                               [{"tool_call": {"name": "look_up", "args": {"key": "b"},
                                               "id": "call_0"}}],
                               [{"text": "done"}]])
    session = AgentSession(Agent("a", model=stored), _catalog(), store)
    await session.run("go")
    session.flush()
    ran.clear()
    report = await replay(session.id, store=store, catalog=_catalog(), keep_tool_results=True,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    assert (report.turns[0].fixed_results, report.turns[0].live_results) == (2, 0)
    assert ran == []
    assert report.turns[0].same_answer
    store.close()


async def test_stored_failures_and_rejections_stay_what_they_were(tmp_path: Path) -> None:
    @tool(core=True)
    def flaky(key: str) -> str:
        """Fails."""
        raise ValueError("backend down")

    def catalog() -> ToolCatalog:
        found = _catalog()
        found.register(flaky)
        return found

    ran.clear()
    script = [[{"tool_call": {"name": "flaky", "args": {"key": "a"}}},
               {"tool_call": {"name": "risky", "args": {"x": 1}}}], [{"text": "Both failed."}]]
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("a", model=ScriptedProvider(script)), catalog(), store,
                           approval_policy="reject")
    await session.run("go")
    session.flush()
    kept = SessionStore(tmp_path / "r.db")
    report = await replay(session.id, store=store, catalog=catalog(), keep_tool_results=True,
                          replay_store=kept,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    again = kept.load_messages(report.replay_session_id)
    assert [(r.name, r.is_error) for m in again for r in m.tool_results] == [
        ("flaky", True), ("risky", True)]
    assert [(e.name, e.status) for m in again for e in m.metadata.tool_executions] == [
        ("flaky", "error"), ("risky", "rejected")]
    turn = report.turns[0]
    assert turn.before.failed_tools == turn.after.failed_tools == ["flaky", "risky"]
    assert ran == []  # the rejected call was rejected again, never run
    kept.close()
    store.close()


async def test_attachments_are_sent_again_and_a_running_session_is_refused(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    notes = tmp_path / "notes.csv"
    notes.write_text("a,b\n1,2\n")
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": "read"}]])),
                           _catalog(), store)
    await session.run("what is in it?", attachments=[notes])
    session.flush()
    kept = SessionStore(tmp_path / "r.db")
    report = await replay(session.id, store=store, catalog=_catalog(), replay_store=kept,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    prompt = kept.load_messages(report.replay_session_id)[0]
    assert [part.type for part in prompt.parts] == ["text", "file_text"]
    assert prompt.attachments[0].text == "a,b\n1,2\n"  # type: ignore[union-attr]
    gate = asyncio.Event()
    busy = AgentSession(Agent("b", model=FakeProviderHeld(gate)), _catalog(), store)
    task = busy.start("hold")

    def recorded_running() -> bool:
        record = store.get_session(busy.id)
        return record is not None and record.running

    await wait_until(recorded_running)
    with pytest.raises(RuntimeError, match="is running a turn"):
        await replay(busy.id, store=store, catalog=_catalog())
    gate.set()
    await task
    kept.close()
    store.close()


class FakeProviderHeld(ScriptedProvider):
    """The offline model, holding its stream until ``gate`` opens."""

    def __init__(self, gate: asyncio.Event) -> None:
        super().__init__([[{"text": "late"}]])
        self.gate = gate

    async def stream(self, request: Any) -> Any:
        await self.gate.wait()
        async for event in super().stream(request):
            yield event


async def test_repeated_prompts_replay_in_order_across_compactions(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=ScriptedProvider([[{"text": "x"}]], context_window=2000),
                  keep_recent_turns=1, compact_at=0.5)
    session = AgentSession(agent, ToolCatalog.default(), store)
    for n in range(1, 7):
        session.provider = ScriptedProvider([[{"text": f"chapter {n}: " + "words " * 60}]],
                                            model="demo", context_window=2000)
        await session.run("continue")
    session.flush()
    assert session.compactions  # the replay compacts too
    report = await replay(session.id, store=store, model=ScriptedProvider.from_history(
        store.load_messages(session.id), context_window=2000))
    assert [t.after.answer.split(":")[0] for t in report.turns] == [
        f"chapter {n}" for n in range(1, 7)]
    store.close()


async def test_checks_that_exit_or_hang_cost_only_their_verdict(tmp_path: Path) -> None:
    store, session, _ = await _stored(tmp_path, ("What is alpha?",))

    def exits(turn: ReplayTurn) -> bool:
        raise SystemExit(1)

    async def hangs(turn: ReplayTurn) -> bool:
        await asyncio.Event().wait()
        return True

    report = await replay(session.id, store=store, catalog=_catalog(), check_timeout=0.2,
                          checks={"exits": exits, "hangs": hangs, 7: lambda t: True})  # type: ignore[dict-item]
    assert report.turns[0].checks == {"exits": "check failed: SystemExit: 1",
                                      "hangs": "check failed: no verdict within 0.2 s",
                                      "7": True}
    assert "'>7</th>" in report._repr_html_()
    store.close()


@pytest.mark.parametrize(("reply", "verdict"), [
    ("FAIL: wrong.", False), ("**FAIL** — it is wrong.", False), ("`FAIL` wrong", False),
    ("FAIL—wrong", False), ("Fail.", False), ("**PASS**", True), ("pass, it names it", True),
    ("Passable answer", "Passable answer")])
async def test_the_judge_reads_its_verdict_through_markdown(reply: str, verdict: Any) -> None:
    judge = llm_judge("x", model=ScriptedProvider([[{"text": reply}]]))
    turn = ReplayTurn(index=0, prompt="p", before=_figures("a"), after=_figures("b"))
    assert await judge(turn) == verdict


def _figures(answer: str) -> Any:
    from neta_nb.messages import Usage
    from neta_nb.runtime.replay.replay_report import TurnFigures
    return TurnFigures(answer=answer, tools=[], usage=Usage(), model_calls=1, seconds=None)


async def test_a_session_with_sub_agents_replays_event_for_event(tmp_path: Path) -> None:
    """The top agent and its children (two levels) answer from their stored runs; the
    delegate calls run those children, the other tools answer from the record. (One call
    per response: the events of calls running side by side interleave as they finish,
    in a replay as in the original run.)"""
    from neta_nb import AgentToolConfig

    ran.clear()
    store = SessionStore(tmp_path / "s.db")

    def crew() -> Agent:
        scout = Agent("scout", model=ScriptedProvider([[{"text": "scouted"}]]),
                      description="scouts", tools=AgentToolConfig(enabled=["look_up"]))
        researcher = Agent("researcher", description="looks things up",
                           model=ScriptedProvider([
                               [{"tool_call": {"name": "look_up", "args": {"key": "beta"}}}],
                               [{"tool_call": {"name": "delegate",
                                               "args": {"agent": "scout", "task": "go"}}}],
                               [{"text": "beta found"}]]),
                           tools=AgentToolConfig(enabled=["look_up", "delegate"]),
                           subagents=[scout])
        return Agent("planner", subagents=[researcher],
                     tools=AgentToolConfig(enabled=["look_up", "delegate"]),
                     model=ScriptedProvider([
                         [{"thinking": "Two things."},
                          {"tool_call": {"name": "look_up", "args": {"key": "alpha"}}}],
                         [{"tool_call": {"name": "delegate",
                                         "args": {"agent": "researcher", "task": "beta"}}}],
                         [{"text": "Alpha and beta."}]]))

    session = AgentSession(crew(), _catalog(), store)
    original: list[Any] = []
    session.subscribe(original.append)
    await session.run("alpha and beta?")
    session.flush()
    assert ran == ["alpha", "beta"]
    replayed: list[Any] = []
    report = await replay(session.id, store=store, catalog=_catalog(), keep_tool_results=True,
                          subagents_from_history=True, on_event=replayed.append,
                          model=ScriptedProvider.from_history(store.load_messages(session.id)))
    assert ran == ["alpha", "beta"]  # nothing ran again: every result from the record
    assert len(replayed) == len(original) > 40
    assert _normalised(replayed) == _normalised(original)
    assert report.turns[0].same_answer
    store.close()


async def test_the_report_draws_answers_as_markdown_and_runs_none_of_their_html(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    answer = ("## Sample data\n\n**Missing values:** `rating` in 13 rows.\n\n"
              "- first\n- second\n\n<script>alert(1)</script> ![x](http://127.0.0.1:9/leak)")
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": answer}]])),
                           _catalog(), store)
    await session.run("Profile it")
    session.flush()
    report = await replay(session.id, store=store, catalog=_catalog(),
                          model=ScriptedProvider([[{"text": "**Fine** now."}]]))
    html = report._repr_html_()
    # A heading is a bold line in a table cell, not a page heading.
    assert "<p><strong>Sample data</strong></p>" in html and "<h2" not in html
    assert "<strong>Missing values:</strong>" in html
    assert "<code>rating</code>" in html and "<li>first</li>" in html
    assert "<strong>Fine</strong> now." in html
    assert "##" not in html and "**" not in html
    assert "<script" not in html and "<img" not in html and "127.0.0.1:9" not in html
    store.close()


def test_a_long_answer_is_cut_at_a_line_end_and_leaves_no_markup_open() -> None:
    from neta_nb.runtime.replay.replay_report import SHOWN_CHARS, _answer_html

    lines = [f"- `tool_{i}` (`path=\"file_{i}.csv\"`): done" for i in range(40)]
    html = _answer_html("\n".join(lines), None)
    assert "`" not in html and html.count("<code>") == html.count("</code>")
    assert html.rstrip().endswith("…</li>\n</ul>")
    shown = html.count("<li>")
    assert 5 < shown < 40 and shown * len(lines[0]) <= SHOWN_CHARS + len(lines[0])
