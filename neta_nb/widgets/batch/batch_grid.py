"""``BatchGrid``: a batch run (``run = agent.map(...)``) as a grid of tiles, one per row,
coloured by the row's state, under a header of counters; ``run`` in a cell shows it.

**It follows the run, throttled.** ``run.subscribe`` calls back on every row change, which
for a fast model is thousands of times a second; each call only marks the grid stale, and
the traits are rewritten at most once per :data:`GRID_INTERVAL` on the kernel's loop
(longer for very large runs, see :func:`update_interval`), plus once at once when the run
ends. The rows' states travel as one compact string (``states``, one character per row)
rather than a list: 10,000 rows are 10 KB a message. Tokens and failures need the rows'
stored results, and reading them is a scan of the run's rows (0.2–0.4 s for 10,000 rows on
SQLite, measured here); so that scan runs on a worker thread, at most every
:data:`DETAILS_INTERVAL` (or four times as long as it took), and the loop that runs the
rows never waits on it.

**Clicking a tile opens the row's session, read-only**, in a :class:`ChatView` shown under
the grid: both live in an ipywidgets ``VBox`` (the widget displayed for the grid, see
:meth:`BatchGrid._repr_mimebundle_`), and the chat view joins it on the first click. A VBox
lets JupyterLab draw the chat view as any widget output (its own view, attached and sized
by the page) instead of the grid's code drawing another widget inside itself. A run without
a store kept no session: the tile's request answers so, shown under the tiles.

The static form (a saved notebook without its kernel) shows the counters as a bar and the
first :data:`FAILURES_SHOWN` failures, drawn without JS (:mod:`.batch_grid_text`).
"""

from __future__ import annotations

import asyncio
import logging
import threading
import time
from collections.abc import Callable, Mapping
from concurrent.futures import Future
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, cast

import traitlets

from ...labels import t
from ..base import NetaWidget, RequestError, handles
from ..chat.stored_session import StoredSession
from ..chat.view import ChatView
from ..static_form import short_plain
from ..streaming import FrameThrottle, Scheduler, call_later_on_running_loop
from ..wire import BatchCounts, BatchFailure, OpenRowReply, OpenRowRequest
from .batch_grid_text import BatchFigures, batch_html

if TYPE_CHECKING:
    from ipywidgets import VBox  # type: ignore[import-untyped]

    from ...batch.run import BatchRun
    from ...runtime.session import AgentSession

__all__ = ["DETAILS_INTERVAL", "FAILURES_SHOWN", "GRID_INTERVAL", "STATE_CHARS",
           "BatchCounts", "BatchFailure", "BatchGrid", "OpenRowReply", "OpenRowRequest",
           "update_interval"]

log = logging.getLogger(__name__)

STATE_CHARS = {"queued": "q", "running": "r", "done": "d", "failed": "f"}
"""A row's state as one character of the ``states`` trait (TS: ``STATE_OF_CHAR``)."""

GRID_INTERVAL = 0.2
"""Seconds between two updates of the grid's traits while rows change."""

STATES_BYTES_PER_SECOND = 50_000
"""What the ``states`` string may cost per second at most: a run so large that its string
would cost more at :data:`GRID_INTERVAL` is updated less often (100,000 rows: every 2 s)."""

DETAILS_INTERVAL = 1.0
"""Seconds between two scans of the rows' results (tokens, failures) while the run runs."""

FAILURES_SHOWN = 20
"""Failures the grid carries (idx and error): the static form lists them."""

ERROR_CHARS = 300
"""A failure's error text in state (a provider may answer with a whole HTML page)."""

CHAT_HEIGHT = "360px"
"""The height of the row's chat view: a row is one prompt and its answer, mostly."""

def update_interval(rows: int) -> float:
    """Seconds between two updates of a grid of ``rows`` rows (see the module note)."""
    return max(GRID_INTERVAL, rows / STATES_BYTES_PER_SECOND)


