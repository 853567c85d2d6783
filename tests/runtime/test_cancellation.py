"""Stop and start races: a Stop while idle, a start after an awaited run or during a
compaction, and a thread that outlives its cancelled turn."""

from __future__ import annotations

import asyncio
import contextlib
import threading

from neta_nb import ToolContext, tool
from neta_nb.messages import Usage
from neta_nb.providers.base import StreamDone, TextDelta, UsageUpdate

from ..support.sessions import answer, assert_valid_history, calls, make_session


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
    loop = asyncio.get_running_loop()
    delivered = asyncio.Event()

    @tool(visibility="skill", category="skill", core=True)
    def crunch(ctx: ToolContext) -> str:
        """Works in a thread."""
        started.set()
        release.wait(10)
        ctx.progress(50, step="late")
        # Queued behind whatever the late progress handed to the loop: once it has run,
        # the loop has seen everything the progress call could deliver.
        loop.call_soon_threadsafe(delivered.set)
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
    await asyncio.wait_for(delivered.wait(), 10)
    assert rec.types[-1] == "done", rec.types[rec.types.index("done"):]


# --- Stop and cancellation edges --------------------------------------------------------

@tool(core=True)
async def stubborn() -> str:
    """Cleans up when cancelled and returns what it had."""
    try:
        await asyncio.sleep(30)
    except asyncio.CancelledError:
        return "partial result after cleanup"
    return "full"


async def test_stop_stops_the_turn_even_if_the_running_tool_handles_its_cancellation(
) -> None:
    session, rec, provider = make_session([calls(("c1", "stubborn", {})), answer("went on")],
                                          extra=[stubborn])
    task = session.start("go")
    await rec.wait_for("tool_call")
    assert session.cancel() is True
    await asyncio.wait_for(task, 5)
    assert [e.stop_reason for e in rec.of("done")] == ["cancelled"]
    assert len(provider.requests) == 1, "the model was called again after Stop"
    assert_valid_history(session.messages)


async def test_a_started_task_cancelled_before_its_first_step_still_emits_done() -> None:
    session, rec, _ = make_session([answer("never")])
    task = session.start("go")
    task.cancel()  # e.g. the kernel cancelling its tasks
    with contextlib.suppress(asyncio.CancelledError):
        await task
    assert not session.running
    assert [e.stop_reason for e in rec.of("done")] == ["cancelled"]
