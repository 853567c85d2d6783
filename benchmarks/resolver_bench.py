"""How long ``resolve_tools`` takes for a catalog of 5,000 tools and large agent configs.

Run: ``.venv/bin/python benchmarks/resolver_bench.py`` (add ``--record`` to write
``benchmarks/results/resolver.md``).

Catalog: 5,000 tools over the eight seed categories plus 12 custom ones; every 10th tool
is core, every 7th needs ``vision``, every 11th is limited to the ``crew`` scene, every
50th is disabled globally. Scenarios:

* **default** — a fresh agent config, no filters;
* **large config** — 2,500 names enabled, 600 disabled (some overlapping), 200 unknown
  names and duplicates, with a capability filter (a model without ``vision``) and a scene;
* **diagnostics** — the same, also reading ``.warnings`` (computed on first access; the
  config panel reads it, the runtime does not);
* **preview** — ``preview_prompt`` for the large config: resolution plus the
  ``ToolDefinition`` list a provider receives.

Each scenario is timed over many runs after a warm-up; we report the median and the
95th percentile of wall time per call. Target (DESIGN §7): resolve 5,000 tools < 5 ms.
"""

from __future__ import annotations

import argparse
import gc
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path

from neta_nb.tools import (
    SEED_CATEGORIES,
    AgentToolConfig,
    Tool,
    ToolCatalog,
    preview_prompt,
    resolve_tools,
)

TOOLS = 5_000
RUNS = 300
TARGET_MS = 5.0
CATEGORIES = [*SEED_CATEGORIES, *(f"custom_{i}" for i in range(12))]


def build_catalog() -> ToolCatalog:
    def handler(query: str, limit: int = 10) -> str:
        return query[:limit]

    catalog = ToolCatalog()
    for i in range(TOOLS):
        catalog.register(Tool(
            name=f"tool_{i:05}", description=f"Benchmark tool number {i}.", handler=handler,
            category=CATEGORIES[i % len(CATEGORIES)], core=i % 10 == 0,
            capabilities=frozenset({"vision"}) if i % 7 == 0 else frozenset(),
            scenes=frozenset({"crew"}) if i % 11 == 0 else None))
    for i in range(0, TOOLS, 50):
        catalog.disable(f"tool_{i:05}")
    return catalog


def large_config() -> AgentToolConfig:
    enabled = [f"tool_{i:05}" for i in range(0, TOOLS, 2)]           # 2,500
    disabled = [f"tool_{i:05}" for i in range(1, TOOLS, 8)][:600]      # 600, some core
    unknown = [f"retired_{i}" for i in range(200)]
    return AgentToolConfig(enabled=enabled + unknown + enabled[:100],
                           disabled=disabled + unknown[:50])


def measure(call: Callable[[], object]) -> tuple[float, float, float]:
    """Median and p95 wall time, and the best run (the least disturbed by other load on
    the machine), in milliseconds."""
    for _ in range(20):
        call()
    samples = []
    gc.collect()
    for _ in range(RUNS):
        start = time.perf_counter()
        call()
        samples.append((time.perf_counter() - start) * 1000)
    samples.sort()
    return statistics.median(samples), samples[int(len(samples) * 0.95) - 1], samples[0]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--record", action="store_true",
                        help="write benchmarks/results/resolver.md")
    options = parser.parse_args()

    catalog = build_catalog()
    config = large_config()
    default = AgentToolConfig()
    check = resolve_tools(catalog, config, model_capabilities={"tools"}, scene="chat")
    scenarios = {
        "default config, no filters": lambda: resolve_tools(catalog, default),
        "large config + capability + scene filter": lambda: resolve_tools(
            catalog, config, model_capabilities={"tools"}, scene="chat"),
        "large config + filters, diagnostics read (.warnings)": lambda: resolve_tools(
            catalog, config, model_capabilities={"tools"}, scene="chat").warnings,
        "preview_prompt (large config, with definitions)": lambda: preview_prompt(
            system_prompt="You are a benchmark.", catalog=catalog, config=config,
            model_capabilities={"tools"}, scene="chat"),
    }
    rows = []
    for label, call in scenarios.items():
        median, p95, best = measure(call)
        rows.append((label, median, p95, best))
        print(f"{label:<50} median {median:6.2f} ms   p95 {p95:6.2f} ms   best {best:6.2f} ms")

    # The target is for deciding the tools (what the runtime does on every model call);
    # diagnostics and the preview are reported alongside.
    resolve_median = max(median for label, median, *_ in rows[:2])
    verdict = "meets" if resolve_median < TARGET_MS else "MISSES"
    print(f"resolve: {verdict} the {TARGET_MS} ms target "
          f"(final set {len(check.tools)} tools, {len(check.unknown)} unknown, "
          f"{len(check.warnings)} warnings)")
    if options.record:
        lines = [
            "# Resolver benchmark", "",
            f"`python benchmarks/resolver_bench.py --record` — {time.strftime('%Y-%m-%d')}, "
            f"Python {platform.python_version()}, {platform.machine()}, "
            f"{_cpu_count()} CPUs.", "",
            f"Catalog of {TOOLS:,} tools ({len(CATEGORIES)} categories, every 10th core, "
            "every 7th needs `vision`, every 11th scene-limited, every 50th disabled "
            "globally). Large config: 2,500 enabled + 100 duplicates + 200 unknown, "
            "650 disabled. "
            f"{RUNS} timed runs per scenario after 20 warm-up runs; wall time per call.", "",
            f"Load average when recorded: {_load()}.", "",
            "| scenario | median | p95 | best |", "|---|---:|---:|---:|",
            *(f"| {label} | {median:.2f} ms | {p95:.2f} ms | {best:.2f} ms |"
              for label, median, p95, best in rows),
            "",
            f"Target: resolve 5,000 tools < {TARGET_MS:g} ms — **{verdict}** "
            f"(worst median of the two resolve scenarios: {resolve_median:.2f} ms; "
            "`.warnings`/`.unknown` are computed when first read, by the config panel, and "
            "are timed separately). "
            "The machine is shared with other work, so p95 mostly measures other load; "
            "the best run shows the undisturbed cost. "
            f"Large-config result: {len(check.tools):,} tools granted, "
            f"{len(check.unknown)} unknown names, {len(check.warnings)} warnings.", "",
        ]
        out = Path(__file__).parent / "results" / "resolver.md"
        out.parent.mkdir(exist_ok=True)
        out.write_text("\n".join(lines), encoding="utf-8")
        print(f"recorded in {out}")


def _cpu_count() -> int:
    return os.cpu_count() or 1


def _load() -> str:
    try:
        return ", ".join(f"{value:.2f}" for value in os.getloadavg())
    except OSError:
        return "unknown"


if __name__ == "__main__":
    sys.exit(main())
