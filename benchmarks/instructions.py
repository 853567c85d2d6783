"""The turn path in instructions: what a tool round trip costs early and late in one long
turn, and what a streamed delta costs with a chat view bound (top-level and a child's),
counted by valgrind's cachegrind instead of timed — timings on a shared 2-core machine
spread by up to 2× between identical runs; instruction counts do not.

Run: ``.venv/bin/python benchmarks/instructions.py [--tree DIR] [--record]``.
``--tree`` counts another checkout (a ``git worktree`` of the commit before a change), so
a change on the turn path is measured before and after with the same script. Each figure
is the difference of two processes (e.g. 1,600 round trips minus 1,400), so the fixed cost
of starting Python and importing the package cancels out.

Needs ``valgrind`` (Debian's package). Round trips: ``session_loop.rounds_in_one_turn``
(no usage reported, so the context estimate runs on every call). Deltas:
``subagent_stream``'s turns with a ``ChatView`` bound. Both build their sessions with no
store; ``--store`` attaches a SQLite ``SessionStore`` in a scratch folder to the
benchmark's session (a child shares its parent's), so the figures include the turn's
writes — the claim, the messages, the drafts — on the session's writer thread (valgrind
counts every thread; pending writes are flushed when the process exits). Drafts are
checkpointed by the clock, so with a store the delta figures also depend on how slowly
valgrind runs: compare them between trees counted on the same machine.

The tree counted comes first on ``sys.path`` (before the current folder, which ``-c``
puts first): run from another checkout, the tree's own ``neta_nb`` is the one imported.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from recorded import append_result

HERE = Path(__file__).resolve().parent

BLOCK_OTEL = "import sys; sys.modules['opentelemetry'] = None  # as if not installed\n"

ROUND_TRIPS = """
import asyncio, importlib.util, sys
tree, n = sys.argv[1], int(sys.argv[2])
sys.path[:0] = [tree, tree + "/benchmarks"]  # the tree's neta_nb, not the current folder's
spec = importlib.util.spec_from_file_location("session_loop", tree + "/benchmarks/session_loop.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
{store}asyncio.run(module.rounds_in_one_turn(n, report_usage=False))
"""

DELTAS = """
import asyncio, importlib.util, sys
tree, n, kind = sys.argv[1], int(sys.argv[2]), sys.argv[3]
sys.path[:0] = [tree, tree + "/benchmarks"]  # the tree's neta_nb, not the current folder's
spec = importlib.util.spec_from_file_location("subagent_stream",
                                              tree + "/benchmarks/subagent_stream.py")
module = importlib.util.module_from_spec(spec); spec.loader.exec_module(module)
{store}asyncio.run(module._turn(module._agents(n)[kind], module._chat_view))
"""

WITH_STORE = """import os
from neta_nb import SessionStore
_store, _made = SessionStore(os.environ["BENCH_STORE"]), module.AgentSession
module.AgentSession = lambda agent, catalog=None: _made(agent, catalog, _store)
"""
"""With ``--store``: the benchmark's session gets a SQLite store (``BENCH_STORE``, a file
in the count's scratch folder)."""


def count(script: str, tree: Path, *args: str) -> int:
    """Instructions one process running ``script`` executes (cachegrind, no cache model)."""
    with tempfile.TemporaryDirectory() as scratch:
        out = Path(scratch) / "cg.out"
        # A fixed hash seed: set iteration orders (and so GC timing) repeat run to run.
        env = {**os.environ, "PYTHONPATH": str(tree), "PYTHONHASHSEED": "0",
               "BENCH_STORE": str(Path(scratch) / "s.db")}
        done = subprocess.run(
            ["valgrind", "--tool=cachegrind", "--cache-sim=no", f"--cachegrind-out-file={out}",
             sys.executable, "-c", script, str(tree), *args],
            env=env, capture_output=True, text=True, check=False)
        if done.returncode != 0:
            raise RuntimeError(f"counting failed: {done.stderr[-2000:]}")
        match = re.search(r"^summary: (\d+)", out.read_text(), re.M)
        if match is None:
            raise RuntimeError("cachegrind wrote no summary")
        return int(match.group(1))


def main(tree: Path, record: bool, without_otel: bool, store: bool) -> None:
    if shutil.which("valgrind") is None:
        raise SystemExit("valgrind is not installed (apt-get install valgrind)")
    round_trips, deltas_script = (script.format(store=WITH_STORE if store else "")
                                  for script in (ROUND_TRIPS, DELTAS))
    if without_otel:
        round_trips, deltas_script = BLOCK_OTEL + round_trips, BLOCK_OTEL + deltas_script
    rows = {n: count(round_trips, tree, str(n)) for n in (200, 400, 1400, 1600)}
    early = (rows[400] - rows[200]) / 200
    late = (rows[1600] - rows[1400]) / 200
    whole = (rows[1600] - rows[200]) / 1400
    deltas = {kind: (count(deltas_script, tree, "22000", kind)
                     - count(deltas_script, tree, "2000", kind))
              / 20000 for kind in ("top-level", "child")}
    commit = subprocess.run(["git", "-C", str(tree), "rev-parse", "--short", "HEAD"],
                            capture_output=True, text=True, check=False).stdout.strip()
    commit = commit or tree.name  # a tree exported with ``git archive`` has no history
    dirty = subprocess.run(["git", "-C", str(tree), "status", "--porcelain", "--", "neta_nb"],
                           capture_output=True, text=True, check=False).stdout.strip()
    label = (f"{commit}{' + changes' if dirty else ''}"
             f"{', OpenTelemetry not importable' if without_otel else ''}"
             f"{', SQLite store attached' if store else ''}")
    report = "\n".join([
        f"### {time.strftime('%Y-%m-%d')} — instructions, {label}", "",
        "| instructions | figure |", "|---|---|",
        f"| per tool round trip, rounds 201–400 of one turn | {early:,.0f} |",
        f"| per tool round trip, rounds 1,401–1,600 | {late:,.0f} |",
        f"| late / early (flatness, target ≤ 1.5×) | {late / early:.2f}× |",
        f"| per tool round trip, rounds 201–1,600 on average | {whole:,.0f} |",
        f"| per delta, chat view bound, top-level | {deltas['top-level']:,.0f} |",
        f"| per delta, chat view bound, child | {deltas['child']:,.0f} |", ""])
    print(report)
    if record:
        append_result("session_loop.md", report, "# Session loop overhead\n\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--tree", type=Path, default=HERE.parent,
                        help="the checkout to count (default: this one)")
    parser.add_argument("--record", action="store_true", help="append to results/")
    parser.add_argument("--without-otel", action="store_true",
                        help="count as if OpenTelemetry were not installed")
    parser.add_argument("--store", action="store_true",
                        help="attach a SQLite SessionStore (in a scratch folder) to the "
                             "benchmark's session")
    options = parser.parse_args()
    main(options.tree.resolve(), options.record, options.without_otel, options.store)
