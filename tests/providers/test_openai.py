"""OpenAIProvider (OpenAI, DeepSeek, OpenAI-compatible) against the real ``openai`` SDK and
a local SSE server."""

from __future__ import annotations

import asyncio
import logging
from typing import Any

import pytest

from neta_nb.messages import Message, TextPart, ThinkingPart, ToolCallPart, ToolDefinition, Usage
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
from neta_nb.providers.openai import DEEPSEEK_BASE_URL, OpenAIProvider

from .conftest import SECRET_KEY
from .sse_server import (
    OpenAIStream,
    ScriptedHTTPResponse,
    SSEServer,
    error_response,
    openai_error_body,
)

LIST_FILES = ToolDefinition(name="list_files", description="List files.",
                            parameters={"type": "object",
                                        "properties": {"path": {"type": "string"}}})


def provider(server: SSEServer, model: str = "gpt-5", supplier: str = "openai",
             **options: Any) -> OpenAIProvider:
    options.setdefault("max_retries", 2)
    return OpenAIProvider(model, supplier=supplier, api_key=SECRET_KEY,
                          base_url=server.base_url, **options)


def request(*messages: Message, level: str = "off", **options: Any) -> ModelRequest:
    return ModelRequest(system_prompt="Be brief.",
                        messages=list(messages) or [Message.user("hi")], think_level=level,
                        **options)


async def collect(source: OpenAIProvider, req: ModelRequest) -> list[StreamEvent]:
    return [event async for event in source.stream(req)]


async def test_streams_reasoning_text_and_interleaved_parallel_tool_calls(
        sse_server: SSEServer) -> None:
    stream = OpenAIStream(model="deepseek-reasoner", pad_json=True)
    stream.raw(": keep-alive\n\n")
    stream.reasoning(["Der Nutzer ", "möchte… 🤔"])
    stream.text(["Schau", "en wir ✓"])
    stream.tool_call_start(0, "call_a", "list_files")
    stream.tool_call_start(1, "call_b", "read_file")
    stream.tool_call_args(0, '{"pa')
    stream.tool_call_args(1, '{"path": "ü.txt"}')
    stream.raw(": keep-alive\n\n")
    stream.tool_call_args(0, 'th": "."}')
    stream.finish("tool_calls")
    stream.usage(100, 40, cached_tokens=64, reasoning_tokens=12)
    stream.done()
    sse_server.add(stream.response(split=1, chunk_delay=0))

    events = await collect(provider(sse_server, "deepseek-reasoner", "deepseek"), request())

    assert events == [
        ThinkingDelta("Der Nutzer "), ThinkingDelta("möchte… 🤔"), ThinkingEnd(),
        TextDelta("Schau"), TextDelta("en wir ✓"),
        ToolCallReady(id="call_a", name="list_files", args={"path": "."}),
        ToolCallReady(id="call_b", name="read_file", args={"path": "ü.txt"}),
        UsageUpdate(Usage(input_tokens=36, output_tokens=40, cache_read_tokens=64,
                          thinking_tokens=12)),
        StreamDone("tool_use"),
    ]
    assembler = ResponseAssembler()
    for event in events:
        assembler.feed(event)
    assert assembler.parts == [
        ThinkingPart(text="Der Nutzer möchte… 🤔"), TextPart(text="Schauen wir ✓"),
        ToolCallPart(id="call_a", name="list_files", args={"path": "."}),
        ToolCallPart(id="call_b", name="read_file", args={"path": "ü.txt"}),
    ]


async def test_reasoning_field_used_by_other_servers_streams_as_thinking(
        sse_server: SSEServer) -> None:
    stream = OpenAIStream(model="gpt-oss:20b").reasoning(["step"], field_name="reasoning")
    sse_server.add(stream.text(["done"]).finish().done().response())

    events = await collect(provider(sse_server, "gpt-oss:20b", "openai-compatible"), request())

    assert events == [ThinkingDelta("step"), ThinkingEnd(), TextDelta("done"),
                      StreamDone("end_turn")]


