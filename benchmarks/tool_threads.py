"""What handing a sync tool call to its thread costs: ``ToolThreads.run`` of a trivial
function, awaited one after another (the thread kept idle between calls).

Run: ``.venv/bin/python benchmarks/tool_threads.py [--record]`` (``--record`` appends to
``benchmarks/results/tool_threads.md``). To compare with an older commit, copy this file
into a ``git archive`` export of it and run it there: it imports the package of the tree
it sits in.
"""

from __future__ import annotations

import argparse
import asyncio
import platform
import statistics
import sys
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from recorded import append_result  # noqa: E402

from neta_nb.tools.threads import ToolThreads  # noqa: E402

CALLS = 2000
RUNS = 5


async def medians() -> list[float]:
    threads = ToolThreads()
    found = []
    for _ in range(RUNS):
        times = []
        for _ in range(CALLS):
            started = time.perf_counter()
            await threads.run(len, "abc")
            times.append(time.perf_counter() - started)
        found.append(statistics.median(times))
    return found


def main(record: bool) -> None:
    found = asyncio.run(medians())
    report = (f"\n## {time.strftime('%Y-%m-%d')} — Python {platform.python_version()}, "
              f"{platform.machine()}\n\nOne call handed over and awaited: median of {CALLS}"
              f" in a row, best / worst of {RUNS} runs: {min(found) * 1e6:.1f} / "
              f"{max(found) * 1e6:.1f} µs.\n")
    print(report)
    if record:
        append_result("tool_threads.md", report, "# A sync tool call's hand-over\n\n"
                      "`python benchmarks/tool_threads.py --record`\n")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--record", action="store_true", help="append to results/")
    main(parser.parse_args().record)
