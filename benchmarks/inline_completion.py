"""Inline completion: what building a request's context costs in the kernel, the kernel's
end-to-end latency against a local fill-in-the-middle server, and, in real JupyterLab +
Chromium, keystroke-to-ghost-text with an instant server and requests per 20 typed
characters.

Run: ``.venv/bin/python benchmarks/inline_completion.py [--browser] [--record]``
(``--record`` writes ``benchmarks/results/inline_completion.md``; ``--browser`` needs
``/usr/bin/chromium`` and a built ``neta_nb/labextension``).

* **Context** — :meth:`CompletionContext.build` for three kernels: a DataFrame and a few
  names; 500 variables; a 1 GB-shaped DataFrame (13.5 M rows × 10, one broadcast row:
  pandas counts 1.08 GB, no memory is used) beside a 5,000-column one. Wall and CPU time
  per build (median, p95) and the request's size in bytes.
* **Kernel end to end** — :class:`InlineCompleter` against the stand-in server of
  ``tests/support/fim_server.py`` on 127.0.0.1 (it answers at once): from ``complete`` to
  the first text and to ``done``.
* **Browser** — keystroke (the page's ``keydown``) to the ghost text showing, with
  ``debounce_ms=0`` (the overhead of the whole path: page, comm, kernel, HTTP, back);
  then 20 characters typed at 60 ms each with the default ``debounce_ms=250``: requests
  the server received, the most in flight at once, and the browser's CPU
  (``Performance.getMetrics`` TaskDuration) over the typing.
"""

from __future__ import annotations

import argparse
import functools
import os
import platform
import statistics
import sys
import tempfile
import threading
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import numpy as np  # noqa: E402
import pandas as pd  # type: ignore[import-untyped]  # noqa: E402

from neta_nb import ModelPrice, create_provider  # noqa: E402
from neta_nb.runtime.inline_completion import (  # noqa: E402
    CompletionContext,
    CompletionRequest,
    InlineCompleter,
)
from tests.support.fim_server import FimServer, fim_server  # noqa: E402

RUNS = 200
E2E_RUNS = 100
BROWSER_SAMPLES = 20


def namespaces() -> dict[str, dict[str, Any]]:
    frame = pd.DataFrame({"revenue": [1, 2], "region": ["n", "s"]})
    small = {"df": frame, "n": 3, "name": "x", "items": [1, 2, 3]}
    many: dict[str, Any] = {f"value_{i:03d}": i for i in range(250)}
    many.update({f"frame_{i:03d}": frame for i in range(250)})
    big = pd.DataFrame(np.broadcast_to(np.float64(0), (13_500_000, 10)),
                       columns=[f"measurement_{i}" for i in range(10)], copy=False)
    wide = pd.DataFrame(np.zeros((1, 5000)), columns=[f"column_{i}" for i in range(5000)])
    return {"a DataFrame and 3 names": small, "500 variables": many,
            "1 GB-shaped frame + 5,000 columns": {"big": big, "wide": wide, "df": frame}}


def percentile(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(share * len(ordered)))]


def timed(run: Callable[[], Any], runs: int) -> tuple[list[float], list[float]]:
    for _ in range(10):
        run()
    walls, cpus = [], []
    for _ in range(runs):
        wall, cpu = time.perf_counter(), time.process_time()
        run()
        cpus.append(time.process_time() - cpu)
        walls.append(time.perf_counter() - wall)
    return walls, cpus


def context_rows() -> list[str]:
    request = CompletionRequest(prefix='import pandas as pd\ntotal = df["re', suffix="\n",
                                cells=tuple(f"x_{i} = {i}" for i in range(10)))
    rows = []
    for name, namespace in namespaces().items():
        walls, cpus = timed(functools.partial(CompletionContext.build, request, namespace), RUNS)
        size = CompletionContext.build(request, namespace).size()
        variables = len(CompletionContext.build(request, namespace).variables.encode())
        rows.append(f"| {name} | {statistics.median(walls) * 1e3:.2f} ms | "
                    f"{percentile(walls, 0.95) * 1e3:.2f} ms | "
                    f"{statistics.median(cpus) * 1e3:.2f} ms | {variables:,} B | {size:,} B |")
    return rows


