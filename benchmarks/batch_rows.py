"""Per-row overhead of a batch run (``agent.map``) in the kernel: wall and CPU time per row
and the most threads alive, for 1,000 rows at concurrency 16 of a model that answers at
once (``tests/support/batch.py``'s ``RowModel``), with no store, a SQLite store and — with
``--postgres`` — a PostgreSQL store on a throwaway local server. What is left is the run's
own cost: sessions, the limiter, leases and the store's writes.

``--ray`` adds ``backend="ray"`` on a local cluster (``ray.init(num_cpus=2)`` on the
loopback address, started before the clock runs; two worker actors) for each store: the
same rows, plus what Ray adds — starting the actors, the limiter actor's round trips, the
progress batches. The kernel's own CPU says little there (the work is in the workers), so
every variant also reports the machine's busy CPU per row (all processes, from
``psutil.cpu_times``): measure on an otherwise idle machine. Ray's per-row figures start
once its worker actors are up; the time that took is the "start" column (a fixed cost of
the run: worker processes started and ``neta_nb`` imported in them).

Run: ``.venv/bin/python benchmarks/batch_rows.py [--rows 1000] [--postgres] [--ray]
[--record]``; ``--tree DIR`` measures another checkout (a ``git worktree`` of an older
commit).
"""

from __future__ import annotations

import argparse
import asyncio
import os
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


def machine_busy() -> float:
    """Seconds of CPU the whole machine has spent busy (every process, every core)."""
    import psutil

    times = psutil.cpu_times()
    return sum(times) - times.idle - getattr(times, "iowait", 0.0)


async def one_run(rows: int, concurrency: int, target: str | None,
                  backend: str = "local") -> dict[str, float]:
    from neta_nb import Agent, SessionStore
    from tests.support.batch import RowModel

    agent = Agent("a", model=RowModel())
    store = SessionStore(target) if target is not None else None
    peak = 0

    async def sample() -> None:
        nonlocal peak
        while True:
            peak = max(peak, threading.active_count())
            await asyncio.sleep(0.01)

    sampler = asyncio.create_task(sample())
    wall, cpu, busy = time.perf_counter(), time.process_time(), machine_busy()
    options = {"backend": "ray", "workers": 2} if backend == "ray" else {}
    run = agent.map([f"ticket {i}" for i in range(rows)], concurrency=concurrency,
                    store=store, **options)
    startup = 0.0
    if backend == "ray":  # the clock starts again once the worker actors are up
        from tests.support.timing import wait_until

        await wait_until(lambda: run._ray is not None and bool(run._ray.pids), within=300)
        startup = time.perf_counter() - wall
        wall, cpu, busy = time.perf_counter(), time.process_time(), machine_busy()
    frame = await run
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    busy = machine_busy() - busy
    sampler.cancel()
    assert (frame["status"] == "done").all()
    if store is not None:
        store.close()
    return {"wall_ms": wall / rows * 1000, "cpu_ms": cpu / rows * 1000,
            "busy_ms": busy / rows * 1000, "threads": peak, "startup_s": startup}


def start_ray(tree: str) -> None:
    """A local two-CPU cluster on the loopback address; its workers import ``tree``."""
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # single machine: 127.0.0.1
    import ray

    ray.init(num_cpus=2, include_dashboard=False, log_to_driver=False,
             runtime_env={"env_vars": {"PYTHONPATH": tree}})


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--postgres", action="store_true")
    parser.add_argument("--ray", action="store_true")
    parser.add_argument("--tree", default=str(HERE.parent))
    parser.add_argument("--record", action="store_true")
    args = parser.parse_args()
    sys.path.insert(0, args.tree)  # its package and its tests.support (the same model)
    targets: dict[str, str | None] = {
        "no store": None, "SQLite": str(Path(tempfile.mkdtemp()) / "s.db")}
    server = None
    if args.postgres:
        from tests.support.postgres_server import start_postgres

        server = start_postgres(Path(tempfile.mkdtemp()))
        targets["PostgreSQL"] = server.create_database("bench")
    runs = [("local", name, target) for name, target in targets.items()]
    if args.ray:
        start_ray(args.tree)
        # A fresh file for Ray's rows: the same run id may not be stored twice.
        runs += [("ray", name, str(Path(tempfile.mkdtemp()) / "s.db") if name == "SQLite"
                  else target) for name, target in targets.items() if target is not None]
    lines = []
    try:
        for backend, name, target in runs:
            figures = asyncio.run(one_run(args.rows, args.concurrency, target, backend))
            line = (f"| {backend} | {name} | {figures['wall_ms']:.2f} ms | "
                    f"{figures['cpu_ms']:.2f} ms | {figures['busy_ms']:.2f} ms | "
                    f"{figures['threads']:.0f} | {figures['startup_s']:.1f} s |")
            print(line, flush=True)
            lines.append(line)
    finally:
        if args.ray:
            import ray

            ray.shutdown()
        if server is not None:
            from neta_nb.store.postgres.postgres import close_databases

            for target in targets.values():
                if target and target.startswith("postgresql"):
                    close_databases(target)
            server.stop()
    if args.record:
        from recorded import append_result

        append_result("batch_rows.md", "\n".join(
            ["", f"## {time.strftime('%Y-%m-%d')} — {args.rows} rows, concurrency "
             f"{args.concurrency}, tree {args.tree}", "",
             "| backend | store | wall per row | kernel CPU per row | machine CPU per row "
             "| most threads (kernel) | start |", "|---|---|---|---|---|---|---|",
             *lines]), "# Batch runs: per-row overhead\n\n`python benchmarks/batch_rows.py "
             "[--postgres] --record` (see its docstring).\n")


if __name__ == "__main__":
    main()
