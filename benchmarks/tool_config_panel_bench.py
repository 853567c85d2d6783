"""What one switch click costs the kernel in ``ToolConfigPanel``, for 200 and 1,000 tools.

Run: ``.venv/bin/python benchmarks/tool_config_panel_bench.py`` (add ``--record`` to write
``benchmarks/results/tool_config_panel.md``).

A click becomes ``config.set_tool(...)``; the panel, subscribed to the config, resolves
again and publishes its traits. We time that whole step (median and 95th percentile over
many toggles, widget without a frontend, so no comm cost), and measure the JSON the step
syncs to the view: the per-agent traits (``states``, ``enabled_tools``, ``categories``,
``summary``); the catalog description (``tools``) is only sent when the catalog changes.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import time
from pathlib import Path

from neta_nb.tools import SEED_CATEGORIES, AgentToolConfig, Tool, ToolCatalog
from neta_nb.widgets import ToolConfigPanel

RESULTS = Path(__file__).parent / "results" / "tool_config_panel.md"


def _echo(text: str) -> str:
    return text


def build_catalog(size: int) -> ToolCatalog:
    categories = [*SEED_CATEGORIES, "analytics", "export"]
    return ToolCatalog(
        Tool(name=f"tool_{index:04d}", handler=_echo,
             description=f"Tool number {index}: does one small, well-described thing.",
             category=categories[index % len(categories)], core=index % 10 == 0,
             capabilities=frozenset({"vision"}) if index % 7 == 0 else frozenset())
        for index in range(size))


def measure(size: int, runs: int) -> dict[str, float]:
    catalog = build_catalog(size)
    config = AgentToolConfig()
    panel = ToolConfigPanel(catalog, config, model_capabilities={"text"})
    names = [f"tool_{index:04d}" for index in range(1, size, 3)]
    timings = []
    for run in range(runs):
        name = names[run % len(names)]
        enabled = name not in config.enabled
        start = time.perf_counter()
        config.set_tool(name, enabled, catalog)
        timings.append(time.perf_counter() - start)
    synced = {trait: getattr(panel, trait)
              for trait in ("states", "enabled_tools", "categories", "summary")}
    panel.close()
    timings.sort()
    return {
        "median_ms": statistics.median(timings) * 1000,
        "p95_ms": timings[int(len(timings) * 0.95)] * 1000,
        "per_click_kb": len(json.dumps(synced)) / 1024,
        "catalog_kb": len(json.dumps(panel.tools)) / 1024,
    }


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--runs", type=int, default=400)
    args = parser.parse_args()
    rows = [(size, measure(size, args.runs)) for size in (200, 1000)]
    lines = [
        "# ToolConfigPanel: kernel cost of one switch click",
        "",
        f"`benchmarks/tool_config_panel_bench.py`, {args.runs} toggles per size; "
        f"Python {platform.python_version()}, {platform.machine()}, "
        f"{os.cpu_count()} CPUs.",
        "",
        "| tools | set_tool + re-resolve + publish (median) | p95 | JSON synced per click "
        "| catalog description (sent on catalog change only) |",
        "|---|---|---|---|---|",
    ]
    for size, result in rows:
        lines.append(f"| {size} | {result['median_ms']:.2f} ms | {result['p95_ms']:.2f} ms | "
                     f"{result['per_click_kb']:.1f} KB | {result['catalog_kb']:.1f} KB |")
    text = "\n".join(lines) + "\n"
    sys.stdout.write(text)
    if args.record:
        RESULTS.write_text(text)


if __name__ == "__main__":
    main()
