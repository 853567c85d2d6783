"""A batch run in a store survives its kernel: killed mid-run (SIGKILL) and resumed, every
row is stored once with one session, no session of a dead attempt is left, and only the
rows in flight at the kill run again — on SQLite and on PostgreSQL. A worker that stalls
past its lease stores nothing over the row another worker finished."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time
from pathlib import Path

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.batch import BatchRun
from neta_nb.store.batch_rows import BatchRows

from ..support.batch import RowModel, label_of
from ..support.timing import poll_until

ROOT = Path(__file__).resolve().parents[2]
ROWS = 200
CONCURRENCY = 4

CHILD = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from neta_nb import Agent, SessionStore
    from tests.support.batch import RowModel
    store = SessionStore({store!r})
    agent = Agent("classifier", model=RowModel(delay={delay}))
    run = agent.map([f"ticket {{i}}" for i in range({rows})], "Classify: {{input}}",
                    concurrency={concurrency}, store=store, run_id={run_id!r},
                    lease_seconds={lease})
    print("started", flush=True)
    run.result()
""")


def _start(store: str | Path, run_id: str, *, delay: float = 0.02,
           lease: float = 60.0) -> subprocess.Popen[str]:
    code = CHILD.format(root=str(ROOT), store=str(store), delay=delay, rows=ROWS,
                        concurrency=CONCURRENCY, run_id=run_id, lease=lease)
    return subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)


def _done(store: str | Path, run_id: str) -> int:
    with_store = SessionStore(store)
    try:
        return sum(1 for row in BatchRows(with_store, run_id).all() if row.state == "done")
    finally:
        with_store.close()


def _stop_outside_a_write(child: subprocess.Popen[str], store: Path) -> None:
    """SIGSTOP the child at a moment it holds no SQLite write lock.

    A process stopped inside a write transaction keeps the file's lock, and every other
    writer of that file waits on it: that is SQLite, not the lease logic this test is about.
    So the child is stopped, and if the lock is still taken it is let go a moment and
    stopped again."""
    for _ in range(200):
        os.kill(child.pid, signal.SIGSTOP)
        # The signal is delivered asynchronously: probe once the process shows stopped.
        poll_until(lambda: Path(f"/proc/{child.pid}/stat").read_text().split(") ")[1][0] == "T",
                   10, "the worker to stop")
        probe = sqlite3.connect(store, timeout=0.2, isolation_level=None)
        try:
            probe.execute("BEGIN IMMEDIATE")
            probe.execute("ROLLBACK")
            return
        except sqlite3.OperationalError:
            os.kill(child.pid, signal.SIGCONT)
            # The moment: stopped again at once, the worker would not have run at all.
            time.sleep(0.05)
        finally:
            probe.close()
    raise AssertionError("the worker held the store's write lock at every stop")


def test_a_kernel_killed_mid_run_resumes_with_every_row_stored_once(
        store_target: str | Path) -> None:
    child = _start(store_target, "r_kill")
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
        poll_until(lambda: _done(store_target, "r_kill") >= ROWS * 0.4, 120,
                   "40 % of the rows done")
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait(20)
        if child.stdout is not None:
            child.stdout.close()
    store = SessionStore(store_target)
    before = {row.idx: row for row in BatchRows(store, "r_kill").all()}
    in_flight = [idx for idx, row in before.items() if row.state == "running"]
    assert 0 < len(in_flight) <= CONCURRENCY

    run = BatchRun.resume("r_kill", store=store, agent=Agent("classifier", model=RowModel()))
    frame = run.result()
    assert list(frame["status"]) == ["done"] * ROWS
    assert list(frame["answer"]) == [label_of(f"Classify: ticket {i}") for i in range(ROWS)]
    rows = BatchRows(store, "r_kill").all()
    # Stored once: one session per row, each the row's, none left of the dead attempts.
    sessions = [row.session_id for row in rows]
    assert len(set(sessions)) == ROWS and None not in sessions
    children = {record.id for record in store.list_children("r_kill")}
    assert children == set(sessions)
    # Only the rows in flight at the kill ran again; the rows done stayed as they were.
    again = [row.idx for row in rows if row.attempts > 1]
    assert set(again) <= set(in_flight)
    # The grid's "retried" counts them: the run's whole life, not only since the resume.
    assert run.counts["retried"] == sum(row.attempts - 1 for row in rows) == len(again)
    assert BatchRun.resume("r_kill", store=store).counts["retried"] == len(again)
    for idx, row in before.items():
        if row.state == "done":
            assert rows[idx].session_id == row.session_id and rows[idx].attempts == 1
    for session_id in sessions:
        assert session_id is not None
        assert [m.role for m in store.load_messages(session_id)] == ["user", "assistant"]


def test_a_stalled_worker_stores_nothing_over_a_row_another_finished(tmp_path: Path) -> None:
    store_path = tmp_path / "s.db"
    # A worker whose rows take long and whose lease is short; stopped (SIGSTOP) while it
    # holds rows, so it renews nothing: another worker takes them over when the leases run
    # out and finishes them. Let go again, the stalled worker's results must not land.
    child = _start(store_path, "r_stall", delay=1.5, lease=1.0)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "started"
        store = SessionStore(store_path)
        poll_until(lambda: any(row.session_id for row in BatchRows(store, "r_stall").all()),
                   30, "the first worker to start its rows")
        _stop_outside_a_write(child, store_path)
        held = {row.idx: row.session_id for row in BatchRows(store, "r_stall").all()
                if row.state == "running"}
        assert held
        takeover = BatchRun.resume("r_stall", store=store,
                                   agent=Agent("classifier", model=RowModel()),
                                   lease_seconds=1.0)
        frame = takeover.result()  # takes the stopped worker's rows once their leases end
        assert list(frame["status"]) == ["done"] * ROWS
        os.kill(child.pid, signal.SIGCONT)
        child.wait(60)  # it finishes its turns, finds its leases gone, and ends
    finally:
        if child.poll() is None:
            os.kill(child.pid, signal.SIGCONT)
            child.kill()
            child.wait(20)
        if child.stdout is not None:
            child.stdout.close()
    rows = BatchRows(SessionStore(store_path), "r_stall").all()
    for idx, old_session in held.items():
        assert rows[idx].session_id != old_session  # the finisher's, not the staller's
    sessions = {row.session_id for row in rows}
    assert {r.id for r in SessionStore(store_path).list_children("r_stall")} == sessions


async def test_a_session_no_row_names_is_gone_when_the_run_ends(tmp_path: Path) -> None:
    # A worker that died after naming a new attempt, whose old one its successor could
    # not delete (its dead owner still settling), leaves a session of the run that no
    # row names: the run deletes it when it ends.
    store = SessionStore(tmp_path / "s.db")
    run = Agent("classifier", model=RowModel(delay=0.02)).map(
        [f"ticket {i}" for i in range(20)], "Classify: {input}", store=store,
        concurrency=2, run_id="r_orphan")
    abandoned = AgentSession(Agent("classifier", model=RowModel()), store=store,
                             parent_id="r_orphan")
    abandoned.flush()
    assert abandoned.id in {r.id for r in store.list_children("r_orphan")}
    frame = await run
    assert list(frame["status"]) == ["done"] * 20
    named = {row.session_id for row in BatchRows(store, "r_orphan").all()}
    assert {r.id for r in store.list_children("r_orphan")} == named
