"""Scrolling back through a long chat in real JupyterLab and Chromium: what each older page
costs and what the page holds after it.

Run: ``PYTHONPATH=<tree> .venv/bin/python benchmarks/long_sessions.py --label after``
(``--record`` appends the figures to ``benchmarks/results/long_sessions.md``). The kernel
imports neta_nb (and its built bundle, ``neta_nb/static``) from ``PYTHONPATH``, so the same
script measures another tree (an export of an older commit, with its JS built) by pointing
it there. Needs ``/usr/bin/chromium`` and the test extras.

A stored session of 400 and one of 1,600 turns (``tests/support/long_session.py``: each
turn a prompt, thinking, four tool calls and a 600-character answer with code and a table)
is resumed into a ``ChatView``; the view draws its newest items. Then the reader goes to the
top of the transcript again and again (``scrollTop = 0``, as the Home key or the scrollbar
does), and each time the view asks the kernel for the next older page: 12 pages of the 400-
turn session, 50 of the 1,600-turn one. After each page: the time from the scroll until the
page is drawn (the indicator gone and two frames painted), the longest main-thread task
meanwhile (``longtask`` entries), the DOM nodes of the chat view, and the JS heap after a
garbage collection. At the end the reader goes to the middle and to the bottom again (nodes
there too).
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from tests.browser.harness import (  # noqa: E402
    JupyterLabServer,
    LabSession,
    chromium_missing_reason,
    launch_chromium,
)
from tests.support.long_session import store_long_session  # noqa: E402

RESULTS = REPO / "benchmarks" / "results" / "long_sessions.md"
RUNS = ((400, 12), (1600, 50))

OPEN = """
import sys
sys.path.insert(0, {tree!r})
from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.widgets import ChatView
session = AgentSession.resume({session!r}, SessionStore({db!r}),
                              agent=Agent("analyst", model=ScriptedProvider()))