def end_to_end(server: FimServer) -> list[str]:
    provider = create_provider("openai-compatible:coder", base_url=server.base_url,
                               api_key="local", price=ModelPrice(input=0, output=0))
    completer = InlineCompleter(provider, max_tokens=16)
    context = CompletionContext.build(CompletionRequest(prefix='df["re'),
                                      namespaces()["a DataFrame and 3 names"])
    firsts, dones = [], []
    for run in range(E2E_RUNS + 5):
        first = threading.Event()
        done = threading.Event()
        marks: dict[str, float] = {}

        def send(data: dict[str, Any], first: threading.Event = first,
                 done: threading.Event = done, marks: dict[str, float] = marks) -> None:
            if data["kind"] == "chunk" and not first.is_set():
                marks["first"] = time.perf_counter()
                first.set()
            if data["kind"] in ("done", "error"):
                marks["done"] = time.perf_counter()
                done.set()

        started = time.perf_counter()
        completer.complete(f"r{run}", context, send)
        done.wait(10)
        if run >= 5:
            firsts.append(marks["first"] - started)
            dones.append(marks["done"] - started)
    completer.wait_idle()
    return [f"| complete → first text | {statistics.median(firsts) * 1e3:.2f} ms | "
            f"{percentile(firsts, 0.95) * 1e3:.2f} ms |",
            f"| complete → done | {statistics.median(dones) * 1e3:.2f} ms | "
            f"{percentile(dones, 0.95) * 1e3:.2f} ms |"]


# --- the browser --------------------------------------------------------------------------

KEY_TO_GHOST_JS = """
() => {
  const seen = () => {
    const ghost = document.querySelector('.jp-GhostText');
    return ghost && ghost.textContent.includes('revenue"]');
  };
  window.__netaGhost = new Promise((resolve) => {
    let pressed = null;
    const onKey = () => { pressed = performance.now(); };
    document.addEventListener('keydown', onKey, { capture: true, once: true });
    const observer = new MutationObserver(() => {
      if (pressed !== null && seen()) {
        observer.disconnect();
        resolve(performance.now() - pressed);
      }
    });
    observer.observe(document.body, { childList: true, subtree: true, characterData: true });
    setTimeout(() => { observer.disconnect(); resolve(null); }, 10000);
  });
}
"""


def browser_rows(server: FimServer) -> list[str]:
    from tests.browser.harness import (
        JupyterLabServer,
        LabSession,
        chromium_missing_reason,
        launch_chromium,
    )

    reason = chromium_missing_reason()
    built = REPO / "neta_nb" / "labextension"
    if reason or not (built / "package.json").exists():
        return [f"(browser part skipped: {reason or 'neta_nb/labextension is not built'})"]
    with tempfile.TemporaryDirectory() as tmp:
        base = Path(tmp)
        (base / "jp" / "labextensions").mkdir(parents=True)
        (base / "jp" / "labextensions" / "neta-nb-notebook-bridge").symlink_to(built)
        os.environ["JUPYTER_PATH"] = str(base / "jp")
        os.environ["PYTHONPATH"] = str(REPO)
        lab = JupyterLabServer(base / "lab")
        lab.start()
        try:
            with launch_chromium(base / "profile") as context:
                tab = LabSession(lab, context)
                return _measure(tab, context, server)
        finally:
            lab.stop()


def _switch_on(tab: Any, path: str, server: FimServer, debounce_ms: int) -> None:
    tab.execute(path, f"completion = neta_nb.inline_completion('openai-compatible:coder', "
                      f"base_url={server.base_url!r}, api_key='local', "
                      f"debounce_ms={debounce_ms}, max_tokens=16)")


