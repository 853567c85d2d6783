"""What one read of the session store costs, PostgreSQL next to SQLite: the sidebar's list,
a resume's ``get_session`` and ``load_messages``.

Run: ``.venv/bin/python benchmarks/store_reads.py [--record]`` (``--record`` appends to
``benchmarks/results/store_reads.md``). Needs PostgreSQL's binaries (Debian's
``postgresql``): a throwaway server is started with ``tests/support/postgres_server.py``
and stopped at the end.

The store holds 50 sessions, one of them with 40 messages. Each read is called 300 times
in a row, five times over; the report gives the median of a run, best and worst over the
five. Reads on PostgreSQL run on a thread of their own so that a hung server fails them
after a bound instead of freezing the kernel's loop (``postgres.ANSWER_LIMIT``); to see
what that costs, copy this file into a ``git archive`` export of an older commit and run
it there: it imports the package of the tree it sits in.
"""

from __future__ import annotations

import argparse
import platform
import statistics
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from recorded import append_result  # noqa: E402
from store_postgres import tree_label  # noqa: E402

from neta_nb import SessionStore  # noqa: E402
from neta_nb.messages import Message  # noqa: E402
from neta_nb.store.records import SessionRecord  # noqa: E402
from tests.support.postgres_server import start_postgres  # noqa: E402

CALLS = 300
RUNS = 5


def fill(store: SessionStore) -> None:
    now = time.time()
    for n in range(50):
        store.save_session(SessionRecord(id=f"s{n:02d}", title=f"Analysis {n}",
                                         created_at=now - n, updated_at=now - n))
    for m in range(40):
        store.append_message("s01", Message.user(f"message {m}: " + "word " * 100))


def medians(call: Callable[[], object]) -> list[float]:
    """The median time of one call, per run."""
    found = []
    for _ in range(RUNS):
        times = []
        for _ in range(CALLS):
            started = time.perf_counter()
            call()
            times.append(time.perf_counter() - started)
        found.append(statistics.median(times))
    return found


def measure(store: SessionStore) -> dict[str, list[float]]:
    fill(store)
    reads: dict[str, Callable[[], object]] = {
        "list_sessions(50)": lambda: store.list_sessions(50, all_users=True),
        "get_session": lambda: store.get_session("s01"),
        "load_messages (40)": lambda: store.load_messages("s01"),
    }
    return {name: medians(call) for name, call in reads.items()}


def main(record: bool) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        server = start_postgres(Path(scratch) / "pg")
        try:
            store = SessionStore(server.url)
            postgres = measure(store)
            store.close()
        finally:
            server.stop()
        store = SessionStore(Path(scratch) / "sessions.db")
        sqlite = measure(store)
        store.close()
    rows = [f"| {name} | {_ms(postgres[name])} | {_ms(sqlite[name])} |" for name in postgres]
    report = "\n".join([
        f"\n## {time.strftime('%Y-%m-%d')} — {tree_label()}, Python "
        f"{platform.python_version()}, {platform.machine()}\n",
        f"Median of {CALLS} calls in a row; best / worst of {RUNS} runs.\n",
        "| read | PostgreSQL | SQLite |", "|---|---|---|", *rows, ""])
    print(report)
    if record:
        append_result("store_reads.md", report, "# One read of the session store\n\n"
                      "`python benchmarks/store_reads.py --record`\n")


def _ms(values: list[float]) -> str:
    return f"{min(values) * 1e3:.3f} / {max(values) * 1e3:.3f} ms"


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="append to results/")
    main(parser.parse_args().record)
