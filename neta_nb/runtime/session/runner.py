"""TurnRunner: running one turn of a session, from its prompt to ``done``.

A turn appends the prompt, then calls the model until it answers without tools, a limit
is hit, the user cancels, or the provider fails; whatever happens, the history stays valid
for the next turn (a cut response keeps what streamed, marked; calls that never ran get an
error result). ``run`` and ``_loop_turn`` are the places that end a turn — by answer,
Stop, interrupt or error — and close the history the same way, so they live together
here; a dead kernel's turn is closed the same way by ``resume``.

The runner is a collaborator of the session: it works on the session's
:class:`~.state.SessionState` with its :class:`~.deps.TurnDeps`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import sys
from collections.abc import Sequence
from typing import Any, Literal

from ...encodable import encodable
from ...events import (
    CompactionEvent,
    DoneEvent,
    ErrorEvent,
    TokenUpdateEvent,
    TurnStartEvent,
    TurnUsage,
    WarningEvent,
)
from ...labels import t
from ...messages import MentionPart, Message, TraceRef, Usage
from ...providers.base import ModelRequest, ProviderError
from ...store.database import TurnClaimHandle
from ...store.process_owner import ProcessOwner
from ...thinking import ThinkLevel, resolve_think_level
from ..compaction import CompactionError, compact_view
from ..mentions.mentions import prompt_parts
from ..tracing.tracing import CallSpan
from ..usage_meter import estimate_request_tokens
from .deps import TurnDeps
from .kernel_interrupt import interrupted_warning, interrupts
from .spending import Spend
from .state import SessionState
from .tool_calls.tool_limits import ToolLimits
from .turn import Turn

__all__ = ["TurnRunner", "next_think_level"]

log = logging.getLogger(__name__)


def next_think_level(state: SessionState, deps: TurnDeps) -> ThinkLevel:
    """The level the next model call will use (session choice → agent default → model
    default, falling back where the model does not support a level)."""
    place = deps.workspace
    provider = place.provider
    return resolve_think_level(state.think_level, place.agent.default_think_level,
                               provider.supplier, provider.model)


class TurnRunner:
    """Runs a session's turns (see the module's docstring)."""

    def __init__(self, state: SessionState, deps: TurnDeps) -> None:
        self.state = state
        self.deps = deps

    # --- before a turn ----------------------------------------------------------------
    def check_idle(self) -> None:
        state = self.state
        if state.turn is not None:
            raise RuntimeError("a turn is already running in this session; "
                               "cancel() it or wait for it to finish")
        if state.compacting:
            raise RuntimeError("the session is compacting its history; try again when "
                               "compact() has finished")

    def ready(self, prompt: str, attachments: Sequence[Any] | None,
              mentions: Sequence[MentionPart] | None = None, *,
              paid: tuple[Spend, Spend] | None = None,
              page_parts: Sequence[MentionPart] = ()) -> Message:
        """The checks before a turn (idle, budget, a sub-agent tree changed since), then
        its prompt; nothing is changed. ``paid``: all the session will have paid when the
        turn starts and what of it for turns gone back over, if not what it has now (a
        retry's, after its rewind). ``page_parts``: the cells the page gave for the
        prompt's cell mentions (see ``prompt_parts``)."""
        self.check_idle()
        state, deps = self.state, self.deps
        place = deps.workspace
        agent, provider = place.agent, place.provider
        state.spending.before_turn(agent, provider, deps.crew.turn_usage, paid)
        agent.check_subagents()
        message = Message.user(encodable(prompt))
        message.metadata.think_level = next_think_level(state, deps)
        if attachments or mentions or page_parts or "@" in prompt:
            message.parts.extend(prompt_parts(
                message.text, attachments, mentions, namespace=place.namespace,
                working_dir=place.working_dir, capabilities=provider.info.capabilities,
                model=provider.model_id, page_parts=page_parts))
        return message

    def start(self, prompt_message: Message) -> asyncio.Task[Any]:
        """Run a turn of ``prompt_message`` (checked by :meth:`ready`) in the background
        and return its task."""
        state = self.state
        turn = state.turn = Turn()
        task = asyncio.get_running_loop().create_task(self.run(prompt_message, turn),
                                                      name=f"neta_nb turn {state.id}")
        turn.task = task

        def release(_: asyncio.Task[Any]) -> None:
            # A task cancelled before its first step never enters run: free the session
            # and still close the turn for its subscribers (a view waits for `done`).
            if state.turn is turn:
                state.turn = None
            if not turn.begun:
                state.emit(DoneEvent(stop_reason="cancelled"))

        task.add_done_callback(release)
        return task

    # --- the turn ---------------------------------------------------------------------
    async def run(self, prompt_message: Message, turn: Turn) -> Message | None:
        """Run the turn ``turn`` of ``prompt_message`` to its ``done``."""
        state, deps = self.state, self.deps
        place = deps.workspace
        turn.prompt_id = prompt_message.id
        turn.tracer = deps.tracer()
        top_level = deps.crew.depth == 0
        if top_level:  # Kernel ▸ Interrupt stops it even when no cell awaits it
            interrupts.add(turn, lambda: self._interrupt(turn))
        try:
            with turn.tracer.turn(place.agent.name, state.id, place.provider):
                return await self._run_turn(prompt_message, turn)
        finally:
            if top_level:
                interrupts.discard(turn)
            # Last, whatever ended the wait, and outside the turn's span: a subscriber
            # that starts the next turn from its handler starts a trace of its own. The
            # session is running until `done` (no second turn can start inside this one),
            # and a subscriber reacting to `done` sees an idle session.
            state.turn = None
            state.emit(DoneEvent(stop_reason=turn.stop_reason))

    def _interrupt(self, turn: Turn) -> None:
        """A kernel interrupt reached the turn ``turn`` outside a cell: Stop, and the
        one plain line an interrupted cell shows."""
        state = self.state
        if state.turn is turn and not turn.cancel_requested and state.cancel(self.deps.crew):
            state.emit(interrupted_warning())

    async def _run_turn(self, prompt_message: Message, turn: Turn) -> Message | None:
        state, deps = self.state, self.deps
        turn.begun = True
        state.events.bind_to_running_loop()
        state.emit(TurnStartEvent())
        claim: TurnClaimHandle | None = None
        saved = state.saved
        try:
            # First, before anything is stored: the claim that keeps another kernel from
            # taking this turn over, even while the store cannot record the owner yet.
            if saved.store is not None:
                claim = await saved.store.claim_turn_soon(state.id)
            # The last turn's children's spend joins the session's before the crew forgets
            # them; then the budgets' turn warnings start afresh.
            spending = state.spending
            spending.add_children(deps.crew.turn_usage)
            deps.crew.begin_turn()
            spending.begin_turn()
            spending.price = deps.workspace.provider.price
            state.history.append(prompt_message)
            if turn.cancel_requested:
                turn.stop_reason = "cancelled"
                return None
            state.save_record(running=True, owner=ProcessOwner.current())
            if deps.outside is not None:
                return await self._outside_turn(turn, prompt_message)
            return await self._loop_turn(turn)
        except asyncio.CancelledError:
            # Children close their histories first (their cancelled `delegate` calls
            # stopped them): then their ends come before this turn's results and `done`.
            with contextlib.suppress(asyncio.CancelledError):
                await deps.crew.wait_stopped()
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
            log.exception("turn of session %s failed", state.id)
            text = encodable(f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "error", text)
            state.emit(ErrorEvent(message=f"The turn failed: {text}", retryable=False))
            turn.stop_reason = "error"
            return turn.message
        finally:
            turn.stop_draft_timer()
            with contextlib.suppress(Exception):
                saved.clear_draft()
                state.save_record(running=False, owner=None)
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
            await self.state.saved.settled()
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise  # cancelled from outside: `done` is still said, then it goes on
            if turn.task is not None:
                turn.task.uncancel()

    async def _learn_window(self) -> None:
        """A local server's window is its own: ask it once, before the first call."""
        provider = self.deps.workspace.provider
        await provider.discover_context_window()
        info = provider.info
        self.state.meter.set_window(info.context_window, assumed=info.assumed)

    async def _loop_turn(self, turn: Turn) -> Message | None:
        state, deps = self.state, self.deps
        place, toolbox, tools = deps.workspace, deps.toolbox, deps.tools
        meter, history, emit = state.meter, state.history, state.emit
        agent = place.agent
        await self._learn_window()
        for _call in range(agent.max_model_calls):
            if not turn.compaction_failed and meter.nearly_full(agent.compact_at):
                try:
                    await self._compact(turn)
                    if self._over_budget(turn):  # the summary's cost counts too
                        turn.stop_reason = "budget"
                        return turn.message
                except CompactionError as exc:
                    turn.compaction_failed = True  # don't retry on every call of this turn
                    emit(ErrorEvent(message=encodable(str(exc)), retryable=True))
                    if meter.full:
                        turn.stop_reason = "context_full"
                        return turn.message
            key = toolbox.resolution_key()
            preview = toolbox.preview()
            state.resolved.put(key, preview.resolution)  # what the re-checks compare with
            turn.resolution = preview.resolution
            request = ModelRequest(system_prompt=preview.system_prompt,
                                   # Maintained as messages arrive (History), so a call
                                   # costs no pass over a long history; providers never
                                   # mutate it.
                                   messages=history.view, tools=preview.tools,
                                   think_level=next_think_level(state, deps))
            message = await self._model_call(turn, request)
            if message is None:
                return turn.message  # the call failed: said, and the history closed
            if self._over_budget(turn, answered=not message.tool_calls):
                # Like a Stop after this call: its calls do not run, the history stays
                # valid, the answer so far is kept.
                turn.stop_reason = "budget"
                tools.close_unanswered(history.messages, "budget", turn.live_calls,
                                       preview.resolution)
                return message
            if not message.tool_calls:
                turn.stop_reason = message.metadata.stop_reason or "end_turn"
                return message
            # The resolution this call was made with also answers calls outside it: the
            # refusal the model reads is the resolver's own.
            limits = ToolLimits(timeout=agent.tool_timeout,
                                max_result_chars=agent.max_tool_result_chars)
            await tools.run(message, preview.resolution, live_calls=turn.live_calls,
                            limits=limits, tracer=turn.tracer)
        turn.stop_reason = "max_model_calls"
        return turn.message

    async def _outside_turn(self, turn: Turn, prompt_message: Message) -> Message | None:
        """The turn of an outside agent, which runs its own loop (``deps.outside``); its
        failure is said and closed like a failed model call's."""
        outside = self.deps.outside
        assert outside is not None
        try:
            return await outside.run(turn, prompt_message, self._count_usage)
        except ProviderError as error:
            text = encodable(error.message)
            self._finish_interrupted(turn, "error", text, error.usage)
            if error.usage is not None:
                self._count_usage(turn, error.usage)
            self.state.emit(ErrorEvent(message=text, retryable=error.retryable))
            turn.stop_reason = "error"
            return None

    async def _model_call(self, turn: Turn, request: ModelRequest) -> Message | None:
        """One model call, in its span when traced; ``None`` when it failed — the error
        is said, what streamed is kept and the history is closed for the next turn."""
        span = (turn.tracer.chat(self.deps.workspace.provider, request) if turn.tracer.on
                else None)
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
            self.state.emit(ErrorEvent(message=text, retryable=error.retryable))
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
        state = self.state
        provider = self.deps.workspace.provider
        saved = state.saved
        checkpoint = saved.draft if saved.store is not None else None
        gate = self.deps.call_gate
        if gate is None:
            assembler = await turn.stream(provider, request, state.emit, checkpoint, span)
        else:
            async with gate.call():
                assembler = await turn.stream(provider, request, state.emit, checkpoint,
                                              span)
        self._warn_unusable_usage(assembler.unusable_usage)
        message = Message.assistant(assembler.parts, usage=assembler.usage,
                                    model=provider.model_id,
                                    stop_reason=assembler.stop_reason,
                                    cost_usd=state.spending.cost_of(assembler.usage))
        if span is not None:  # before it is stored: it keeps the span's ids
            turn.tracer.end_chat(span, message)
        turn.assembler = None
        turn.message = message
        history = state.history
        history.append(message, replaces_draft=True)
        # No usage reported: the window is estimated from what was sent and answered
        # (the history's size is kept as it grows: no pass over it per call).
        estimate = (estimate_request_tokens(request.system_prompt, request.tools,
                                            history.view_characters)
                    if assembler.usage is None else None)
        self._count_usage(turn, assembler.usage, estimate)
        return message

    def _warn_unusable_usage(self, detail: str | None) -> None:
        """The server reported usage that is negative or not a number (``detail``): the
        call's usage (and so its cost) is unknown, never a credit; the user is told once
        a session."""
        state = self.state
        if detail is None or state.unusable_usage_said:
            return
        state.unusable_usage_said = True
        log.warning("the model server reported unusable usage (%s): counted as unknown",
                    detail)
        params = {"detail": detail}
        state.emit(WarningEvent(message=t("usage_unusable", "en", **params),
                                code="usage_unusable", params=params))

    def _count_usage(self, turn: Turn, usage: Usage | None,
                     estimated_tokens: int | None = None, *,
                     reported_cost: float | None = None) -> None:
        state = self.state
        spending = state.spending
        turn.usage = state.meter.record_call(turn.usage, usage, spending.price,
                                             estimated_tokens=estimated_tokens,
                                             reported_cost=reported_cost)
        turn.spend.add(spending.call(usage, reported_cost))
        state.emit(TokenUpdateEvent(current=self._turn_total(turn.usage),
                                    context=state.meter.context))

    def _turn_total(self, own: TurnUsage) -> TurnUsage:
        """The turn's figures as ``token_update`` shows them: this session's own calls
        plus its sub-agents' (the split is ``subagent_usage``), and the session's cost so
        far."""
        crew = self.deps.crew
        return self.state.spending.turn_total(own, crew.turn_usage if crew.runs else None,
                                              self.deps.workspace.provider.price)

    def _over_budget(self, turn: Turn, *, answered: bool = False) -> bool:
        """The budgets after a call (:meth:`Spending.over_budget`); True once one is
        reached, which marks the turn to end with ``stop_reason="budget"``. ``answered``:
        the call gave the turn's whole answer, so nothing is cut."""
        if not self.state.spending.over_budget(self.deps.workspace.agent, turn.spend,
                                               self.deps.crew.turn_usage,
                                               answered=answered):
            return False
        turn.budget_stop = True
        return True

    # --- compaction -------------------------------------------------------------------
    async def compact(self) -> CompactionEvent | None:
        """Summarise older turns now (between turns): see ``AgentSession.compact``."""
        state = self.state
        if state.turn is not None:
            raise RuntimeError("compact() runs between turns; during a turn the session "
                               "compacts by itself when the context is nearly full")
        if state.compacting:
            raise RuntimeError("compact() is already running")
        state.compacting = True
        try:
            await self._learn_window()
            state.spending.price = self.deps.workspace.provider.price
            done = await self._compact(None)
            if done is not None:
                state.save_record()  # the session's cost now includes the summary
            return done
        finally:
            state.compacting = False

    async def _compact(self, turn: Turn | None) -> CompactionEvent | None:
        state, place = self.state, self.deps.workspace
        history, meter, spending = state.history, state.meter, state.spending
        tracer = turn.tracer if turn is not None else self.deps.tracer()
        with tracer.compaction() as span:
            done = await compact_view(place.provider, history.view,
                                      keep_turns=place.agent.keep_recent_turns,
                                      plan=state.todo.format_for_injection(),
                                      # What the model would read now, results
                                      # appended since the last call included.
                                      tokens_before=meter.expected_tokens,
                                      after_message=len(history.messages))
            figures: dict[str, Any] = {"neta_nb.compaction.folded": 0} if done is None else {
                "neta_nb.compaction.folded": done.record.messages_folded,
                "neta_nb.compaction.tokens_before": done.record.tokens_before,
                "neta_nb.compaction.tokens_after": done.record.tokens_after}
            span.end(**figures)
        if done is None:
            return None
        record = done.record
        self._warn_unusable_usage(done.unusable_usage)
        record.cost_usd = spending.cost_of(record.usage)
        if turn is not None:
            turn.spend.add(record.cost_usd)
        history.set_view(done.view)
        state.compactions.append(record)
        state.saved.view(done.stored.model_copy(update={"compactions": state.compactions}))
        spending.summary(record.usage)
        current = meter.record_summary(turn.usage if turn else None, record.usage,
                                       spending.price, record.tokens_after)
        if turn is not None:
            turn.usage = current
        compaction = CompactionEvent(tokens_before=record.tokens_before,
                                     tokens_after=record.tokens_after,
                                     messages_folded=record.messages_folded)
        state.emit(compaction)
        # The context figure changes now, not at the next call.
        state.emit(TokenUpdateEvent(current=self._turn_total(current),
                                    context=meter.context))
        return compaction

    def _finish_interrupted(self, turn: Turn, why: Literal["cancelled", "interrupted", "error"],
                            error: str | None, usage: Usage | None = None, *,
                            trace: TraceRef | None = None) -> None:
        """Keep what streamed of an interrupted response and close the history so the
        next turn starts from a valid conversation."""
        state = self.state
        history = state.history
        turn.close_thinking(state.emit)
        if turn.assembler is not None:
            self._warn_unusable_usage(turn.assembler.unusable_usage)
            parts = turn.assembler.snapshot()
            counted = usage is not None  # the caller counts the usage it was given
            usage = usage or turn.assembler.usage  # e.g. what message_start reported
            message = Message.assistant(parts, interrupted=why, error=error, usage=usage,
                                        model=self.deps.workspace.provider.model_id,
                                        trace=trace,
                                        cost_usd=state.spending.cost_of(usage))
            turn.assembler = None
            turn.message = message
            history.append(message, replaces_draft=True)
            if not counted:
                # The call was made and may be billed: counted, its usage unknown when the
                # stream was cut before any was reported (never a known $0).
                self._count_usage(turn, usage)
        elif turn.message is not None and why in ("cancelled", "interrupted"):
            turn.message.metadata.interrupted = why
            history.changed(turn.message)
        self.deps.tools.close_unanswered(history.messages,
                                         "budget" if turn.budget_stop else why,
                                         turn.live_calls, turn.resolution)


def _unexpected(exc: Exception) -> ProviderError:
    """A provider failure that is not a ProviderError (a bug, an unmapped network error):
    reported the same way, as not worth retrying blindly."""
    log.exception("the model call failed unexpectedly")
    return ProviderError(f"The model call failed: {type(exc).__name__}: {exc}",
                         retryable=False)
