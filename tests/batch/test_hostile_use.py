"""Batch runs (``agent.map``) used carelessly or with hostile input: odd inputs, odd
templates, odd options, cancel at awkward moments, timeouts, reused run ids, resumes
without what the first run had, a claim among thousands of rows — and what a user
expects of each: one row failed with a clear error (never the whole run), a refusal before
anything runs, rows given back on a stop, and nothing of a run left running once its
caller has heard it ended."""

from __future__ import annotations

import asyncio
import contextlib
import os
import sqlite3
import subprocess
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from neta_nb import Agent, AgentToolConfig, SessionStore
from neta_nb.batch import BatchRun, parse_rate
from neta_nb.providers.base import ProviderError
from neta_nb.store.batch_rows import BatchRows
from neta_nb.store.sqlite.rows import SqliteRows

from ..support.batch import RowModel, fail_storing_row, label_of
from ..support.timing import wait_until

pd: Any = pytest.importorskip("pandas")  # untyped

ROOT = Path(__file__).resolve().parents[2]


def calls(model: RowModel) -> int:
    return sum(model.calls.values())


# --- inputs and templates -----------------------------------------------------------------

@pytest.mark.parametrize(("inputs", "template", "bad"), [
    # A list of dicts whose third dict lacks a key the template names (the columns are the
    # union of the dicts' keys, so the up-front check passes).
    ([{"t": "a"}, {"t": "b"}, {"u": "no t"}, {"t": "d"}], "T {t}", 2),
    # A format spec on a numeric column with a NaN (NaN becomes None).
    (lambda: pd.DataFrame({"s": [1.0, 2.0, float("nan"), 4.0]}), "Score {s:.1f}", 2),
], ids=["dict-missing-key", "nan-with-format-spec"])
async def test_a_row_the_template_cannot_fill_fails_that_row_not_the_run(
        inputs: Any, template: str, bad: int) -> None:
    # A user expects "a failed row is a row": the other rows' results, that row failed.
    model = RowModel()
    frame = await Agent("a", model=model).map(inputs() if callable(inputs) else inputs,
                                              template, concurrency=1)
    assert frame["status"][bad] == "failed"
    assert [s for i, s in enumerate(frame["status"]) if i != bad] == ["done"] * 3


def test_a_positional_template_field_is_refused_before_anything_runs() -> None:
    # A user expects "{}" checked up front, like a field naming a missing column ("{0}"
    # is); it passes the check and every row's rendering raises mid-run instead.
    model = RowModel()
    with pytest.raises(ValueError, match="prompt"):
        Agent("a", model=model).map(["x", "y"], "About: {}")
    assert calls(model) == 0


async def test_a_dataframe_with_default_integer_columns_fills_its_fields() -> None:
    # pd.DataFrame([[...]]) has columns 0, 1, ...: "{0}" passes the up-front check (the
    # columns are "0", "1"), so the user expects it to be filled — not a crash mid-run.
    df = pd.DataFrame([["broken screen", 3], ["no wifi", 1]])
    frame = await Agent("a", model=RowModel()).map(df, "Ticket: {0}")
    assert list(frame["answer"]) == [label_of("Ticket: broken screen"),
                                     label_of("Ticket: no wifi")]


class Ticket(BaseModel):
    status: str
    error: str | None = None


async def test_an_output_model_with_a_status_field_keeps_its_values() -> None:
    # An output model with fields named like the run's columns: "status_output" and
    # "error_output", never dropped.
    answer = '{"status": "urgent", "error": "printer on fire"}'
    frame = await Agent("a", model=RowModel(answer=lambda _p: answer)).map(
        ["x"], output=Ticket)
    assert frame.columns.is_unique
    assert list(frame["status_output"]) == ["urgent"]
    assert list(frame["error_output"]) == ["printer on fire"]
    assert list(frame["status"]) == ["done"] and frame["error"].isna().all()


def test_an_output_that_is_not_a_pydantic_model_is_refused_before_anything_runs() -> None:
    # output=dict (or a dataclass) is a mistake a user expects to hear of at once, not as
    # an AttributeError from the middle of the run after the model was paid for.
    model = RowModel()
    with pytest.raises(TypeError):
        Agent("a", model=model).map(["x"], output=dict)
    assert calls(model) == 0


