"""A turn survives huge results, stuck sync tools, tools switched off mid-response and
servers that repeat call ids: the history stays valid, every card ends, the session goes
on, and the model reads a clear result."""

from __future__ import annotations

import asyncio
import json
import os
import threading
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
    tool,
)
from neta_nb.messages import count_characters
from neta_nb.providers.models import ModelInfo
from neta_nb.tools import ToolContext
from neta_nb.tools.builtin.profile import MAX_REPORTED_COLUMNS, profile_table
from neta_nb.tools.threads import ToolThreads

from ..support.sessions import FakeProvider, answer, assert_valid_history, calls, make_session

# --- huge results ---------------------------------------------------------------------

FIVE_MB = 5_000_000


@tool(core=True)
def dump() -> str:
    """Return a very large text."""
    line = "row,value,comment about the value\n"
    return (line * (FIVE_MB // len(line) + 1))[:FIVE_MB]


class SmallWindowModel(ScriptedProvider):
    """The offline model with a 60,000-token window (its usage is the request's real
    size, ~4 characters a token)."""

    @property
    def info(self) -> ModelInfo:
        return ModelInfo(supplier="scripted", model="small", context_window=60_000,
                         max_output_tokens=4_000, capabilities=frozenset({"tools"}))


def model_reads(session: AgentSession) -> int:
    """Tokens of what the next call sends: system prompt, tools and the model view."""
    preview = session.preview()
    tools = sum(len(t.name) + len(t.description) + len(json.dumps(t.parameters))
                for t in preview.tools)
    return (len(preview.system_prompt) + tools + count_characters(session.model_view)) // 4


async def test_a_5_mb_result_is_cut_and_the_session_goes_on() -> None:
    catalog = ToolCatalog.default()
    catalog.register(dump)
    provider = SmallWindowModel([[{"tool_call": {"name": "dump", "args": {}}}],
                                 [{"text": "The dump is a CSV of rows."}]])
    session = AgentSession(Agent("a", model=provider, tools=AgentToolConfig(),
                                 keep_recent_turns=1), catalog)
    events: list[Any] = []
    session.subscribe(events.append)
    for turn in range(4):
        await session.run(f"dump it again ({turn})")
        assert [e.stop_reason for e in events if e.type == "done"][-1] == "end_turn"
        assert not [e for e in events if e.type == "error"]
        # The figure the user sees is what the model reads, within 10 %.
        assert abs(session.context.used_tokens - model_reads(session)) <= (
            0.1 * model_reads(session))
        assert session.context.used_tokens < 60_000
    results = [m.tool_results[0].content for m in session.messages if m.role == "tool"]
    assert all(len(r) < 101_000 for r in results)
    assert "first 100,000 of 5,000,000 characters" in results[0]
    cards = [e.result for e in events if e.type == "tool_result"]
    assert cards[0] == results[0]  # the card shows what the model read
    assert any(e.type == "compaction" for e in events)
    assert_valid_history(session.model_view)


def test_profile_table_on_20_000_columns_is_bounded(tmp_path: Path) -> None:
    columns = 20_000
    table = tmp_path / "wide.csv"
    table.write_text(",".join(f"c{n}" for n in range(columns)) + "\n"
                     + ",".join(str(n) for n in range(columns)) + "\n"
                     + ",".join("" if n % 2 else "x" for n in range(columns)) + "\n")
    progress: list[float] = []
    ctx = ToolContext(working_dir=tmp_path,
                      on_progress=lambda percent, step, detail: progress.append(percent))
    report = asyncio.run(profile_table.invoke({"path": "wide.csv"}, ctx))
    assert len(progress) <= 101  # the first "reading" report plus at most 100
    assert progress[-1] == 100.0
    assert len(report) < 60_000
    assert f"{columns - MAX_REPORTED_COLUMNS:,} more columns" in report
    assert "more." in report.splitlines()[-1]  # the missing-values line is bounded too


# --- stuck sync tools -------------------------------------------------------------------

release = threading.Event()


@tool(core=True, timeout=0.2)
def stuck() -> str:
    """Never returns until the test lets it."""
    release.wait(30)
    return "finally"


async def test_stuck_sync_tools_do_not_block_new_calls(tmp_path: Path) -> None:
    # More stuck tools than asyncio's default pool has threads (6 on two cores).
    release.clear()
    (tmp_path / "notes.txt").write_text("still readable\n")
    stuck_calls: list[tuple[str, str, dict[str, Any]]] = [
        (f"s{n}", "stuck", {}) for n in range(10)]
    session, rec, _ = make_session([calls(*stuck_calls), calls(("r", "read_file",
                                    {"path": "notes.txt"})), answer("ok")],
                                   extra=[stuck], working_dir=tmp_path)
    try:
        async with asyncio.timeout(20):
            await session.run("go")
        results = {e.id: e for e in rec.of("tool_result")}
        assert all("did not finish within 0.2 s" in results[f"s{n}"].result
                   for n in range(10))
        assert results["r"].is_error is False
        assert "still readable" in results["r"].result
    finally:
        release.set()


async def test_too_many_stuck_tools_is_a_clear_result() -> None:
    threads = ToolThreads(max_busy=2)
    gate = threading.Event()
    first = asyncio.ensure_future(threads.run(gate.wait, 10))
    second = asyncio.ensure_future(threads.run(gate.wait, 10))
    await asyncio.sleep(0)  # both calls submitted
    try:
        with pytest.raises(RuntimeError, match="restart the kernel"):
            await threads.run(lambda: None)
    finally:
        gate.set()
    assert await first and await second
    assert await threads.run(lambda: 42) == 42  # a freed thread serves again


# --- authorisation when the tool runs ---------------------------------------------------

async def test_a_tool_switched_off_while_the_response_streams_does_not_run() -> None:
    ran: list[int] = []

    @tool(core=True)
    def sensitive(x: int) -> str:
        """Must not run once disabled."""
        ran.append(x)
        return "ran"

    session: AgentSession | None = None

    def switch_off() -> None:
        assert session is not None
        session.catalog.disable("sensitive")

    response = [switch_off, *calls(("c", "sensitive", {"x": 1}))]
    session, rec, _ = make_session([response, answer("understood")], extra=[sensitive])
    await session.run("go")
    assert ran == []
    (result,) = rec.of("tool_result")
    assert result.is_error
    assert result.result == session.preview().resolution.refusal("sensitive")
    assert "globally" in result.result.lower()


async def test_a_tool_switched_off_during_its_approval_does_not_run() -> None:
    session, rec, _ = make_session([calls(("g", "guarded_op", {"x": 7})), answer("ok")])
    session.attach_approver()
    task = asyncio.ensure_future(session.run("go"))
    await rec.wait_for("approval_request")
    session.agent.tools.set_tool("guarded_op", False, session.catalog)
    session.approve("g", "allow_once")
    await task
    (result,) = rec.of("tool_result")
    assert result.is_error and "not available" in result.result


# --- duplicate call ids -----------------------------------------------------------------

async def test_repeated_call_ids_in_one_response_get_a_card_and_a_result_each() -> None:
    session, rec, provider = make_session([
        calls(("dup", "plus", {"a": 1, "b": 2}), ("dup", "plus", {"a": 3, "b": 4}),
              ("", "plus", {"a": 5, "b": 6})),
        answer("three sums")])
    await session.run("add")
    cards = rec.of("tool_call")
    assert len({c.id for c in cards}) == 3
    assert [r.result for r in rec.of("tool_result")] == ["3", "7", "11"]
    assert_valid_history(provider.requests[-1].messages)


# --- the python tool outside IPython ----------------------------------------------------

async def test_python_tool_keeps_its_variables_between_calls_outside_ipython() -> None:
    provider = FakeProvider([calls(("a", "python", {"code": "total = 40"})),
                             calls(("b", "python", {"code": "total + 2"})), answer("42")])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=["python"])),
                           approval_policy="allow")
    results: list[Any] = []
    session.subscribe(lambda e: results.append(e) if e.type == "tool_result" else None)
    await session.run("compute")
    assert [r.is_error for r in results] == [False, False]
    assert "42" in results[-1].result
    assert session.namespace["total"] == 40


