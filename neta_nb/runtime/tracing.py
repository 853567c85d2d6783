"""OpenTelemetry spans for what a session does: a turn (``invoke_agent``), each model call
(``chat``), each tool call (``execute_tool``, an MCP call nested as ``tools/call``), each
compaction; a sub-agent's turn nests under its ``delegate`` call. Names and attributes
follow the OpenTelemetry GenAI semantic conventions; what they do not name is under
``neta_nb.*``.

Nothing happens unless ``opentelemetry-api`` is installed *and* the application set a
tracer provider (``trace.set_tracer_provider`` or :func:`configure_tracing`): otherwise a
turn gets :data:`UNTRACED`, whose methods do nothing, and no span object is ever made.
Message contents (prompts, answers, tool arguments and results) go into spans only when
the user opts in — ``configure_tracing(capture_content=True)`` or the conventions'
``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT=true`` — since they can be sensitive.

Each span's ids are kept with what the user sees: a tool or skill card's execution and an
assistant message carry a :class:`~neta_nb.messages.TraceRef`, so a card can copy the id
to look the call up in Jaeger, Tempo, Honeycomb, Logfire or Langfuse.
"""

from __future__ import annotations

import logging
import os
import sys
from collections.abc import AsyncIterator
from contextlib import AbstractContextManager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from ..messages import Message, TraceRef, Usage

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

    from ..providers.base import ModelRequest, Provider, StreamEvent
    from ..tools import Tool

__all__ = ["NO_SPAN", "UNTRACED", "CallSpan", "TurnTracer", "configure_tracing", "turn_tracer"]

log = logging.getLogger(__name__)

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"
INSTRUMENTATION = "neta_nb"

_provider: TracerProvider | None = None
_capture_content: bool | None = None


def configure_tracing(*, tracer_provider: TracerProvider | None = None,
                      capture_content: bool | None = None) -> None:
    """Where spans go and what they hold. ``tracer_provider``: this one instead of the
    global provider (``None``: the global one). ``capture_content``: put prompts, answers,
    tool arguments and results in spans (``None``: as the environment variable
    ``OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT`` says; off when unset)."""
    global _provider, _capture_content
    _provider, _capture_content = tracer_provider, capture_content


def _content_captured() -> bool:
    if _capture_content is not None:
        return _capture_content
    return os.environ.get(CONTENT_ENV, "").strip().lower() in ("1", "true", "yes")


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


def turn_tracer() -> TurnTracer:
    """The tracer for a turn starting now: :data:`UNTRACED` unless a tracer provider is
    set (asked per turn, so one set later counts)."""
    if _provider is None and "opentelemetry.trace" not in sys.modules:
        return UNTRACED  # nobody imported OpenTelemetry, so nobody set a provider
    # The optional dependency, imported only once the application uses OpenTelemetry:
    # a session that is not traced pays nothing for it, not even the import.
    from . import otel_spans

    try:
        return otel_spans.tracer_for(_provider, _content_captured())
    except Exception:
        # A provider that fails to hand out a tracer (or a tracer given where a provider
        # belongs): this turn is not traced, and runs.
        log.warning("tracing is off for this turn: the tracer "
                    "provider failed", exc_info=True)
        return UNTRACED


