"""Turn: everything that lives for one turn of a session, and the streaming of its model
responses into events.

A session holds one :class:`Turn` from ``start()`` (or ``run()``) to the turn's ``done``
event and drops it whole afterwards, so no turn-scoped field is ever reset by hand.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from ...encodable import encodable, encodable_value
from ...events import Event, ThinkingDoneEvent, TurnUsage, thinking_delta_event, token_event
from ...messages import Message
from ...providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ResponseAssembler,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
)
from ...tools.resolution.resolver import ToolResolution
from ..tracing.tracing import UNTRACED, CallSpan, TurnTracer
from .spending import Spend

__all__ = ["DRAFT_INTERVAL", "INTERRUPTED_LINE", "Turn", "shown_as_one_line"]

DRAFT_INTERVAL = 0.5
"""Seconds between checkpoints of the message being streamed (and at most that long
after a delta): a dying kernel loses at most this much of an answer."""


INTERRUPTED_LINE = ("Interrupted: the turn was stopped; what it did is kept in the chat and "
                    "the session is ready for the next turn.")


def shown_as_one_line(cancelled: asyncio.CancelledError) -> asyncio.CancelledError:
    """``cancelled`` itself — asyncio (``timeout()``, ``TaskGroup``, ``wait_for``) knows a
    cancellation by its identity — marked so that IPython shows it, when it ends a cell
    (Kernel ▸ Interrupt while the cell awaits ``run()``), as one line in plain words
    instead of a traceback through the library."""
    cancelled._render_traceback_ = _interrupted_lines  # type: ignore[attr-defined]
    return cancelled


def _interrupted_lines() -> list[str]:
    return [INTERRUPTED_LINE]


@dataclass(slots=True, eq=False)
class Turn:
    """The state of one turn."""

    prompt_id: str = ""
    """The id of the message that began the turn."""
    task: asyncio.Task[Any] | None = None
    """Whatever runs the turn: the task ``start()`` made, or the caller of ``run()``."""
    begun: bool = False
    """The turn's code has started (a ``start()``\\ ed task may not have run yet)."""
    cancel_requested: bool = False
    interrupted: bool = False
    """A kernel interrupt (KeyboardInterrupt) stopped the turn, not the Stop button."""
    live_calls: dict[str, object] = field(default_factory=dict)
    """Tool calls running now, by id (see ToolRunner.run): only they may emit events."""
    assembler: ResponseAssembler | None = None
    """The response being streamed, until it is complete."""
    message: Message | None = None
    """The latest assistant message once complete."""
    thinking_open: bool = False
    usage: TurnUsage = field(default_factory=TurnUsage)
    draft_timer: asyncio.TimerHandle | None = None
    compaction_failed: bool = False
    """A compaction failed this turn: not retried before every further call."""
    stop_reason: str = "end_turn"
    """What the closing ``done`` event will say."""
    tracer: TurnTracer = UNTRACED
    """The turn's spans (see ``tracing``); :data:`UNTRACED` when nobody collects them."""
    spend: Spend = field(default_factory=Spend)
    """What this session's own calls of the turn cost (summaries included)."""
    budget_stop: bool = False
    """A budget was reached: the turn ends (or was stopped) with ``stop_reason="budget"``."""
    resolution: ToolResolution | None = None
    """The tools the latest model call was made with: the cards of calls closed unrun."""

    @property
    def streaming(self) -> Message | None:
        """The answer as far as it has streamed, or ``None`` between model calls."""
        assembler = self.assembler
        return None if assembler is None else Message.assistant(assembler.snapshot())

    def close_thinking(self, emit: Callable[[Event], None]) -> None:
        if self.thinking_open:
            self.thinking_open = False
            emit(ThinkingDoneEvent())

    async def stream(self, provider: Provider, request: ModelRequest,
                     emit: Callable[[Event], None],
                     checkpoint: Callable[[Message], None] | None,
                     span: CallSpan | None = None) -> ResponseAssembler:
        """Stream one response, emitting thinking and text as they arrive, and return the
        complete assembler. ``checkpoint`` (if any) gets the answer so far at most every
        :data:`DRAFT_INTERVAL` while deltas arrive. A stream without its final event
        raises :class:`ProviderError` with what arrived. ``span``: the call's span, told
        when the first event came (traced turns only: the untraced stream is not
        wrapped)."""
        assembler = self.assembler = ResponseAssembler()
        self.message = None
        loop = asyncio.get_running_loop()
        stream = provider.stream(request)
        if span is not None:
            stream = self.tracer.timed(span, stream)
        async for event in stream:
            # Most events are deltas: test those first and keep the path short. Text is
            # made encodable before anything keeps it (see neta_nb.encodable).
            if type(event) is TextDelta:
                if not event.text.isascii():
                    event.text = encodable(event.text)
                assembler.feed(event)
                if self.thinking_open:
                    self.thinking_open = False
                    emit(ThinkingDoneEvent())
                emit(token_event(event.text))
            elif type(event) is ThinkingDelta:
                if not event.text.isascii():
                    event.text = encodable(event.text)
                assembler.feed(event)
                self.thinking_open = True
                emit(thinking_delta_event(event.text))
            else:
                if isinstance(event, ToolCallReady):
                    _clean_call(event)
                assembler.feed(event)
                if self.thinking_open and isinstance(event, (ThinkingEnd, ToolCallReady,
                                                             StreamDone)):
                    self.thinking_open = False
                    emit(ThinkingDoneEvent())
            if self.draft_timer is None and checkpoint is not None:
                self.draft_timer = loop.call_later(DRAFT_INTERVAL, self._checkpoint,
                                                   checkpoint)
        self.close_thinking(emit)
        self.stop_draft_timer()
        if assembler.stop_reason is None:
            # The provider contract says a stream ends with StreamDone; treat anything
            # else as a cut stream rather than trusting a possibly truncated answer.
            raise ProviderError("the model's response ended without its final event",
                                retryable=True, partial=assembler.snapshot(),
                                usage=assembler.usage)
        return assembler

    def checkpoint_soon(self, checkpoint: Callable[[Message], None]) -> None:
        """Give ``checkpoint`` the answer streamed so far within :data:`DRAFT_INTERVAL`
        (unless one is due already): what :meth:`stream` does as deltas arrive, for a
        turn whose answer streams from elsewhere (an outside agent's)."""
        if self.draft_timer is None:
            self.draft_timer = asyncio.get_running_loop().call_later(
                DRAFT_INTERVAL, self._checkpoint, checkpoint)

    def _checkpoint(self, checkpoint: Callable[[Message], None]) -> None:
        self.draft_timer = None
        if self.assembler is not None:
            checkpoint(Message.assistant(self.assembler.snapshot()))

    def stop_draft_timer(self) -> None:
        if self.draft_timer is not None:
            self.draft_timer.cancel()
            self.draft_timer = None


def _clean_call(call: ToolCallReady) -> None:
    call.name = encodable(call.name)
    call.args = encodable_value(call.args)
    if call.raw_args is not None:
        call.raw_args = encodable(call.raw_args)
