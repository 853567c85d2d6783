"""BatchRun: an agent over many inputs — ``run = agent.map(df, prompt="Classify: {body}")``.

Each row is a whole session of the agent (tools, several model calls, stored like any
session, under the run's record), run at most ``concurrency`` at a time behind one rate
limiter. ``await run`` (or ``run.result()`` outside a loop) gives a DataFrame in input
order: the input columns, ``answer`` (and an output model's fields), ``status``
(``"done"``/``"failed"``; ``"cancelled"`` for rows a cancelled run left), ``error``,
``attempts``, ``usage`` and ``session_id``. A failed row is a row, never an exception
that loses the others.

With ``store=`` the run is durable: its definition, rows, leases and results are in the
store (:mod:`neta_nb.store.batch_rows`), and ``BatchRun.resume(run_id, store=…)`` after a
crash runs only the rows not done — each row stored exactly once.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import importlib
import json
import logging
import math
import numbers
import threading
import time
import uuid
from collections.abc import Callable, Generator
from typing import TYPE_CHECKING, Any, Literal

from pydantic import BaseModel

from ..runtime.agent import Agent
from ..runtime.stored_endpoint import StoredOrigin
from ..store.batch_rows import BatchRows
from ..store.process_owner import ProcessOwner, SessionBusyError, current_user
from ..store.records import SessionRecord, one_line
from ..tools import ToolCatalog
from .executor import LocalExecutor
from .inputs import BatchInputs, check_template
from .limiter import RateLimiter, parse_rate
from .memory_rows import MemoryRows
from .rows import RowsStore

if TYPE_CHECKING:
    from ..store.session_store import SessionStore
    from ..widgets.batch.batch_grid import BatchGrid
    from .ray_backend import RayBackend

__all__ = ["BatchRun"]

log = logging.getLogger(__name__)

Backend = Literal["local", "ray"]
DEFAULT_LEASE = 60.0
"""Seconds a worker's claim on a row lasts unless renewed (it renews a third of the way)."""
MIN_LEASE = 1.0
"""The shortest lease: one that ends before a worker has started its row (0 or less ends
at once) lets every other worker claim the row too, and every row runs — and is paid
for — more than once."""


