"""The batch grid in real JupyterLab: a cell runs a 60-row batch (slow enough to be seen
running) and shows ``run``; tiles appear, pulse while their rows run and end all done with
the run's counts; a click on a tile (or Enter on it, after the arrow keys) opens that row's
session read-only under the grid, with its prompt and answer. A run too large for a tile
per row draws bins, and a run without a store says so where the user clicked. Pictures
light, dark and in Chinese."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tests.support.batch import label_of

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

IMPORTS = chat_cells.IMPORTS + "\nfrom tests.support.batch import RowModel"

# Slow enough (4 at a time, 0.25 s a call) that the run takes some 4 s after its cell: the
# test sees it running.
SIXTY_ROWS = """
store = SessionStore("batch_grid.db")
agent = Agent("classifier", model=RowModel(delay=0.25))
tickets = [f"ticket {i}" for i in range(60)]
run = agent.map(tickets, "Classify: {input}", concurrency=4, store=store)
run
""".strip()

# Past 2,000 rows: tiles are bins of two rows. No store; every 97th row fails.
BINNED = """
from neta_nb.providers.base import ProviderError

def refuse(prompt, call):
    n = int(prompt.rsplit(" ", 1)[1])
    return ProviderError(f"refused row {n}: policy 7.3") if n % 97 == 5 else None

