"""Where the benchmarks write what they measured: one markdown file each in ``results/``."""

from __future__ import annotations

from pathlib import Path

RESULTS = Path(__file__).with_name("results")


def append_result(name: str, report: str, header: str) -> None:
    """Append ``report`` to ``results/<name>``, starting a new file with ``header``."""
    out = RESULTS / name
    out.parent.mkdir(exist_ok=True)
    started = out.exists() and out.stat().st_size > 0
    with out.open("a") as handle:
        handle.write(("" if started else header) + report + "\n")