@dataclass
class _Details:
    """What a scan of the rows' stored results found."""

    input_tokens: int = 0
    output_tokens: int = 0
    failures: list[BatchFailure] = field(default_factory=list)
    sessions: dict[int, str] = field(default_factory=dict)
    """The finished rows' session ids (they never change again)."""


def _read_details(run: BatchRun) -> _Details:
    found = _Details()
    for row in run.rows.all():
        if row.state not in ("done", "failed"):
            continue
        result = row.result or {}
        usage = result.get("usage") or {}
        found.input_tokens += int(usage.get("input_tokens") or 0)
        found.output_tokens += int(usage.get("output_tokens") or 0)
        if row.session_id:
            found.sessions[row.idx] = row.session_id
        if row.state == "failed" and len(found.failures) < FAILURES_SHOWN:
            error = short_plain(str(result.get("error") or "failed"), ERROR_CHARS)
            found.failures.append({"idx": row.idx, "error": error})
    return found


class _Updates(FrameThrottle):
    """At most one update of the grid per interval; the first at once."""

    def __init__(self, apply: Callable[[], None], **options: Any) -> None:
        super().__init__(**options)
        self._apply = apply
        self._stale = False

    def changed(self) -> None:
        self._stale = True
        self._schedule()

    def _take(self) -> bool | None:
        if not self._stale:
            return None
        self._stale = False
        return True

    def _deliver(self, seq: int, payload: Any) -> None:
        self._apply()

    def cancel(self) -> None:
        self._cancel_timer()
        self._stale = False