class BatchRun:
    """One run of an agent over many inputs (see the module note). Made by
    :meth:`Agent.map <neta_nb.runtime.agent.Agent.map>` or :meth:`BatchRun.resume`."""

    def __init__(self, agent: Agent, inputs: Any, prompt: str | None = None, *,
                 concurrency: int = 8, rate_limit: str | None = None, max_attempts: int = 3,
                 output: type[BaseModel] | None = None, store: SessionStore | None = None,
                 run_id: str | None = None, backend: Backend = "local",
                 catalog: ToolCatalog | None = None, lease_seconds: float = DEFAULT_LEASE,
                 workers: int | None = None) -> None:
        if backend not in ("local", "ray"):
            raise ValueError(f"backend must be 'local' or 'ray', not {backend!r}")
        if backend == "ray" and store is None:
            raise ValueError("backend='ray' needs store=: the workers store each row's "
                             "session and result there, and the results are read from it")
        if max_attempts < 1:
            raise ValueError("max_attempts must be at least 1")
        lease_seconds = _checked_lease(lease_seconds)
        if output is not None and not (isinstance(output, type)
                                       and issubclass(output, BaseModel)):
            raise TypeError(f"output must be a pydantic model class, not {output!r}")
        self.agent = agent
        self.inputs = BatchInputs.of(inputs)
        check_template(prompt, self.inputs.columns)
        self.prompt = prompt
        self.concurrency = max(1, min(int(concurrency), max(1, len(self.inputs.rows))))
        self.rate_limit = rate_limit
        self.limiter = RateLimiter(self.concurrency, parse_rate(rate_limit))
        self.max_attempts = max_attempts
        self.output = output
        self.store = store
        self.run_id = run_id or f"b_{uuid.uuid4().hex[:16]}"
        self.lease_seconds = lease_seconds
        self._workers = workers
        self._catalog = catalog
        self.rows: RowsStore = (BatchRows(store, self.run_id) if store is not None
                                else MemoryRows(self.run_id))
        self.owner = f"{ProcessOwner.current().model_dump_json()}|{uuid.uuid4().hex[:8]}"
        self.backend = backend
        self._ray: RayBackend | None = None
        if backend == "ray":
            from .ray_backend import RayBackend, check_portable

            check_portable(agent, self._tools())
            assert store is not None
            self._ray = RayBackend(
                agent=agent, store_target=store.target, run_id=self.run_id, template=prompt,
                output=output, concurrency=self.concurrency, rate=parse_rate(rate_limit),
                max_attempts=max_attempts, lease=lease_seconds, workers=workers,
                on_change=self._row_changed)
        self._prepare()
        stored = self.rows.all()
        self.states = [row.state for row in stored]
        """Each row's state (``queued``, ``running``, ``done``, ``failed``), in order."""
        self._retried_before = sum(max(0, row.attempts - 1) for row in stored)
        """Attempts made again by the run before this object took it up (a resume)."""
        self._executor = LocalExecutor(
            agent=agent, catalog=self._tools, store=store, rows=self.rows,
            run_id=self.run_id, template=prompt, output=output, limiter=self.limiter,
            concurrency=self.concurrency, max_attempts=max_attempts,
            lease=lease_seconds, owner=self.owner, on_change=self._row_changed)
        self._listeners: list[Callable[[BatchRun], None]] = []
        self._task: asyncio.Task[Any] | None = None
        self._result: Any = None
        self._widget: BatchGrid | None = None
        self.started_at: float | None = None
        self.finished_at: float | None = None
        with contextlib.suppress(RuntimeError):
            asyncio.get_running_loop()
            self.start()  # in a kernel: it runs as the cell shows its grid

    # --- definition and store --------------------------------------------------------------
    def _definition(self) -> dict[str, Any]:
        provider = self.agent.create_provider()
        return {"agent": self.agent.to_record(provider), "prompt": self.prompt,
                "columns": self.inputs.columns, "rows": len(self.inputs.rows),
                "concurrency": self.concurrency, "rate_limit": self.rate_limit,
                "max_attempts": self.max_attempts, "lease_seconds": self.lease_seconds,
                "backend": self.backend, "workers": self._workers,
                "output": None if self.output is None else self.output.__name__,
                "inputs_digest": _digest(self.inputs.rows)}

    def _prepare(self) -> None:
        definition = self._definition()
        if self.rows.create(definition, self.inputs.rows):
            if self.store is not None:
                title = one_line(f"Batch of {len(self.inputs.rows)}: "
                                 f"{self.prompt or 'inputs as prompts'}", 60)
                self.store.save_session(SessionRecord(
                    id=self.run_id, title=title, agent=definition["agent"],
                    last_message=f"{len(self.inputs.rows)} rows", user=current_user()))
            return
        stored = self.rows.definition() or {}
        digest = stored.get("inputs_digest")  # runs stored before it have none
        if (stored.get("rows") != len(self.inputs.rows) or stored.get("prompt") != self.prompt
                or (digest not in (None, definition["inputs_digest"])
                    and _digest([row.input for row in self.rows.all()])
                    != definition["inputs_digest"])):
            # The stored rows themselves are the last word: a resume gives them back as
            # they are, whatever digest a run stored before had. Compared as their JSON,
            # not with ==, which takes 1, 1.0 and True for the same input.
            raise ValueError(
                f"run {self.run_id!r} is in the store with other inputs or another prompt: "
                f"give a new run_id for these, or go on with the stored ones: "
                f"BatchRun.resume({self.run_id!r}, store=…)")

    def _tools(self) -> ToolCatalog:
        return self._catalog if self._catalog is not None else ToolCatalog.default()

    @classmethod
    def resume(cls, run_id: str, store: SessionStore, *, agent: Agent | None = None,
               catalog: ToolCatalog | None = None, output: type[BaseModel] | None = None,
               **options: Any) -> BatchRun:
        """The run ``run_id`` of ``store``, going on with the rows not done (a kernel that
        crashed mid-run, a cancelled run). The agent comes back from its stored
        definition unless given; an output model must be given again. A stored agent's
        provider is rebuilt with this environment's key: a stored ``base_url`` this
        environment did not configure raises
        :class:`~neta_nb.runtime.stored_endpoint.StoredEndpointError` — give ``agent=``
        with the provider meant."""
        rows = BatchRows(store, run_id)
        definition = rows.definition()
        if definition is None:
            raise KeyError(f"no batch run {run_id!r} in {store.location}")
        wanted = definition.get("output")
        if wanted is not None and (output is None or output.__name__ != wanted):
            raise ValueError(f"run {run_id!r} parses its answers into {wanted}: give it "
                             f"again, BatchRun.resume({run_id!r}, store=…, output={wanted})")
        if agent is None:
            # The run's own session record says who started it (a run stored without one
            # names no writer).
            record = store.get_session(run_id)
            agent = Agent.from_record(definition["agent"], catalog or ToolCatalog.default(),
                                      origin=StoredOrigin(f"batch run {run_id!r}",
                                                          record.user if record else None))
        inputs = [row.input for row in rows.all()]
        columns = definition.get("columns") or []
        # In the columns' order (the results' columns), and with no key a row did not
        # have: a list of dicts with different keys is a run's inputs as they were given.
        ordered = [{column: row[column] for column in columns if column in row}
                   for row in inputs]
        settings = {key: definition[key] for key in ("concurrency", "rate_limit",
                                                      "max_attempts", "lease_seconds",
                                                      "backend", "workers")
                    if definition.get(key) is not None}
        settings.update(options)
        return cls(agent, ordered, definition.get("prompt"), store=store, run_id=run_id,
                   catalog=catalog, output=output, **settings)

    # --- running --------------------------------------------------------------------------
    def start(self) -> asyncio.Task[Any]:
        """Start the run on the running loop (``agent.map`` in a kernel does)."""
        if self._task is None:
            self._task = asyncio.get_running_loop().create_task(self._run())
        return self._task

    async def _run(self) -> Any:
        self.started_at = time.monotonic()
        try:
            if self._ray is not None:
                await self._ray.run()
            else:
                await self._executor.run()
            await asyncio.to_thread(self._forget_abandoned)
        finally:
            self.finished_at = time.monotonic()
            self._refresh_states()
            self._notify()
        self._result = self.frame()
        return self._result

    def _forget_abandoned(self) -> None:
        """Delete the run's sessions that no row names: an attempt abandoned by a worker
        that died (or lost its lease) and whose session the row's next claimer could not
        delete then — e.g. still settling its dead owner. Every worker deletes what it
        abandons; this is the run's last word on "one session per row, none orphaned".
        The children are listed before the rows are read: a session is named by its row
        before it is created, so one created meanwhile is never taken for abandoned."""
        if self.store is None:
            return
        children = [record.id for record in self.store.list_children(self.run_id)]
        named = {row.session_id for row in self.rows.all()}
        for session_id in children:
            if session_id not in named:
                try:
                    self.store.delete_session(session_id)
                except (SessionBusyError, KeyError) as exc:  # running: its owner's to end
                    log.warning("batch %s: session %s no row names was kept (%s)",
                                self.run_id, session_id, exc)

    def __await__(self) -> Generator[Any, None, Any]:
        return self.start().__await__()

    def result(self, timeout: float | None = None) -> Any:
        """The results, running the run first if it has not run (outside an event loop:
        in a plain script; in a notebook, ``await run``)."""
        if self._result is not None:
            return self._result
        if self._task is not None and self._task.done():
            return self._task.result()
        if self._task is not None:
            raise RuntimeError("the run is running on this kernel's event loop: "
                               "`await run` for its results")
        try:
            asyncio.get_running_loop()
        except RuntimeError:
            return asyncio.run(asyncio.wait_for(self._run(), timeout))
        # A loop runs in this thread (a kernel's): run it in one of its own.
        box: dict[str, Any] = {}

        def work() -> None:
            try:
                box["frame"] = asyncio.run(asyncio.wait_for(self._run(), timeout))
            except BaseException as exc:
                box["error"] = exc

        thread = threading.Thread(target=work, name=f"neta-nb-batch-{self.run_id}")
        thread.start()
        thread.join()
        if "error" in box:
            raise box["error"]
        return box["frame"]

    def cancel(self) -> None:
        """Stop claiming rows and stop the running turns; the rows not done stay in the
        store, for :meth:`resume`."""
        if self._ray is not None:
            self._ray.cancel()
        self._executor.cancel()

    @property
    def done(self) -> bool:
        """The run's task has ended (its results are ready)."""
        return self._task is not None and self._task.done()

    @property
    def finished(self) -> bool:
        """No row runs any more (true already in the last notification)."""
        return self.finished_at is not None

    # --- progress -------------------------------------------------------------------------
    def subscribe(self, callback: Callable[[BatchRun], None]) -> Callable[[], None]:
        """Call ``callback(run)`` whenever a row changes state (the grid throttles)."""
        self._listeners.append(callback)
        return lambda: self._listeners.remove(callback) if callback in self._listeners else None

    def _row_changed(self, idx: int, state: str) -> None:
        if state != "retry":
            self.states[idx] = state
        self._notify()

    def _notify(self) -> None:
        for listener in list(self._listeners):
            try:
                listener(self)
            except Exception:  # a display's failure never stops the run
                log.exception("a listener of batch run %s failed", self.run_id)

    def _refresh_states(self) -> None:
        self.states = [row.state for row in self.rows.all()]

    @property
    def counts(self) -> dict[str, int]:
        """Rows per state, and the attempts made again (after a transient failure, or for a
        row a crashed worker or kernel had in flight) over the run's whole life."""
        found = {"queued": 0, "running": 0, "done": 0, "failed": 0}
        for state in self.states:
            found[state] = found.get(state, 0) + 1
        found["retried"] = self._retried_before + (
            self._ray.retried if self._ray is not None else self._executor.retried)
        return found

    # --- results --------------------------------------------------------------------------
    def frame(self) -> Any:
        """The results as they stand, in input order (see the module note)."""
        try:
            pandas: Any = importlib.import_module("pandas")  # optional, and untyped
        except ImportError as error:
            raise ImportError("a batch run's results are a DataFrame: pip install pandas "
                              "(or 'neta-nb[batch]')") from error

        records = []
        output_fields = list(self.output.model_fields) if self.output is not None else []
        inputs_as, outputs_as = _result_names(self.inputs.columns, output_fields)
        for row in self.rows.all():
            result = row.result or {}
            record: dict[str, Any] = {inputs_as[column]: row.input.get(column)
                                      for column in self.inputs.columns}
            record["answer"] = result.get("answer")
            output = result.get("output") or {}
            for name in output_fields:
                record[outputs_as[name]] = output.get(name)
            status = row.state if row.state in ("done", "failed") else "cancelled"
            record.update(status=status, error=result.get("error"), attempts=row.attempts,
                          usage=result.get("usage"), session_id=row.session_id)
            records.append(record)
        answer, *after = RESULT_COLUMNS
        columns = [*inputs_as.values(), answer, *outputs_as.values(), *after]
        return pandas.DataFrame.from_records(records, columns=columns)

    # --- display --------------------------------------------------------------------------
    @property
    def widget(self) -> BatchGrid:
        """The live grid of this run (made on first use)."""
        if self._widget is None:
            from ..widgets.batch.batch_grid import BatchGrid

            self._widget = BatchGrid(self)
        return self._widget

    def _repr_mimebundle_(self, **kwargs: Any) -> Any:
        return self.widget._repr_mimebundle_(**kwargs)

    def _ipython_display_(self) -> None:
        # As the grid shows itself: its view, then its static form as an output of its own
        # (what a notebook saved without widget state keeps); the mimebundle alone has no
        # static form.
        self.widget._ipython_display_()

    def __repr__(self) -> str:
        counts = self.counts
        return (f"BatchRun({self.run_id!r}, {len(self.states)} rows: {counts['done']} done, "
                f"{counts['failed']} failed, {counts['running']} running)")


