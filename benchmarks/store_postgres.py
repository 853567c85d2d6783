"""The PostgreSQL store under load, next to SQLite: 200 sessions streaming at once on one
store, and how fast another process's change reaches this one.

Run: ``.venv/bin/python benchmarks/store_postgres.py [--runs N] [--record]`` (``--record``
appends to ``benchmarks/results/store_postgres.md``). Needs PostgreSQL's binaries (Debian's
``postgresql``, as ``scripts/test.sh`` installs them): a throwaway server is started with
``tests/support/postgres_server.py`` and stopped at the end, leaving no process behind.

* **200 streaming sessions** on one store — PostgreSQL (a database of its own each run),
  SQLite (a file in a scratch folder) and, as the baseline, no store. Each session (the
  tests' ``FakeProvider``) streams 50 deltas 20 ms apart (~1 s; two streaming drafts at
  the 0.5 s checkpoint interval) and answers; all 200 turns start together. Measured from
  the start of the turns until every session's writes are stored:

  - *longest loop stall*: a task on the loop sleeps 5 ms at a time and notes the longest
    gap between its wake-ups (``store_behind.py``'s ``Ticker``) — what a widget or a Stop
    click would wait;
  - *peak server connections* (PostgreSQL): ``pg_stat_activity``'s client connections to
    the database, sampled every 50 ms from a thread — the pool's (``POOL_SIZE``) plus the
    process's one connection for turn claims;
  - *peak threads*: ``threading.active_count()`` sampled alike (the main thread and the
    sampler included): the store's writer thread(s), the pool's workers, asyncio's
    ``to_thread`` worker that waits for the flush;
  - *wall time*, *writes stored* and *writes per second*: every write the sessions'
    writers stored (messages, streaming drafts, record updates; counted by wrapping the
    store's writer connection, which also counts the transactions that carried them)
    over the wall time. The streams' pacing alone takes ~1 s, so this is the rate this
    load needed, not the store's ceiling;
  - *turn claims*: the time the turns spent taking and releasing their claims
    (``store.claim_turn`` and the handle's ``release``, wrapped), split by where it ran:
    on the loop's thread (all of it at 2b8f19f) or off it (the claim taken in an
    executor, as ``claim_turn_soon`` does since a1224f9). A ``flock`` on SQLite; on
    PostgreSQL statements on the process's claims connection, opened by the first claim
    of a run (its connect included).

  Every session's two messages are checked to be stored.
* **Another process's change**: a child process saves a session record (``save_session``,
  one transaction that sends ``NOTIFY`` on commit); this process, subscribed with
  ``store.subscribe(callback)`` and no event loop running (so the callback runs on the
  store's listener thread), notes when the callback is called. 50 samples, ~50 ms apart,
  each timed from just before the child's ``save_session`` to the callback (one
  ``time.monotonic`` clock: system-wide on Linux); the save's own duration in the child is
  reported beside it.

``--runs`` (default 3) repeats both; the report gives best / median / worst over runs
(the latency's median, p95 and max are over all samples, and per run). ``--sessions 5``
is a quick check that it runs. To measure an older commit, copy this file into a
``git archive`` export of it (its ``benchmarks/`` has ``store_behind.py`` and
``recorded.py``) and run it there: it imports the package of the tree it sits in.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import platform
import shutil
import statistics
import subprocess
import sys
import tempfile
import textwrap
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from recorded import append_result  # noqa: E402
from store_behind import Ticker  # noqa: E402

from neta_nb import AgentSession, SessionStore  # noqa: E402
from neta_nb.providers.base import TextDelta  # noqa: E402
from neta_nb.store.postgres.postgres import POOL_SIZE, close_databases  # noqa: E402
from neta_nb.store.writer import IDLE_EXIT  # noqa: E402
from tests.support.postgres_server import PostgresServer, start_postgres  # noqa: E402
from tests.support.sessions import answer, make_session  # noqa: E402

SESSIONS = 200
DELTAS = 50
PACE = 0.02
"""Seconds between a session's deltas."""
SAMPLE_EVERY = 0.05
LATENCY_SAMPLES = 50
BACKENDS = ("no store", "SQLite", "PostgreSQL")


