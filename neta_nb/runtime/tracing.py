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

import json
import logging
import os
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager, nullcontext
from typing import TYPE_CHECKING, Any, Protocol

from ..messages import (
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    TraceRef,
    Usage,
)

try:  # the optional extra: neta-nb[otel]
    from opentelemetry import context as otel_context
    from opentelemetry import trace as otel
    from opentelemetry.trace import SpanKind, Status, StatusCode
except ImportError:  # pragma: no cover - exercised only without the extra
    otel = None  # type: ignore[assignment]

if TYPE_CHECKING:
    from opentelemetry.trace import Span, Tracer, TracerProvider

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
    if otel is None:
        raise ImportError("Tracing needs OpenTelemetry: pip install 'neta-nb[otel]'")
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

    def compaction(self) -> AbstractContextManager[CallSpan]:
        return NO_SPAN_CONTEXT


_NOTHING: AbstractContextManager[None] = nullcontext()
NO_SPAN_CONTEXT: AbstractContextManager[CallSpan] = nullcontext(NO_SPAN)
UNTRACED = TurnTracer()


def turn_tracer() -> TurnTracer:
    """The tracer for a turn starting now: :data:`UNTRACED` unless OpenTelemetry is
    installed and a tracer provider is set (asked per turn, so one set later counts)."""
    if otel is None:
        return UNTRACED
    provider = _provider or otel.get_tracer_provider()
    if isinstance(provider, (otel.ProxyTracerProvider, otel.NoOpTracerProvider)):
        return UNTRACED  # nobody listens: make no spans at all
    return _Tracing(provider.get_tracer(INSTRUMENTATION), _content_captured())


class _Span:
    """A live span and the ids the cards keep. Nothing here may break a turn: a failing
    tracer or span processor (the user's code) costs the trace, never the answer."""

    __slots__ = ("ref", "span", "started")

    def __init__(self, span: Span) -> None:
        self.span = span
        context = span.get_span_context()
        self.ref: TraceRef | None = TraceRef(trace_id=f"{context.trace_id:032x}",
                                             span_id=f"{context.span_id:016x}")
        self.started = time.monotonic()

    def set(self, key: str, value: Any) -> None:
        try:
            self.span.set_attribute(key, value)
        except Exception:
            _failed()

    def end(self, *, error: str | None = None, **attributes: Any) -> None:
        span = self.span
        try:
            if not span.is_recording():
                return
            span.set_attributes({k: v for k, v in attributes.items() if v is not None})
            if error is not None:
                span.set_attribute("error.type", error)
                span.set_status(Status(StatusCode.ERROR, error))
            span.end()
        except Exception:
            _failed()


def _failed() -> None:
    log.warning("tracing failed; the turn goes on without this span", exc_info=True)


@contextmanager
def _current(span: _Span | None) -> Iterator[None]:
    """``span`` is the current span inside: what starts there nests under it (a task or
    a thread started there inherits the context)."""
    token = None
    if span is not None:
        try:
            token = otel_context.attach(otel.set_span_in_context(span.span))
        except Exception:
            _failed()
    try:
        yield
    finally:
        if token is not None:
            otel_context.detach(token)  # logs, never raises


def _usage_attributes(usage: Usage) -> dict[str, int]:
    return {"gen_ai.usage.input_tokens": usage.input_tokens,
            "gen_ai.usage.output_tokens": usage.output_tokens,
            "gen_ai.usage.cache_read.input_tokens": usage.cache_read_tokens,
            "gen_ai.usage.cache_creation.input_tokens": usage.cache_write_tokens,
            "gen_ai.usage.reasoning.output_tokens": usage.thinking_tokens}


def _part_json(part: Part) -> dict[str, Any]:
    if isinstance(part, TextPart):
        return {"type": "text", "content": part.text}
    if isinstance(part, ThinkingPart):
        return {"type": "reasoning", "content": part.text}
    if isinstance(part, ToolCallPart):
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": part.args}
    if isinstance(part, ToolResultPart):
        return {"type": "tool_call_response", "id": part.tool_call_id,
                "response": part.content}
    return {"type": part.type}  # images and documents: named, not copied into a span


def _messages_json(messages: Iterable[Message]) -> str:
    """Messages as the conventions' ``gen_ai.*.messages`` JSON: role and typed parts."""
    out = [{"role": "tool" if message.role == "tool" else message.role,
            "parts": [_part_json(part) for part in message.parts]} for message in messages]
    return json.dumps(out, ensure_ascii=False, default=str)


