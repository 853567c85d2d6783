"""What the session loop reports its spans to: :class:`TurnTracer`, whose base class is
:data:`UNTRACED` (every method does nothing), and :class:`CallSpan`, one call's span.
OpenTelemetry's spans (:mod:`.otel_spans`, made only once an application uses
OpenTelemetry) subclass these; :func:`~neta_nb.runtime.tracing.tracing.turn_tracer` says which a
turn gets."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from ...messages import Message, TraceRef, Usage

if TYPE_CHECKING:
    from ...providers.base import ModelRequest, Provider, StreamEvent
    from ...tools import Tool

__all__ = ["NO_SPAN", "NO_SPAN_CONTEXT", "UNTRACED", "CallSpan", "TurnTracer"]


class CallSpan(Protocol):
    """One model or tool call's span, as the loop reports to it."""

    ref: TraceRef | None

    def end(self, *, error: str | None = None, **attributes: Any) -> None: ...


class _NoSpan:
    ref: TraceRef | None = None

    def end(self, *, error: str | None = None, **attributes: Any) -> None:
        pass


NO_SPAN = _NoSpan()


class TurnTracer:
    """The spans of one turn. This base class is :data:`UNTRACED`: every method does
    nothing (its context managers are shared null ones, nothing is made per call), so the
    loop calls them without asking whether tracing is on."""

    on = False
    """Spans are made: the hot paths skip the tracer's calls altogether when not."""
    content = False

    def turn(self, agent: str, session_id: str,
             provider: Provider) -> AbstractContextManager[None]:
        return _NOTHING

    def end_turn(self, stop_reason: str) -> None:
        pass

    def chat(self, provider: Provider, request: ModelRequest) -> CallSpan:
        return NO_SPAN

    def timed(self, span: CallSpan, stream: AsyncIterator[StreamEvent],
              ) -> AsyncIterator[StreamEvent]:
        return stream

    def end_chat(self, span: CallSpan, message: Message | None, *, error: str | None = None,
                 usage: Usage | None = None) -> None:
        pass

    def tool(self, call_id: str, name: str, tool: Tool | None,
             args: dict[str, Any]) -> AbstractContextManager[CallSpan]:
        return NO_SPAN_CONTEXT

    def approval(self, span: CallSpan, allowed: bool, waited: float) -> None:
        pass

    def mcp_call(self, tool: Tool) -> AbstractContextManager[None]:
        return _NOTHING

    def during(self, span: CallSpan) -> AbstractContextManager[None]:
        """``span`` is the current span inside (what a provider's own instrumentation
        makes while streaming nests under the model call)."""
        return _NOTHING

    def compaction(self) -> AbstractContextManager[CallSpan]:
        return NO_SPAN_CONTEXT


_NOTHING: AbstractContextManager[None] = nullcontext()
NO_SPAN_CONTEXT: AbstractContextManager[CallSpan] = nullcontext(NO_SPAN)
UNTRACED = TurnTracer()
