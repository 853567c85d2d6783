"""Calls of an answer that a turn's end leaves behind — by a Stop, a budget, a kernel
that died — get a card and a result that agree: what finished keeps its result (for the
model too), what was running says it did not finish, what never started says it did not
run; an internal tool gets no card; a tool that ignores the Stop says nothing after the
turn's end. The next request is valid in every case."""

from __future__ import annotations

import asyncio
from pathlib import Path

from neta_nb import AgentSession, SessionStore, tool

from ..support.mid_tools import copy_as_on_disk
from ..support.sessions import (
    Recorder,
    answer,
    assert_valid_history,
    calls,
    hanging_tool,
    make_session,
)
from ..support.timing import wait_until


async def test_a_call_that_finished_before_the_kernel_died_keeps_its_result(
        tmp_path: Path) -> None:
    # `slow_job` hangs, `plus` finishes meanwhile (its card, with "3", is stored); the
    # process dies. Resumed, the model reads "3" for it, as its card says.
    slow_job, started = hanging_tool()
    db = tmp_path / "s.db"
    store = SessionStore(db)
    session, _, _ = make_session(
        [calls(("b", "slow_job", {}), ("a", "plus", {"a": 1, "b": 2}))],
        extra=[slow_job], store=store)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)

    def stored_done() -> bool:
        stored = store.load_messages(session.id)
        return len(stored) > 1 and any(r.id == "a" and r.status == "done"
                                       for r in stored[1].metadata.tool_executions)

    await wait_until(stored_done)
    copy = copy_as_on_disk(db, tmp_path / "killed.db")
    session.cancel()
    await asyncio.wait_for(task, 5)
    killed = SessionStore(copy)
    record = killed.get_session(session.id)
    assert record is not None and record.owner is not None
    # Its owner gone: a process that started before this record was written is not it.
    killed.update_session(session.id, owner=record.owner.model_copy(update={"started": 0.0}))
    resumed = AgentSession.resume(session.id, store=SessionStore(copy))
    results = {m.tool_results[0].tool_call_id: (m.tool_results[0].content,
                                                m.tool_results[0].is_error)
               for m in resumed.messages if m.role == "tool"}
    cards = {r.id: (r.status, r.result) for r in resumed.messages[1].metadata.tool_executions}
    assert results == {"b": ("This call did not finish: the kernel stopped.", True),
                       "a": ("3", False)}
    assert cards["a"] == ("done", "3") and cards["b"][0] == "error"
    assert_valid_history(resumed.messages)


async def test_a_tool_that_ignores_the_stop_says_nothing_after_the_turn_ended() -> None:
    started = asyncio.Event()

    @tool(core=True)
    async def stubborn() -> str:
        """Ignores a Stop."""
        started.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            await asyncio.sleep(0.05)
            return "finished anyway"
        return "never"

    session, _, provider = make_session([calls(("s", "stubborn", {})), answer("ok")],
                                        extra=[stubborn])
    recorder = Recorder(history=True)
    session.subscribe(recorder)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    session.cancel()
    await asyncio.wait_for(task, 5)
    await asyncio.sleep(0.3)  # the tool has returned by now
    assert recorder.types[-1] == "done"  # nothing after the turn's end
    card = session.messages[1].metadata.tool_executions[0]
    assert (card.status, card.result) == (
        "cancelled", "This call did not finish: the user cancelled the turn.")
    assert session.messages[2].tool_results[0].content == card.result
    await session.run("next")
    assert_valid_history(session.messages)
    assert len(provider.requests) == 2


async def test_an_internal_tool_switched_off_mid_turn_gets_no_card() -> None:
    # Closing the calls uses the tools the answer was asked with, not today's: an
    # internal tool stays without a card even once it is switched off.
    quiet, started = hanging_tool(visibility="internal")
    session, rec, _ = make_session([calls(("q1", "slow_job", {}), ("q2", "slow_job", {}))],
                                   extra=[quiet])
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    session.catalog.disable("slow_job")
    session.cancel()
    await asyncio.wait_for(task, 5)
    metadata = session.messages[1].metadata
    assert metadata.tool_executions == [] and metadata.skill_executions == []
    assert rec.of("tool_call") == []
    assert [m.tool_results[0].content for m in session.messages[2:]] == [
        "This call did not finish: the user cancelled the turn.",  # q1 was running
        "This call did not run: the user cancelled the turn."]  # q2 waited for it
    assert_valid_history(session.messages)