# --- options ------------------------------------------------------------------------------

@pytest.mark.parametrize("text", ["1/0s", "5/0.0min"])
def test_a_rate_over_no_time_is_a_value_error(text: str) -> None:
    # Documented: anything not a rate is a ValueError that shows the accepted form
    # (here: a ZeroDivisionError from the limiter).
    with pytest.raises(ValueError, match="not a rate like"):
        Agent("a", model=RowModel()).map(["a"], rate_limit=text)


def test_a_rate_per_millisecond_is_not_read_as_per_minute() -> None:
    # "10/ms" is ten per millisecond (or refused), never silently ten per minute
    # (limiter.py strips the "s" of "ms" and finds "m").
    try:
        rate = parse_rate("10/ms")
    except ValueError:
        return
    assert rate is not None and rate.seconds < 1


# --- cancel and timeouts ------------------------------------------------------------------

async def test_cancel_during_a_retry_backoff_makes_no_more_model_calls() -> None:
    # "run.cancel() stops claiming rows and stops the running turns": a row waiting out
    # its backoff before a retry must not start new attempts after the cancel.
    model = RowModel(fail=lambda _p, _n: ProviderError("overloaded", retryable=True,
                                                       status_code=529))
    run = Agent("a", model=model).map(["a"], max_attempts=5)
    await wait_until(lambda: calls(model) >= 1, within=10)
    await asyncio.sleep(0.05)  # the turn failed: the worker sleeps before its retry
    run.cancel()
    at_cancel = calls(model)
    frame = await run
    assert calls(model) == at_cancel
    assert list(frame["status"]) == ["cancelled"]  # left for resume, not failed


def test_after_a_result_timeout_the_same_process_takes_the_rows_again_at_once(
        tmp_path: Path) -> None:
    # result(timeout=) gave up: the rows it had in flight must not stay leased to this
    # very process for the lease's 60 s (a second result() or a resume waits for nothing).
    store = SessionStore(tmp_path / "s.db")
    run = Agent("a", model=RowModel(delay=0.3)).map(
        [f"t{i}" for i in range(10)], concurrency=2, store=store, run_id="r_timeout")
    with pytest.raises(TimeoutError):
        run.result(timeout=0.5)
    resumed = BatchRun.resume("r_timeout", store=store,
                              agent=Agent("a", model=RowModel()))
    frame = resumed.result(timeout=15)
    assert list(frame["status"]) == ["done"] * 10