# --- 200 streaming sessions -----------------------------------------------------------

@dataclass
class Load:
    stall: float
    connections: int | None
    threads: int
    wall: float
    transactions: int
    writes: int
    messages: int
    claims_on_loop: float | None
    claims_longest_on_loop: float | None
    claims_off_loop: float | None

    @property
    def writes_per_second(self) -> float:
        return self.writes / self.wall


class Counter:
    """Transactions the store's writer committed, and the writes they stored."""

    def __init__(self) -> None:
        self.transactions = 0
        self.writes = 0
        self._lock = threading.Lock()

    def add(self, writes: int) -> None:
        with self._lock:
            self.transactions += 1
            self.writes += writes

    def reset(self) -> None:
        with self._lock:
            self.transactions = self.writes = 0


class CountingConnection:
    """A writer connection that counts what it committed: one session's write per
    transaction (``transact(session_id, apply)``), or a batch of sessions' writes in one
    (``transact([(session_id, [apply, ...]), ...])``)."""

    def __init__(self, inner: Any, counter: Counter) -> None:
        self._inner, self._counter = inner, counter

    def transact(self, *args: Any, **kwargs: Any) -> Any:
        outcome = self._inner.transact(*args, **kwargs)
        batch = args[0]
        self._counter.add(1 if isinstance(batch, str)
                          else sum(len(applies) for _, applies in batch))
        return outcome

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


def counting_writes(store: SessionStore) -> Counter:
    counter = Counter()
    made = store.writer_connection

    def writer_connection() -> Any:
        return CountingConnection(made(), counter)

    setattr(store, "writer_connection", writer_connection)  # noqa: B010 (a method)
    return counter


class ClaimTimer:
    """Times the turn claims taken and released (``store.claim_turn``, wrapped): their
    sum and the longest one on the loop's thread, and their sum elsewhere (a tree that
    takes claims in an executor)."""

    def __init__(self, store: SessionStore) -> None:
        self._lock = threading.Lock()
        self.on_loop = self.longest_on_loop = self.off_loop = 0.0
        take = store.claim_turn

        def timed_take(session_id: str) -> Any:
            handle = self.timed(take, session_id)
            return None if handle is None else TimedRelease(handle, self)

        setattr(store, "claim_turn", timed_take)  # noqa: B010 (a method)

    def timed(self, call: Callable[..., Any], *args: Any) -> Any:
        began = time.perf_counter()
        try:
            return call(*args)
        finally:
            took = time.perf_counter() - began
            if threading.current_thread() is threading.main_thread():  # the loop's
                self.on_loop += took
                self.longest_on_loop = max(self.longest_on_loop, took)
            else:
                with self._lock:
                    self.off_loop += took

    def reset(self) -> None:
        self.on_loop = self.longest_on_loop = self.off_loop = 0.0


class TimedRelease:
    def __init__(self, handle: Any, timer: ClaimTimer) -> None:
        self._handle, self._timer = handle, timer

    def release(self) -> None:
        self._timer.timed(self._handle.release)


class Sampler:
    """A thread noting, every 50 ms, the peak thread count and (with a server) the peak
    number of client connections to one database."""

    def __init__(self, server: PostgresServer | None, dbname: str | None) -> None:
        self._server, self._dbname = server, dbname
        self.connections = 0
        self.threads = 0
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="bench-sampler", daemon=True)

    def _sample(self) -> None:
        self.threads = max(self.threads, threading.active_count())
        if self._server is not None:
            self.connections = max(self.connections, self._server.connections(self._dbname))

    def _run(self) -> None:
        while True:
            self._sample()
            if self._stop.wait(SAMPLE_EVERY):
                return

    def __enter__(self) -> Sampler:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()
        self._sample()


def _steps(n: int) -> list[object]:
    steps: list[object] = []
    for i in range(DELTAS):
        steps += [TextDelta(f"s{n}w{i} "), lambda: asyncio.sleep(PACE)]
    return [*steps, *answer("end")]


