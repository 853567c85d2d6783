"""Resume: a kernel that died mid-response or mid-tools comes back with a valid history,
its finished results and its cards; the resumed session reports the usage the live one
did."""

from __future__ import annotations

import asyncio
from pathlib import Path

from neta_nb import AgentSession, SessionStore
from neta_nb.messages import Message, TextPart, ToolCallPart, Usage
from neta_nb.providers.base import ProviderError, StreamDone, TextDelta, UsageUpdate
from neta_nb.store.session_store import SessionRecord

from ..support.mid_tools import copy_as_on_disk, start_until_mid_tools
from ..support.sessions import answer, assert_valid_history, make_session


def test_resume_closes_tool_calls_of_the_checkpointed_draft(store_target: str | Path) -> None:
    """The kernel died while the model was streaming a response whose tool call had
    already arrived: the draft holds that call, and resume must answer it too."""
    store = SessionStore(store_target)
    store.save_session(SessionRecord(id="x", agent={"name": "a", "model": "scripted"},
                                     running=True))
    store.append_message("x", Message.user("go"))
    store.save_draft("x", Message.assistant([TextPart(text="Let me look"),
                                             ToolCallPart(id="d1", name="list_files")]))
    resumed = AgentSession.resume("x", store=store)
    assert_valid_history(resumed.messages)
    assert_valid_history(resumed.model_view)
    assert resumed.flush(10)  # the repair is stored in the background, then read back
    assert_valid_history(store.load_messages("x"))


async def test_kill_mid_tools_keeps_finished_results_and_running_cards(tmp_path: Path) -> None:
    """Two calls of one response; the first finishes, the second is still running when
    the process dies. The finished result is a completed message and must survive; the
    running call's card must come back (marked as not finished)."""
    mid = await start_until_mid_tools(tmp_path)
    session, task = mid.session, mid.task
    # The process "dies" now: take a consistent copy of the database as it is on disk.
    copy = copy_as_on_disk(mid.db, tmp_path / "killed.db")
    session.cancel()
    await asyncio.wait_for(task, 5)
    # The copy names this (living) process as the turn's owner; the process it stands for
    # is dead — another start time.
    killed = SessionStore(copy)
    owner = killed.get_session(session.id).owner  # type: ignore[union-attr]
    assert owner is not None
    killed.update_session(session.id, owner=owner.model_copy(update={"started": 0.0}))

    resumed = AgentSession.resume(session.id, store=SessionStore(copy))
    results = {m.tool_results[0].tool_call_id: m.tool_results[0]
               for m in resumed.messages if m.role == "tool"}
    assert results["a"].content == "3" and not results["a"].is_error
    assert results["b"].is_error
    records = {r.id: r for r in resumed.messages[1].metadata.tool_executions}
    assert records["a"].status == "done"
    assert records["b"].status == "error"
    assert_valid_history(resumed.messages)


async def test_resumed_usage_matches_the_live_session(store_target: str | Path) -> None:
    """`session.usage` counts every call the provider billed; the resumed session must
    report the same total — including the summary call and a failed call's usage."""
    store = SessionStore(store_target)
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
