"""AnthropicProvider against the real ``anthropic`` SDK and a local SSE server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from neta_nb.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolDefinition, Usage
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.base import (
    ModelRequest,
    ProviderError,
    ResponseAssembler,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)

from .conftest import SECRET_KEY
from .sse_server import (
    AnthropicStream,
    ScriptedHTTPResponse,
    SSEServer,
    anthropic_error_body,
    error_response,
)

BUDGET_MODEL = "claude-sonnet-4-20250514"
ADAPTIVE_MODEL = "claude-sonnet-4-6"
READ_FILE = ToolDefinition(name="read_file", description="Read a file.",
                           parameters={"type": "object",
                                       "properties": {"path": {"type": "string"}}})


def provider(server: SSEServer, model: str = ADAPTIVE_MODEL, **options: Any) -> AnthropicProvider:
    options.setdefault("max_retries", 2)
    return AnthropicProvider(model, api_key=SECRET_KEY, base_url=server.base_url, **options)


def request(*messages: Message, level: str = "off", **options: Any) -> ModelRequest:
    return ModelRequest(system_prompt="You are terse.",
                        messages=list(messages) or [Message.user("hi")], think_level=level,
                        **options)


async def collect(source: AnthropicProvider, req: ModelRequest) -> list[StreamEvent]:
    return [event async for event in source.stream(req)]


async def test_streams_thinking_text_and_parallel_tool_calls_split_byte_by_byte(
        sse_server: SSEServer) -> None:
    stream = AnthropicStream(input_tokens=120, cache_read=30, cache_write=7, pad_json=True)
    stream.raw(": keep-alive\n\n")
    stream.thinking(["Ich überlege ", "kurz… 🤔"], signature="sig-1")
    stream.raw(": keep-alive\n\n")
    stream.text(["Hé", "llo ✓"])
    stream.tool_use("toolu_1", "read_file", ['{"pa', 'th": "é.txt"', "}"])
    stream.tool_use("toolu_2", "read_file", ['{"path": "b.txt"}'])
    stream.event("ping", {"type": "ping"})
    stream.finish("tool_use", output_tokens=77, thinking_tokens=21)
    # One byte per TCP write: events, JSON and multi-byte characters are all cut.
    sse_server.add(stream.response(split=1, chunk_delay=0))

    events = await collect(provider(sse_server), request())

    assert events == [
        UsageUpdate(Usage(input_tokens=120, output_tokens=1, cache_read_tokens=30,
                          cache_write_tokens=7)),
        ThinkingDelta("Ich überlege "), ThinkingDelta("kurz… 🤔"),
        ThinkingEnd(signature="sig-1"),
        TextDelta("Hé"), TextDelta("llo ✓"),
        ToolCallReady(id="toolu_1", name="read_file", args={"path": "é.txt"}),
        ToolCallReady(id="toolu_2", name="read_file", args={"path": "b.txt"}),
        UsageUpdate(Usage(input_tokens=120, output_tokens=77, cache_read_tokens=30,
                          cache_write_tokens=7, thinking_tokens=21)),
        StreamDone("tool_use"),
    ]
    assembler = ResponseAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.parts == [
        ThinkingPart(text="Ich überlege kurz… 🤔", signature="sig-1"),
        TextPart(text="Héllo ✓"),
        ToolCallPart(id="toolu_1", name="read_file", args={"path": "é.txt"}),
        ToolCallPart(id="toolu_2", name="read_file", args={"path": "b.txt"}),
    ]


async def test_redacted_thinking_and_omitted_thinking_text(sse_server: SSEServer) -> None:
    stream = AnthropicStream().redacted_thinking("ENCRYPTED==").thinking([], "sig-only")
    stream.text(["ok"]).finish()
    sse_server.add(stream.response())

    events = await collect(provider(sse_server), request())

    assert events[1:4] == [ThinkingEnd(redacted_data="ENCRYPTED=="),
                           ThinkingEnd(signature="sig-only"), TextDelta("ok")]
    assert events[-1] == StreamDone("end_turn")


@pytest.mark.parametrize(("pieces", "raw"), [
    (['{"path": "a.tx'], '{"path": "a.tx'),
    (['["a", ', '"b"]'], '["a", "b"]'),
])
async def test_tool_call_with_invalid_or_non_object_json_keeps_the_raw_text(
        sse_server: SSEServer, pieces: list[str], raw: str) -> None:
    sse_server.add(AnthropicStream().tool_use("toolu_9", "read_file", pieces)
                   .finish("tool_use").response())

    events = await collect(provider(sse_server), request())

    assert ToolCallReady(id="toolu_9", name="read_file", args={}, raw_args=raw) in events


async def test_tool_call_without_arguments_has_empty_args(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().tool_use("toolu_3", "profile_table", [])
                   .finish("tool_use").response())

    events = await collect(provider(sse_server), request())

    assert ToolCallReady(id="toolu_3", name="profile_table", args={}) in events


@pytest.mark.parametrize(("wire_reason", "normalised"), [
    ("end_turn", "end_turn"), ("stop_sequence", "end_turn"), ("max_tokens", "max_tokens"),
    ("refusal", "refusal"), ("pause_turn", "pause_turn"), ("tool_use", "tool_use"),
    ("model_context_window_exceeded", "max_tokens"),
])
async def test_stop_reasons_are_normalised(sse_server: SSEServer, wire_reason: str,
                                           normalised: str) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish(wire_reason).response())

    events = await collect(provider(sse_server), request())

    assert events[-1] == StreamDone(normalised)


# --- what is sent -----------------------------------------------------------------------


async def test_request_without_thinking(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response())

    await collect(provider(sse_server, BUDGET_MODEL, max_tokens=1000),
                  request(tools=[READ_FILE]))

    sent = sse_server.requests[0]
    assert sent.method == "POST"
    assert sent.path == "/v1/messages"
    assert sent.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert "anthropic-beta" not in sent.headers
    assert sent.json == {
        "model": BUDGET_MODEL, "max_tokens": 1000, "stream": True,
        "system": "You are terse.",
        "messages": [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
        "tools": [{"name": "read_file", "description": "Read a file.",
                   "input_schema": READ_FILE.parameters}],
    }


@pytest.mark.parametrize(("level", "budget"), [("minimal", 2000), ("low", 4000),
                                                ("medium", 8000), ("high", 16000)])
async def test_budget_thinking_request(sse_server: SSEServer, level: str, budget: int) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response())

    await collect(provider(sse_server, BUDGET_MODEL, max_tokens=4000), request(level=level))

    sent = sse_server.requests[0]
    assert sent.json["thinking"] == {"type": "enabled", "budget_tokens": budget}
    assert sent.json["max_tokens"] == budget + 4096  # the floor wins over 4000
    assert sent.json["temperature"] == 1.0
    assert sent.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


async def test_budget_thinking_keeps_a_larger_max_tokens(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response())

    await collect(provider(sse_server, BUDGET_MODEL, max_tokens=30000), request(level="low"))

    assert sse_server.requests[0].json["max_tokens"] == 30000


@pytest.mark.parametrize(("level", "effort"), [("low", "low"), ("high", "high"),
                                                ("adaptive", "medium")])
async def test_adaptive_thinking_request(sse_server: SSEServer, level: str, effort: str) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response())

    await collect(provider(sse_server, ADAPTIVE_MODEL), request(level=level))

    sent = sse_server.requests[0]
    assert sent.json["thinking"] == {"type": "adaptive"}
    assert sent.json["output_config"] == {"effort": effort}
    assert "temperature" not in sent.json
    assert sent.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


async def test_thinking_level_change_changes_the_next_request(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response(),
                   AnthropicStream().text(["y"]).finish().response())
    source = provider(sse_server, BUDGET_MODEL)

    await collect(source, request(level="high"))
    await collect(source, request(level="off"))

    first, second = (r.json for r in sse_server.requests)
    assert first["thinking"]["budget_tokens"] == 16000
    assert "thinking" not in second
    assert "temperature" not in second


async def test_history_is_mapped_to_blocks(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["x"]).finish().response())
    history = [
        Message.user("read both"),
        Message.assistant([
            ThinkingPart(text="plan", signature="sig-a"),
            ThinkingPart(text="", redacted_data="REDACTED"),
            ThinkingPart(text="unsigned, from another provider"),
            TextPart(text=""),
            TextPart(text="Reading."),
            ToolCallPart(id="t1", name="read_file", args={"path": "a"}),
            ToolCallPart(id="t2", name="read_file", args={}, raw_args="{bad"),
        ]),
        Message.tool_result("t1", "read_file", "A"),
        Message.tool_result("t2", "read_file", "invalid JSON", is_error=True),
        Message.user("and now?"),
        Message.assistant([ThinkingPart(text="cut before its signature")]),
        Message.user("hello?"),
    ]

    await collect(provider(sse_server), request(*history))

    assert sse_server.requests[0].json["messages"] == [
        {"role": "user", "content": [{"type": "text", "text": "read both"}]},
        {"role": "assistant", "content": [
            {"type": "thinking", "thinking": "plan", "signature": "sig-a"},
            {"type": "redacted_thinking", "data": "REDACTED"},
            {"type": "text", "text": "Reading."},
            {"type": "tool_use", "id": "t1", "name": "read_file", "input": {"path": "a"}},
            {"type": "tool_use", "id": "t2", "name": "read_file", "input": {}},
        ]},
        {"role": "user", "content": [
            {"type": "tool_result", "tool_use_id": "t1", "content": "A"},
            {"type": "tool_result", "tool_use_id": "t2", "content": "invalid JSON",
             "is_error": True},
            {"type": "text", "text": "and now?"},
            # The assistant message had only unsigned thinking: dropped, so the prompts join.
            {"type": "text", "text": "hello?"},
        ]},
    ]


# --- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "error_type", "headers"), [
    (429, "rate_limit_error", {"retry-after": "0.01"}),
    (529, "overloaded_error", {"retry-after-ms": "10"}),
    (500, "api_error", {"retry-after-ms": "10"}),
])
async def test_retryable_status_is_retried_honouring_retry_after(
        sse_server: SSEServer, status: int, error_type: str, headers: dict[str, str],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="anthropic")
    sse_server.add(error_response(status, anthropic_error_body(error_type, "busy"),
                                  headers=headers),
                   AnthropicStream().text(["done"]).finish().response())

    events = await collect(provider(sse_server), request())

    assert TextDelta("done") in events
    assert len(sse_server.requests) == 2
    assert sse_server.requests[1].headers["x-stainless-retry-count"] == "1"
    # The SDK waited what the server asked for (10 ms), not its own backoff.
    assert "Retrying request to /v1/messages in 0.010000 seconds" in caplog.text


async def test_retries_exhausted_raise_a_retryable_error(sse_server: SSEServer) -> None:
    busy = anthropic_error_body("overloaded_error", "Overloaded")
    sse_server.add(*[error_response(529, busy, headers={"retry-after-ms": "1"})
                     for _ in range(3)])

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server, max_retries=2), request())

    assert caught.value.retryable is True
    assert caught.value.status_code == 529
    assert "Overloaded" in caught.value.message
    assert len(sse_server.requests) == 3


@pytest.mark.parametrize(("status", "error_type", "message"), [
    (401, "authentication_error", "invalid x-api-key"),
    (400, "invalid_request_error", "messages: text content blocks must be non-empty"),
])
async def test_auth_and_bad_request_fail_at_once_with_the_provider_message(
        sse_server: SSEServer, status: int, error_type: str, message: str) -> None:
    sse_server.add(error_response(status, anthropic_error_body(error_type, message)))

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is False
    assert caught.value.status_code == status
    assert message in caught.value.message
    assert len(sse_server.requests) == 1


async def test_error_event_mid_stream_keeps_the_partial_output(sse_server: SSEServer) -> None:
    stream = AnthropicStream().thinking(["hmm"], "sig-p")
    stream.event("content_block_start", {"type": "content_block_start", "index": 1,
                                         "content_block": {"type": "text", "text": ""}})
    stream.event("content_block_delta", {"type": "content_block_delta", "index": 1,
                                         "delta": {"type": "text_delta", "text": "Half an "}})
    stream.error("overloaded_error", "Overloaded")
    sse_server.add(stream.response())

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    error = caught.value
    assert error.retryable is True
    assert "Overloaded" in error.message
    assert error.partial == [ThinkingPart(text="hmm", signature="sig-p"),
                             TextPart(text="Half an ")]
    assert error.usage == Usage(input_tokens=25, output_tokens=1)
    assert len(sse_server.requests) == 1  # never retried silently once text was shown


async def test_dropped_connection_mid_stream(sse_server: SSEServer) -> None:
    stream = AnthropicStream().text(["Partial answer"]).finish()
    response = stream.response(ending="drop")
    response.chunks = response.chunks[:5]  # start, ping, block start, delta, block stop
    sse_server.add(response)

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is True
    assert caught.value.partial == [TextPart(text="Partial answer")]
    assert len(sse_server.requests) == 1


async def test_stream_without_message_stop(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["All but"]).finish(stop=False).response())

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is True
    assert "message_stop" in caught.value.message
    assert caught.value.partial == [TextPart(text="All but")]
    assert caught.value.usage == Usage(input_tokens=25, output_tokens=42)


async def test_connection_dropped_before_a_response_is_retried(sse_server: SSEServer) -> None:
    sse_server.add(ScriptedHTTPResponse(ending="drop_before_headers"),
                   AnthropicStream().text(["second try"]).finish().response())

    events = await collect(provider(sse_server), request())

    assert TextDelta("second try") in events
    assert len(sse_server.requests) == 2


async def test_cancel_stops_a_stream_waiting_for_data(sse_server: SSEServer) -> None:
    release = asyncio.Event()
    response = AnthropicStream().text(["first", "never"]).finish().response()
    response.hold_open = release
    sse_server.add(response)
    got_text = asyncio.Event()
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in provider(sse_server).stream(request()):
            seen.append(event)
            if isinstance(event, TextDelta):
                got_text.set()

    task = asyncio.create_task(consume())
    await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert TextDelta("never") not in seen


# --- keys ---------------------------------------------------------------------------------


async def test_key_never_appears_in_repr_logs_events_or_errors(
        sse_server: SSEServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    source = provider(sse_server)
    sse_server.add(AnthropicStream().text(["hi"]).finish().response(),
                   error_response(401, anthropic_error_body("authentication_error", "bad key")))

    events = await collect(source, request())
    with pytest.raises(ProviderError) as caught:
        await collect(source, request())

    assert sse_server.requests[0].headers["authorization"] == f"Bearer {SECRET_KEY}"  # it was used
    assert repr(source) == "AnthropicProvider('anthropic:claude-sonnet-4-6')"
    texts = [repr(source), str(source), repr(events), str(caught.value), repr(caught.value),
             caplog.text]
    assert caplog.text  # the SDK did log at DEBUG
    assert all(SECRET_KEY not in text for text in texts)


async def test_key_and_base_url_from_the_environment(
        sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_API_KEY", SECRET_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", sse_server.base_url)
    sse_server.add(AnthropicStream().text(["env"]).finish().response())

    events = await collect(AnthropicProvider(ADAPTIVE_MODEL), request())

    assert TextDelta("env") in events
    assert sse_server.requests[0].headers["authorization"] == f"Bearer {SECRET_KEY}"


def _usage_event(name: str, usage: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    if name == "message_start":
        return name, {"type": "message_start", "message": {
            "id": "msg_test", "type": "message", "role": "assistant", "model": "claude",
            "content": [], "stop_reason": None, "stop_sequence": None, "usage": usage}}
    return name, {"type": "message_delta", "usage": usage,
                  "delta": {"stop_reason": "end_turn", "stop_sequence": None}}


def _stream_with_usage(start: dict[str, Any], delta: dict[str, Any]) -> ScriptedHTTPResponse:
    stream = AnthropicStream()
    stream.wire.clear()  # message_start written by hand below
    stream.event(*_usage_event("message_start", start)).text(["x"])
    stream.event(*_usage_event("message_delta", delta))
    return stream.event("message_stop", {"type": "message_stop"}).response()


@pytest.mark.parametrize(("start", "delta", "unusable"), [
    ({"input_tokens": 25, "output_tokens": 1}, {"output_tokens": -1_000_000},
     "output_tokens=-1000000"),
    ({"input_tokens": -25, "output_tokens": 1}, {"output_tokens": 40}, "input_tokens=-25"),
    ({"input_tokens": "many", "output_tokens": 1}, {"output_tokens": 40},
     "input_tokens='many'"),
    ({"input_tokens": 25, "output_tokens": 1, "cache_read_input_tokens": -900},
     {"output_tokens": 40}, "cache_read_input_tokens=-900"),
    ({"input_tokens": 25, "output_tokens": 1},
     {"output_tokens": 40, "cache_creation_input_tokens": 2.5},
     "cache_creation_input_tokens=2.5"),
    ({"input_tokens": 25, "output_tokens": 1},
     {"output_tokens": 40, "output_tokens_details": {"thinking_tokens": -7}},
     "thinking_tokens=-7"),
])
async def test_usage_negative_or_not_a_number_is_unknown_never_a_credit(
        sse_server: SSEServer, start: dict[str, Any], delta: dict[str, Any],
        unusable: str) -> None:
    """From message_start or message_delta alike; once a report of the response was
    unusable, a later one that leaves counts out cannot make it known again."""
    sse_server.add(_stream_with_usage(start, delta))

    events = await collect(provider(sse_server), request())

    updates = [e for e in events if isinstance(e, UsageUpdate)]
    assert updates[-1] == UsageUpdate(None, unusable)
    assert all(update.usage is None or update.usage.output_tokens >= 0 for update in updates)
    assembler = ResponseAssembler()
    for event in events:
        assembler.feed(event)
    assert (assembler.usage, assembler.unusable_usage) == (None, unusable)


async def test_a_failed_stream_after_unusable_usage_carries_no_usage(
        sse_server: SSEServer) -> None:
    stream = AnthropicStream(input_tokens=-1_000_000).text(["half"])
    sse_server.add(stream.error("overloaded_error", "Overloaded").response())

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server, max_retries=0), request())

    assert caught.value.usage is None
