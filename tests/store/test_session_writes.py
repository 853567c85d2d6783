"""The store writer seen from a session: a turn's end while its writes are behind (running
until `done`, Stop, an outside cancel), resume while this process still has writes of the
session, and which writers are "this process's" for a store."""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import cast

import pytest

from neta_nb import AgentSession, SessionBusyError, SessionStore
from neta_nb.events import DoneEvent, TokenEvent
from neta_nb.store.sqlite.sqlite import SqliteDatabase
from tests.support.owner_child import start_owner

from ..support.sessions import answer, make_session
from ..support.timing import finishes_in_thread, wait_until
from .test_writer import HOURS, unbounded_store_waits, write_lock_held


async def test_a_session_is_running_until_its_done_event_even_while_the_store_is_behind(
        store_target: str | Path) -> None:
    db = store_target
    session, recorder, _ = make_session([answer("one"), answer("two")], store=SessionStore(db))
    with write_lock_held(db):
        first = session.start("turn one")
        # The turn's end waits for its writes (here: until the lock makes the store
        # behind); the session is idle only once `done` has been said.
        await wait_until(lambda: not session.running, interval=0.0005)
        assert any(isinstance(e, DoneEvent) for e in recorder.events), \
            "the session looked idle before its turn's done event"
        await first
        second = session.start("turn two")
        await second
    said = "".join("|" if isinstance(e, DoneEvent) else e.text for e in recorder.events
                   if isinstance(e, (DoneEvent, TokenEvent)))
    assert said == "one|two|"
    assert session.flush(10)


@contextlib.contextmanager
def writes_stalled(store: SessionStore) -> Iterator[None]:
    """A write that neither ends nor fails (a hung network filesystem): an in-memory store's
    writer shares its connection's lock, held here by another thread."""
    held, release = threading.Event(), threading.Event()

    def hold() -> None:
        with cast(SqliteDatabase, store.database)._lock:
            held.set()
            release.wait(30)

    holder = threading.Thread(target=hold)
    holder.start()
    held.wait(5)
    try:
        yield
    finally:
        release.set()
        holder.join(10)


def waits_for_its_writes(session: AgentSession) -> bool:
    """The session's turn is over and its end waits for the store (``settled()``)."""
    writer = session.state.saved._writer
    return writer is not None and bool(writer._waiters)


async def test_stop_while_the_turn_waits_for_its_writes_ends_it_with_one_done(
        monkeypatch: pytest.MonkeyPatch) -> None:
    unbounded_store_waits(monkeypatch)  # the wait's own limit (10 s) is hours here
    store = SessionStore(":memory:")
    session, recorder, _ = make_session([answer("one"), answer("two")], store=store)
    with writes_stalled(store):
        task = session.start("turn one")
        await wait_until(lambda: waits_for_its_writes(session))  # the turn is over
        assert session.messages[-1].text == "one"
        assert session.running and not any(isinstance(e, DoneEvent) for e in recorder.events)
        assert session.cancel()
        # Ended while the writes are still stalled and the wait's limit is hours away:
        # Stop ended it. The bound (shorter than the stall) only turns a regression into a
        # failure instead of a hang; asyncio.wait, as a turn that swallowed a second
        # cancel would pass wait_for.
        await asyncio.wait({task}, timeout=20)
        assert task.done(), "Stop did not end the turn's wait for its writes"
        assert not session.flush(0), "the turn ended only once its writes were stored"
        assert task.result().text == "one"
        assert [e.stop_reason for e in recorder.events if isinstance(e, DoneEvent)] == [
            "end_turn"]
        assert not session.running
    await session.run("turn two")
    assert [e.stop_reason for e in recorder.events if isinstance(e, DoneEvent)] == [
        "end_turn", "end_turn"]
    assert session.flush(10)
    assert [m.text for m in store.load_messages(session.id)] == [
        "turn one", "one", "turn two", "two"]


