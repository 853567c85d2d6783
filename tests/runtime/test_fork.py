"""``session.fork(message_id)``: a branch whose history is the session's up to that
message, with the plan, cards, token and cost figures and thinking level as they were
there — measured against the session as it stood at that point — stored as a branch,
while the session it came from stays byte-identical in the store."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from neta_nb import AgentSession, SessionStore
from neta_nb.messages import Usage
from neta_nb.widgets import SessionSidebar

from ..support.sessions import FakeProvider, answer, calls, make_session
from ..support.timing import wait_until

PLAN_ONE = {"todos": [{"id": "1", "content": "Look", "status": "in_progress"},
                      {"id": "2", "content": "Answer", "status": "pending"}]}
PLAN_TWO = {"todos": [{"id": "1", "content": "Look", "status": "completed"},
                      {"id": "2", "content": "Answer", "status": "completed"}]}


def _stored_rows(store: SessionStore, session_id: str) -> list[tuple[str, str]]:
    return [(row[0], row[1]) for row in store.database.execute(
        "SELECT id, data FROM messages WHERE session_id = ? ORDER BY seq", (session_id,))] + [
        (row[0], row[1]) for row in store.database.execute(
            "SELECT id, data FROM sessions WHERE id = ?", (session_id,))]


async def _two_turns(store: SessionStore) -> tuple[AgentSession, dict[str, object]]:
    session, _rec, _provider = make_session(
        [calls(("t1", "todo", PLAN_ONE), usage=Usage(input_tokens=300, output_tokens=50)),
         calls(("a1", "plus", {"a": 1, "b": 2})),
         answer("Three.", usage=Usage(input_tokens=420, output_tokens=60)),
         calls(("t2", "todo", PLAN_TWO)),
         answer("All done.", usage=Usage(input_tokens=900, output_tokens=80))], store=store)
    session.set_thinking_level("high")
    await session.run("First: add them")
    # What the session showed after its first turn: what a fork there must show.
    at_first = {"todo": session.todo.summary().model_dump(),
                "context": session.context.model_dump(),
                "cost": session.cost_usd, "level": session.think_level,
                "messages": [m.model_dump_json() for m in session.messages]}
    session.set_thinking_level("low")
    await session.run("Second: finish")
    session.flush()
    return session, at_first


async def test_a_fork_has_the_state_the_session_had_at_that_message(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, at_first = await _two_turns(store)
    before = _stored_rows(store, session.id)
    first_answer = next(m for m in session.messages if m.text == "Three.")

    branch = session.fork(first_answer.id)
    assert branch.id != session.id
    assert [m.model_dump_json() for m in branch.messages] == at_first["messages"]
    assert branch.todo.summary().model_dump() == at_first["todo"]  # the first plan
    assert branch.context.model_dump() == at_first["context"]
    assert branch.cost_usd == at_first["cost"]
    assert branch.think_level == at_first["level"] == "high"
    cards = [e.name for m in branch.messages for e in m.metadata.tool_executions]
    assert cards == ["plus"]  # the second turn's cards are not in it
    assert (branch.branch_of, branch.branch_at) == (session.id, first_answer.id)
    branch.flush()
    assert _stored_rows(store, session.id) == before  # the parent, byte for byte

    # Stored as a branch: listed at the top level, and resumed the same.
    record = store.get_session(branch.id)
    assert record is not None and record.parent_id is None
    assert (record.branch_of, record.branch_at) == (session.id, first_answer.id)
    assert branch.id in {r.id for r in store.list_sessions()}
    rows = {row["id"]: row for row in SessionSidebar(store).sessions}
    assert rows[branch.id]["branch_of"] == session.id and rows[session.id]["branch_of"] is None
    resumed = AgentSession.resume(branch.id, store, catalog=session.catalog)
    assert [m.id for m in resumed.messages] == [m.id for m in branch.messages]
    assert resumed.think_level == "high" and resumed.branch_of == session.id
    assert resumed.todo.summary().model_dump() == at_first["todo"]


async def test_a_fork_goes_on_with_its_own_turns(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _ = await _two_turns(store)
    prompt = session.messages[0]
    branch = session.fork(prompt.id)  # just the first prompt
    assert [m.role for m in branch.messages] == ["user"]
    provider = branch.provider
    assert isinstance(provider, FakeProvider)  # the session's own, shared
    provider.responses.append(answer("From the branch."))
    await branch.run("Go on")
    assert branch.messages[-1].text == "From the branch."
    sent = provider.requests[-1].messages
    assert [m.text for m in sent if m.role == "user"] == ["First: add them", "Go on"]
    assert session.messages[-1].text == "All done."  # untouched


async def test_a_fork_is_refused_while_a_turn_runs_or_at_an_unknown_message() -> None:
    gate = asyncio.Event()  # the answer waits for the test
    session, _rec, _provider = make_session([[gate.wait, *answer("slow")]])
    task = session.start("wait")
    await wait_until(lambda: bool(session.messages))
    with pytest.raises(RuntimeError, match="running a turn"):
        session.fork(session.messages[0].id)
    gate.set()
    await task
    with pytest.raises(KeyError, match="no message"):
        session.fork("m_nope")