async def streaming(store: SessionStore | None, server: PostgresServer | None,
                    dbname: str | None) -> Load:
    counter = counting_writes(store) if store is not None else Counter()
    claims = ClaimTimer(store) if store is not None else None
    sessions: list[AgentSession] = []
    for n in range(SESSIONS):
        session, _, _ = make_session([_steps(n)], store=store)  # its record is stored
        sessions.append(session)
    counter.reset()  # the records written when the sessions were made are not the load
    if claims is not None:
        claims.reset()
    await asyncio.sleep(IDLE_EXIT + 0.5)  # their writer threads have ended
    ticker = Ticker()
    ticker.start()
    with Sampler(server, dbname) as sampler:
        began = time.perf_counter()
        await asyncio.gather(*(s.start(f"question {n}") for n, s in enumerate(sessions)))
        flushed = await asyncio.to_thread(lambda: all(s.flush(60) for s in sessions))
        wall = time.perf_counter() - began
    await ticker.stop()
    if not flushed:
        raise RuntimeError("not every session's writes were stored within 60 s")
    messages = 0
    if store is not None:
        counts = [store.count_messages(s.id) for s in sessions]
        if set(counts) != {2}:
            raise RuntimeError(f"stored messages per session: {sorted(set(counts))}")
        messages = sum(counts)
    return Load(ticker.longest, sampler.connections if server is not None else None,
                sampler.threads, wall, counter.transactions, counter.writes, messages,
                *((claims.on_loop, claims.longest_on_loop, claims.off_loop) if claims
                  else (None, None, None)))


def one_load(backend: str, server: PostgresServer, run: int) -> Load:
    if backend == "no store":
        return asyncio.run(streaming(None, None, None))
    if backend == "SQLite":
        folder = Path(tempfile.mkdtemp(prefix="bench-sqlite-"))
        store = SessionStore(folder / "s.db")
        try:
            return asyncio.run(streaming(store, None, None))
        finally:
            store.close()
            shutil.rmtree(folder, ignore_errors=True)
    dbname = f"bench_streaming_{run}"
    url = server.create_database(dbname)
    try:
        return asyncio.run(streaming(SessionStore(url), server, dbname))
    finally:
        close_databases(url)
        server.drop_database(dbname)


# --- another process's change ---------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys, time
    sys.path.insert(0, {root!r})
    from neta_nb import SessionStore
    from neta_nb.store.records import SessionRecord
    store = SessionStore({url!r})
    for line in sys.stdin:
        began = time.monotonic()
        store.save_session(SessionRecord(id=line.strip(), title="from another process"))
        print(began, time.monotonic(), flush=True)
