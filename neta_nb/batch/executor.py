"""Running a batch run's rows in this process: ``concurrency`` workers on the kernel's
event loop, each claiming a row (a lease in the run's rows), running it as a session of
its own and storing its result — retrying what a provider says may succeed later, failing
what it says will not, and renewing the leases of the rows in flight.

Every model call of every row goes through the run's one :class:`RateLimiter`; each row's
provider tells it of a ``Retry-After`` the moment one arrives.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import random
import traceback
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..events import DoneEvent, ErrorEvent, Event
from ..messages import new_id
from ..store.batch_rows import ClaimedRow
from ..store.process_owner import ProcessOwner, SessionBusyError
from .inputs import OutputError, parse_output, render_prompt
from .limiter import RateLimiter
from .rows import RowsStore

if TYPE_CHECKING:
    from pydantic import BaseModel

    from ..runtime.agent import Agent
    from ..runtime.session import AgentSession
    from ..store.session_store import SessionStore
    from ..tools import ToolCatalog

__all__ = ["LocalExecutor", "RowOutcome", "lease_owner_dead"]

log = logging.getLogger(__name__)

BACKOFF_BASE = 0.5
"""Seconds before the first retry of a transient failure; doubled each time, jittered."""
BACKOFF_LIMIT = 30.0
IDLE_POLL = 0.2
"""Seconds a worker with nothing to claim waits before it looks again (rows another
process holds may come free, or be finished)."""


STOP_GRACE = 10.0
"""Seconds the workers of a run that failed or was cancelled get to give their rows back."""
RELEASE_WAIT = 5.0
"""Seconds a worker whose row failed the run waits for the store to take the row back."""
MAX_ERROR_MESSAGE = 2_000
"""Characters of an exception's message kept in a row's ``error``."""
MAX_ERROR_TRACE = 12_000
"""Characters of an exception's traceback kept in a row's ``error``."""


@dataclass
class RowOutcome:
    """What one attempt of a row came to."""

    answer: str = ""
    error: str | None = None
    retryable: bool = False
    stop_reason: str | None = None
    usage: dict[str, Any] = field(default_factory=dict)
    output: dict[str, Any] | None = None


def lease_owner_dead(holder: str) -> bool:
    """A lease whose owner is a process of this host that is gone (its rows can be taken
    at once instead of when the lease runs out)."""
    try:
        owner = ProcessOwner.model_validate_json(holder.split("|", 1)[0])
    except ValueError:
        return False
    return not owner.is_current and not owner.is_alive()


class LocalExecutor:
    """The workers of one run in this process. ``on_change(idx)`` hears each row's state
    change (the grid)."""

    def __init__(self, *, agent: Agent, catalog: Callable[[], ToolCatalog],
                 store: SessionStore | None, rows: RowsStore, run_id: str,
                 template: str | None, output: type[BaseModel] | None,
                 limiter: RateLimiter, concurrency: int, max_attempts: int, lease: float,
                 owner: str, on_change: Callable[[int, str], None]) -> None:
        self.agent, self._catalog, self.store = agent, catalog, store
        self.rows, self.run_id, self.template, self.output = rows, run_id, template, output
        self.limiter, self.concurrency = limiter, concurrency
        self.max_attempts, self.lease, self.owner = max_attempts, lease, owner
        self._on_change = on_change
        self.cancelled = False
        self.retried = 0
        """Attempts made again after a transient failure (for the counters)."""
        self._running: dict[int, AgentSession] = {}

    async def run(self) -> None:
        heartbeat = asyncio.create_task(self._renew_leases())
        workers = [asyncio.create_task(self._worker()) for _ in range(self.concurrency)]
        try:
            # Not gather: cancelled from outside, it would cancel the workers where they
            # stand, rows still leased; asyncio.wait leaves them to stop as below.
            done, _pending = await asyncio.wait(workers, return_when=asyncio.FIRST_EXCEPTION)
            for worker in done:
                failure = None if worker.cancelled() else worker.exception()
                if failure is not None:
                    raise failure
        except BaseException:
            # One worker failed (the store went away), or the run was cancelled from
            # outside (a timeout): nothing of the run may go on once its caller has heard
            # so. The workers stop their turns and give their rows back (a resume, or the
            # next result(), takes them at once); one that does not within the grace is
            # cancelled where it stands (its rows wait for their leases to run out).
            self.cancel()
            _done, stuck = await asyncio.wait(workers, timeout=STOP_GRACE)
            for worker in stuck:
                worker.cancel()
            await asyncio.gather(*workers, return_exceptions=True)
            raise
        finally:
            heartbeat.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await heartbeat

    def cancel(self) -> None:
        """Stop claiming and stop the running turns; their rows go back to the queue."""
        self.cancelled = True
        for session in list(self._running.values()):
            session.cancel()

    # --- the workers ----------------------------------------------------------------------
    async def _worker(self) -> None:
        while not self.cancelled:
            claimed = await asyncio.to_thread(self.rows.claim, self.owner, self.lease,
                                              limit=1, owner_dead=lease_owner_dead)
            if not claimed:
                if await asyncio.to_thread(self._all_settled):
                    return
                await asyncio.sleep(IDLE_POLL)  # another process holds the rest
                continue
            await self._run_row(claimed[0])

    def _all_settled(self) -> bool:
        return self.rows.unsettled() == 0

    async def _run_row(self, row: ClaimedRow) -> None:
        if row.stale_session:
            await asyncio.to_thread(self._forget_session, row.stale_session)
        if row.attempts > 1:  # claimed again: whoever ran it before died or lost the lease
            self.retried += 1
        self._on_change(row.idx, "running")
        try:
            await self._run_claimed(row)
        except Exception:
            # Not the row's own fault (the store failed storing its result): the run ends,
            # and the row goes back to the queue at once, as the other workers' rows do,
            # instead of waiting out its lease. A worker cancelled where it stood (stuck
            # past STOP_GRACE) does not try: its rows wait for their leases.
            with contextlib.suppress(Exception):
                await asyncio.wait_for(asyncio.to_thread(self.rows.release, row.idx,
                                                         self.owner), RELEASE_WAIT)
            raise

    async def _run_claimed(self, row: ClaimedRow) -> None:
        try:
            prompt = render_prompt(self.template, row.input)
        except (KeyError, ValueError, TypeError) as exc:
            # This row's values do not fill the template (a key missing from one dict, a
            # format spec a None cell cannot take): that row fails, the others go on.
            # Python's message may quote a spec the row gave whole: cut to the bound.
            await self._fail_unrun(row, "the prompt could not be filled: "
                                        f"{_cut(str(exc), MAX_ERROR_MESSAGE)}")
            return
        except KeyboardInterrupt:
            self._interrupted(row.idx)
            await asyncio.to_thread(self.rows.release, row.idx, self.owner)
            self._on_change(row.idx, "queued")
            return
        except BaseException as exc:  # anything else of one row's rendering (a MemoryError)
            _reraise_a_stop(exc)
            await self._fail_unrun(row, _row_error("the prompt could not be filled", exc))
            return
        retry = False
        attempts = row.attempts
        while True:
            # The row names the attempt's session before anything of it is stored: a
            # kernel killed at any moment leaves no session the run does not know of.
            session_id = new_id("s_")
            if not await asyncio.to_thread(self.rows.started, row.idx, self.owner, session_id,
                                           attempt=retry):
                return  # another worker has the row now
            session = self._new_session(session_id)
            self._running[row.idx] = session
            try:
                outcome = await self._attempt(session, prompt)
            finally:
                self._running.pop(row.idx, None)
            if self.cancelled and outcome.stop_reason == "cancelled":
                await self._discard(session)
                await asyncio.to_thread(self.rows.release, row.idx, self.owner)
                self._on_change(row.idx, "queued")
                return
            if outcome.error and outcome.retryable and attempts < self.max_attempts:
                await self._discard(session)  # the retry's session is the row's
                attempts += 1
                retry = True
                self.retried += 1
                self._on_change(row.idx, "retry")
                await asyncio.sleep(_backoff(attempts - row.attempts))
                if self.cancelled:  # cancelled while it waited: left for a resume
                    await asyncio.to_thread(self.rows.release, row.idx, self.owner)
                    self._on_change(row.idx, "queued")
                    return
                continue
            await self._finish(row, session, outcome)
            return

    def _new_session(self, session_id: str) -> AgentSession:
        from ..runtime.session import AgentSession

        provider = self.agent.create_provider()
        provider.rate_listener = self.limiter.pause
        provider.request_gate = self.limiter.unpaused
        # A namespace of its own: rows run at the same time, never in the notebook's.
        return AgentSession(self.agent, self._catalog(), self.store, provider=provider,
                            session_id=session_id, parent_id=self.run_id,
                            call_gate=self.limiter, approval_policy="reject", namespace={})

    async def _attempt(self, session: AgentSession, prompt: str) -> RowOutcome:
        outcome = RowOutcome()

        def heard(event: Event) -> None:
            if isinstance(event, ErrorEvent):
                outcome.error = event.message
                outcome.retryable = event.retryable
            elif isinstance(event, DoneEvent):
                outcome.stop_reason = event.stop_reason

        unsubscribe = session.subscribe(heard)
        try:
            # An input's text is data: an `@` in it (a handle, a decorator) is text.
            message = await session.run(prompt, mentions=())
        except Exception as exc:  # refused before it ran (a budget, a bad agent)
            outcome.error = f"{type(exc).__name__}: {exc}"
            return outcome
        finally:
            unsubscribe()
        outcome.usage = session.usage.model_dump(exclude_none=True)
        if outcome.error is None and outcome.stop_reason not in ("end_turn", None):
            outcome.error = f"the turn ended with {outcome.stop_reason}"
        if message is not None:
            outcome.answer = message.text
        if outcome.error is None and self.output is not None:
            try:
                outcome.output = parse_output(outcome.answer, self.output).model_dump(
                    mode="json")
            except OutputError as exc:
                outcome.error = str(exc)
            except KeyboardInterrupt:  # the row goes back, as a cancelled one's does
                self._interrupted(None)
                outcome.stop_reason = "cancelled"
            except BaseException as exc:  # the model's own code (a validator) failed
                _reraise_a_stop(exc)
                outcome.error = _row_error(f"{self.output.__name__} could not read the "
                                          f"answer", exc)
        return outcome

    def _interrupted(self, idx: int | None) -> None:
        """A kernel interrupt landed in the user's code of a row (a validator, a
        template's rendering): the run stops as :meth:`cancel` stops it. Re-raised from a
        worker's task it would end the event loop — the kernel's — with every row in
        flight still leased."""
        log.warning("batch %s: interrupted%s; the run stops and its rows are left for a "
                    "resume", self.run_id, "" if idx is None else f" in row {idx}")
        self.cancel()

    async def _fail_unrun(self, row: ClaimedRow, error: str) -> None:
        """Fail a row before any session of it exists."""
        if await self._store_result(row, RowOutcome(error=error), session_id=None):
            self._on_change(row.idx, "failed")

    async def _store_result(self, row: ClaimedRow, outcome: RowOutcome,
                            session_id: str | None) -> bool:
        """The row's result, stored only while the row is still this worker's."""
        result = {"answer": outcome.answer, "error": outcome.error, "usage": outcome.usage,
                  "output": outcome.output, "stop_reason": outcome.stop_reason}
        return await asyncio.to_thread(self.rows.finish, row.idx, self.owner,
                                       failed=outcome.error is not None, result=result,
                                       session_id=session_id)

    async def _finish(self, row: ClaimedRow, session: AgentSession, outcome: RowOutcome) -> None:
        # The session first, whole; then the row's result, only while the row is still
        # this worker's (a row is stored once, with the one session that answered it).
        if self.store is not None:
            await asyncio.to_thread(session.flush, 60)
        if not await self._store_result(row, outcome, session_id=session.id):
            log.warning("batch %s: row %d was taken over by another worker; this attempt's "
                        "result is dropped", self.run_id, row.idx)
            await self._discard(session)
            return
        self._on_change(row.idx, "failed" if outcome.error is not None else "done")

    async def _discard(self, session: AgentSession) -> None:
        """Delete an attempt's session that is not (or no longer) the row's."""
        if self.store is not None:
            await asyncio.to_thread(session.flush, 30)
            await asyncio.to_thread(self._forget_session, session.id)

    def _forget_session(self, session_id: str) -> None:
        if self.store is None:
            return
        try:
            self.store.delete_session(session_id)
        except (SessionBusyError, KeyError) as exc:
            log.warning("batch %s: session %s of an abandoned attempt was kept (%s)",
                        self.run_id, session_id, exc)

    async def _renew_leases(self) -> None:
        while True:
            await asyncio.sleep(self.lease / 3)
            lost = await asyncio.to_thread(self.rows.renew, self.owner, list(self._running),
                                           self.lease)
            for idx in lost:
                session = self._running.get(idx)
                if session is not None:
                    log.warning("batch %s: row %d's lease was lost; its turn is stopped",
                                self.run_id, idx)
                    session.cancel()


def _reraise_a_stop(exc: BaseException) -> None:
    """Raise ``exc`` again if it stops this worker (its task is being cancelled); any
    other exception of a row's user code — ``SystemExit``, ``GeneratorExit``, a
    ``CancelledError`` no one asked for, a ``BaseException`` of its own — fails the row."""
    if isinstance(exc, asyncio.CancelledError):
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise exc


def _row_error(what: str, exc: BaseException) -> str:
    """A row's ``error`` for an exception of the user's code run for that row (an output
    model's validator, a template's rendering): what failed, then the traceback — each
    cut to a bound (a message of megabytes would be stored with every such row), and
    whatever the exception's own ``__str__`` raises."""
    try:
        message = str(exc)
    except Exception as failure:  # an exception that cannot show itself
        message = f"<its str() failed: {type(failure).__name__}>"
    try:
        trace = "".join(traceback.format_exception(exc)).rstrip()
    except Exception as failure:
        trace = f"<its traceback could not be formatted: {type(failure).__name__}>"
    return (f"{what}: {type(exc).__name__}: {_cut(message, MAX_ERROR_MESSAGE)}\n"
            f"{_cut(trace, MAX_ERROR_TRACE)}")


def _cut(text: str, limit: int) -> str:
    """``text``, or its head and tail with the middle cut out (a traceback's innermost
    frames and message are at its end)."""
    if len(text) <= limit:
        return text
    head = limit // 4
    tail = limit - head
    return f"{text[:head]}\n… {len(text) - limit:,} characters cut …\n{text[-tail:]}"


def _backoff(retry: int) -> float:
    delay = min(BACKOFF_LIMIT, BACKOFF_BASE * float(2 ** max(0, retry - 1)))
    return float(delay * (0.5 + random.random() / 2))