async def test_when_await_run_raises_no_worker_of_the_run_keeps_running(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A store failure while storing one row's result (a locked or full disk): the run may
    # raise, but then it has ended — its other workers must not go on calling the model
    # and writing rows in the background, with `run.finished` already true.
    store = SessionStore(tmp_path / "s.db")
    model = RowModel(delay=0.05)
    run = Agent("a", model=model).map([f"t{i}" for i in range(30)], concurrency=3,
                                      store=store, run_id="r_raise")
    fail_storing_row(run, 1, monkeypatch)
    with contextlib.suppress(sqlite3.OperationalError):
        await run
    after = calls(model)
    await asyncio.sleep(0.5)
    assert calls(model) == after, "rows still ran after `await run` ended"


# --- reused run ids and resumes ---------------------------------------------------------

async def test_a_run_id_in_the_store_with_other_inputs_of_the_same_length_is_refused(
        tmp_path: Path) -> None:
    # "in the store with other inputs or another prompt" is refused — but only the row
    # count is compared: new inputs silently get the old inputs' answers.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel())
    await agent.map(["apple", "pear"], store=store, run_id="r1")
    with pytest.raises(ValueError, match="other inputs"):
        agent.map(["car", "bus"], store=store, run_id="r1")


class Verdict(BaseModel):
    category: str


async def test_resume_without_the_output_model_of_the_run_is_refused(tmp_path: Path) -> None:
    # "an output model must be given again": forgotten, the resumed rows are stored as
    # done without their fields — a user expects to be told instead, not a table where
    # some rows have no category for good.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel(answer=lambda _p: '{"category": "x"}'))
    run = agent.map(["a", "b", "c"], store=store, run_id="r_out", output=Verdict)
    run.cancel()  # before it ran a row
    await run
    with pytest.raises((TypeError, ValueError), match="Verdict"):
        BatchRun.resume("r_out", store=store, agent=agent)


async def test_two_runs_on_one_run_id_in_one_process_store_each_row_once(
        tmp_path: Path) -> None:
    # Passes: pins exactly-once for two BatchRun objects of one run in one kernel at once
    # (both leases name this process, so neither may take the other's rows as a dead
    # owner's). No other test runs two at once in one process.
    store = SessionStore(tmp_path / "s.db")
    model = RowModel(delay=0.02)
    agent = Agent("a", model=model)
    inputs = [f"t{i}" for i in range(60)]
    first = agent.map(inputs, concurrency=4, store=store, run_id="same")
    second = agent.map(inputs, concurrency=4, store=store, run_id="same")
    one, two = await asyncio.gather(first, second)
    assert all(count == 1 for count in model.calls.values()) and len(model.calls) == 60
    assert list(one["session_id"]) == list(two["session_id"])
    assert {r.id for r in store.list_children("same")} == set(one["session_id"])


# --- scale --------------------------------------------------------------------------------

def test_claiming_a_row_does_not_read_every_queued_row(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A claim used to read every queued row of the run under its write lock (10,000 rows
    # on SQLite: ~20 ms a row). It reads the running rows (about as many as run at once)
    # and the first queued ones, through the (run_id, state, idx) index: counted in rows
    # read, not timed.
    store = SessionStore(tmp_path / "s.db")
    rows = BatchRows(store, "r_many")
    rows.create({"rows": 20_000}, [{"input": f"t{i}"} for i in range(20_000)])
    read: list[int] = []
    real = SqliteRows.execute

    def counted(self: SqliteRows, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        found = real(self, sql, params)
        if sql.lstrip().upper().startswith("SELECT") and "batch_rows" in sql:
            read.append(len(found))
        return found

    monkeypatch.setattr(SqliteRows, "execute", counted)
    for n in range(30):
        held = rows.claim("me", 60, limit=2)
        assert [row.idx for row in held] == [2 * n, 2 * n + 1]
        for row in held:
            rows.finish(row.idx, "me", failed=False, result={}, session_id=None)
    assert max(read) <= 2, read
    plan = " ".join(str(step) for step in store.database.execute(
        "EXPLAIN QUERY PLAN SELECT idx FROM batch_rows WHERE run_id = ? AND state = ? "
        "ORDER BY idx LIMIT 2", ("r_many", "queued")))
    assert "batch_rows_by_state" in plan, plan


# --- Ray ------------------------------------------------------------------------------------

def test_ray_refuses_a_sub_agent_with_kernel_bound_tools(tmp_path: Path) -> None:
    # "An agent with kernel-bound tools (python, list_variables) ... is refused before the
    # run starts": its sub-agents' tools run in the workers too.
    pytest.importorskip("ray")
    helper = Agent("helper", model=RowModel(), description="runs code",
                   tools=AgentToolConfig(enabled=["python"]))
    boss = Agent("boss", model=RowModel(), subagents=[helper])
    with pytest.raises(ValueError, match="python"):
        boss.map(["a"], backend="ray", store=SessionStore(tmp_path / "s.db"))


@pytest.fixture(scope="module")
def ray_cluster(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """The cluster of test_ray.py (127.0.0.1, two CPUs, every process reaped by pid)."""
    pytest.importorskip("ray")
    from .test_ray import cluster

    yield from cluster.__wrapped__(tmp_path_factory)  # type: ignore[attr-defined]


@pytest.mark.ray
async def test_ray_cancel_mid_run_returns_the_results_and_leaves_the_rest_for_resume(
        ray_cluster: str, tmp_path: Path) -> None:
    # As on the local backend: cancel() mid-run, `await run` gives the frame (done rows and
    # cancelled ones), and a resume finishes the rest, each row stored once.
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel(delay=0.02))
    inputs = [f"ticket {i}" for i in range(300)]
    run = agent.map(inputs, "Classify: {input}", backend="ray", store=store, concurrency=4,
                    workers=2, run_id="r_ray_cancel")
    await wait_until(lambda: sum(1 for r in BatchRows(store, "r_ray_cancel").all()
                                 if r.state == "done") >= 30, within=120)
    run.cancel()
    frame = await run
    assert set(frame["status"]) <= {"done", "cancelled"} and "cancelled" in set(frame["status"])
    final = await BatchRun.resume("r_ray_cancel", store=store,
                                  agent=Agent("a", model=RowModel()))
    assert list(final["status"]) == ["done"] * 300
    sessions = set(final["session_id"])
    assert {r.id for r in store.list_children("r_ray_cancel")} == sessions


@pytest.mark.ray
async def test_ray_more_workers_than_cpus_still_runs(ray_cluster: str, tmp_path: Path) -> None:
    # Passes: pins that workers= beyond the cluster's CPUs (4 on 2) runs every row once
    # (actors hold no CPU once placed); no other test asks for more workers than CPUs.
    store = SessionStore(tmp_path / "s.db")
    run = Agent("a", model=RowModel(delay=0.01)).map(
        [f"t{i}" for i in range(80)], backend="ray", store=store, concurrency=8, workers=4,
        run_id="r_ray_wide")
    frame = await asyncio.wait_for(run.start(), 120)
    assert list(frame["status"]) == ["done"] * 80
    assert run._ray is not None and len(set(run._ray.pids)) == 4


NO_INIT_DRIVER = textwrap.dedent("""
    import asyncio, sys, time
    sys.path.insert(0, {root!r})
    from ray._private import ray_constants
    ray_constants.ENABLE_RAY_CLUSTER = False  # the loopback address only
    import ray
    from neta_nb import Agent, SessionStore
    from tests.support.batch import RowModel

    async def main():
        gaps = []
        async def tick():
            last = time.monotonic()
            while True:
                await asyncio.sleep(0.05)
                now = time.monotonic()
                gaps.append(now - last)
                last = now
        ticker = asyncio.create_task(tick())
        run = Agent("a", model=RowModel()).map([f"t{{i}}" for i in range(20)], backend="ray",
                                               store=SessionStore({store!r}), workers=2)
        frame = await run
        ticker.cancel()
        print(sorted(set(frame["status"])), round(max(gaps), 2), flush=True)

    asyncio.run(main())
    ray.shutdown()
""")


@pytest.mark.ray
@pytest.mark.xfail(reason="ray.init now runs on a thread (it blocked the loop 13-21 s); the "
                   "loop still stalls ~4-5 s while the cluster starts, cause not found yet",
                   strict=False)
def test_ray_without_ray_init_starts_a_cluster_without_freezing_the_kernel_loop(
        tmp_path: Path) -> None:
    # backend="ray" with no ray.init() starts a local cluster itself — inside the run's
    # coroutine, on the kernel's loop: ray.init blocks it ~10 s (no grid update, no
    # widget message, no other cell's task). A user expects the loop to stay responsive.
    pytest.importorskip("ray")
    import psutil

    env = {**os.environ, "RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER": "0", "PYTHONPATH": str(ROOT)}
    driver = subprocess.Popen(
        [sys.executable, "-c", NO_INIT_DRIVER.format(root=str(ROOT),
                                                     store=str(tmp_path / "s.db"))],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, env=env,
        start_new_session=True)
    try:
        out, err = driver.communicate(timeout=240)
    finally:
        # The cluster it started is its session's: reap what is left of it, by pid (no
        # other test's Ray processes).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(driver.pid, 9)
        driver.wait(30)
        left = [p for p in psutil.process_iter() if _session_of(p) == driver.pid]
        for process in left:
            with contextlib.suppress(psutil.NoSuchProcess):
                process.kill()
        psutil.wait_procs(left, timeout=10)
    statuses, gap = out.strip().splitlines()[-1].rsplit(" ", 1)
    assert statuses == "['done']", err[-2000:]
    assert float(gap) < 1.0, f"the event loop was blocked {gap} s"


def _session_of(process: Any) -> int | None:
    try:
        return os.getsid(process.pid)
    except OSError:
        return None