""")


@contextlib.contextmanager
def another_process(url: str) -> Iterator[subprocess.Popen[str]]:
    child = subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(REPO), url=url)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        assert child.stdin is not None
        assert child.stdout is not None
        child.stdin.close()
        try:
            child.wait(20)
        except subprocess.TimeoutExpired:
            child.kill()
            child.wait()
        child.stdout.close()


def save_there(child: subprocess.Popen[str], session_id: str) -> tuple[float, float]:
    """(monotonic time before the child's save, after it), as the child noted them."""
    assert child.stdin is not None
    assert child.stdout is not None
    child.stdin.write(session_id + "\n")
    child.stdin.flush()
    began, ended = child.stdout.readline().split()
    return float(began), float(ended)


def latencies(server: PostgresServer, run: int) -> tuple[list[float], list[float]]:
    """(save → callback, the save itself) in seconds, one pair per sample."""
    dbname = f"bench_notify_{run}"
    url = server.create_database(dbname)
    store = SessionStore(url)
    heard: dict[str, tuple[float, str]] = {}
    arrived = threading.Event()

    def callback(session_id: str) -> None:
        heard[session_id] = (time.monotonic(), threading.current_thread().name)
        arrived.set()

    unsubscribe = store.subscribe(callback)  # no loop running: the listener's thread
    delays, saves = [], []
    try:
        with another_process(url) as child:
            save_there(child, "s_warm_up")  # the child's connection is open
            if not arrived.wait(10):
                raise RuntimeError("the other process's change was never heard")
            for n in range(LATENCY_SAMPLES):
                time.sleep(0.05)
                arrived.clear()
                session_id = f"s_{n}"
                began, ended = save_there(child, session_id)
                deadline = time.monotonic() + 10
                while session_id not in heard:
                    if not arrived.wait(max(0.0, deadline - time.monotonic())):
                        raise RuntimeError(f"{session_id} was not heard within 10 s")
                    arrived.clear()
                at, thread = heard[session_id]
                if thread != "neta-nb-store-listener":
                    raise RuntimeError(f"the callback ran on {thread}")
                delays.append(at - began)
                saves.append(ended - began)
    finally:
        unsubscribe()
        store.close()
        close_databases(url)
        server.drop_database(dbname)
    return delays, saves


# --- the report ---------------------------------------------------------------------------

def tree_label() -> str:
    """The commit measured, ``+ changes`` when ``neta_nb/`` differs from it."""
    def git(*args: str) -> str:
        return subprocess.run(["git", "-C", str(REPO), *args], capture_output=True,
                              text=True, check=False).stdout.strip()

    commit = git("rev-parse", "--short", "HEAD") or REPO.name  # a `git archive` export
    return commit + (" + changes" if git("status", "--porcelain", "--", "neta_nb") else "")


def spread(values: list[float], unit: str = "ms", scale: float = 1e3, digits: int = 1) -> str:
    ordered = sorted(v * scale for v in values)
    return (f"{ordered[0]:.{digits}f} / {statistics.median(ordered):.{digits}f} / "
            f"{ordered[-1]:.{digits}f} {unit}").strip()


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


def main(runs: int, record: bool) -> None:
    label = tree_label()
    base = Path(tempfile.mkdtemp(prefix="bench-postgres-"))
    server = start_postgres(base)
    version = (server.data_dir / "PG_VERSION").read_text().strip()
    loads: dict[str, list[Load]] = {backend: [] for backend in BACKENDS}
    delays: list[list[float]] = []
    saves: list[float] = []
    try:
        for run in range(runs):
            # Alternated, in a different order each run, so all see the same machine.
            order = BACKENDS[run % 3:] + BACKENDS[:run % 3]
            for backend in order:
                load = one_load(backend, server, run)
                loads[backend].append(load)
                print(f"run {run + 1} {backend}: {load}", flush=True)
            sample, save = latencies(server, run)
            delays.append(sample)
            saves += save
            print(f"run {run + 1} latency: median {statistics.median(sample) * 1e3:.2f} ms, "
                  f"max {max(sample) * 1e3:.2f} ms", flush=True)
    finally:
        server.stop()
        shutil.rmtree(base, ignore_errors=True)

    def row(measure: str, pick: Callable[[Load], float | None], fmt: Callable[[list[float]],
            str]) -> str:
        cells = []
        for backend in BACKENDS:
            values = [v for v in (pick(load) for load in loads[backend]) if v is not None]
            cells.append(fmt(values) if values else "—")
        return f"| {measure} | " + " | ".join(cells) + " |"

    def whole(values: list[float]) -> str:
        ordered = sorted(values)
        return f"{ordered[0]:.0f} / {statistics.median(ordered):.0f} / {ordered[-1]:.0f}"

    every = [d for sample in delays for d in sample]
    lines = [
        f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
        f"{platform.machine()}, PostgreSQL {version}, {label}",
        "",
        f"{runs} runs, the three cases alternated; best / median / worst over runs.",
        "",
        f"{SESSIONS} sessions streaming {DELTAS} deltas {PACE * 1e3:.0f} ms apart on one store "
        f"(pool of {POOL_SIZE}):",
        "",
        "| measure | " + " | ".join(BACKENDS) + " |",
        "|---|---|---|---|",
        row("longest loop stall", lambda load: load.stall, spread),
        row("peak server connections", lambda load: load.connections, whole),
        row("peak threads", lambda load: load.threads, whole),
        row("wall time, turns start → all stored", lambda load: load.wall,
            lambda v: spread(v, "s", 1, 2)),
        row("turn claims on the loop's thread (take + release), summed",
            lambda load: load.claims_on_loop, spread),
        row("turn claims on the loop's thread, the longest one",
            lambda load: load.claims_longest_on_loop, lambda v: spread(v, digits=2)),
        row("turn claims off the loop (an executor), summed",
            lambda load: load.claims_off_loop, spread),
        row("writes stored (messages, drafts, records)", lambda load: load.writes or None,
            whole),
        row("writer transactions", lambda load: load.transactions or None, whole),
        row("writes per second", lambda load: load.writes_per_second or None, whole),
        "",
        f"Another process's `save_session` → `store.subscribe` callback (listener thread, "
        f"{LATENCY_SAMPLES} samples a run):",
        "",
        "| | median | p95 | max |",
        "|---|---|---|---|",
        f"| all {len(every)} samples | {statistics.median(every) * 1e3:.2f} ms | "
        f"{percentile(every, 0.95) * 1e3:.2f} ms | {max(every) * 1e3:.2f} ms |",
        *(f"| run {n + 1} | {statistics.median(s) * 1e3:.2f} ms | "
          f"{percentile(s, 0.95) * 1e3:.2f} ms | {max(s) * 1e3:.2f} ms |"
          for n, s in enumerate(delays)),
        f"| the save itself (in the other process) | {statistics.median(saves) * 1e3:.2f} ms"
        f" | {percentile(saves, 0.95) * 1e3:.2f} ms | {max(saves) * 1e3:.2f} ms |",
        "",
    ]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("store_postgres.md", report, HEADER)


HEADER = """# The PostgreSQL store under load

`python benchmarks/store_postgres.py --record` — a throwaway PostgreSQL server
(`tests/support/postgres_server.py`: 127.0.0.1, fsync off, 32 MB shared buffers) on the
same machine as the kernel. 200 sessions (the tests' `FakeProvider`) each stream 50
deltas 20 ms apart and answer, all turns started together on one store — PostgreSQL,
SQLite, and no store as the baseline; then another process's changes are heard.

* **longest loop stall**: the longest gap between wake-ups of a task on the event loop
  that sleeps 5 ms at a time (`store_behind.py`'s `Ticker`), from the start of the turns
  until every write is stored — what a widget update or a Stop click would wait. The
  *no store* column is the loop's own work: 200 turns started at once run their first
  steps back to back in one pass of the loop, so its floor is ~0.1 s, not the few ms of
  a single session (`store_behind.md`).
* **peak server connections**: client connections to the benchmark's database in
  `pg_stat_activity`, sampled every 50 ms from a thread: the pool's (at most
  `POOL_SIZE` = 4) plus the process's one connection for turn claims.
* **peak threads**: `threading.active_count()`, sampled alike (the main thread and the
  sampler are 2 of them): writer threads, the pool's workers, executor threads.
* **wall time**: from the start of the turns until every session's writes are stored
  (`session.flush`). The streams alone take ~1 s; the rest is the loop's and the store's.
* **turn claims**: the time spent in `store.claim_turn` and the claim's `release`
  (wrapped), on the loop's thread or off it: a `flock` on SQLite; on PostgreSQL
  statements on the claims connection, whose connect (the first claim of a run) is
  included. Off the loop, the sum includes waiting for the claims connection's lock.
* **writes stored, writer transactions, writes per second**: every write the sessions'
  writers stored (the two messages, the streaming drafts, the record's updates), the
  transactions that carried them, and writes over the wall time — the rate this load
  needed, not the store's ceiling. Every session's two messages are checked to be stored.
* **save → callback**: another process saves a session record (`save_session`: one
  transaction, `NOTIFY` on commit); this process, subscribed with
  `store.subscribe(callback)` and no event loop running, notes when the callback is
  called on the store's listener thread — timed from just before the other process's
  `save_session` (one `time.monotonic` clock: system-wide on Linux). The save's own
  duration, measured in the other process, is part of it. 50 samples a run, ~50 ms apart.

Shared 2-core machine, other sessions' test runs going on: compare medians, and columns
measured alternately (the three cases run in a different order each run).

"""


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sessions", type=int, default=SESSIONS,
                        help="sessions streaming at once (a quick check: --sessions 5)")
    parser.add_argument("--record", action="store_true", help="append to results/")
    args: Any = parser.parse_args()
    SESSIONS = args.sessions
    main(args.runs, args.record)
    sys.exit(0)