class _Tracing(TurnTracer):
    """Spans through an OpenTelemetry tracer (see the module's docstring)."""

    on = True

    def __init__(self, tracer: Tracer, content: bool) -> None:
        self._tracer = tracer
        self.content = content
        self._turn: _Span | None = None
        self._usage = Usage()

    def _start(self, name: str, kind: SpanKind, attributes: dict[str, Any]) -> _Span | None:
        try:
            return _Span(self._tracer.start_span(name, kind=kind, attributes=attributes))
        except Exception:
            _failed()
            return None

    @contextmanager
    def turn(self, agent: str, session_id: str, provider: Provider) -> Iterator[None]:
        span = self._turn = self._start(f"invoke_agent {agent}", SpanKind.INTERNAL, {
            "gen_ai.operation.name": "invoke_agent", "gen_ai.agent.name": agent,
            "gen_ai.conversation.id": session_id, "gen_ai.provider.name": provider.supplier,
            "gen_ai.request.model": provider.model})
        # Current while the turn runs: its calls, and a sub-agent's turn started by a
        # `delegate` call, nest under it by context.
        try:
            with _current(span):
                yield
        finally:
            if span is not None:
                span.end()  # already ended by end_turn, unless the turn broke off

    def end_turn(self, stop_reason: str) -> None:
        """The turn's span ends with its own calls' usage (a sub-agent's is on its own
        turn's span, nested under this one)."""
        if self._turn is not None:
            self._turn.end(error="error" if stop_reason == "error" else None,
                           **{"neta_nb.stop_reason": stop_reason,
                              **_usage_attributes(self._usage)})

    def chat(self, provider: Provider, request: ModelRequest) -> CallSpan:
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "chat", "gen_ai.provider.name": provider.supplier,
            "gen_ai.request.model": provider.model,
            "neta_nb.thinking_level": str(request.think_level),
            "neta_nb.tools_offered": len(request.tools)}
        if self.content:
            attributes["gen_ai.system_instructions"] = json.dumps(
                [{"type": "text", "content": request.system_prompt}], ensure_ascii=False)
            attributes["gen_ai.input.messages"] = _messages_json(request.messages)
        return self._start(f"chat {provider.model}", SpanKind.CLIENT, attributes) or NO_SPAN

    async def timed(self, span: CallSpan, stream: AsyncIterator[StreamEvent],
                    ) -> AsyncIterator[StreamEvent]:
        """``stream``, noting on ``span`` when its first event arrived."""
        first = isinstance(span, _Span)
        async for event in stream:
            if first and isinstance(span, _Span):
                first = False
                span.set("neta_nb.time_to_first_token", time.monotonic() - span.started)
            yield event

    def end_chat(self, span: CallSpan, message: Message | None, *, error: str | None = None,
                 usage: Usage | None = None) -> None:
        usage = usage or (message.metadata.usage if message is not None else None)
        attributes: dict[str, Any] = {}
        if usage is not None:
            self._usage = self._usage + usage
            attributes.update(_usage_attributes(usage))
        if message is not None:
            if message.metadata.stop_reason:
                attributes["gen_ai.response.finish_reasons"] = [message.metadata.stop_reason]
            attributes["neta_nb.tool_calls"] = len(message.tool_calls)
            if self.content:
                attributes["gen_ai.output.messages"] = _messages_json([message])
            message.metadata.trace = span.ref
        span.end(error=error, **attributes)

    @contextmanager
    def tool(self, call_id: str, name: str, tool: Tool | None, args: dict[str, Any],
             ) -> Iterator[CallSpan]:
        remote = getattr(tool, "remote_name", None)  # an MCP server's tool (tools.mcp)
        attributes: dict[str, Any] = {
            "gen_ai.operation.name": "execute_tool", "gen_ai.tool.name": name,
            "gen_ai.tool.call.id": call_id,
            "gen_ai.tool.type": "extension" if remote else "function",
            "neta_nb.tool.visibility": tool.visibility if tool is not None else "unknown"}
        if tool is not None and tool.description:
            attributes["gen_ai.tool.description"] = tool.description[:1000]
        if self.content:
            attributes["gen_ai.tool.call.arguments"] = json.dumps(args, ensure_ascii=False,
                                                                  default=str)
        span = self._start(f"execute_tool {name}", SpanKind.INTERNAL, attributes)
        try:
            with _current(span):
                yield span or NO_SPAN
        finally:
            if span is not None:
                span.end(error="cancelled")  # no-op when the runner ended it

    def approval(self, span: CallSpan, allowed: bool, waited: float) -> None:
        if isinstance(span, _Span):
            span.set("neta_nb.approval.decision", "allowed" if allowed else "rejected")
            span.set("neta_nb.approval.wait", waited)

    @contextmanager
    def mcp_call(self, tool: Tool) -> Iterator[None]:
        remote = getattr(tool, "remote_name", None)
        span = None if not remote else self._start(f"tools/call {remote}", SpanKind.CLIENT, {
            "mcp.method.name": "tools/call", "gen_ai.tool.name": remote,
            "gen_ai.operation.name": "execute_tool",
            "neta_nb.mcp.server": str(getattr(tool, "server", ""))})
        error: str | None = None
        try:
            with _current(span):
                yield
        except BaseException as exc:
            error = type(exc).__name__
            raise
        finally:
            if span is not None:
                span.end(error=error)

    @contextmanager
    def compaction(self) -> Iterator[CallSpan]:
        span = self._start("neta_nb.compaction", SpanKind.INTERNAL, {})
        try:
            with _current(span):
                yield span or NO_SPAN
        finally:
            if span is not None:
                span.end(error="failed")  # no-op when it ended with its figures