async def test_deepseek_cache_fields_are_read(sse_server: SSEServer) -> None:
    stream = OpenAIStream(model="deepseek-chat").text(["x"]).finish()
    stream.data({"id": "c", "object": "chat.completion.chunk", "created": 1,
                 "model": "deepseek-chat", "choices": [],
                 "usage": {"prompt_tokens": 90, "completion_tokens": 5, "total_tokens": 95,
                           "prompt_cache_hit_tokens": 80, "prompt_cache_miss_tokens": 10}})
    sse_server.add(stream.done().response())

    events = await collect(provider(sse_server, "deepseek-chat", "deepseek"), request())

    assert UsageUpdate(Usage(input_tokens=10, output_tokens=5, cache_read_tokens=80)) in events


@pytest.mark.parametrize(("arguments", "raw"), [('{"path": ', '{"path": '), ("[1, 2]", "[1, 2]")])
async def test_tool_call_with_invalid_or_non_object_json_keeps_the_raw_text(
        sse_server: SSEServer, arguments: str, raw: str) -> None:
    stream = OpenAIStream().tool_call_start(0, "call_x", "list_files", arguments)
    sse_server.add(stream.finish("tool_calls").done().response())

    events = await collect(provider(sse_server), request())

    assert ToolCallReady(id="call_x", name="list_files", args={}, raw_args=raw) in events


@pytest.mark.parametrize(("finish_reason", "normalised"), [
    ("stop", "end_turn"), ("length", "max_tokens"), ("content_filter", "refusal"),
    ("tool_calls", "tool_use"),
])
async def test_finish_reasons_are_normalised(sse_server: SSEServer, finish_reason: str,
                                             normalised: str) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish(finish_reason).done().response())

    events = await collect(provider(sse_server), request())

    assert events[-1] == StreamDone(normalised)


# --- what is sent -----------------------------------------------------------------------


async def test_request_body(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())

    await collect(provider(sse_server, max_tokens=500), request(tools=[LIST_FILES]))

    sent = sse_server.requests[0]
    assert sent.path == "/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET_KEY}"
    assert sent.json == {
        "model": "gpt-5", "stream": True, "stream_options": {"include_usage": True},
        "max_completion_tokens": 500,
        "messages": [{"role": "system", "content": "Be brief."},
                     {"role": "user", "content": "hi"}],
        "tools": [{"type": "function", "function": {
            "name": "list_files", "description": "List files.",
            "parameters": LIST_FILES.parameters}}],
    }


@pytest.mark.parametrize(("supplier", "model", "level", "effort"), [
    ("openai", "gpt-5", "minimal", "minimal"),
    ("openai", "gpt-5", "high", "high"),
    ("openai", "o3", "low", "low"),
    ("openai", "o3", "adaptive", "medium"),
    ("deepseek", "deepseek-reasoner", "medium", "medium"),
    ("openai", "gpt-5", "off", None),
    ("openai", "gpt-4o", "high", None),
])
async def test_reasoning_effort_per_level(sse_server: SSEServer, supplier: str, model: str,
                                          level: str, effort: str | None) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())

    await collect(provider(sse_server, model, supplier), request(level=level))

    assert sse_server.requests[0].json.get("reasoning_effort") == effort


async def test_deepseek_uses_max_tokens(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())

    await collect(provider(sse_server, "deepseek-chat", "deepseek"), request(max_tokens=256))

    sent = sse_server.requests[0].json
    assert sent["max_tokens"] == 256
    assert "max_completion_tokens" not in sent