async def test_a_turn_cancelled_from_outside_while_it_waits_for_its_writes_says_done_once(
        ) -> None:
    store = SessionStore(":memory:")
    session, recorder, _ = make_session([answer("one"), answer("two")], store=store)
    with writes_stalled(store):
        cell = asyncio.get_running_loop().create_task(session.run("turn one"))
        await wait_until(lambda: waits_for_its_writes(session))  # the turn is over
        assert session.messages[-1].text == "one"
        cell.cancel()  # what a kernel interrupt does to the cell awaiting run()
        with pytest.raises(asyncio.CancelledError):
            await cell
        assert len([e for e in recorder.events if isinstance(e, DoneEvent)]) == 1
        assert not session.running
    await session.run("turn two")
    assert len([e for e in recorder.events if isinstance(e, DoneEvent)]) == 2
    assert session.flush(10)
    assert [m.text for m in store.load_messages(session.id)] == [
        "turn one", "one", "turn two", "two"]


async def test_resuming_a_session_whose_writes_wait_here_loses_and_reorders_nothing(
        store_target: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    unbounded_store_waits(monkeypatch)
    if not isinstance(store_target, Path):  # PostgreSQL: the store's own lock waits too
        monkeypatch.setattr("neta_nb.store.postgres.postgres.STORE_LOCK_TIMEOUT_MS",
                            int(HOURS * 1000))
    db = store_target
    store = SessionStore(db)
    session, _, _ = make_session([answer("one"), answer("two")], store=store)
    await session.run("turn one")

    def resume() -> None:
        AgentSession.resume(session.id, store=store, agent=session.agent,
                            catalog=session.catalog)

    with write_lock_held(db):
        await session.run("turn two")  # shown, not stored yet: the store is behind
        assert session.store_failure is not None
        # Refused at once, saying why: resumed now it would lack turn two (and two writers
        # would store their messages in either order); the open session keeps it all.
        # Any wait on the lock or on those writes lasts hours here, so refused while the
        # lock is still held means it never blocked the kernel on another program's lock.
        with pytest.raises(SessionBusyError, match="not stored yet"):
            finishes_in_thread(resume, 60, "resume while another program holds the lock")
        assert not session.flush(0)  # turn two is still queued behind the lock
    assert session.flush(10)
    assert [m.text for m in store.load_messages(session.id)] == [
        "turn one", "one", "turn two", "two"]
    again = AgentSession.resume(session.id, store=store, agent=session.agent,
                                catalog=session.catalog)
    assert [m.text for m in again.messages] == ["turn one", "one", "turn two", "two"]
    again.flush(10)  # its record's update, before the store goes with the test


async def test_the_same_database_named_another_way_is_still_this_process_writer(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    session, _, _ = make_session([answer("one")], store=SessionStore("sessions.sqlite3"))
    with write_lock_held(tmp_path / "sessions.sqlite3"):
        await session.run("turn one")
        assert session.store_failure is not None
        with pytest.raises(SessionBusyError, match="not stored yet"):
            AgentSession.resume(session.id, store=SessionStore(tmp_path / "sessions.sqlite3"),
                                agent=session.agent, catalog=session.catalog)
    assert session.flush(10)


def test_another_in_memory_store_is_another_database() -> None:
    from neta_nb.store.writer import writers_of

    mine, theirs = SessionStore(":memory:"), SessionStore(":memory:")
    session, _, _ = make_session([], store=mine)
    assert writers_of(theirs, session.id) == []
    assert [w.store for w in writers_of(mine, session.id)] == [mine]


def test_another_process_cannot_take_over_a_turn_whose_claim_waits_behind_a_lock(
        store_target: str | Path, tmp_path: Path) -> None:

    from neta_nb import Agent
    from neta_nb.providers.base import TextDelta

    from ..support.sessions import FakeProvider
    from ..support.timing import poll_until

    db, marker = store_target, tmp_path / "streaming"
    known = AgentSession(Agent("owner", model=FakeProvider([[TextDelta("x")]])),
                         store=SessionStore(db), session_id="s_shared")
    assert known.flush(10)  # the session exists, idle
    with write_lock_held(db):  # a backup tool holds the store while the owner starts
        child = start_owner(db, "s_shared", marker)
        try:
            poll_until(marker.exists, 30, "the owner's turn to stream")
            with pytest.raises(SessionBusyError, match=f"process {child.pid}"):
                AgentSession.resume("s_shared", store=SessionStore(db))
        finally:
            child.kill()
            child.wait(10)
