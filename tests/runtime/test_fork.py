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
from neta_nb.providers.base import StreamDone, TextDelta
from neta_nb.widgets import SessionSidebar

from ..support.sessions import FakeProvider, answer, calls, make_session
from ..support.timing import wait_until

PLAN_ONE = {"todos": [{"id": "1", "content": "Look", "status": "in_progress"},
                      {"id": "2", "content": "Answer", "status": "pending"}]}
PLAN_TWO = {"todos": [{"id": "1", "content": "Look", "status": "completed"},
                      {"id": "2", "content": "Answer", "status": "completed"}]}


def _stored_rows(store: SessionStore, session_id: str) -> list[tuple[str, str]]:
    # The record's updated_at is in its data: byte for byte means nothing was written.
    mark = "%s" if store.shared else "?"  # PostgreSQL's driver, or SQLite's
    return [(row[0], row[1]) for table, order in (("messages", " ORDER BY seq"),
                                                  ("sessions", ""))
            for row in store.database.execute(
                f"SELECT id, data FROM {table} WHERE "
                f"{'session_id' if table == 'messages' else 'id'} = {mark}{order}",
                (session_id,))]


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
    at_first: dict[str, object] = {"todo": session.todo.summary().model_dump(),
                "context": session.context.model_dump(),
                "cost": session.cost_usd, "level": session.think_level,
                "messages": [m.model_dump_json() for m in session.messages]}
    session.set_thinking_level("low")
    await session.run("Second: finish")
    session.flush()
    return session, at_first


async def test_a_fork_has_the_state_the_session_had_at_that_message(
        store_target: str | Path) -> None:
    store = SessionStore(store_target)
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


# --- rewind, retry, edit ------------------------------------------------------------------

async def test_a_rewind_brings_back_the_state_at_that_message_and_keeps_the_rest(
        store_target: str | Path) -> None:
    store = SessionStore(store_target)
    session, at_first = await _two_turns(store)
    whole = [m.model_dump_json() for m in session.messages]
    second_prompt = next(m for m in session.messages if m.text == "Second: finish")

    kept = session.rewind(second_prompt.id)
    assert [m.model_dump_json() for m in session.messages] == at_first["messages"]
    assert session.todo.summary().model_dump() == at_first["todo"]
    assert session.context.model_dump() == at_first["context"]
    assert session.cost_usd == at_first["cost"]
    assert session.think_level == "low"  # the level the rewound-to prompt ran at
    # Nothing is lost: the whole history is a branch of the session.
    assert kept is not None and kept.branch_of == session.id
    assert [m.model_dump_json() for m in kept.messages] == whole
    session.flush()
    kept.flush()
    resumed = AgentSession.resume(session.id, store, catalog=session.catalog)
    assert [m.id for m in resumed.messages] == [m.id for m in session.messages]
    assert resumed.todo.summary().model_dump() == at_first["todo"]
    again = AgentSession.resume(kept.id, store, catalog=session.catalog)
    assert [m.model_dump_json() for m in again.messages] == whole

    # The next turn sends the model exactly the chosen branch, then the new prompt.
    provider = session.provider
    assert isinstance(provider, FakeProvider)
    provider.responses.append(answer("Another way."))
    await session.run("Second, differently")
    sent = provider.requests[-1].messages
    assert [m.id for m in sent[:-1]] == [m.id for m in resumed.messages]
    assert sent[-1].text == "Second, differently"


async def test_retry_runs_the_last_prompt_again_and_keeps_the_first_answer(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _rec, provider = make_session([answer("First try."), answer("Second try.")],
                                           store=store)
    await session.run("Tell me")
    await session.retry()
    assert [(m.role, m.text) for m in session.messages] == [("user", "Tell me"),
                                                           ("assistant", "Second try.")]
    assert [m.text for m in provider.requests[-1].messages] == ["Tell me"]
    session.flush()
    branches = [r for r in store.list_sessions() if r.branch_of == session.id]
    assert len(branches) == 1
    kept = AgentSession.resume(branches[0].id, store, catalog=session.catalog)
    assert [m.text for m in kept.messages] == ["Tell me", "First try."]


async def test_edit_sends_the_new_text_in_place_of_the_prompt() -> None:
    session, _rec, provider = make_session([answer("About cats."), answer("About dogs."),
                                            answer("More dogs.")])
    await session.run("Tell me about cats")
    await session.run("And more")
    first = session.messages[0]
    await session.edit(first.id, "Tell me about dogs")
    assert [m.text for m in session.messages] == ["Tell me about dogs", "More dogs."]
    assert [m.text for m in provider.requests[-1].messages] == ["Tell me about dogs"]
    with pytest.raises(ValueError, match="not a prompt"):
        session.edit(session.messages[1].id, "no")
    assert [m.text for m in session.messages] == ["Tell me about dogs", "More dogs."]


async def test_rewind_retry_and_edit_are_refused_while_a_turn_runs() -> None:
    gate = asyncio.Event()
    session, _rec, _provider = make_session([answer("one"), [gate.wait, *answer("two")]])
    await session.run("first")
    task = session.start("second")
    await wait_until(lambda: len(session.messages) == 3)
    for act in (lambda: session.rewind(session.messages[0].id), session.retry,
                lambda: session.edit(session.messages[0].id, "x")):
        with pytest.raises(RuntimeError, match="running a turn"):
            act()
    gate.set()
    await task
    assert [m.text for m in session.messages] == ["first", "one", "second", "two"]
    with pytest.raises(KeyError):
        session.rewind("m_nope")


async def test_a_chat_view_shows_the_rewound_history() -> None:
    from neta_nb.widgets import ChatView

    session, _rec, _provider = make_session([answer("one"), answer("two")])
    chat = ChatView(session)
    await session.run("first")
    await session.run("second")
    assert [m["text"] for m in chat.messages] == ["first", "one", "second", "two"]
    session.rewind(session.messages[2].id)
    assert [m["text"] for m in chat.messages] == ["first", "one"]
    chat.close()


async def test_a_fork_after_a_compaction_keeps_the_compacted_view(tmp_path: Path) -> None:
    """The branch is sent the summary and what it kept, as its parent would be (not the
    whole history again), counts the summary's call, and resumes so."""
    store = SessionStore(tmp_path / "s.db")
    session, _, _ = make_session(
        [answer("one"), answer("two"), answer("three"),
         [TextDelta("- summary"), StreamDone("end_turn")], answer("four")],
        agent_options={"keep_recent_turns": 1, "compact_at": None}, store=store)
    for prompt in "abc":
        await session.run(prompt)
    assert await session.compact() is not None
    await session.run("d")
    branch = session.fork(session.messages[-1].id)
    assert len(branch.compactions) == len(session.compactions) == 1
    assert [m.text for m in branch.model_view] == [m.text for m in session.model_view]
    assert branch.usage == session.usage  # the summary's call counted too
    assert branch.flush(10)
    again = AgentSession.resume(branch.id, store, catalog=session.catalog,
                                agent=session.agent)
    assert [m.text for m in again.model_view] == [m.text for m in session.model_view]
    # At a message before the compaction: the messages themselves, as a rewind there.
    early = session.fork(session.messages[1].id)
    assert early.compactions == []
    assert [m.text for m in early.model_view] == ["a", "one"]
    store.close()