async def test_history_mapping(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())
    history = [
        Message.user("list"),
        Message.assistant([ThinkingPart(text="think"), TextPart(text="Listing."),
                           ToolCallPart(id="c1", name="list_files", args={"path": "é"}),
                           ToolCallPart(id="c2", name="list_files", raw_args="{oops")]),
        Message.tool_result("c1", "list_files", "a.txt"),
        Message.tool_result("c2", "list_files", "invalid arguments", is_error=True),
        Message.assistant([TextPart(text="Done.")]),
        Message.user("thanks"),
    ]

    await collect(provider(sse_server), request(*history))

    assert sse_server.requests[0].json["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "list"},
        {"role": "assistant", "content": "Listing.", "tool_calls": [
            {"id": "c1", "type": "function",
             "function": {"name": "list_files", "arguments": '{"path": "é"}'}},
            {"id": "c2", "type": "function",
             "function": {"name": "list_files", "arguments": "{oops"}}]},
        {"role": "tool", "tool_call_id": "c1", "content": "a.txt"},
        {"role": "tool", "tool_call_id": "c2", "content": "invalid arguments"},
        {"role": "assistant", "content": "Done."},
        {"role": "user", "content": "thanks"},
    ]


async def test_deepseek_sends_reasoning_back_only_for_turns_with_tool_calls(
        sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())
    history = [
        Message.user("just chat"),
        Message.assistant([ThinkingPart(text="no tools here"), TextPart(text="Hi!")]),
        Message.user("now use a tool"),
        Message.assistant([ThinkingPart(text="need files"),
                           ToolCallPart(id="c1", name="list_files", args={})]),
        Message.tool_result("c1", "list_files", "a.txt"),
        Message.assistant([ThinkingPart(text="got them"), TextPart(text="One file.")]),
        Message.user("and?"),
    ]

    await collect(provider(sse_server, "deepseek-reasoner", "deepseek"),
                  request(*history, level="high"))

    assistants = [m for m in sse_server.requests[0].json["messages"]
                  if m["role"] == "assistant"]
    assert [m.get("reasoning_content") for m in assistants] == [None, "need files", "got them"]


async def test_openai_does_not_send_reasoning_content(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())
    history = [Message.user("q"),
               Message.assistant([ThinkingPart(text="t"),
                                  ToolCallPart(id="c1", name="list_files", args={})]),
               Message.tool_result("c1", "list_files", "r")]

    await collect(provider(sse_server), request(*history))

    assert all("reasoning_content" not in m for m in sse_server.requests[0].json["messages"])


# --- suppliers, keys and endpoints --------------------------------------------------------


async def test_deepseek_key_and_base_url_from_the_environment(
        sse_server: SSEServer, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("DEEPSEEK_API_KEY", SECRET_KEY)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", sse_server.base_url)
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())

    await collect(OpenAIProvider("deepseek-chat", supplier="deepseek"), request())

    assert sse_server.requests[0].headers["authorization"] == f"Bearer {SECRET_KEY}"


def test_deepseek_default_base_url() -> None:
    source = OpenAIProvider("deepseek-chat", supplier="deepseek", api_key=SECRET_KEY)

    assert str(source._client.base_url).rstrip("/") == DEEPSEEK_BASE_URL


async def test_openai_compatible_server_without_a_key(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream(model="llama3:8b").text(["local"]).finish().done().response())
    source = OpenAIProvider("llama3:8b", supplier="openai-compatible",
                            base_url=sse_server.base_url)

    events = await collect(source, request())

    assert TextDelta("local") in events
    assert sse_server.requests[0].json["model"] == "llama3:8b"
    assert source.model_id == "openai-compatible:llama3:8b"


def test_openai_compatible_needs_a_base_url() -> None:
    with pytest.raises(ValueError, match="base_url"):
        OpenAIProvider("llama3", supplier="openai-compatible")


def test_unknown_supplier_is_rejected() -> None:
    with pytest.raises(ValueError, match="unknown supplier 'mistral'"):
        OpenAIProvider("x", supplier="mistral", api_key="k")


# --- faults ----------------------------------------------------------------------------


