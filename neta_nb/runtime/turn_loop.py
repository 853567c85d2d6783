"""TurnLoop: running one turn of a session, from its prompt to ``done``.

A turn appends the prompt, then calls the model until it answers without tools, a limit
is hit, the user cancels, or the provider fails; whatever happens, the history stays valid
for the next turn (a cut response keeps what streamed, marked; calls that never ran get an
error result). ``_run`` and ``_loop_turn`` are the places that end a turn — by answer,
Stop, interrupt or error — and close the history the same way, so they live together
here; a dead kernel's turn is closed the same way by ``resume``.

:class:`TurnLoop` is the turn-running half of :class:`~neta_nb.runtime.session.AgentSession`
(its base class): the attributes it declares are the session's, set in its ``__init__``.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import TYPE_CHECKING, Any, Literal, Protocol

from ..encodable import encodable
from ..events import (
    CompactionEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    TokenUpdateEvent,
    TurnStartEvent,
    TurnUsage,
    WarningEvent,
)
from ..labels import t
from ..messages import Message, SubagentRun, TraceRef, Usage
from ..providers.base import ModelRequest, Provider, ProviderError
from ..store.database import TurnClaimHandle
from ..store.process_owner import ProcessOwner
from ..store.session_store import CompactionRecord
from ..store.session_writes import SessionPersistence
from ..todo import TodoStore
from ..tools.resolution_cache import ResolutionCache
from .agent import Agent
from .budget import BudgetGuard, Spend
from .compaction import CompactionError, compact_view
from .event_hub import EventHub
from .history import History
from .subagents import Crew, add_usage
from .tool_runner import ToolLimits, ToolRunner
from .tracing import CallSpan, turn_tracer
from .turn import Turn
from .usage_meter import UsageMeter, estimate_request_tokens

if TYPE_CHECKING:
    from ..thinking import ThinkLevel
    from ..tools import PromptPreview

__all__ = ["TurnLoop"]

log = logging.getLogger(__name__)


class CallGate(Protocol):
    """What each model call of a session waits for before it starts (a batch run's rate
    limiter: see :mod:`neta_nb.batch.limiter`)."""

    def call(self) -> AbstractAsyncContextManager[None]: ...


class TurnLoop:
    """Runs a session's turns (see the module's docstring)."""

    agent: Agent
    provider: Provider
    id: str
    todo: TodoStore
    compactions: list[CompactionRecord]
    _history: History
    _meter: UsageMeter
    _events: EventHub
    _emit: Callable[[Event], None]
    _crew: Crew
    _tools: ToolRunner
    _saved: SessionPersistence
    _turn: Turn | None
    _resolved: ResolutionCache
    _compacting: bool
    _budget: BudgetGuard
    call_gate: CallGate | None
    _unusable_usage_said = False
    """A server's unusable usage report was warned about (once a session)."""

    if TYPE_CHECKING:
        @property
        def think_level(self) -> ThinkLevel: ...
        @property
        def running(self) -> bool: ...
        def preview(self) -> PromptPreview: ...
        def _resolution_key(self) -> tuple[object, ...]: ...
        def _save_record(self, **fields: Any) -> None: ...
        def cancel(self) -> bool: ...

    async def _run(self, prompt_message: Message, turn: Turn) -> Message | None:
        turn.tracer = turn_tracer()
        try:
            with turn.tracer.turn(self.agent.name, self.id, self.provider):
                return await self._run_turn(prompt_message, turn)
        finally:
            # Last, whatever ended the wait, and outside the turn's span: a subscriber
            # that starts the next turn from its handler starts a trace of its own. The
            # session is running until `done` (no second turn can start inside this one),
            # and a subscriber reacting to `done` sees an idle session.
            self._turn = None
            self._emit(DoneEvent(stop_reason=turn.stop_reason))

    async def _run_turn(self, prompt_message: Message, turn: Turn) -> Message | None:
        turn.begun = True
        self._events.bind_to_running_loop()
        self._emit(TurnStartEvent())
        claim: TurnClaimHandle | None = None
        try:
            # First, before anything is stored: the claim that keeps another kernel from
            # taking this turn over, even while the store cannot record the owner yet.
            if self._saved.store is not None:
                claim = await self._saved.store.claim_turn_soon(self.id)
            # The last turn's children's spend joins the session's before the crew forgets
            # them; then the budgets' turn warnings start afresh.
            self._meter.add_children(self._crew.turn_usage)
            self._crew.begin_turn()
            self._budget.begin_turn()
            self._meter.price = self.provider.price
            self._history.append(prompt_message)
            if turn.cancel_requested:
                turn.stop_reason = "cancelled"
                return None
            self._save_record(running=True, owner=ProcessOwner.current())
            return await self._loop_turn(turn)
        except asyncio.CancelledError:
            # Children close their histories first (their cancelled `delegate` calls
            # stopped them): then their ends come before this turn's results and `done`.
            with contextlib.suppress(asyncio.CancelledError):
                await self._crew.wait_stopped()
            self._finish_interrupted(turn, "interrupted" if turn.interrupted else "cancelled",
                                     None)
            turn.stop_reason = ("interrupted" if turn.interrupted
                                else "budget" if turn.budget_stop else "cancelled")
            if not turn.cancel_requested:
                raise  # cancelled from outside (kernel shutdown…): keep propagating
            if turn.task is not None:
                turn.task.uncancel()
            return turn.message
        except KeyboardInterrupt:
            # A kernel interrupt raised in the turn's own frames: the turn is closed like a
            # cancel (history valid, cards final, store written, `done`), then the
            # interrupt goes on.
            turn.interrupted = True
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "interrupted", None)
            turn.stop_reason = "interrupted"
            raise
        except BaseException as exc:
            # A bug or an unexpected failure (the store's disk is full; a provider or hook
            # raising SystemExit or a BaseException of its own): the turn ends with an
            # error event like any provider failure; the session stays usable.
            log.exception("turn of session %s failed", self.id)
            text = encodable(f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "error", text)
            self._emit(ErrorEvent(message=f"The turn failed: {text}", retryable=False))
            turn.stop_reason = "error"
            return turn.message
        finally:
            turn.stop_draft_timer()
            with contextlib.suppress(Exception):
                self._saved.clear_draft()
                self._save_record(running=False, owner=None)
            try:
                if sys.exc_info()[0] is None:
                    # Not while an exception propagates: that must not wait.
                    await self._settle(turn)
            finally:
                if claim is not None:
                    claim.release()
                turn.tracer.end_turn(turn.stop_reason)

    async def _settle(self, turn: Turn) -> None:
        """Wait until the turn is stored — or the store is behind, which the session has
        said (a `warning`); its writes go on retrying either way. Stop ends the wait."""
        try:
            await self._saved.settled()
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise  # cancelled from outside: `done` is still said, then it goes on
            if turn.task is not None:
                turn.task.uncancel()

    async def _learn_window(self) -> None:
        """A local server's window is its own: ask it once, before the first call."""
        await self.provider.discover_context_window()
        info = self.provider.info
        self._meter.set_window(info.context_window, assumed=info.assumed)

    async def _loop_turn(self, turn: Turn) -> Message | None:
        await self._learn_window()
        for _call in range(self.agent.max_model_calls):
            if not turn.compaction_failed and self._meter.nearly_full(self.agent.compact_at):
                try:
                    await self._compact(turn)
                    if self._over_budget(turn):  # the summary's cost counts too
                        turn.stop_reason = "budget"
                        return turn.message
                except CompactionError as exc:
                    turn.compaction_failed = True  # don't retry on every call of this turn
                    self._emit(ErrorEvent(message=encodable(str(exc)), retryable=True))
                    if self._meter.full:
                        turn.stop_reason = "context_full"
                        return turn.message
            key = self._resolution_key()
            preview = self.preview()
            self._resolved.put(key, preview.resolution)  # what the re-checks compare with
            turn.resolution = preview.resolution
            request = ModelRequest(system_prompt=preview.system_prompt,
                                   # Maintained as messages arrive (History), so a call
                                   # costs no pass over a long history; providers never
                                   # mutate it.
                                   messages=self._history.view, tools=preview.tools,
                                   think_level=self.think_level)
            message = await self._model_call(turn, request)
            if message is None:
                return turn.message  # the call failed: said, and the history closed
            if self._over_budget(turn):
                # Like a Stop after this call: its calls do not run, the history stays
                # valid, the answer so far is kept.
                turn.stop_reason = "budget"
                self._tools.close_unanswered(self._history.messages, "budget",
                                             turn.live_calls, preview.resolution)
                return message
            if not message.tool_calls:
                turn.stop_reason = message.metadata.stop_reason or "end_turn"
                return message
            # The resolution this call was made with also answers calls outside it: the
            # refusal the model reads is the resolver's own.
            limits = ToolLimits(timeout=self.agent.tool_timeout,
                                max_result_chars=self.agent.max_tool_result_chars)
            await self._tools.run(message, preview.resolution, live_calls=turn.live_calls,
                                  limits=limits, tracer=turn.tracer)
        turn.stop_reason = "max_model_calls"
        return turn.message

    async def _model_call(self, turn: Turn, request: ModelRequest) -> Message | None:
        """One model call, in its span when traced; ``None`` when it failed — the error
        is said, what streamed is kept and the history is closed for the next turn."""
        span = turn.tracer.chat(self.provider, request) if turn.tracer.on else None
        try:
            if span is None:
                return await self._stream_response(turn, request, span)
            with turn.tracer.during(span):
                return await self._stream_response(turn, request, span)
        except Exception as exc:
            error = exc if isinstance(exc, ProviderError) else _unexpected(exc)
            if span is not None:
                turn.tracer.end_chat(span, None, error=type(exc).__name__, usage=error.usage)
            text = encodable(error.message)  # a server's words may carry anything
            self._finish_interrupted(turn, "error", text, error.usage,
                                     trace=span.ref if span is not None else None)
            if error.usage is not None:
                self._count_usage(turn, error.usage)
            self._emit(ErrorEvent(message=text, retryable=error.retryable))
            turn.stop_reason = "error"
            return None
        except BaseException as exc:
            if span is not None:
                turn.tracer.end_chat(span, None, error=(
                    "cancelled" if isinstance(exc, asyncio.CancelledError)
                    else type(exc).__name__))
            raise

    async def _stream_response(self, turn: Turn, request: ModelRequest,
                               span: CallSpan | None) -> Message:
        checkpoint = self._saved.draft if self._saved.store is not None else None
        gate = self.call_gate
        if gate is None:
            assembler = await turn.stream(self.provider, request, self._emit, checkpoint, span)
        else:
            async with gate.call():
                assembler = await turn.stream(self.provider, request, self._emit, checkpoint,
                                              span)
        self._warn_unusable_usage(assembler.unusable_usage)
        message = Message.assistant(assembler.parts, usage=assembler.usage,
                                    model=self.provider.model_id,
                                    stop_reason=assembler.stop_reason,
                                    cost_usd=self._meter.cost_of(assembler.usage))
        if span is not None:  # before it is stored: it keeps the span's ids
            turn.tracer.end_chat(span, message)
        turn.assembler = None
        turn.message = message
        self._history.append(message, replaces_draft=True)
        # No usage reported: the window is estimated from what was sent and answered
        # (the history's size is kept as it grows: no pass over it per call).
        estimate = (estimate_request_tokens(request.system_prompt, request.tools,
                                            self._history.view_characters)
                    if assembler.usage is None else None)
        self._count_usage(turn, assembler.usage, estimate)
        return message

    def _warn_unusable_usage(self, detail: str | None) -> None:
        """The server reported usage that is negative or not a number (``detail``): the
        call's usage (and so its cost) is unknown, never a credit; the user is told once
        a session."""
        if detail is None or self._unusable_usage_said:
            return
        self._unusable_usage_said = True
        log.warning("the model server reported unusable usage (%s): counted as unknown",
                    detail)
        params = {"detail": detail}
        self._emit(WarningEvent(message=t("usage_unusable", "en", **params),
                                code="usage_unusable", params=params))

    def _count_usage(self, turn: Turn, usage: Usage | None,
                     estimated_tokens: int | None = None) -> None:
        turn.usage = self._meter.record_call(turn.usage, usage,
                                             estimated_tokens=estimated_tokens)
        turn.spend.add(self._meter.last_call_cost)
        self._emit(TokenUpdateEvent(current=self._turn_total(turn.usage),
                                    context=self._meter.context))

    def _turn_total(self, own: TurnUsage) -> TurnUsage:
        """The turn's figures as ``token_update`` shows them: this session's own calls
        plus its sub-agents' (the split is :attr:`subagent_usage`), and the session's
        cost so far."""
        children = self._crew.runs
        total = add_usage(own, self._crew.turn_usage, second_is_children=True) if children \
            else own
        if self._meter.price is None:
            return total  # no price for this session's calls: its cost is unknown anyway
        return total.model_copy(update={"session_cost_usd": self.cost_usd})

    def _children_counted(self) -> None:
        """A sub-agent's figures changed: the turn total follows; the context figure is
        this session's own. A child's spend counts against this session's budgets: one
        that reaches a budget stops the turn, children and all, like Stop."""
        turn = self._turn
        own = turn.usage if turn is not None else TurnUsage()
        self._emit(TokenUpdateEvent(current=self._turn_total(own),
                                    context=self._meter.context))
        if turn is not None and not turn.budget_stop and self._over_budget(turn):
            self.cancel()

    # --- money ----------------------------------------------------------------------
    @property
    def cost_usd(self) -> float | None:
        """What this session has cost in USD — its own calls, summaries and sub-agents'
        — or ``None`` when a call's cost is unknown (a model with no price, a call that
        reported no usage)."""
        return self._usd(self._session_spend())

    @property
    def spent_usd(self) -> float | None:
        """All this session has paid in USD: :attr:`cost_usd` (its history's calls) and
        what it paid for the calls of turns it went back over (:meth:`retry`,
        :meth:`edit`, :meth:`rewind`), each call counted once — what counts against
        ``agent.budget_usd``. ``None`` when a call's cost is unknown. A fork starts with
        its copied history's cost and none of this session's turns gone back over."""
        return self._usd(self._meter.paid(self._crew.turn_usage))

    def _usd(self, spent: Spend) -> float | None:
        if spent.calls == 0:
            return 0.0 if self.provider.price is not None else None
        return spent.value

    def _session_spend(self) -> Spend:
        """This session's spend so far, sub-agents included: what is known, and whether
        some calls' cost is not."""
        return self._meter.session_spend(self._crew.turn_usage)

    def _over_budget(self, turn: Turn) -> bool:
        """Check the budgets after a call (warning at 80 %); True once one is reached,
        which marks the turn to end with ``stop_reason="budget"``. A call whose cost is
        unknown counts for nothing (the user is told): the budget holds for the rest."""
        agent = self.agent
        if agent.budget_usd is None and agent.turn_budget_usd is None:
            return False
        crew = self._crew.turn_usage
        turn_spent = turn.spend.usd + (crew.cost_usd or 0.0)
        meter = self._meter
        paid = meter.paid(crew)  # turns gone back over were paid too
        unknown = (paid.unknown or turn.spend.unknown
                   or bool(crew.api_calls and crew.cost_usd is None))
        if self._budget.check(agent, turn_spent, paid.usd, unknown=unknown,
                              rewound=meter.rewound.usd) is None:
            return False
        turn.budget_stop = True
        return True

    def _check_idle(self) -> None:
        if self.running:
            raise RuntimeError("a turn is already running in this session; "
                               "cancel() it or wait for it to finish")
        if self._compacting:
            raise RuntimeError("the session is compacting its history; try again when "
                               "compact() has finished")

    def _check_budget(self, paid: tuple[Spend, Spend] | None = None) -> None:
        """Before a turn: see :meth:`BudgetGuard.before_turn`. ``paid``: all the session
        will have paid when the turn starts and what of it for turns gone back over, if
        not what it has now (a retry's, after its rewind)."""
        if self.agent.budget_usd is not None or self.agent.turn_budget_usd is not None:
            self._budget.before_turn(self.agent, self.provider, lambda: self._paid_now(paid))

    def _paid_now(self, paid: tuple[Spend, Spend] | None) -> tuple[float, float]:
        if paid is None:
            meter = self._meter
            return meter.paid(self._crew.turn_usage).usd, meter.rewound.usd
        return paid[0].usd, paid[1].usd

    def _record_subagent(self, call_id: str, record: SubagentRun) -> None:
        """Keep a child's run on its ``delegate`` call's execution (resume rebuilds the
        nested card from it) and store the message."""
        turn = self._turn
        message = turn.message if turn is not None else None
        if message is None:
            return
        for execution in message.metadata.tool_executions:
            if execution.id == call_id:
                execution.subagent = record
                self._history.changed(message)
                return


    async def compact(self) -> CompactionEvent | None:
        """Summarise older turns now (between turns). Returns the ``compaction`` event, or
        ``None`` when there is nothing old enough to fold. Raises :class:`CompactionError`
        if the summarising call fails; the history is then unchanged."""
        if self.running:
            raise RuntimeError("compact() runs between turns; during a turn the session "
                               "compacts by itself when the context is nearly full")
        if self._compacting:
            raise RuntimeError("compact() is already running")
        self._compacting = True
        try:
            await self._learn_window()
            self._meter.price = self.provider.price
            done = await self._compact(None)
            if done is not None:
                self._save_record()  # the session's cost now includes the summary
            return done
        finally:
            self._compacting = False

    async def _compact(self, turn: Turn | None) -> CompactionEvent | None:
        tracer = turn.tracer if turn is not None else turn_tracer()
        with tracer.compaction() as span:
            done = await compact_view(self.provider, self._history.view,
                                      keep_turns=self.agent.keep_recent_turns,
                                      plan=self.todo.format_for_injection(),
                                      # What the model would read now, results
                                      # appended since the last call included.
                                      tokens_before=self._meter.expected_tokens,
                                      after_message=len(self._history.messages))
            figures: dict[str, Any] = {"neta_nb.compaction.folded": 0} if done is None else {
                "neta_nb.compaction.folded": done.record.messages_folded,
                "neta_nb.compaction.tokens_before": done.record.tokens_before,
                "neta_nb.compaction.tokens_after": done.record.tokens_after}
            span.end(**figures)
        if done is None:
            return None
        record = done.record
        self._warn_unusable_usage(done.unusable_usage)
        record.cost_usd = self._meter.cost_of(record.usage)
        if turn is not None:
            turn.spend.add(record.cost_usd)
        self._history.set_view(done.view)
        self.compactions.append(record)
        self._saved.view(done.stored.model_copy(update={"compactions": self.compactions}))
        current = self._meter.record_summary(turn.usage if turn else None, record.usage,
                                             record.tokens_after)
        if turn is not None:
            turn.usage = current
        compaction = CompactionEvent(tokens_before=record.tokens_before,
                                     tokens_after=record.tokens_after,
                                     messages_folded=record.messages_folded)
        self._emit(compaction)
        # The context figure changes now, not at the next call.
        self._emit(TokenUpdateEvent(current=self._turn_total(current),
                                    context=self._meter.context))
        return compaction

    def _finish_interrupted(self, turn: Turn, why: Literal["cancelled", "interrupted", "error"],
                            error: str | None, usage: Usage | None = None, *,
                            trace: TraceRef | None = None) -> None:
        """Keep what streamed of an interrupted response and close the history so the
        next turn starts from a valid conversation."""
        turn.close_thinking(self._emit)
        if turn.assembler is not None:
            self._warn_unusable_usage(turn.assembler.unusable_usage)
            parts = turn.assembler.snapshot()
            counted = usage is not None  # the caller counts the usage it was given
            usage = usage or turn.assembler.usage  # e.g. what message_start reported
            message = Message.assistant(parts, interrupted=why, error=error, usage=usage,
                                        model=self.provider.model_id, trace=trace,
                                        cost_usd=self._meter.cost_of(usage))
            turn.assembler = None
            turn.message = message
            self._history.append(message, replaces_draft=True)
            if not counted:
                # The call was made and may be billed: counted, its usage unknown when the
                # stream was cut before any was reported (never a known $0).
                self._count_usage(turn, usage)
        elif turn.message is not None and why in ("cancelled", "interrupted"):
            turn.message.metadata.interrupted = why
            self._history.changed(turn.message)
        self._tools.close_unanswered(self._history.messages,
                                     "budget" if turn.budget_stop else why, turn.live_calls,
                                     turn.resolution)


def _unexpected(exc: Exception) -> ProviderError:
    """A provider failure that is not a ProviderError (a bug, an unmapped network error):
    reported the same way, as not worth retrying blindly."""
    log.exception("the model call failed unexpectedly")
    return ProviderError(f"The model call failed: {type(exc).__name__}: {exc}",
                         retryable=False)
