"""How fast the session list finds a session: ``SessionStore.search_sessions`` over
thousands of stored sessions (title and message text), and a rename.

Run: ``.venv/bin/python benchmarks/session_search.py [--sessions N] [--record]``
(``--record`` appends to ``benchmarks/results/session_search.md``). Target (issue 32):
a search over 5,000 sessions answers in under 100 ms.
"""

from __future__ import annotations

import argparse
import platform
import sys
import tempfile
import time
from pathlib import Path

from recorded import append_result

from neta_nb.messages import Message, TextPart
from neta_nb.store.records import SessionRecord
from neta_nb.store.session_store import SessionStore
from neta_nb.store.sqlite.rows import put_message, put_session

WORDS = ["revenue", "forecast", "churn", "cohort", "pipeline", "margin", "region", "quarter",
         "retention", "campaign", "budget", "invoice", "supplier", "shipment", "warehouse"]


def fill(store: SessionStore, sessions: int, messages: int) -> None:
    """``sessions`` sessions of ``messages`` messages of ~600 characters each, written in
    one transaction (as a team's store would hold them after months)."""
    with store._transaction() as db:
        for n in range(sessions):
            session_id = f"s_{n:06d}"
            record = SessionRecord(id=session_id, title=f"Analysis {n} of {WORDS[n % 15]}",
                                   updated_at=time.time() - n, message_count=messages)
            put_session(db, session_id, record.model_dump_json(), record.updated_at, None)
            for m in range(messages):
                text = " ".join(WORDS[(n * 7 + m * 3 + k) % 15] for k in range(80))
                if n == sessions // 2 and m == messages - 1:
                    text += " needle-in-the-haystack"
                message = Message(role="user" if m % 2 == 0 else "assistant",
                                  parts=[TextPart(text=text)])
                put_message(db, session_id, message.id, message.model_dump_json())


def best(fn: object, repeats: int = 5) -> float:
    times = []
    for _ in range(repeats):
        start = time.perf_counter()
        fn()  # type: ignore[operator]
        times.append(time.perf_counter() - start)
    return min(times)


def main(sessions: int, messages: int, record: bool) -> None:
    with tempfile.TemporaryDirectory() as folder:
        store = SessionStore(Path(folder) / "s.db")
        fill(store, sessions, messages)
        found = store.search_sessions("needle-in-the-haystack")
        assert [r.id for r in found] == [f"s_{sessions // 2:06d}"], found
        rare = best(lambda: store.search_sessions("needle-in-the-haystack"))
        title = best(lambda: store.search_sessions(f"Analysis {sessions - 1}"))
        common = best(lambda: store.search_sessions("forecast"))
        two = best(lambda: store.search_sessions("churn warehouse"))
        listing = best(lambda: store.list_sessions(50))
        rename = best(lambda: store.rename_session("s_000001", "Renamed"))
        store.close()
    lines = [f"## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
             f"{platform.machine()}, {sessions:,} sessions × {messages} messages, best of 5",
             "", "| query | time | target |", "|---|---|---|",
             f"| a word in one message only (every message scanned) | {rare * 1e3:.1f} ms "
             "| < 100 ms |",
             f"| a title (matched early) | {title * 1e3:.1f} ms | < 100 ms |",
             f"| a common word (first 50 found) | {common * 1e3:.1f} ms | < 100 ms |",
             f"| two words | {two * 1e3:.1f} ms | < 100 ms |",
             f"| the plain list (50) | {listing * 1e3:.1f} ms | — |",
             f"| rename | {rename * 1e3:.1f} ms | — |", ""]
    report = "\n".join(lines)
    print(report)
    if record:
        append_result("session_search.md", report,
                      "# Searching the session list\n\n`python benchmarks/session_search.py "
                      "--record`\n\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sessions", type=int, default=5000)
    parser.add_argument("--messages", type=int, default=10)
    parser.add_argument("--record", action="store_true", help="append to results/")
    options = parser.parse_args()
    sys.setrecursionlimit(10_000)
    main(options.sessions, options.messages, options.record)