@pytest.mark.parametrize(("status", "headers"), [
    (429, {"retry-after": "0.01"}), (503, {"retry-after-ms": "10"}),
])
async def test_retryable_status_is_retried_honouring_retry_after(
        sse_server: SSEServer, status: int, headers: dict[str, str],
        caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.INFO, logger="openai")
    sse_server.add(error_response(status, openai_error_body("server_error", "busy"),
                                  headers=headers),
                   OpenAIStream().text(["ok"]).finish().done().response())

    events = await collect(provider(sse_server), request())

    assert TextDelta("ok") in events
    assert len(sse_server.requests) == 2
    # The SDK waited what the server asked for (10 ms), not its own backoff.
    assert "Retrying request in 0.010000 seconds" in caplog.text


async def test_retries_exhausted_raise_a_retryable_error(sse_server: SSEServer) -> None:
    body = openai_error_body("requests", "Rate limit reached", "rate_limit_exceeded")
    sse_server.add(*[error_response(429, body, headers={"retry-after-ms": "1"})
                     for _ in range(2)])

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server, max_retries=1), request())

    assert caught.value.retryable is True
    assert caught.value.status_code == 429
    assert "Rate limit reached" in caught.value.message
    assert len(sse_server.requests) == 2


@pytest.mark.parametrize(("status", "message"), [
    (401, "Incorrect API key provided"), (400, "Invalid 'messages[1].content'"),
])
async def test_auth_and_bad_request_fail_at_once_with_the_provider_message(
        sse_server: SSEServer, status: int, message: str) -> None:
    sse_server.add(error_response(status, openai_error_body("invalid_request_error", message)))

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is False
    assert caught.value.status_code == status
    assert message in caught.value.message
    assert len(sse_server.requests) == 1


async def test_error_chunk_mid_stream_keeps_the_partial_output(sse_server: SSEServer) -> None:
    stream = OpenAIStream().reasoning(["thinking"]).text(["Half"])
    stream.error("The server had an error while processing your request.")
    sse_server.add(stream.response())

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server, "deepseek-reasoner", "deepseek"), request())

    assert caught.value.retryable is True
    assert "The server had an error" in caught.value.message
    assert caught.value.partial == [ThinkingPart(text="thinking"), TextPart(text="Half")]
    assert len(sse_server.requests) == 1


async def test_dropped_connection_mid_stream(sse_server: SSEServer) -> None:
    response = OpenAIStream().text(["Partial", " answer"]).finish().done().response(
        ending="drop")
    response.chunks = response.chunks[:3]
    sse_server.add(response)

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is True
    assert caught.value.partial == [TextPart(text="Partial answer")]


async def test_stream_without_finish_reason(sse_server: SSEServer) -> None:
    stream = OpenAIStream().text(["cut"]).tool_call_start(0, "c1", "list_files", '{"pa')
    sse_server.add(stream.response())  # the body ends cleanly, but no finish and no [DONE]

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server), request())

    assert caught.value.retryable is True
    assert "finish_reason" in caught.value.message
    assert caught.value.partial == [TextPart(text="cut")]


async def test_missing_usage_chunk_is_not_an_error(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["x"]).finish().done().response())

    events = await collect(provider(sse_server), request())

    assert events == [TextDelta("x"), StreamDone("end_turn")]


async def test_connection_dropped_before_a_response_is_retried(sse_server: SSEServer) -> None:
    sse_server.add(ScriptedHTTPResponse(ending="drop_before_headers"),
                   OpenAIStream().text(["again"]).finish().done().response())

    events = await collect(provider(sse_server), request())

    assert TextDelta("again") in events
    assert len(sse_server.requests) == 2


async def test_cancel_stops_a_stream_waiting_for_data(sse_server: SSEServer) -> None:
    release = asyncio.Event()
    response = OpenAIStream().text(["first", "never"]).finish().done().response()
    response.hold_open = release
    sse_server.add(response)
    got_text = asyncio.Event()
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in provider(sse_server).stream(request()):
            seen.append(event)
            got_text.set()

    task = asyncio.create_task(consume())
    await got_text.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    release.set()
    assert seen == [TextDelta("first")]


