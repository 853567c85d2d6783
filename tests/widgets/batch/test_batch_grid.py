"""``BatchGrid``: a batch run as tiles and counters. It follows the run throttled (a run
that changes rows thousands of times a second makes a few updates a second), ends with the
run's own counts and the tokens of its stored results, has a static form with the counts and
the failures, and opens a row's session read-only in a chat view under it — or says that a
run without a store kept none."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, SessionStore
from neta_nb.batch import BatchRun
from neta_nb.providers.base import ProviderError
from neta_nb.widgets import BatchGrid, ChatView
from neta_nb.widgets.batch.batch_grid import (
    FAILURES_SHOWN,
    GRID_INTERVAL,
    STATE_CHARS,
    update_interval,
)
from neta_nb.widgets.chat.stored_session import StoredSession
from tests.support.batch import RowModel, label_of
from tests.support.timing import ManualClock, ManualScheduler, wait_until

from ..conftest import SentMessages

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
PROMPT = "Classify: {input}"


def _inputs(n: int) -> list[str]:
    return [f"item {i}" for i in range(n)]


def _failing(*rows: int) -> Callable[[str, int], ProviderError | None]:
    """A model failure, for good, for the prompts of these rows."""
    endings = tuple(f"item {row}" for row in rows)

    def fail(prompt: str, _call: int) -> ProviderError | None:
        return (ProviderError("model refused <b>this</b> row", retryable=False)
                if prompt.endswith(endings) else None)

    return fail


def _run(n: int, *, store: SessionStore | None = None, delay: float = 0.01,
         fail: Callable[[str, int], ProviderError | None] | None = None,
         concurrency: int = 4) -> BatchRun:
    agent = Agent("a", model=RowModel(delay=delay, fail=fail))
    return agent.map(_inputs(n), PROMPT, concurrency=concurrency, store=store)


async def _tokens_in(grid: BatchGrid, rows: int) -> None:
    # The rows' results are read on a worker thread: their tokens come a moment later.
    await wait_until(lambda: grid.counts["input_tokens"] == 40 * rows)


GRID_TRAITS = {"total", "states", "counts", "failures", "finished", "selected"}


def _count_sends(monkeypatch: pytest.MonkeyPatch) -> list[set[str]]:
    """The grid's messages that carry its traits (``hold_sync`` with nothing changed sends
    nothing, and is not counted), each as the set of traits it carries."""
    sends: list[set[str]] = []
    original = BatchGrid.send_state

    def counted(self: BatchGrid, key: Any = None) -> None:
        keys = set(self.keys if key is None else [key] if isinstance(key, str) else key)
        if keys & GRID_TRAITS:
            sends.append(keys & GRID_TRAITS)
        original(self, key)

    monkeypatch.setattr(BatchGrid, "send_state", counted)
    return sends


# --- following the run --------------------------------------------------------------------

async def test_the_grid_ends_with_the_runs_counts_and_its_rows_tokens(tmp_path: Path) -> None:
    run = _run(30, store=SessionStore(tmp_path / "s.db"))
    grid = run.widget
    assert run.widget is grid
    assert (grid.total, grid.run_id, grid.finished) == (30, run.run_id, False)
    await run
    await _tokens_in(grid, 30)
    counts = run.counts
    assert grid.counts == {**counts, "input_tokens": 40 * 30, "output_tokens": 8 * 30}
    assert grid.states == "d" * 30
    assert grid.finished is True
    assert grid.failures == []
    # A grid made for a finished run shows it whole at once, tokens included.
    again = BatchGrid(run)
    assert again.counts == grid.counts and again.finished and again.states == grid.states
    again.close()


async def test_many_row_changes_make_few_updates(monkeypatch: pytest.MonkeyPatch) -> None:
    run = _run(60, delay=0.0, concurrency=8)
    scheduler = ManualScheduler(ManualClock())
    sends = _count_sends(monkeypatch)
    grid = BatchGrid(run, clock=scheduler.clock, schedule=scheduler)
    first = len(sends)
    changes = 0

    def heard(_run: BatchRun) -> None:
        # Every 25th change of a row, 0.25 s pass: the grid may send one update then.
        nonlocal changes
        changes += 1
        if changes % 25 == 0:
            scheduler.advance(0.25)

    run.subscribe(heard)
    await run
    states_sent = [keys for keys in sends[first:] if "states" in keys]
    assert changes >= 120  # running and done, for each of 60 rows
    # The first change at once, one per 0.25 s that passed, and the end at once.
    assert len(states_sent) <= 1 + changes // 25 + 1, (len(states_sent), changes)
    assert grid.states == "d" * 60 and grid.finished
    grid.close()


async def test_a_fast_run_updates_the_page_a_few_times_a_second(
        monkeypatch: pytest.MonkeyPatch) -> None:
    sends = _count_sends(monkeypatch)
    run = _run(300, delay=0.0, concurrency=8)
    changes = 0

    def heard(_run: BatchRun) -> None:
        nonlocal changes
        changes += 1

    run.subscribe(heard)
    grid = run.widget
    started = time.monotonic()
    await run
    elapsed = time.monotonic() - started
    await _tokens_in(grid, 300)
    states_sent = [keys for keys in sends if "states" in keys]
    assert changes >= 600
    assert len(states_sent) <= elapsed / GRID_INTERVAL + 3, (len(states_sent), elapsed)
    # Every message: the throttled updates and a scan of the results per second at most.
    assert len(sends) <= elapsed / GRID_INTERVAL + elapsed + 5, (len(sends), elapsed)
    assert grid.counts["done"] == 300


def test_a_very_large_run_is_updated_less_often() -> None:
    assert update_interval(60) == GRID_INTERVAL
    assert update_interval(10_000) == GRID_INTERVAL  # 10 KB, five times a second
    assert update_interval(100_000) == pytest.approx(2.0)


async def test_rows_states_are_one_character_each_while_running() -> None:
    run = _run(12, delay=0.05, concurrency=3)
    grid = run.widget
    await wait_until(lambda: "r" in grid.states and "q" in grid.states)
    assert len(grid.states) == 12 and set(grid.states) <= set(STATE_CHARS.values())
    assert grid.counts["running"] == grid.states.count("r") <= 3
    assert grid.finished is False
    await run
    assert grid.states == "d" * 12


async def test_closing_the_grid_stops_following_the_run() -> None:
    run = _run(4, delay=0.0)
    grid = run.widget
    grid.close()
    assert run._listeners == []
    await run
    assert grid.finished is False


# --- the static form ----------------------------------------------------------------------

async def test_the_static_form_shows_the_counts_and_the_failures(tmp_path: Path,
                                                                 monkeypatch: pytest.MonkeyPatch
                                                                 ) -> None:
    monkeypatch.setattr("neta_nb.batch.executor.BACKOFF_BASE", 0.01)

    def fail(prompt: str, call: int) -> ProviderError | None:
        if prompt.endswith("item 5") and call == 1:  # once, then it answers
            return ProviderError("overloaded", retryable=True)
        return _failing(3, 7)(prompt, call)

    run = _run(10, store=SessionStore(tmp_path / "s.db"), fail=fail)
    grid = run.widget
    await run
    await wait_until(lambda: len(grid.failures) == 2)
    assert grid.counts["failed"] == 2 and grid.counts["done"] == 8
    assert grid.counts["retried"] == 1
    assert [failure["idx"] for failure in grid.failures] == [3, 7]
    assert "model refused" in grid.failures[0]["error"]
    assert grid.states == "dddfdddfdd"

    rich, plain = grid._static_parts()
    assert plain.splitlines()[0] == (
        "Batch run · 10 rows · Finished: 8 done, 2 failed, 1 retried · "
        f"↑{grid.counts['input_tokens']} ↓{grid.counts['output_tokens']} tokens")
    assert plain.splitlines()[1].startswith("row 3: ")
    assert "2 failed" in rich and "8 done" in rich and "1 retried" in rich
    assert "row 3: failed" in rich and "row 7: failed" in rich
    # Model text is escaped: the static form is HTML a viewer renders.
    assert "&lt;b&gt;this&lt;/b&gt;" in rich and "<b>this</b>" not in rich
    assert "<script" not in rich
    assert repr(grid) == "BatchGrid(8 done, 2 failed, 1 retried of 10)"
    # Nothing random: an executed notebook compares equal (nbval).
    assert run.run_id not in rich and run.run_id not in plain

    grid.lang = "zh-CN"
    rich, plain = grid._static_parts()
    assert "8 完成" in plain and "2 失败" in plain and "已完成" in plain
    assert "第 3 行" in rich and "失败的行" in rich


async def test_the_static_form_lists_the_first_failures_and_counts_the_rest() -> None:
    run = _run(FAILURES_SHOWN + 6, delay=0.0, fail=_failing(*range(FAILURES_SHOWN + 5)))
    grid = run.widget
    await run
    await wait_until(lambda: len(grid.failures) == FAILURES_SHOWN)
    assert [f["idx"] for f in grid.failures] == list(range(FAILURES_SHOWN))
    rich, plain = grid._static_parts()
    assert "and 5 more failed" in plain and "and 5 more failed" in rich


async def test_displaying_the_run_shows_the_grid_and_its_static_form(
        monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **options: shown.append((data, options)))
    run = _run(3, delay=0.0)
    await run
    run._ipython_display_()
    (view, _), (form, form_options) = shown
    # The view is the box the row's chat view joins (see BatchGrid.container).
    assert view[WIDGET_VIEW]["model_id"] == run.widget.container.model_id
    assert view["text/plain"] == ""  # the form below says it
    assert "neta-static-batch" in form["text/html"] and "3 done" in form["text/plain"]
    assert form_options["display_id"] == run.widget._static_form.display_ids[0]
    data, _metadata = run._repr_mimebundle_()
    assert data[WIDGET_VIEW]["model_id"] == run.widget.container.model_id
    assert data["text/plain"] == repr(run.widget)  # no form beside it: the view's own line


# --- opening a row ------------------------------------------------------------------------

def _ask(grid: BatchGrid, sent: SentMessages, **payload: Any) -> dict[str, Any]:
    request_id = f"r{len(sent)}"
    grid._on_custom_message(grid, {"kind": "open_row", "id": request_id, **payload}, [])
    [reply] = [m for m in sent.of_kind("reply") if m["id"] == request_id]
    return reply


async def test_a_click_opens_the_rows_session_read_only_under_the_grid(
        tmp_path: Path, sent: SentMessages) -> None:
    run = _run(8, store=SessionStore(tmp_path / "s.db"), fail=_failing(6))
    grid = run.widget
    await run
    assert grid.chat is None and grid.container.children == (grid,)

    reply = _ask(grid, sent, idx=3)
    assert reply["ok"] is True, reply
    session_id = run.rows.all()[3].session_id
    assert reply["result"] == {"idx": 3, "session_id": session_id}
    chat = grid.chat
    assert isinstance(chat, ChatView)
    assert grid.container.children == (grid, chat)
    assert grid.selected == 3
    assert chat.session is None and chat.stored is not None  # read-only: nothing bound
    assert chat.read_only == {"owner": "", "busy": False, "batch_row": 3}  # says whose
    texts = [(m["role"], m["text"]) for m in chat.messages]
    assert texts == [("user", "Classify: item 3"), ("assistant", label_of("Classify: item 3"))]

    # Another row: the same chat view, now that row's; a failed row shows its error.
    assert _ask(grid, sent, idx=6)["ok"] is True
    assert grid.chat is chat and grid.container.children == (grid, chat)
    assert chat.session_id == run.rows.all()[6].session_id
    assert grid.selected == 6 and chat.read_only["batch_row"] == 6
    assert chat.messages[0]["text"] == "Classify: item 6"

    # "Continue here" does not take the row's session over.
    take_over = chat._on_custom_message(chat, {"kind": "take_over", "id": "t1"}, [])
    assert take_over is None
    [refused] = [m for m in sent.of_kind("reply") if m["id"] == "t1"]
    assert refused["ok"] is False and "read-only" in refused["error"]
    assert chat.session is None

    # The chat view speaks the grid's language.
    grid.lang = "zh-CN"
    assert chat.lang == "zh-CN"

    # Shown read-only elsewhere (the sidebar), the same chat view is no row's any more.
    chat.show_stored(StoredSession.read(run.store, session_id))
    assert "batch_row" not in chat.read_only


async def test_a_run_without_a_store_says_the_rows_session_was_not_stored(
        sent: SentMessages) -> None:
    run = _run(4, delay=0.0)
    grid = run.widget
    await run
    reply = _ask(grid, sent, idx=2)
    assert reply["ok"] is False
    assert reply["error"].startswith("Row 2's session was not stored: this run has no store.")
    assert grid.chat is None and grid.selected == -1
    grid.lang = "zh-CN"
    assert _ask(grid, sent, idx=2)["error"].startswith("第 2 行的会话未保存")


async def test_open_row_refuses_rows_that_are_not_there_or_not_started(
        tmp_path: Path, sent: SentMessages) -> None:
    store = SessionStore(tmp_path / "s.db")
    run = _run(3, store=store, delay=0.0)
    grid = run.widget
    await run
    assert _ask(grid, sent, idx=7)["error"] == "There is no row 7 in this run."
    assert _ask(grid, sent, idx=-1)["error"] == "There is no row -1 in this run."
    for bad in ("2", True, None, 1.5):
        assert _ask(grid, sent, idx=bad)["error"] == "open_row needs a row number 'idx'"
    # A run not started yet (no loop: it starts on `result()`): no session to show.
    waiting = await asyncio.to_thread(
        lambda: Agent("a", model=RowModel()).map(["x", "y"], PROMPT, store=store))
    idle = BatchGrid(waiting)
    assert _ask(idle, sent, idx=1)["error"] == "Row 1 has not started yet: nothing to show."
    assert idle.states == "qq" and idle._status() == "Not started"
    idle.close()