RESULT_COLUMNS = ("answer", "status", "error", "attempts", "usage", "session_id")
"""The columns a run adds to its inputs' in the results."""


def _result_names(columns: list[str], fields: list[str]
                  ) -> tuple[dict[str, str], dict[str, str]]:
    """The results' names of the input columns and output fields: their own, but
    ``status_input`` for an input column ``status`` (a ticket table has one) and
    ``status_output`` for such a field — the run's own columns keep their names, and
    nothing of the user's is hidden behind them."""
    inputs = {name: f"{name}_input" if name in RESULT_COLUMNS else name for name in columns}
    taken = set(inputs.values()) | set(RESULT_COLUMNS)
    outputs = {name: f"{name}_output" if name in taken else name for name in fields}
    return inputs, outputs


def _checked_lease(lease_seconds: Any) -> float:
    """``lease_seconds`` as a float; refused if it would let every row run twice (see
    :data:`MIN_LEASE`)."""
    if isinstance(lease_seconds, bool) or not isinstance(lease_seconds, numbers.Real):
        raise TypeError(f"lease_seconds must be a number of seconds, not "
                        f"{type(lease_seconds).__name__}")
    seconds = float(lease_seconds)
    if not MIN_LEASE <= seconds < math.inf:
        raise ValueError(f"lease_seconds must be at least {MIN_LEASE:g} and finite, not "
                         f"{lease_seconds!r} (a lease that ends before a worker starts its "
                         f"row lets another claim it, and the row runs twice): give "
                         f"lease_seconds={DEFAULT_LEASE:g}, the default, or another")
    return seconds


def _digest(rows: list[dict[str, Any]]) -> str:
    """What the inputs were (a run id given again with other inputs is refused)."""
    text = json.dumps(rows, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()