async def test_key_never_appears_in_repr_logs_events_or_errors(
        sse_server: SSEServer, caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.DEBUG)
    source = provider(sse_server)
    sse_server.add(OpenAIStream().text(["hi"]).finish().done().response(),
                   error_response(401, openai_error_body("invalid_request_error", "bad key")))

    events = await collect(source, request())
    with pytest.raises(ProviderError) as caught:
        await collect(source, request())

    assert repr(source) == "OpenAIProvider('openai:gpt-5')"
    assert caplog.text
    texts = [repr(source), str(source), repr(events), str(caught.value), repr(caught.value),
             caplog.text]
    assert all(SECRET_KEY not in text for text in texts)


@pytest.mark.parametrize(("supplier", "model"), [
    ("openai", "gpt-5"), ("openai-compatible", "llama3:8b"), ("deepseek", "deepseek-chat")])
@pytest.mark.parametrize(("fields", "unusable"), [
    ({"completion_tokens": -1_000_000}, "completion_tokens=-1000000"),
    ({"prompt_tokens": -5}, "prompt_tokens=-5"),
    ({"prompt_tokens": "many"}, "prompt_tokens='many'"),
    ({"completion_tokens": 1.5}, "completion_tokens=1.5"),
    ({"completion_tokens": [40]}, "completion_tokens=[40]"),
    ({"prompt_tokens_details": {"cached_tokens": -64}}, "cached_tokens=-64"),
    ({"prompt_tokens_details": {"cache_write_tokens": "x"}}, "cache_write_tokens='x'"),
    ({"completion_tokens_details": {"reasoning_tokens": -1}}, "reasoning_tokens=-1"),
    ({"prompt_cache_hit_tokens": -80}, "prompt_cache_hit_tokens=-80"),
])
async def test_usage_negative_or_not_a_number_is_unknown_never_a_credit(
        sse_server: SSEServer, supplier: str, model: str, fields: dict[str, Any],
        unusable: str) -> None:
    stream = OpenAIStream(model=model).text(["x"]).finish()
    sse_server.add(stream.usage(100, 40, extra=fields).done().response())

    events = await collect(provider(sse_server, model, supplier), request())

    assert UsageUpdate(None, unusable) in events
    assembler = ResponseAssembler()
    for event in events:
        assembler.feed(event)
    assert (assembler.usage, assembler.unusable_usage) == (None, unusable)


async def test_usage_sent_with_every_chunk_ends_with_the_last_report(
        sse_server: SSEServer) -> None:
    """Some servers send usage so far in every chunk: the last report is the response's,
    a bad one on the way is said, and a bad last one leaves the usage unknown."""
    stream = OpenAIStream(model="qwen").text(["x"]).usage(10, -3).usage(10, 4).finish()
    sse_server.add(stream.done().response())
    stream = OpenAIStream(model="qwen").text(["x"]).usage(10, 4).usage(10, -3).finish()
    sse_server.add(stream.done().response())
    source = provider(sse_server, "qwen", "openai-compatible")

    first, second = (await collect(source, request())), (await collect(source, request()))

    assert [e for e in first if isinstance(e, UsageUpdate)] == [
        UsageUpdate(None, "completion_tokens=-3"),
        UsageUpdate(Usage(input_tokens=10, output_tokens=4))]
    assert [e for e in second if isinstance(e, UsageUpdate)][-1] == UsageUpdate(
        None, "completion_tokens=-3")


async def test_a_failed_stream_after_unusable_usage_carries_no_usage(
        sse_server: SSEServer) -> None:
    stream = OpenAIStream(model="qwen").text(["half"]).usage(10, -1_000_000)
    sse_server.add(stream.error("overloaded").response())

    with pytest.raises(ProviderError) as caught:
        await collect(provider(sse_server, "qwen", "openai-compatible"), request())

    assert caught.value.usage is None
