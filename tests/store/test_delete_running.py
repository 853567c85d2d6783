"""Deleting a session sticks: a running turn (here, in another kernel, or a sub-agent's)
refuses the delete with a clear ``SessionBusyError`` and nothing is deleted; an open but
idle session whose record was deleted stores nothing more, so no partial session ever
comes back in the list."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, SessionBusyError, SessionStore
from neta_nb.providers.base import TextDelta
from tests.support.delegation import crew_catalog, delegations
from tests.support.owner_child import owner_streaming
from tests.support.sessions import FakeProvider, answer, assert_valid_history, make_session
from tests.support.timing import wait_until


def listed(store: SessionStore) -> list[str]:
    return [record.id for record in store.list_sessions()]


@pytest.mark.parametrize("where", ["file", "memory"])
async def test_a_session_whose_turn_runs_here_cannot_be_deleted(tmp_path: Path,
                                                                where: str) -> None:
    store = SessionStore(tmp_path / "s.db" if where == "file" else ":memory:")
    release = asyncio.Event()
    session, recorder, _provider = make_session(
        [[TextDelta("half an answer"), release.wait, *answer(" and the rest")]], store=store)
    task = session.start("a question")
    await wait_until(lambda: recorder.of("token"))  # the answer streams
    with pytest.raises(SessionBusyError, match="this kernel") as refused:
        store.delete_session(session.id)
    assert "session.stop()" in str(refused.value)
    assert "删除会话前请先停止" in refused.value.message("zh-CN")
    release.set()
    await task
    session.flush()
    # Nothing was deleted: the whole conversation is there.
    assert [m.text for m in store.load_messages(session.id)] == [
        "a question", "half an answer and the rest"]
    store.delete_session(session.id)  # idle now: deleted for good
    session.flush()
    assert session.id not in listed(store)
    assert store.load_messages(session.id) == []


def test_a_session_whose_turn_runs_in_another_kernel_cannot_be_deleted(
        store_target: str | Path, tmp_path: Path) -> None:
    db = store_target
    with owner_streaming(db, "s_elsewhere", tmp_path / "streaming") as child:
        store = SessionStore(db)
        with pytest.raises(SessionBusyError, match=f"process {child.pid}") as refused:
            store.delete_session("s_elsewhere")
        assert "stop it there" in str(refused.value)
        assert f"进程 {child.pid}" in refused.value.message("zh-CN")
        assert "s_elsewhere" in listed(store)
    # Its kernel is gone: the turn is dead, and the delete goes through.
    store = SessionStore(db)
    store.delete_session("s_elsewhere")
    assert "s_elsewhere" not in listed(store)


async def test_a_parent_whose_sub_agent_runs_cannot_be_deleted(
        store_target: str | Path) -> None:
    store = SessionStore(store_target)
    release = asyncio.Event()
    child = Agent("helper", description="helps",
                  model=FakeProvider([[TextDelta("working"), release.wait, *answer(" done")]]))
    parent = Agent("lead", subagents=[child], model=FakeProvider([
        delegations(("d1", "helper", "help")), answer("thanks")]))
    session = AgentSession(parent, crew_catalog(), store)
    task = session.start("go")
    await wait_until(lambda: any(record.running
                                 for record in store.list_children(session.id)))
    # The parent's own turn is running too; the child's turn alone is enough to refuse.
    with pytest.raises(SessionBusyError):
        store.delete_session(session.id)
    release.set()
    await task
    session.flush()
    assert len(store.list_children(session.id)) == 1
    store.delete_session(session.id)
    assert store.list_children(session.id) == []
    assert session.id not in listed(store)


async def test_an_open_idle_session_deleted_elsewhere_stores_nothing_more(
        store_target: str | Path) -> None:
    db = store_target
    session, recorder, _provider = make_session(
        [answer("first answer"), answer("second answer")], store=SessionStore(db))
    await session.run("first question")
    assert session.flush(10)
    SessionStore(db).delete_session(session.id)  # another kernel deletes it
    await session.run("second question")  # the chat goes on...
    session.flush(10)
    store = SessionStore(db)
    assert session.id not in listed(store)  # ...but the deletion sticks: no partial session
    assert store.load_messages(session.id) == []
    (warning,) = [e for e in recorder.of("warning") if e.code == "store_session_deleted"]
    assert "deleted" in warning.message
    assert_valid_history(session.messages)
    assert [m.text for m in session.messages][-1] == "second answer"


# --- a sub-agent of a deleted parent -------------------------------------------------------

async def test_a_deleted_parent_that_delegates_again_stores_no_child(
        store_target: str | Path) -> None:
    db = store_target
    helper = Agent("helper", description="helps", model=FakeProvider([answer("child answer")]))
    lead = Agent("lead", subagents=[helper], model=FakeProvider([
        answer("hello"), delegations(("d1", "helper", "help")), answer("thanks")]))
    session = AgentSession(lead, crew_catalog(), SessionStore(db))
    await session.run("one")
    assert session.flush(10)
    SessionStore(db).delete_session(session.id)  # another kernel deletes the idle session
    await session.run("two")  # the chat goes on and delegates
    session.flush(10)
    store = SessionStore(db)
    assert store.get_session(session.id) is None
    assert store.list_children(session.id) == []  # no sub-agent session under a deleted one