agent = Agent("classifier", model=RowModel(fail=refuse))
run = agent.map([f"ticket {i}" for i in range(2400)], "Classify: {input}", concurrency=16)
run
""".strip()

GRID = ".neta-batch-grid"
TILE = ".neta-batch-tile"
ALL_DONE = "(n) => document.querySelectorAll('.neta-batch-tile.neta-is-done').length === n"

# Nothing in the grid sticks out of it, and no two tiles overlap.
LAYOUT = """(grid) => {
  const box = grid.getBoundingClientRect();
  const inside = [...grid.querySelectorAll('*')].filter((n) => {
    const r = n.getBoundingClientRect();
    return r.width > 0 && (r.left < box.left - 0.5 || r.right > box.right + 0.5);
  }).map((n) => n.className);
  const tiles = [...grid.querySelectorAll('.neta-batch-tile')]
    .map((n) => n.getBoundingClientRect());
  let overlaps = 0;
  for (let i = 1; i < tiles.length; i += 1) {
    const a = tiles[i - 1], b = tiles[i];
    if (a.top === b.top && a.right > b.left + 0.5) overlaps += 1;
  }
  const colours = {};
  for (const state of ['queued', 'running', 'done', 'failed']) {
    const tile = grid.querySelector('.neta-batch-tile.neta-is-' + state);
    if (tile) colours[state] = getComputedStyle(tile).backgroundColor;
  }
  return { outside: inside, overlaps, width: tiles[0]?.width ?? 0, colours };
}"""


def _check_layout(lab: LabSession, grid: Any) -> dict[str, object]:
    measured = lab.page.evaluate(LAYOUT, grid.element_handle())
    assert measured["outside"] == [] and measured["overlaps"] == 0, measured
    return dict(measured)


def _show_static_form(lab: LabSession) -> Any:
    """The static form after the grid, shown although the live view renders (a rule of the
    widgets' loader hides it then)."""
    lab.page.evaluate("""() => {
      for (const n of document.querySelectorAll('.jp-OutputArea-child:has(.neta-static-form)'))
        n.style.display = 'block';
    }""")
    form = lab.page.locator(".neta-static-form").first
    form.wait_for()
    return form


def _hide_static_form(lab: LabSession) -> None:
    lab.page.evaluate("""() => {
      for (const n of document.querySelectorAll('.jp-OutputArea-child:has(.neta-static-form)'))
        n.style.display = '';
    }""")


def _kernel_json(lab: LabSession, path: str, expression: str) -> object:
    return json.loads(lab.execute(path, f"import json; print(json.dumps({expression}))"))


def test_a_batch_grid_runs_to_the_end_and_opens_a_rows_session(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("batch_grid.ipynb", [IMPORTS, SIXTY_ROWS])
    page = lab.page
    grid = page.locator(GRID)
    grid.wait_for()
    tiles = grid.locator(TILE)
    page.wait_for_function("() => document.querySelectorAll('.neta-batch-tile').length === 60")

    # While it runs: some tiles pulse blue, the header says so.
    page.wait_for_function("() => document.querySelector('.neta-batch-tile.neta-is-running')")
    assert grid.locator(".neta-batch-meta").inner_text().endswith("Running…")
    assert tiles.nth(59).get_attribute("title") in ("row 59: queued", "row 59: running")
    lab.screenshot(grid, screenshot_dir / "batch-grid-running-light.png")
    lab.set_left_area(collapsed=True)

    # The end: every tile done, the counters the run's own.
    page.wait_for_function(ALL_DONE, arg=60, timeout=60_000)
    counts = _kernel_json(lab, path, "run.counts")
    assert counts == {"queued": 0, "running": 0, "done": 60, "failed": 0, "retried": 0}
    grid.locator(".neta-batch-chip-tokens", has_text="↑2.4K ↓480 tokens").wait_for()
    assert grid.locator(".neta-batch-chip-done").inner_text() == "60 done"
    assert grid.locator(".neta-batch-chip-failed").inner_text() == "0 failed"
    assert grid.locator(".neta-batch-progress").inner_text() == "60 / 60"
    assert grid.locator(".neta-batch-meta").inner_text() == "60 rows · Finished"
    assert tiles.nth(7).get_attribute("title") == "row 7: done"
    assert tiles.nth(7).evaluate("n => n.localName") == "button"
    assert grid.locator(f"{TILE}[tabindex='0']").count() == 1  # one tab stop for all
    assert grid.locator(".neta-batch-failures").is_hidden()

    # A click opens row 7's session under the grid, read-only.
    tiles.nth(7).click()
    chat = page.locator(".neta-chat-view")
    chat.wait_for()
    chat.locator(".neta-chat-user .neta-chat-bubble", has_text="Classify: ticket 7").wait_for()
    answer = label_of("Classify: ticket 7")
    chat.locator(".neta-chat-assistant", has_text=answer).wait_for()
    # Read-only: the bar in place of the input, nothing to type into; it says whose session
    # this is, and offers no "Continue here" (a row's session stays the row's answer).
    assert chat.locator(".neta-chat-read-only").is_visible()
    assert chat.locator("textarea.neta-chat-textarea").is_hidden()
    assert chat.locator(".neta-chat-read-only-text").inner_text() == (
        "Row 7 of a batch run: its session, as stored — the row's answer. Read-only.")
    assert chat.locator(".neta-chat-take-over").is_hidden()
    page.locator(f"{TILE}.neta-is-selected").wait_for()
    assert tiles.nth(7).get_attribute("aria-current") == "true"
    assert grid.locator(".neta-batch-note").inner_text() == (
        "Row 7's session is shown below (read-only).")
    assert lab.wait_for_kernel_value(path, "run.widget.selected", "7") == "7"
    # The chat view is under the grid, in the same output.
    below = page.evaluate("""() => {
      const g = document.querySelector('.neta-batch-grid').getBoundingClientRect();
      const c = document.querySelector('.neta-chat-view').getBoundingClientRect();
      return c.top >= g.bottom - 0.5;
    }""")
    assert below

    # The keyboard: the arrow keys move among the tiles, Enter opens one.
    tiles.nth(7).focus()
    page.keyboard.press("ArrowRight")
    assert tiles.nth(8).evaluate("n => n === document.activeElement")
    page.keyboard.press("Enter")
    chat.locator(".neta-chat-user .neta-chat-bubble", has_text="Classify: ticket 8").wait_for()
    chat.locator(".neta-chat-assistant", has_text=label_of("Classify: ticket 8")).wait_for()
    assert lab.wait_for_kernel_value(path, "run.widget.selected", "8") == "8"
    # The pictures: no focus ring, no hovered tile.
    page.evaluate("() => document.activeElement.blur()")
    page.mouse.move(0, 0)

    box = page.locator(".widget-vbox", has=grid).first
    measured = _check_layout(lab, grid)
    assert measured["width"] == 14
    try:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            colours = _check_layout(lab, grid)["colours"]
            assert isinstance(colours, dict) and colours.get("done")
            lab.screenshot(grid, screenshot_dir /
                           f"batch-grid-done-{'dark' if dark else 'light'}.png")
            lab.screenshot(box, screenshot_dir /
                           f"batch-grid-row-open-{'dark' if dark else 'light'}.png")
        lab.set_theme(dark=False)
        # The static form (what the notebook keeps for a viewer without the widget) follows
        # the run too: shown here on purpose, it holds the final counts.
        form = _show_static_form(lab)
        form.filter(has_text="Finished").wait_for()
        assert "60 done" in form.inner_text() and "0 failed" in form.inner_text()
        lab.screenshot(form, screenshot_dir / "batch-grid-static-light.png")
        _hide_static_form(lab)
        lab.execute(path, "run.widget.lang = 'zh-CN'")
        grid.locator(".neta-batch-chip-done", has_text="60 完成").wait_for()
        assert grid.locator(".neta-batch-meta").inner_text() == "60 行 · 已完成"
        assert tiles.nth(3).get_attribute("title") == "第 3 行：完成"
        lab.wait_for_transitions()
        lab.screenshot(box, screenshot_dir / "batch-grid-row-open-zh.png")
        assert chat.locator(".neta-chat-read-only-text").inner_text() == (
            "批量运行的第 8 行：其会话（即该行的结果）按保存的样子只读显示。")
        # Nor does the kernel's take_over() take a row's session over: it says how to.
        said = lab.execute(path, "try:\n    run.widget.chat.take_over()\n"
                                 "except Exception as e:\n    print(e)")
        assert "AgentSession.resume" in said
        assert lab.execute(path, "print(run.widget.chat.session)").strip() == "None"
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)


def test_a_large_run_draws_bins_and_a_run_without_a_store_says_so(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("batch_grid_binned.ipynb", [IMPORTS, BINNED])
    page = lab.page
    grid = page.locator(GRID)
    grid.wait_for()
    lab.set_left_area(collapsed=True)
    try:
        # 2,400 rows: 1,200 tiles of two rows each, and the note says so.
        page.wait_for_function("() => document.querySelectorAll('.neta-batch-tile').length"
                               " === 1200")
        assert grid.locator(".neta-batch-note").inner_text().startswith("Each tile is 2 rows")
        page.wait_for_function(
            "() => document.querySelector('.neta-batch-meta')?.textContent.endsWith('Finished')",
            timeout=120_000)
        assert grid.locator(".neta-batch-meta").inner_text() == "2,400 rows · Finished"
        counts = _kernel_json(lab, path, "run.counts")
        assert isinstance(counts, dict)
        failed = sum(1 for n in range(2400) if n % 97 == 5)
        assert counts["failed"] == failed and counts["done"] == 2400 - failed
        assert grid.locator(".neta-batch-chip-failed").inner_text() == f"{failed} failed"
        # A bin with a failed row is red, and says which rows it holds.
        bad = grid.locator(f"{TILE}.neta-is-failed")
        page.wait_for_function("(n) => document.querySelectorAll("
                               "'.neta-batch-tile.neta-is-failed').length === n", arg=failed)
        assert bad.first.get_attribute("title") == "rows 4–5: 1 done, 1 failed"
        # The first failures are listed, each opening its row.
        failures = grid.locator(".neta-batch-failure")
        failures.first.wait_for()
        assert failures.count() == 5
        assert failures.first.inner_text().startswith("row 5: failed")
        assert "refused row 5: policy 7.3" in failures.first.inner_text()
        assert grid.locator(".neta-batch-failures-more").inner_text() == (
            f"and {failed - 5} more failed")
        # Clicking opens the bin's failed row, and this run kept no session: said here.
        bad.first.click()
        error = grid.locator(".neta-batch-error")
        error.wait_for()
        assert "Row 5's session was not stored: this run has no store." in error.inner_text()
        assert page.locator(".neta-chat-view").count() == 0
        _check_layout(lab, grid)
        page.mouse.move(0, 0)
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.screenshot(grid, screenshot_dir /
                           f"batch-grid-binned-{'dark' if dark else 'light'}.png")
        lab.set_theme(dark=False)
        form = _show_static_form(lab)
        form.filter(has_text="and 5 more failed").wait_for()
        text = form.inner_text()
        assert f"{2400 - failed:,} done" in text and f"{failed} failed" in text
        assert "row 5: failed refused row 5: policy 7.3" in text
        lab.screenshot(form, screenshot_dir / "batch-grid-static-failures-light.png")
    finally:
        lab.set_theme(dark=False)
        lab.set_left_area(collapsed=False)