# --- text that cannot be encoded --------------------------------------------------------

@pytest.fixture
def folder_with_an_odd_name(tmp_path: Path) -> Path:
    (tmp_path / "notes.txt").write_text("fine\n")
    odd_name = os.path.join(os.fsencode(tmp_path), b"caf\xe9-\xff.csv")  # not UTF-8
    Path(os.fsdecode(odd_name)).write_bytes(b"a,b\n")
    return tmp_path


async def test_a_file_name_that_is_not_utf8_is_listed_stored_and_shown(
        folder_with_an_odd_name: Path) -> None:
    # os.listdir hands out such names with lone surrogates; the store write, the widgets'
    # JSON and the provider's request all need UTF-8.
    tmp_path = folder_with_an_odd_name
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session, rec, provider = make_session([
        calls(("l", "list_files", {})),
        answer("Two files, one with an odd name: caf\udce9."),  # the model echoes it back
        answer("next turn")], store=store, working_dir=tmp_path)
    await session.run("what is here? \udcff")
    (result,) = rec.of("tool_result")
    assert result.is_error is False
    assert "caf\ufffd-\ufffd.csv" in result.result and "notes.txt" in result.result
    assert [e.stop_reason for e in rec.of("done")] == ["end_turn"]
    assert not rec.of("error")
    stored = SessionStore(store.path).load_messages(session.id)
    assert [m.model_dump() for m in stored] == [m.model_dump() for m in session.messages]
    assert session.messages[0].text == "what is here? \ufffd"
    assert session.messages[-1].text.endswith("caf\ufffd.")
    for message in session.messages:
        message.model_dump_json().encode("utf-8")  # everything kept is encodable
    await session.run("and now?")
    assert_valid_history(provider.requests[-1].messages)


async def test_a_provider_error_whose_text_cannot_be_encoded_is_stored(tmp_path: Path) -> None:
    from neta_nb.providers.base import ProviderError, TextDelta
    store = SessionStore(tmp_path / "s.db")
    session, rec, _ = make_session([[TextDelta("partial "),
                                     ProviderError("server said: bad name \udcff")]],
                                   store=store)
    await session.run("go")
    assert [e.message for e in rec.of("error")] == ["server said: bad name \ufffd"]
    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog)
    assert len(resumed.messages) == len(session.messages)


async def test_a_tool_thread_that_cannot_start_leaves_nothing_behind(
        monkeypatch: pytest.MonkeyPatch) -> None:
    threads = ToolThreads()
    ran: list[str] = []
    original = threading.Thread.start

    def failing_start(self: threading.Thread) -> None:
        raise RuntimeError("can't start new thread")

    monkeypatch.setattr(threading.Thread, "start", failing_start)
    with pytest.raises(RuntimeError, match="restart the kernel"):
        await asyncio.wait_for(threads.run(ran.append, "stale"), 1)
    monkeypatch.setattr(threading.Thread, "start", original)
    await threads.run(ran.append, "fresh")
    assert threads.busy == 0
    assert ran == ["fresh"]  # the call reported as failed never runs later