class BatchGrid(NetaWidget):
    """``BatchGrid(run)``: the live grid of a :class:`~neta_nb.batch.run.BatchRun` (what
    ``run`` and ``run.widget`` show). ``interval``, ``clock`` and ``schedule`` set how its
    updates are throttled (tests drive them by hand)."""

    _component = traitlets.Unicode("batch-grid").tag(sync=True)
    _static_traits = ("counts", "finished", "failures", "total", "lang")
    run_id = traitlets.Unicode("").tag(sync=True)
    total = traitlets.Int(0, help="Rows in the run.").tag(sync=True)
    states = traitlets.Unicode("", help="One character per row: q(ueued), r(unning), "
                               "d(one), f(ailed).").tag(sync=True)
    counts = traitlets.Dict(help="BatchCounts: rows per state, retries, tokens.").tag(sync=True)
    failures = traitlets.List(traitlets.Dict(), help=f"The first {FAILURES_SHOWN} failed "
                              "rows: {idx, error}.").tag(sync=True)
    finished = traitlets.Bool(False, help="The run has ended (all rows, or cancelled)."
                              ).tag(sync=True)
    selected = traitlets.Int(-1, help="The row whose session is shown below (-1: none)."
                             ).tag(sync=True)

    def __init__(self, run: BatchRun, *, chat_height: str = CHAT_HEIGHT,
                 interval: float | None = None, clock: Callable[[], float] = time.monotonic,
                 schedule: Scheduler = call_later_on_running_loop, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.run = run
        self.chat: ChatView | None = None
        """The read-only chat view of the row last opened (made on the first click)."""
        self._container: VBox | None = None
        self._chat_height = chat_height
        self._clock = clock
        self._tokens = (0, 0)
        self._sessions: dict[int, str] = {}
        self._details_rows = -1  # finished rows when the last scan started
        self._details_after_end = False  # a scan started after the run ended
        self._details_busy = False
        self._details_next = float("-inf")
        self._details_timer: asyncio.TimerHandle | None = None
        self._hop_pending = False
        self.run_id = run.run_id
        self._updates = _Updates(self._apply, clock=clock, schedule=schedule,
                                 interval=(update_interval(len(run.states)) if interval is None
                                           else interval))
        # The first state whole, the stored results included (a finished run's grid shows
        # its tokens and failures at once): one scan, once.
        self.refresh()
        self._unsubscribe: Callable[[], None] | None = run.subscribe(self._on_run_change)

    # --- following the run ----------------------------------------------------------------
    def _run_ended(self) -> bool:
        # `run.done` turns true only after the run's last notification (its task ends
        # after it); `finished_at` is set before it, and by a run driven by `result()`.
        return self.run.finished_at is not None

    def _on_run_change(self, _run: BatchRun) -> None:
        # Called for every row change: this only marks the grid stale. A run driven from
        # another thread (`result()` inside a kernel) calls from there: hop to the loop
        # the widget lives on, once per batch of calls.
        loop = self._kernel_loop
        if (loop is not None and loop.is_running() and not loop.is_closed()
                and threading.get_ident() != self._kernel_thread):
            if not self._hop_pending:
                self._hop_pending = True
                loop.call_soon_threadsafe(self._changed_here)
            return
        self._changed()

    def _changed_here(self) -> None:
        self._hop_pending = False
        self._changed()

    def _changed(self) -> None:
        self._updates.changed()
        if self._run_ended():
            self._updates.flush()  # the last state goes out at once
            # ...and the saved form with it: the cells after `await run` may end the
            # notebook within the static form's refresh interval.
            self._static_form.refresh_now()

    def refresh(self) -> None:
        """Show the run as it stands now, reading the rows' results again (here: a large
        run's store takes a moment)."""
        self._apply(details=False)
        self._scan_here()

    def _apply(self, *, details: bool = True) -> None:
        run = self.run
        states = list(run.states)
        found = run.counts
        counts: BatchCounts = {
            "queued": found.get("queued", 0), "running": found.get("running", 0),
            "done": found.get("done", 0), "failed": found.get("failed", 0),
            "retried": found.get("retried", 0),
            "input_tokens": self._tokens[0], "output_tokens": self._tokens[1]}
        with self.hold_sync():
            self.total = len(states)
            self.states = "".join(STATE_CHARS.get(state, "q") for state in states)
            self.counts = cast("dict[str, Any]", counts)
            self.finished = self._run_ended()
        if details:
            self._want_details()

    # --- the rows' results: tokens and failures -----------------------------------------
    def _finished_rows(self) -> int:
        counts = self.counts
        return int(counts.get("done", 0)) + int(counts.get("failed", 0))

    def _want_details(self) -> None:
        ended = self._run_ended()
        if self._finished_rows() == self._details_rows and (self._details_after_end
                                                            or not ended):
            return
        if self._details_busy:
            return  # looked at again when the scan in flight is in
        loop = self._loop_here()
        if loop is None:  # no loop of ours (a script): scan here
            self._scan_here()
            return
        if not ended and self._clock() < self._details_next:
            if self._details_timer is None:
                self._details_timer = loop.call_later(self._details_next - self._clock(),
                                                      self._details_due)
            return
        self._start_scan()
        self._details_busy = True
        started = self._clock()
        future = loop.run_in_executor(None, _read_details, self.run)
        future.add_done_callback(lambda done: self._details_read(done, started))

    def _loop_here(self) -> asyncio.AbstractEventLoop | None:
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return None
        return loop if loop is self._kernel_loop else None

    def _start_scan(self) -> None:
        self._details_rows = self._finished_rows()
        self._details_after_end = self._run_ended()

    def _scan_here(self) -> None:
        self._start_scan()
        self._take_details(_read_details(self.run))

    def _details_due(self) -> None:
        self._details_timer = None
        self._want_details()

    def _details_read(self, done: asyncio.Future[_Details] | Future[_Details],
                      started: float) -> None:
        self._details_busy = False
        took = self._clock() - started
        self._details_next = self._clock() + max(DETAILS_INTERVAL, 4 * took)
        if done.cancelled() or self._unsubscribe is None:
            return  # closed meanwhile
        error = done.exception()
        if error is not None:
            log.warning("batch %s: reading the rows' results failed", self.run_id,
                        exc_info=error)
        else:
            self._take_details(done.result())
        self._want_details()

    def _take_details(self, details: _Details) -> None:
        self._tokens = (details.input_tokens, details.output_tokens)
        self._sessions.update(details.sessions)
        with self.hold_sync():
            self.counts = {**self.counts, "input_tokens": details.input_tokens,
                           "output_tokens": details.output_tokens}
            self.failures = cast("list[dict[str, Any]]", details.failures)

    # --- opening a row ----------------------------------------------------------------------
    def open_row(self, idx: int) -> ChatView:
        """Show row ``idx``'s session read-only in the chat view under the grid (made on
        the first call); returns that chat view. ``RequestError`` when the run has no
        store, the row has not started, or its session is not in the store."""
        if not 0 <= idx < len(self.run.states):
            raise RequestError(t("batch_no_row", self.lang, row=idx))
        store = self.run.store
        if store is None:
            raise RequestError(t("batch_row_not_stored", self.lang, row=idx))
        session_id = self._sessions.get(idx) or self._session_of(idx)
        if not session_id:
            raise RequestError(t("batch_row_not_started", self.lang, row=idx))
        try:
            stored = StoredSession.read(store, session_id)
        except KeyError as exc:
            raise RequestError(str(exc)) from exc
        chat = self._chat_view()
        chat.show_stored(stored, resume=self._refuse_resume, batch_row=idx)
        self.selected = idx
        return chat

    def _session_of(self, idx: int) -> str | None:
        # A row not finished at the last scan (running, or finished since): read now.
        rows = self.run.rows.all()
        return rows[idx].session_id if idx < len(rows) else None

    def _refuse_resume(self, session_id: str) -> AgentSession:
        # "Continue here" of the read-only bar: a row's session stays the row's answer.
        raise RequestError(t("batch_row_read_only", self.lang, session_id=session_id))

    def _chat_view(self) -> ChatView:
        if self.chat is None:
            self.chat = ChatView(height=self._chat_height, lang=self.lang)
            container = self.container
            container.children = (*container.children, self.chat)
        return self.chat

    @traitlets.observe("lang")
    def _on_lang(self, change: Mapping[str, Any]) -> None:
        if self.chat is not None:
            self.chat.lang = change["new"]

    @handles("open_row")
    def _open_row(self, request: OpenRowRequest) -> OpenRowReply:
        idx = request.get("idx")
        if not isinstance(idx, int) or isinstance(idx, bool):
            raise RequestError("open_row needs a row number 'idx'")
        chat = self.open_row(idx)
        return {"idx": idx, "session_id": chat.session_id}

    # --- display --------------------------------------------------------------------------
    def figures(self) -> BatchFigures:
        """What the grid's words are made of, as it stands (see :mod:`.batch_grid_text`)."""
        return BatchFigures(lang=self.lang, counts=self.counts, total=self.total,
                            finished=self.finished, started=self.run.started_at is not None,
                            failures=self.failures)

    def _status(self) -> str:
        """The run's state in words (``Running``, ``Finished``…)."""
        return self.figures().status()

    def __repr__(self) -> str:
        return self.figures().repr_line()

    def _fallback_text(self) -> str:
        return self.figures().text()

    def _fallback_html(self) -> str:
        return batch_html(self.figures())

    @property
    def container(self) -> VBox:
        """The VBox displayed for this grid: the grid, and the chat view of the row opened
        (see the module note)."""
        if self._container is None:
            from ipywidgets import VBox

            self._container = VBox([self])
        return self._container

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = self.container._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data = bundle[0] if isinstance(bundle, tuple) else bundle
        return {**data, "text/plain": repr(self)}, {}

    def close(self) -> None:
        unsubscribe, self._unsubscribe = getattr(self, "_unsubscribe", None), None
        if unsubscribe is not None:
            unsubscribe()
        updates = getattr(self, "_updates", None)
        if updates is not None:
            updates.cancel()
        timer = getattr(self, "_details_timer", None)
        if timer is not None:
            timer.cancel()
        chat = getattr(self, "chat", None)
        if chat is not None:
            chat.close()
        container = getattr(self, "_container", None)
        if container is not None:
            container.close()
        super().close()
