"""Per-row overhead of a batch run (``agent.map``) in the kernel: wall and CPU time per row
and the most threads alive, for 1,000 rows at concurrency 16 of a model that answers at
once (``tests/support/batch.py``'s ``RowModel``), with no store, a SQLite store and — with
``--postgres`` — a PostgreSQL store on a throwaway local server. What is left is the run's
own cost: sessions, the limiter, leases and the store's writes.

Run: ``.venv/bin/python benchmarks/batch_rows.py [--rows 1000] [--postgres] [--record]``;
``--tree DIR`` measures another checkout (a ``git worktree`` of an older commit).
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import threading
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent


async def one_run(rows: int, concurrency: int, target: str | None) -> dict[str, float]:
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
    wall, cpu = time.perf_counter(), time.process_time()
    frame = await agent.map([f"ticket {i}" for i in range(rows)], concurrency=concurrency,
                            store=store)
    wall, cpu = time.perf_counter() - wall, time.process_time() - cpu
    sampler.cancel()
    assert (frame["status"] == "done").all()
    if store is not None:
        store.close()
    return {"wall_ms": wall / rows * 1000, "cpu_ms": cpu / rows * 1000, "threads": peak}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--postgres", action="store_true")
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
    lines = []
    try:
        for name, target in targets.items():
            figures = asyncio.run(one_run(args.rows, args.concurrency, target))
            line = (f"| {name} | {figures['wall_ms']:.2f} ms | {figures['cpu_ms']:.2f} ms | "
                    f"{figures['threads']:.0f} |")
            print(line, flush=True)
            lines.append(line)
    finally:
        if server is not None:
            from neta_nb.store.postgres import close_databases

            for target in targets.values():
                if target and target.startswith("postgresql"):
                    close_databases(target)
            server.stop()
    if args.record:
        from recorded import append_result

        append_result("batch_rows.md", "\n".join(
            ["", f"## {time.strftime('%Y-%m-%d')} — {args.rows} rows, concurrency "
             f"{args.concurrency}, tree {args.tree}", "",
             "| store | wall per row | CPU per row | most threads |", "|---|---|---|---|",
             *lines]), "# Batch runs: per-row overhead\n\n`python benchmarks/batch_rows.py "
             "[--postgres] --record` (see its docstring).\n")


if __name__ == "__main__":
    main()
