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
from typing import TYPE_CHECKING

from .spans import NO_SPAN, UNTRACED, CallSpan, TurnTracer

if TYPE_CHECKING:
    from opentelemetry.trace import TracerProvider

__all__ = ["NO_SPAN", "UNTRACED", "CallSpan", "TurnTracer", "configure_tracing", "turn_tracer"]

log = logging.getLogger(__name__)

CONTENT_ENV = "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT"

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


def turn_tracer() -> TurnTracer:
    """The tracer for a turn starting now: :data:`UNTRACED` unless a tracer provider is
    set (asked per turn, so one set later counts)."""
    if _provider is None and "opentelemetry.trace" not in sys.modules:
        return UNTRACED  # nobody imported OpenTelemetry, so nobody set a provider
    # The optional dependency, imported only once the application uses OpenTelemetry:
    # a session that is not traced pays nothing for it, not even the import. It builds on
    # .spans, not on this module.
    from . import otel_spans

    try:
        return otel_spans.tracer_for(_provider, _content_captured())
    except Exception:
        # A provider that fails to hand out a tracer (or a tracer given where a provider
        # belongs): this turn is not traced, and runs.
        log.warning("tracing is off for this turn: the tracer "
                    "provider failed", exc_info=True)
        return UNTRACED
