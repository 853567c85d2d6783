"""The store never blocks the kernel and never loses a shown message: a session's writes
go through a writer thread with a connection of its own, in order, retried while another
program holds the database or the disk is full (neta_nb/store/writer.py, persistence.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sqlite3
import subprocess
import sys
import textwrap
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AgentSession, SessionStore
from neta_nb.events import DoneEvent, TokenEvent, WarningEvent
from neta_nb.messages import Message
from neta_nb.providers.base import TextDelta
from neta_nb.store.database import Rows
from neta_nb.store.records import SessionRecord
from neta_nb.store.writer import StoreFailure, StoreWriter, Write

from ..support.sessions import answer, make_session
from ..support.timing import finishes_in_thread, poll_until, wait_until

ROOT = Path(__file__).resolve().parent.parent


def stored_texts(db: str | Path, session_id: str) -> list[tuple[str, str]]:
    """(role, text) of every stored message, read with a store of its own."""
    store = SessionStore(db)
    try:
        return [(m.role, m.text) for m in store.load_messages(session_id)]
    finally:
        store.close()


def _is_url(db: str | Path) -> bool:
    return str(db).startswith("postgresql:")


class _OtherProgram:
    """Another program's connection holding the store's write lock: SQLite's database-wide
    one, or on PostgreSQL an exclusive lock on the tables (reads still go on)."""

    def __init__(self, db: str | Path) -> None:
        self._pg = _is_url(db)
        if self._pg:
            import psycopg

            self._conn: Any = psycopg.connect(str(db), autocommit=True)
            self._conn.execute("BEGIN")
            self._conn.execute("LOCK TABLE sessions, messages, drafts, views, blobs, "
                               "blob_refs IN EXCLUSIVE MODE")
        else:
            self._conn = sqlite3.connect(db, isolation_level=None)
            self._conn.execute("BEGIN IMMEDIATE")

    def release(self) -> None:
        with contextlib.suppress(Exception):
            self._conn.execute("COMMIT")
        self._conn.close()


@contextlib.contextmanager
def write_lock_held(db: str | Path) -> Iterator[None]:
    """Another connection (a second notebook, a backup tool) holding the write lock."""
    other = _OtherProgram(db)
    try:
        yield
    finally:
        other.release()


class LockHolder:
    """Another program holding the write lock, from a thread of its own, until the test
    lets go — or by itself after ``guard`` seconds: an event loop stuck waiting on the lock
    (a write made on it, with the busy timeouts unbounded) then gets going again, and the
    test fails seeing the lock gone instead of hanging for ever."""

    def __init__(self, db: str | Path, guard: float) -> None:
        self._taken, self._let_go = threading.Event(), threading.Event()
        self.gave_up = False
        """The guard ran out: the holder let go by itself."""
        self._gone = False
        self._thread = threading.Thread(target=self._hold, args=(db, guard), daemon=True,
                                        name="another program holding the lock")

    @property
    def held(self) -> bool:
        """Still held: the test has not let go, nor has the guard run out."""
        return self._taken.is_set() and not (self.gave_up or self._gone)

    def _hold(self, db: str | Path, guard: float) -> None:
        other = _OtherProgram(db)
        try:
            self._taken.set()
            # Said before the lock goes, so whatever waited on it sees it.
            self.gave_up = not self._let_go.wait(guard)
        finally:
            self._gone = True
            other.release()

    def start(self) -> None:
        self._thread.start()
        assert self._taken.wait(10), "could not take the write lock"

    def let_go(self) -> None:
        self._let_go.set()
        self._thread.join(10)


@contextlib.contextmanager
def write_lock_held_by_a_thread(db: str | Path, guard: float = 30.0) -> Iterator[LockHolder]:
    """:func:`write_lock_held` for a test whose event loop must go on while it is held:
    ``holder.held`` says whether it still is."""
    holder = LockHolder(db, guard)
    holder.start()
    try:
        yield holder
    finally:
        holder.let_go()


HOURS = 3600.0


def unbounded_store_waits(monkeypatch: pytest.MonkeyPatch) -> None:
    """Every wait of the store for another program's lock, or of a read for this process's
    pending writes, lasts hours (set before the store is made: its connection takes the
    busy timeout when it opens). A call that waited on the lock could then only end once
    the test lets go of it: one that ends while the lock is still held did not wait —
    whatever the machine's speed. The session writer's own attempts keep their short
    timeout: it is off the caller's thread, and says promptly that it is behind."""
    import neta_nb.runtime.session.resume
    import neta_nb.store.session_writes
    import neta_nb.store.sqlite.sqlite
    import neta_nb.store.writer

    monkeypatch.setattr(neta_nb.store.sqlite.sqlite, "BUSY_TIMEOUT_MS", int(HOURS * 1000))
    monkeypatch.setattr(neta_nb.store.session_writes, "LOAD_FLUSH_LIMIT", HOURS)
    monkeypatch.setattr(neta_nb.runtime.session.resume, "LOAD_FLUSH_LIMIT", HOURS)
    monkeypatch.setattr(neta_nb.store.writer, "SETTLE_LIMIT", HOURS)