chat = ChatView(session, height="640px")
chat
""".strip()

WATCH = """() => {
  window.__longTasks = [];
  new PerformanceObserver((list) => {
    for (const entry of list.getEntries()) {
      window.__longTasks.push([entry.startTime, entry.duration]);
    }
  }).observe({ type: "longtask", buffered: false });
}"""

NODES = """() => {
  const view = document.querySelector('.neta-chat-view');
  return { view: view.querySelectorAll('*').length,
           list: view.querySelector('.neta-chat-list').querySelectorAll('*').length,
           drawn: view.querySelectorAll('.neta-chat-list > .neta-chat-msg').length };
}"""

# One older page: to the top, until the page came and two frames were painted.
OLDER_PAGE = """async () => {
  const view = document.querySelector('.neta-chat-view');
  const scroller = view.querySelector('.neta-chat-scroll');
  const indicator = view.querySelector('.neta-chat-older');
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  const until = async (check, ms) => {
    const end = performance.now() + ms;
    while (!check()) {
      if (performance.now() > end) return false;
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    return true;
  };
  const start = performance.now();
  // The reader's hand (a wheel event first: the view stops following the answer).
  scroller.dispatchEvent(new WheelEvent('wheel', { deltaY: -scroller.scrollTop }));
  scroller.scrollTop = 0;
  if (!(await until(() => !indicator.hidden, 5000))) return null;
  await until(() => indicator.hidden, 60000);
  await frame();
  await frame();
  const ms = performance.now() - start;
  const since = window.__longTasks.filter(([at]) => at >= start);
  const longest = Math.max(0, ...since.map(([, duration]) => duration));
  return { ms, longest };
}"""

GO_TO = """async (where) => {
  const scroller = document.querySelector('.neta-chat-view .neta-chat-scroll');
  const frame = () => new Promise((resolve) => requestAnimationFrame(() => resolve()));
  for (let i = 0; i < 6; i += 1) {
    scroller.dispatchEvent(new WheelEvent('wheel', { deltaY: 1 }));
    scroller.scrollTop = where === 'middle' ? scroller.scrollHeight / 2 : scroller.scrollHeight;
    await frame();
    await frame();
  }
}"""


def heap_mb(cdp: Any) -> float:
    cdp.send("HeapProfiler.collectGarbage")
    metrics = {m["name"]: m["value"] for m in cdp.send("Performance.getMetrics")["metrics"]}
    return float(metrics["JSHeapUsedSize"]) / 1e6


def measure_one(lab: LabSession, tree: str, db: Path, turns: int, pages: int) -> dict[str, Any]:
    session = store_long_session(db, turns)
    page = lab.page
    cdp = page.context.new_cdp_session(page)
    cdp.send("Performance.enable")
    opened = time.perf_counter()
    lab.run_notebook(f"long{turns}.ipynb", [OPEN.format(tree=tree, session=session, db=str(db))],
                     timeout=180)
    page.locator(".neta-chat-view .neta-chat-msg").first.wait_for(timeout=60_000)
    page.wait_for_timeout(1_500)
    open_s = time.perf_counter() - opened
    page.evaluate(WATCH)
    first = page.evaluate(NODES)
    rows = []
    for number in range(1, pages + 1):
        result = page.evaluate(OLDER_PAGE)
        if result is None:
            break
        page.wait_for_timeout(150)
        rows.append({"page": number, **result, **page.evaluate(NODES), "heap": heap_mb(cdp)})
    ends = {}
    for where in ("middle", "bottom"):
        page.evaluate(GO_TO, where)
        page.wait_for_timeout(300)
        ends[where] = page.evaluate(NODES)
    lab.close_all()
    return {"turns": turns, "open_s": open_s, "first": first, "rows": rows, "ends": ends,
            "first_heap": rows[0]["heap"] if rows else 0.0}


def measure(tree: str, runs: tuple[tuple[int, int], ...] = RUNS) -> list[dict[str, Any]]:
    with tempfile.TemporaryDirectory(prefix="neta-long-") as tmp:
        server = JupyterLabServer(Path(tmp))
        server.start()
        try:
            with launch_chromium(Path(tmp) / "chromium", device_scale_factor=1) as context:
                lab = LabSession(server, context)
                results = [measure_one(lab, tree, Path(tmp) / "sessions.db", turns, pages)
                           for turns, pages in runs]
                lab.close()
        finally:
            server.stop()
    return results


def report(label: str, results: list[dict[str, Any]]) -> str:
    lines = [f"### {label}", "",
             f"{platform.python_version()} · {time.strftime('%Y-%m-%d')} · "
             f"{os.cpu_count()} cores shared · Chromium headless, chat 640 px tall", ""]
    for result in results:
        rows = result["rows"]
        first = result["first"]
        lines += [f"**{result['turns']:,} turns** — opened in {result['open_s']:.1f} s; first "
                  f"render {first['view']:,} nodes in the chat view ({first['list']:,} in its "
                  f"list, {first['drawn']} messages drawn)", "",
                  "| older page | ms | longest task ms | chat nodes | ×first "
                  "| messages drawn | heap MB |",
                  "|---|---|---|---|---|---|---|"]
        for row in rows:
            lines.append(f"| {row['page']} | {row['ms']:.0f} | {row['longest']:.0f} | "
                         f"{row['view']:,} | {row['view'] / first['view']:.2f} | {row['drawn']} | "
                         f"{row['heap']:.1f} |")
        if len(rows) >= 6:
            early = statistics.mean(row["ms"] for row in rows[:3])
            late = statistics.mean(row["ms"] for row in rows[-3:])
            most = max(row["view"] for row in rows)
            longest = max(row["longest"] for row in rows)
            lines += ["", f"Pages 1–3: {early:.0f} ms, last three: {late:.0f} ms "
                      f"(×{late / early:.2f}); longest task {longest:.0f} ms; "
                      f"most nodes {most:,} (×{most / first['view']:.2f} the first render); "
                      f"heap {rows[0]['heap']:.1f} → {rows[-1]['heap']:.1f} MB."]
        lines += ["", "Then in the middle: {:,} nodes; at the bottom: {:,} nodes.".format(
            result["ends"]["middle"]["view"], result["ends"]["bottom"]["view"]), ""]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--label", default="this tree")
    parser.add_argument("--record", action="store_true")
    parser.add_argument("--runs", default=",".join(f"{t}:{p}" for t, p in RUNS),
                        help="turns:pages of each session, comma-separated")
    args = parser.parse_args()
    runs = tuple((int(turns), int(pages)) for turns, pages in
                 (run.split(":") for run in args.runs.split(",")))
    reason = chromium_missing_reason()
    if reason:
        sys.exit(reason)
    tree = os.environ.get("PYTHONPATH", str(REPO)).split(os.pathsep)[0]
    text = report(args.label, measure(tree, runs))
    print(text)
    if args.record:
        with RESULTS.open("a", encoding="utf-8") as out:
            out.write(text + "\n")


if __name__ == "__main__":
    main()
