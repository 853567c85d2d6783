"""The live half of :mod:`.tracing` (the no-op half is :mod:`.spans`): spans made through
OpenTelemetry's API, imported only once an application uses OpenTelemetry (see
``tracing.turn_tracer``). Span names and attributes follow the GenAI semantic conventions;
nothing here may break a turn."""

from __future__ import annotations

import json
import logging
import time
from collections.abc import AsyncIterator, Iterable, Iterator
from contextlib import AbstractContextManager, contextmanager
from typing import TYPE_CHECKING, Any

from opentelemetry import context as otel_context
from opentelemetry import trace as otel
from opentelemetry.trace import Span, SpanKind, Status, StatusCode, Tracer, TracerProvider

from ...messages import (
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    TraceRef,
    Usage,
)
from .spans import NO_SPAN, UNTRACED, CallSpan, TurnTracer

if TYPE_CHECKING:
    from ...providers.base import ModelRequest, Provider, StreamEvent
    from ...tools import Tool

__all__ = ["tracer_for"]

log = logging.getLogger(__name__)

INSTRUMENTATION = "neta_nb"
"""The instrumentation scope of the spans (the tracer's name)."""


def tracer_for(provider: TracerProvider | None, content: bool) -> TurnTracer:
    """A turn's tracer through ``provider`` (``None``: the global one), or
    :data:`UNTRACED` when nobody listens (the API's default no-op or proxy provider)."""
    provider = provider or otel.get_tracer_provider()
    if isinstance(provider, (otel.ProxyTracerProvider, otel.NoOpTracerProvider)):
        return UNTRACED
    return _Tracing(provider.get_tracer(INSTRUMENTATION), content)


class _Span:
    """A live span and the ids the cards keep. Nothing here may break a turn: a failing
    tracer or span processor (the user's code) costs the trace, never the answer."""

    __slots__ = ("ref", "span", "started")

    def __init__(self, span: Span) -> None:
        self.span = span
        context = span.get_span_context()
        # Ids only for a span that is recorded: a sampled-out or disabled one (all-zero
        # ids) is nowhere to be looked up.
        self.ref: TraceRef | None = (
            TraceRef(trace_id=f"{context.trace_id:032x}", span_id=f"{context.span_id:016x}")
            if context.is_valid and span.is_recording() else None)
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

    def during(self, span: CallSpan) -> AbstractContextManager[None]:
        return _current(span if isinstance(span, _Span) else None)

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