# --- another connection holds the lock ------------------------------------------------

async def test_a_locked_store_never_stalls_the_loop_nor_stop_and_loses_nothing(
        store_target: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A write made on the event loop would now stop it (the stream, Stop) until the lock
    # goes: each check below, made on the loop, passes only while the lock is still held.
    # How long the loop stalls and Stop takes is measured by benchmarks/store_behind.py.
    unbounded_store_waits(monkeypatch)
    db = store_target
    store = SessionStore(db)
    pace = asyncio.Event()
    deltas = [TextDelta(f"word{i} ") for i in range(400)]
    steps: list[object] = []
    for delta in deltas:
        steps += [delta, lambda: asyncio.sleep(0.01)]
    steps.append(pace.wait)  # streams until Stop
    session, recorder, _ = make_session([answer("first answer"), steps], store=store)
    await session.run("turn one")

    def streamed() -> int:
        return len(session.streaming_message.text) if session.streaming_message else 0

    with write_lock_held_by_a_thread(db) as lock:
        task = session.start("turn two")
        await wait_until(lambda: streamed() > 200)
        # The draft checkpoint and the user's prompt are queued behind the lock: the
        # session says so, and keeps streaming.
        await wait_until(lambda: any(isinstance(e, WarningEvent) for e in recorder.events))
        shown = streamed()
        await wait_until(lambda: streamed() > shown + 600)  # ~75 more deltas, and drafts
        assert lock.held, "the turn streamed on only once the lock was gone"
        session.cancel()  # what Stop does
        await wait_until(lambda: any(isinstance(e, DoneEvent) for e in recorder.events[-3:]))
        assert lock.held, "Stop ended the turn only once the lock was gone"
        await task
        assert session.store_failure is not None and session.store_failure.kind == "locked"
        assert not session.flush(0)  # the turn's end is queued behind the lock
        assert lock.held

    assert session.flush(10)

    def warnings() -> list[WarningEvent]:
        return [e for e in recorder.events if isinstance(e, WarningEvent)]

    await wait_until(lambda: warnings()[-1].cleared)  # delivered on the loop
    assert warnings()[0].code == "store_behind_locked" and not warnings()[0].cleared
    assert len(warnings()) == 2 and session.store_failure is None
    streamed = "".join(e.text for e in recorder.events if isinstance(e, TokenEvent))
    assert stored_texts(db, session.id) == [
        ("user", "turn one"), ("assistant", "first answer"),
        ("user", "turn two"), ("assistant", streamed.removeprefix("first answer"))]
    fresh = SessionStore(db)
    record = fresh.get_session(session.id)
    assert record is not None and not record.running and record.message_count == 4
    assert fresh.load_messages(session.id)[-1].metadata.interrupted == "cancelled"


async def test_run_returns_once_its_turn_is_stored(store_target: str | Path) -> None:
    db = store_target
    session, _, _ = make_session([answer("stored")], store=SessionStore(db))
    await session.run("go")
    # No flush: a healthy store holds the turn when run() returns.
    assert stored_texts(db, session.id) == [("user", "go"), ("assistant", "stored")]
    assert SessionStore(db).get_session(session.id).running is False  # type: ignore[union-attr]


# --- the writer itself ------------------------------------------------------------------

def _writer(db: str | Path) -> tuple[StoreWriter, list[StoreFailure | None], str | Path]:
    store = SessionStore(db)
    heard: list[StoreFailure | None] = []
    return StoreWriter(store, "s", heard.append), heard, db


def _row(text: str) -> Write:
    def apply(rows: Rows) -> None:
        rows.put_message("s", text, text)
    return Write(f"row {text}", apply)


def _rows(db: str | Path) -> list[str]:
    with contextlib.closing(SessionStore(db)) as store:
        return [r[0] for r in store.database.execute("SELECT id FROM messages ORDER BY seq")]


def test_writes_queued_behind_a_lock_are_stored_in_order_once_it_goes(
        store_target: str | Path) -> None:
    writer, heard, db = _writer(store_target)
    with write_lock_held(db):
        for n in range(5):
            writer.submit(_row(f"r{n}"))
        poll_until(lambda: heard, 10, "the writer to say it is behind")
        assert not writer.flush(0.2)  # still held: nothing can be written
        assert writer.pending == 5
        assert heard[0] is not None and heard[0].kind == "locked"
    assert writer.flush(10)
    assert _rows(db) == ["r0", "r1", "r2", "r3", "r4"]
    assert heard[-1] is None  # caught up, said once
    assert heard.count(None) == 1


@pytest.mark.parametrize(("errors", "logged"), [
    (["database is locked"], []),  # a moment's lock: the view hears it, the log does not
    (["database is locked"] * 2, ["not saved yet", "saved again"]),
    (["database or disk is full"], ["not saved yet", "saved again"]),
])
def test_the_log_hears_of_a_lock_only_when_the_retry_fails_too(
        tmp_path: Path, caplog: pytest.LogCaptureFixture, errors: list[str],
        logged: list[str]) -> None:
    writer, heard, _db = _writer(tmp_path / "s.db")
    left = list(errors)

    def apply(rows: Rows) -> None:
        if left:
            raise sqlite3.OperationalError(left.pop(0))
        rows.put_message("s", "m", "m")

    with caplog.at_level(logging.WARNING, logger="neta_nb.store.writer"):
        writer.submit(Write("row m", apply))
        assert writer.flush(10)
    said = [record.getMessage() for record in caplog.records]
    assert [word for text in said for word in ("not saved yet", "saved again")
            if word in text and "session s:" in text] == logged
    assert heard[0] is not None and heard[-1] is None  # the view is told either way


def test_a_newer_write_of_the_same_key_replaces_a_queued_one_only_at_the_tail(
        store_target: str | Path) -> None:
    writer, heard, db = _writer(store_target)
    applied: list[str] = []

    def keyed(key: str, text: str) -> Write:
        def apply(rows: Rows) -> None:
            rows.put_draft("s", text)  # a row: another program's lock holds it back
            applied.append(text)
        return Write(text, apply, key=key)

    with write_lock_held(db):
        writer.submit(keyed("a", "a1"))  # the head: being attempted, never replaced
        poll_until(lambda: heard, 10, "the writer to attempt a1 and say it is behind")
        writer.submit(keyed("d", "d1"))
        writer.submit(keyed("d", "d2"))  # replaces d1 (right behind it, not started)
        writer.submit(keyed("a", "a2"))
        writer.submit(keyed("d", "d3"))  # not at the tail after a2: queued
        assert writer.pending == 4
    assert writer.flush(10)
    assert applied == ["a1", "d2", "a2", "d3"]


def test_a_write_that_can_never_succeed_is_logged_and_the_rest_go_on(
        store_target: str | Path, caplog: pytest.LogCaptureFixture) -> None:
    writer, heard, db = _writer(store_target)

    def broken(_rows: Rows) -> None:
        raise ValueError("not serialisable")

    writer.submit(_row("before"))
    writer.submit(Write("the broken write", broken))
    writer.submit(_row("after"))
    with caplog.at_level(logging.ERROR, "neta_nb.store.writer"):
        assert writer.flush(10)
    assert _rows(db) == ["before", "after"]
    assert "the broken write could not be saved" in caplog.text
    assert heard == []  # the store is not behind: nothing to retry


def test_failures_are_classified_for_the_warning() -> None:
    full = sqlite3.OperationalError("database or disk is full")
    assert StoreFailure.of(full).kind == "disk_full"
    assert StoreFailure.of(sqlite3.OperationalError("database is locked")).kind == "locked"
    assert StoreFailure.of(sqlite3.DatabaseError("disk I/O error")).kind == "error"


def test_writes_pending_at_exit_are_logged_never_silently_lost(tmp_path: Path) -> None:
    db = tmp_path / "exit.sqlite3"
    SessionStore(db).close()
    child = textwrap.dedent(f"""
        import logging, sqlite3, sys
        sys.path.insert(0, {str(ROOT)!r})
        logging.basicConfig(level=logging.ERROR)
        import neta_nb.store.writer as sw
        sw.EXIT_GRACE = 0.5
        from neta_nb import SessionStore
        from neta_nb.messages import Message
        from neta_nb.store.session_writes import SessionPersistence
        other = sqlite3.connect({str(db)!r}, isolation_level=None)
        other.execute("BEGIN IMMEDIATE")  # held until this process exits
        saved = SessionPersistence("s_exit", SessionStore({str(db)!r}), dict)
        saved.message(Message.user("never stored"))
    """)
    done = subprocess.run([sys.executable, "-c", child], capture_output=True, text=True,
                          timeout=60, cwd=ROOT)
    assert done.returncode == 0, done.stderr
    assert "session s_exit: message m_" in done.stderr
    assert "was never saved (database is locked)" in done.stderr


def test_resume_reads_this_process_pending_writes_of_the_session(store_target: str | Path) -> None:
    db = store_target
    store = SessionStore(db)
    session, _, _ = make_session([], store=store)
    with write_lock_held(db):
        session.state.saved.message(Message.user("queued behind the lock"))
        assert session.state.saved.pending >= 1
    resumed = AgentSession.resume(session.id, store=SessionStore(db), agent=session.agent,
                                  catalog=session.catalog)
    assert [m.text for m in resumed.messages] == ["queued behind the lock"]


# --- a full disk (a real tmpfs) ----------------------------------------------------------

@pytest.fixture
def tiny_disk(tmp_path: Path) -> Iterator[Path]:
    """A real 2 MB tmpfs (root only: CI runs as root); skipped with the reason elsewhere."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    mount = tmp_path / "tiny"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


def _fill(disk: Path) -> Path:
    """Fill the filesystem to the last byte; returns the file to delete to free it."""
    filler = disk / "filler"
    fd = os.open(filler, os.O_WRONLY | os.O_CREAT)
    try:
        for size in (65536, 4096, 1):
            with contextlib.suppress(OSError):
                while os.write(fd, b"\0" * size):
                    pass
    finally:
        os.close(fd)
    return filler


async def test_a_full_disk_holds_writes_until_space_returns_then_all_are_stored_in_order(
        tiny_disk: Path) -> None:
    db = tiny_disk / "sessions.sqlite3"
    big = "x" * 300_000  # larger than anything the full disk can absorb in the WAL
    session, recorder, _ = make_session(
        [answer("turn one answer"), answer(f"turn two answer {big}"), answer("turn three")],
        store=SessionStore(db), context_window=10_000_000)
    await session.run("turn one")
    filler = _fill(tiny_disk)

    result = await session.run(f"turn two prompt {big}")  # never raises for the store
    assert result is not None and result.text.startswith("turn two answer")
    # The warning is delivered on the loop, a moment after the writer thread failed.
    await wait_until(lambda: any(isinstance(e, WarningEvent) for e in recorder.events))
    assert session.store_failure is not None and session.store_failure.kind == "disk_full"
    warning = next(e for e in recorder.events if isinstance(e, WarningEvent))
    assert warning.code == "store_behind_disk_full"
    assert "disk is full" in warning.message and "retrying" in warning.message
    await session.run("turn three")  # the session stays usable while behind
    assert session.store_failure is not None

    filler.unlink()
    assert session.flush(30)
    assert session.store_failure is None
    await wait_until(lambda: isinstance(recorder.events[-1], WarningEvent)
                     and recorder.events[-1].cleared)
    assert stored_texts(db, session.id) == [
        ("user", "turn one"), ("assistant", "turn one answer"),
        ("user", f"turn two prompt {big}"), ("assistant", f"turn two answer {big}"),
        ("user", "turn three"), ("assistant", "turn three")]
    record = SessionStore(db).get_session(session.id)
    assert record is not None and record.message_count == 6 and not record.running


def test_reading_while_another_program_holds_the_lock_never_waits_on_it(
        store_target: str | Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from neta_nb.store.process_owner import ProcessOwner

    unbounded_store_waits(monkeypatch)
    db = store_target
    store = SessionStore(db)
    session, _, _ = make_session([], store=store)
    session.state.saved.draft(Message.assistant([]))
    me = ProcessOwner.current()
    store.update_session(session.id, running=True,
                         owner=me.model_copy(update={"started": me.started - 3600}))
    assert session.flush(10)

    def read_and_resume() -> tuple[SessionRecord, AgentSession]:
        (listed,) = store.list_sessions()
        resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                      catalog=session.catalog)
        return listed, resumed

    with write_lock_held(db):
        # The dead owner's turn is settled for the reader even though it cannot be
        # written back now; resume reads only and queues its own writes. Any wait on the
        # lock lasts hours here: both end while it is held, so neither waited on it.
        listed, resumed = finishes_in_thread(read_and_resume, 60,
                                             "the session list and resume under the lock")
        assert not listed.running and listed.owner_died
        assert resumed.messages[-1].metadata.interrupted == "killed"
        assert resumed.store_failure is None or resumed.store_failure.kind == "locked"
    assert resumed.flush(10)
    fresh = SessionStore(db)
    assert fresh.load_draft(session.id) is None
    record = fresh.get_session(session.id)
    assert record is not None and not record.running and not record.owner_died


def test_a_store_closed_under_the_session_drops_its_writes_with_a_log_not_a_retry_loop(
        caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(":memory:")
    heard: list[StoreFailure | None] = []
    writer = StoreWriter(store, "s", heard.append)
    store.close()
    writer.submit(_row("after close"))
    with caplog.at_level(logging.ERROR, "neta_nb.store.writer"):
        assert writer.flush(10)
    assert "row after close could not be saved" in caplog.text
    assert heard == []


def test_an_answer_and_the_removal_of_its_draft_are_one_write(store_target: str | Path) -> None:
    # Two writes would leave a window where a killed kernel keeps both the stored answer
    # and its draft, and resume would add the answer a second time as "killed".
    from neta_nb.store.session_writes import SessionPersistence

    db = store_target
    saved = SessionPersistence("s_one", SessionStore(db), dict)
    answer_message = Message.assistant([])
    with write_lock_held(db):
        saved.draft(Message.assistant([]))
        saved.message(answer_message, replaces_draft=True)
        assert saved._writer is not None
        assert saved._writer.pending_writes() == ["the draft of the streaming answer",
                                                  f"message {answer_message.id}"]
    assert saved.flush(10)
    store = SessionStore(db)
    assert store.load_draft("s_one") is None
    assert [m.id for m in store.load_messages("s_one")] == [answer_message.id]


def test_a_store_file_deleted_under_the_session_is_reported_not_recreated_empty(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    import neta_nb.store.writer

    monkeypatch.setattr(neta_nb.store.writer, "IDLE_EXIT", 0.05)
    writer, heard, db = _writer(tmp_path / "w.sqlite3")
    assert isinstance(db, Path)
    writer.submit(_row("first"))
    assert writer.flush(10)
    for leftover in tmp_path.glob("w.sqlite3*"):
        leftover.unlink()
    # Once the idle thread has ended (closing its connection), the next write opens one.
    poll_until(lambda: writer._thread is None, 10, "the idle writer thread to end")
    writer.submit(_row("second"))
    assert not writer.flush(1.0)
    assert heard and heard[-1] is not None and heard[-1].kind == "missing"
    assert not db.exists()  # no empty database was made to write half a session into
    SessionStore(db).close()  # the user puts a store back: the write goes in
    assert writer.flush(10) and _rows(db) == ["second"]
