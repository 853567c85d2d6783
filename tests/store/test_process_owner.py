"""A session belongs to the process that runs its turn: another process cannot take it
over while that owner lives, and a dead owner's turn stops showing as running the first
time anyone looks — without resuming it."""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
import sys
from pathlib import Path

import pytest

from neta_nb import SessionBusyError, SessionStore
from neta_nb.runtime.session import AgentSession
from neta_nb.store.process_owner import ProcessOwner
from tests.support.owner_child import start_owner

from ..support.sessions import answer, make_session
from ..support.timing import poll_until, wait_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.mark.parametrize("host", ["this host", "another host"])
def test_another_process_cannot_resume_a_live_turn_and_a_killed_one_settles(
        store_target: str | Path, tmp_path: Path, host: str) -> None:
    if host == "another host" and not str(store_target).startswith("postgresql:"):
        pytest.skip("a SQLite file is one machine's: its owner check cannot see another host")
    db, marker = store_target, tmp_path / "streaming"
    child = start_owner(db, "s_shared", marker,
                        host="kernel-elsewhere" if host == "another host" else None)
    try:
        poll_until(marker.exists, 30, "the owner's turn to stream")
        # Its running flag is stored by its writer, in the background: a moment later.
        poll_until(lambda: getattr(SessionStore(db).get_session("s_shared"), "running", False),
                   10, "the owner's running flag in the store")
        record = SessionStore(db).get_session("s_shared")
        assert record is not None and record.running
        assert record.owner is not None and record.owner.pid == child.pid
        with pytest.raises(SessionBusyError, match=f"process {child.pid}"):
            AgentSession.resume("s_shared", store=SessionStore(db))
        # Nothing was taken over: the live turn is still the owner's.
        assert SessionStore(db).get_session("s_shared").running  # type: ignore[union-attr]

        # The streamed text is checkpointed within half a second; then the kernel dies.
        poll_until(lambda: _has_draft(db, "s_shared"), 10, "the draft checkpoint")
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        # The claim goes with the process, wherever it ran.
        poll_until(lambda: _claim_free(db, "s_shared"), 1.0, "the dead owner's claim to go")
        # Only a look at the record, no resume: the dead owner's turn is not running.
        settled = SessionStore(db).get_session("s_shared")
        assert settled is not None and not settled.running and settled.owner_died
        assert not [r for r in SessionStore(db).list_sessions() if r.running]

        resumed = AgentSession.resume("s_shared", store=SessionStore(db))
        assert resumed.flush(10)
        last = resumed.messages[-1]
        assert last.metadata.interrupted == "killed"
        assert last.text == "A partial answer"  # the draft checkpointed before the kill
        after = SessionStore(db).get_session("s_shared")
        assert after is not None and not after.running and not after.owner_died
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


async def test_resuming_a_session_this_process_is_running_is_refused(
        store_target: str | Path) -> None:
    store = SessionStore(store_target)
    gate = asyncio.Event()
    session, _, _ = make_session([[gate.wait, *answer("done")]], store=store)
    task = session.start("go")
    await wait_until(lambda: store.get_session(session.id).running)  # type: ignore[union-attr]
    with pytest.raises(SessionBusyError, match="this kernel"):
        AgentSession.resume(session.id, store=store, agent=session.agent,
                            catalog=session.catalog)
    gate.set()
    await task
    assert not store.get_session(session.id).running  # type: ignore[union-attr]


def _has_draft(db: str | Path, session_id: str) -> bool:
    with contextlib.closing(SessionStore(db)) as store:
        return store.load_draft(session_id) is not None


def _claim_free(db: str | Path, session_id: str) -> bool:
    with contextlib.closing(SessionStore(db)) as store:
        try:
            store.database.check_claim(session_id, "resume")
        except SessionBusyError:
            return False
        return True


def test_a_recycled_pid_is_not_the_owner(store_target: str | Path) -> None:
    # Containers restart pids from 1: the same pid with another start time is another
    # process, so the turn it "owns" is dead.
    store = SessionStore(store_target)
    session, _, _ = make_session([], store=store)
    me = ProcessOwner.current()
    stale = me.model_copy(update={"started": me.started - 3600})
    store.update_session(session.id, running=True, owner=stale)
    record = store.get_session(session.id)
    assert record is not None and not record.running and record.owner_died
    assert ProcessOwner.current().is_alive()