def _measure(tab: Any, context: Any, server: FimServer) -> list[str]:
    path = tab.run_notebook("bench.ipynb", [
        'import neta_nb\nimport pandas as pd\ndf = pd.DataFrame({"revenue": [1]})', "x = 0"])
    _switch_on(tab, path, server, debounce_ms=0)
    page = tab.page
    page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".cm-content").click()
    latencies = []
    for _ in range(BROWSER_SAMPLES + 3):
        page.keyboard.press("Control+End")
        page.keyboard.press("Enter")
        page.keyboard.type("df[")
        page.wait_for_timeout(250)
        page.evaluate(KEY_TO_GHOST_JS)  # armed: the next keydown starts the clock
        page.keyboard.press('"')
        value = page.evaluate("() => window.__netaGhost")
        if value is not None:
            latencies.append(float(value))
        page.wait_for_timeout(100)
    latencies = latencies[3:]
    rows = [f"| keystroke → ghost text (debounce 0, {len(latencies)} samples) | "
            f"{statistics.median(latencies):.1f} ms | {percentile(latencies, 0.95):.1f} ms |"]

    _switch_on(tab, path, server, debounce_ms=250)
    cdp = context.new_cdp_session(page)
    cdp.send("Performance.enable")

    def typing() -> tuple[int, int, float]:
        page.keyboard.press("Control+End")
        page.keyboard.press("Enter")
        page.wait_for_timeout(400)
        server.reset()
        before = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        page.keyboard.type("total = df.revenue.sum", delay=60)  # 22 characters
        page.wait_for_timeout(800)
        after = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
        cpu = after["TaskDuration"] - before["TaskDuration"]
        return server.requests, server.most_in_flight, cpu

    on = [typing() for _ in range(5)]
    tab.execute(path, "completion.off()")
    off = [typing() for _ in range(5)]
    counts = [run[0] for run in on]
    return [*rows, "", "| 22 characters typed at 60 ms (debounce 250 ms), 5 runs | value |",
            "|---|---:|",
            f"| requests received by the server | {min(counts)}–{max(counts)} |",
            f"| most requests in flight at once | {max(run[1] for run in on)} |",
            f"| requests once `.off()` | {max(run[0] for run in off)} |",
            f"| browser CPU over the typing (TaskDuration), completion on | "
            f"{statistics.median(run[2] for run in on) * 1e3:.0f} ms |",
            f"| the same, completion off | "
            f"{statistics.median(run[2] for run in off) * 1e3:.0f} ms |"]


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--browser", action="store_true")
    options = parser.parse_args()
    lines = ["# Inline completion benchmark", "",
             f"`python benchmarks/inline_completion.py{' --browser' if options.browser else ''}"
             f" --record` — {time.strftime('%Y-%m-%d')}, Python {platform.python_version()}, "
             f"{platform.machine()}, {os.cpu_count()} CPUs; load average "
             f"{', '.join(f'{x:.2f}' for x in os.getloadavg())}.", "",
             "## Building a request's context in the kernel", "",
             f"{RUNS} builds each after 10 warm-up builds.", "",
             "| kernel | median | p95 | CPU median | variables block | request |",
             "|---|---:|---:|---:|---:|---:|", *context_rows(), ""]
    with fim_server() as server:
        lines += ["## Kernel end to end (stand-in FIM server on 127.0.0.1, answers at once)", "",
                  f"{E2E_RUNS} requests after 5 warm-up ones.", "",
                  "| step | median | p95 |", "|---|---:|---:|", *end_to_end(server), ""]
        if options.browser:
            lines += ["## JupyterLab + Chromium", "", "| measure | median | p95 |",
                      "|---|---:|---:|", *browser_rows(server), ""]
    text = "\n".join(lines)
    print(text)
    if options.record:
        (REPO / "benchmarks" / "results" / "inline_completion.md").write_text(text)


if __name__ == "__main__":
    main()
