"""What real OpenAI-compatible servers (llama.cpp, llama-cpp-python, vLLM, Ollama) do
differently from OpenAI, on the wire, against the local SSE server: tool-call names
repeated in every chunk, ``content`` of tool-only assistant messages, request options in
the body (for Anthropic too), tool results for templates that drop ``tool`` messages,
each server family's answer to "how large is your context window", and what a user is
told when the server is not there (a wrong port, a server not started)."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from neta_nb import Agent, AgentSession
from neta_nb.messages import Message, TextPart, ToolCallPart, ToolDefinition, ToolResultPart
from neta_nb.providers import create_provider
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.base import (
    ModelRequest,
    ProviderError,
    StreamDone,
    StreamEvent,
    ToolCallReady,
    connection_error,
)
from neta_nb.providers.endpoints import requests_go_to
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.providers.window_discovery import DiscoveredWindow, discover_context_window

from ..support.ports import free_port
from .sse_server import AnthropicStream, OpenAIStream, ScriptedHTTPResponse, SSEServer

WEATHER = ToolDefinition(name="get_weather", description="Weather of a city.",
                         parameters={"type": "object",
                                     "properties": {"city": {"type": "string"}}})


def local(server: SSEServer, model: str = "smollm2", **options: Any) -> OpenAIProvider:
    return local_at(server.base_url, model, **options)


def local_at(base_url: str, model: str = "smollm2", **options: Any) -> OpenAIProvider:
    options.setdefault("max_retries", 0)
    return OpenAIProvider(model, supplier="openai-compatible", base_url=base_url, **options)


def request(*messages: Message, **options: Any) -> ModelRequest:
    return ModelRequest(system_prompt="Be brief.",
                        messages=list(messages) or [Message.user("Weather in Paris?")],
                        tools=[WEATHER], **options)


async def collect(source: Any, req: ModelRequest) -> list[StreamEvent]:
    return [event async for event in source.stream(req)]


def _tool_chunk(stream: OpenAIStream, name: str, arguments: str) -> None:
    # llama-cpp-python's shape: id, type and the whole name again in every chunk.
    stream.chunk({"tool_calls": [{"index": 0, "id": "call_llama", "type": "function",
                                  "function": {"name": name, "arguments": arguments}}]})


async def test_a_name_repeated_in_every_chunk_is_one_name(sse_server: SSEServer) -> None:
    stream = OpenAIStream(model="smollm2")
    for piece in ['{"city": ', '"Par', 'is"}']:
        _tool_chunk(stream, "get_weather", piece)
    sse_server.add(stream.finish("tool_calls").done().response())

    events = await collect(local(sse_server), request())

    assert events == [ToolCallReady(id="call_llama", name="get_weather",
                                    args={"city": "Paris"}), StreamDone("tool_use")]


async def test_names_sent_in_fragments_or_as_the_name_so_far_still_join(
        sse_server: SSEServer) -> None:
    fragments = OpenAIStream()
    fragments.tool_call_start(0, "call_1", "get_", '{"city":')
    fragments.chunk({"tool_calls": [{"index": 0, "function": {"name": "weather",
                                                              "arguments": '"Oslo"}'}}]})
    growing = OpenAIStream()
    growing.tool_call_start(0, "call_2", "get", "{}")
    growing.chunk({"tool_calls": [{"index": 0, "function": {"name": "get_weather"}}]})
    sse_server.add(fragments.finish("tool_calls").done().response(),
                   growing.finish("tool_calls").done().response())
    provider = local(sse_server)

    first = await collect(provider, request())
    second = await collect(provider, request())

    assert first[0] == ToolCallReady(id="call_1", name="get_weather", args={"city": "Oslo"})
    assert second[0] == ToolCallReady(id="call_2", name="get_weather", args={})


async def test_a_tool_only_assistant_message_is_sent_with_empty_text(
        sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["Sunny."]).finish().done().response())
    history = [
        Message.user("Weather in Paris?"),
        Message.assistant([ToolCallPart(id="call_1", name="get_weather",
                                        args={"city": "Paris"})]),
        Message(role="tool", parts=[ToolResultPart(tool_call_id="call_1", name="get_weather",
                                                   content="sunny, 21 °C")]),
    ]

    await collect(local(sse_server), request(*history))

    assistant = sse_server.requests[0].json["messages"][2]
    # llama-cpp-python answers `"content": null` with a 500; every server takes "".
    assert assistant == {"role": "assistant", "content": "", "tool_calls": [
        {"id": "call_1", "type": "function",
         "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'}}]}


async def test_tool_results_as_user_messages_for_templates_that_drop_tool_messages(
        sse_server: SSEServer) -> None:
    sse_server.check_history = False  # such a server takes results as user messages
    sse_server.add(OpenAIStream().text(["Sunny."]).finish().done().response())
    history = [
        Message.user("Weather in Paris and Oslo?"),
        Message.assistant([TextPart(text="Checking."),
                           ToolCallPart(id="c1", name="get_weather", args={"city": "Paris"}),
                           ToolCallPart(id="c2", name="get_weather", args={"city": "Oslo"})]),
        Message(role="tool", parts=[
            ToolResultPart(tool_call_id="c1", name="get_weather", content="sunny"),
            ToolResultPart(tool_call_id="c2", name="get_weather", content="no such city",
                           is_error=True)]),
    ]
    provider = create_provider("openai-compatible:smollm2", base_url=sse_server.base_url,
                               tool_results_as_user=True)

    await collect(provider, request(*history))

    messages = sse_server.requests[0].json["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[3]["content"] == ("[result of tool call c1 (get_weather)]\nsunny\n\n"
                                      "[error of tool call c2 (get_weather)]\nno such city")
    assert provider.settings()["tool_results_as_user"] is True
    with pytest.raises(ValueError, match="OpenAI-compatible"):
        create_provider("anthropic:claude-sonnet-4-6", tool_results_as_user=True)


async def test_request_options_reach_the_openai_body(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["ok"]).finish().done().response())
    forced = {"type": "function", "function": {"name": "get_weather"}}
    provider = create_provider(
        "openai-compatible:smollm2", base_url=sse_server.base_url,
        request_options={"tool_choice": forced, "top_p": 0.5, "seed": 7,
                         "cache_prompt": True, "grammar": "root ::= \"x\""})

    await collect(provider, request())

    body = sse_server.requests[0].json
    assert body["tool_choice"] == forced
    assert (body["top_p"], body["seed"]) == (0.5, 7)
    # Fields the SDK does not know go in the body unchanged (server-specific options).
    assert body["cache_prompt"] is True and body["grammar"] == 'root ::= "x"'
    assert body["tools"][0]["function"]["name"] == "get_weather"


async def test_request_options_reach_the_anthropic_body(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["ok"]).finish().response())
    forced = {"type": "tool", "name": "get_weather"}
    provider = AnthropicProvider("claude-sonnet-4-6", api_key="test", base_url=sse_server.base_url,
                                 max_retries=0,
                                 request_options={"tool_choice": forced, "top_k": 5,
                                                  "service_tier": "standard_only",
                                                  "gateway_route": "eu"})

    await collect(provider, request())

    body = sse_server.requests[0].json
    assert body["tool_choice"] == forced
    assert body["top_k"] == 5 and body["service_tier"] == "standard_only"
    assert body["gateway_route"] == "eu"
    assert body["tools"][0]["name"] == "get_weather"


# --- the context window, as each server family reports it ------------------------------


LLAMA_SERVER_PROPS = {
    "default_generation_settings": {"id": 0, "n_ctx": 4096, "speculative": False,
                                    "params": {"n_predict": -1, "temperature": 0.8}},
    "total_slots": 1, "model_path": "/models/smollm2.gguf", "chat_template": "…",
}
VLLM_MODELS = {"object": "list", "data": [
    {"id": "other-model", "object": "model", "max_model_len": 2048},
    {"id": "Qwen/Qwen2.5-7B-Instruct", "object": "model", "created": 1, "owned_by": "vllm",
     "root": "Qwen/Qwen2.5-7B-Instruct", "parent": None, "max_model_len": 32768,
     "permission": []},
]}
OLLAMA_SHOW = {
    "modelfile": "FROM llama3.1:8b", "template": "…",
    "details": {"family": "llama", "parameter_size": "8.0B"},
    "model_info": {"general.architecture": "llama", "general.parameter_count": 8030261248,
                   "llama.context_length": 131072, "llama.embedding_length": 4096},
}


async def test_llama_server_props(sse_server: SSEServer) -> None:
    sse_server.json_route("GET", "/props", LLAMA_SERVER_PROPS)

    found = await discover_context_window(sse_server.base_url, "smollm2")

    assert found == DiscoveredWindow(4096, "llama.cpp GET /props")


async def test_vllm_models_max_model_len_of_the_served_model(sse_server: SSEServer) -> None:
    sse_server.json_route("GET", "/v1/models", VLLM_MODELS)

    found = await discover_context_window(f"{sse_server.base_url}/v1",
                                          "Qwen/Qwen2.5-7B-Instruct", api_key="vllm-key")

    assert found == DiscoveredWindow(32768, "vLLM GET /v1/models")
    asked = next(r for r in sse_server.requests if r.path == "/v1/models")
    assert asked.headers["authorization"] == "Bearer vllm-key"


async def test_ollama_show_context_length_of_the_architecture(sse_server: SSEServer) -> None:
    sse_server.json_route("POST", "/api/show", OLLAMA_SHOW)

    found = await discover_context_window(f"{sse_server.base_url}/v1", "llama3.1:8b")

    assert found == DiscoveredWindow(131072, "Ollama POST /api/show")
    asked = next(r for r in sse_server.requests if r.path == "/api/show")
    assert asked.json == {"model": "llama3.1:8b"}


async def test_ollama_num_ctx_set_on_the_model_wins(sse_server: SSEServer) -> None:
    sse_server.json_route("POST", "/api/show", {
        **OLLAMA_SHOW, "parameters": 'stop "<|eot_id|>"\nnum_ctx 8192\ntemperature 0.7'})

    found = await discover_context_window(sse_server.base_url, "llama3.1:8b")

    assert found == DiscoveredWindow(8192, "Ollama POST /api/show")


@pytest.mark.parametrize("answers", [
    {},  # a server with none of the endpoints (llama-cpp-python): all 404
    {("GET", "/props"): {"default_generation_settings": {"n_ctx": "4096"}}},
    {("GET", "/props"): {"default_generation_settings": {"n_ctx": 0}}},
    {("GET", "/models"): {"data": [{"id": "a", "max_model_len": 1}, {"id": "b"}]}},
    {("GET", "/models"): ["not", "an", "object"]},
    {("POST", "/api/show"): {"model_info": {"general.architecture": "llama"}}},
    {("POST", "/api/show"): {"model_info": {"llama.context_length": True}}},
])
async def test_answers_without_a_window_give_none(sse_server: SSEServer,
                                                  answers: dict[tuple[str, str], Any]) -> None:
    for (method, path), body in answers.items():
        sse_server.json_route(method, path, body)
    assert await discover_context_window(sse_server.base_url, "smollm2") is None


async def test_broken_and_hanging_endpoints_give_none(sse_server: SSEServer) -> None:
    sse_server.route("GET", "/props", ScriptedHTTPResponse(
        headers={"Content-Type": "application/json"}, chunks=[b'{"default_gen']))
    never = asyncio.Event()
    sse_server.route("GET", "/models", ScriptedHTTPResponse(
        headers={"Content-Type": "application/json"}, chunks=[b"{", b"}"], hold_open=never))
    sse_server.json_route("POST", "/api/show", {"error": "model not found"}, status=500)

    found = await discover_context_window(sse_server.base_url, "smollm2", probe_timeout=0.3)
    assert found is None


async def test_nothing_listening_gives_none() -> None:
    async with SSEServer() as gone:
        address = gone.base_url
    assert await discover_context_window(address, "smollm2", probe_timeout=0.5) is None


async def test_the_provider_asks_once_and_only_when_nothing_else_knows(
        sse_server: SSEServer) -> None:
    sse_server.json_route("GET", "/props", LLAMA_SERVER_PROPS)
    unknown = local(sse_server, "smollm2")
    assert unknown.info.assumed and unknown.info.context_window == 128_000

    await unknown.discover_context_window()
    await unknown.discover_context_window()

    assert unknown.info.context_window == 4096 and not unknown.info.assumed
    assert [r.path for r in sse_server.requests].count("/props") == 1
    # Discovered, not configured: it is asked again next time, never stored.
    assert unknown.settings()["context_window"] is None

    sse_server.requests.clear()
    for provider in (local(sse_server, "smollm2", context_window=2048),  # given
                     local(sse_server, "qwen2.5-coder:7b"),  # not known either: asks
                     local(sse_server, "gpt-oss:20b"),  # in the table
                     OpenAIProvider("gpt-5", api_key="k", base_url=sse_server.base_url)):
        await provider.discover_context_window()
    assert [r.path for r in sse_server.requests if r.path == "/props"] == ["/props"]



def test_tool_results_as_user_is_rebuilt_with_a_resumed_session() -> None:
    from neta_nb import Agent, ToolCatalog

    provider = create_provider("openai-compatible:smollm2",
                               base_url="http://127.0.0.1:8000/v1", tool_results_as_user=True,
                               context_window=4096)
    record = Agent("local", model=provider).to_record(provider)

    rebuilt = Agent.from_record(record, ToolCatalog.default()).create_provider()

    assert rebuilt is not provider and rebuilt.tool_results_as_user is True
    assert rebuilt.settings() == provider.settings()


# --- a server that is not there ------------------------------------------------------------


async def test_a_wrong_url_names_the_address_and_asks_if_the_server_runs() -> None:
    """Nothing listens on the port: the error names the address the requests went to
    (without the credentials a URL may carry) and what to check."""
    port = free_port()  # bound and closed again: nothing listens there
    provider = local_at(f"http://user:secret@127.0.0.1:{port}/v1?api-key=sk-hidden")

    with pytest.raises(ProviderError) as caught:
        await collect(provider, request())

    assert caught.value.message == (
        f"OpenAI-compatible server connection failed: could not connect to "
        f"http://127.0.0.1:{port}/v1 (connection refused) — is the server running?")
    assert caught.value.retryable is True


async def test_a_session_on_a_wrong_url_returns_the_failure_not_an_answer() -> None:
    """``await session.run()`` returns the failed turn's message: its repr (what a cell
    shows), its ``error`` and the ``error`` event all say where and what to check."""
    port = free_port()
    session = AgentSession(Agent("a", model=local_at(f"http://127.0.0.1:{port}/v1")))
    errors: list[str] = []
    session.subscribe(lambda event: errors.append(event.message)
                      if event.type == "error" else None)

    reply = await session.run("hi")

    assert reply is not None and reply.metadata.interrupted == "error"
    expected = (f"could not connect to http://127.0.0.1:{port}/v1 (connection refused) — "
                f"is the server running?")
    assert errors == [reply.metadata.error] and expected in errors[0]
    assert expected in repr(reply)


async def test_an_anthropic_gateway_that_is_not_there_is_named_too() -> None:
    port = free_port()
    provider = AnthropicProvider("claude-sonnet-4-6", api_key="sk-test",
                                 base_url=f"http://127.0.0.1:{port}", max_retries=0)

    with pytest.raises(ProviderError) as caught:
        await collect(provider, request())

    assert caught.value.message == (
        f"Anthropic connection failed: could not connect to http://127.0.0.1:{port} "
        f"(connection refused) — is the server running?")


async def test_a_connection_that_breaks_mid_stream_names_the_server(
        sse_server: SSEServer) -> None:
    response = OpenAIStream().text(["Partial", " answer"]).finish().done().response(
        ending="drop")
    response.chunks = response.chunks[:3]
    sse_server.add(response)

    with pytest.raises(ProviderError) as caught:
        await collect(local(sse_server), request())

    assert caught.value.message.startswith(
        f"OpenAI-compatible server connection failed: the connection to "
        f"{sse_server.base_url} broke during the stream (")
    assert caught.value.message.endswith(") — is the server running?")
    assert caught.value.partial == [TextPart(text="Partial answer")]


def test_the_vendors_own_api_is_named_with_the_network_to_check() -> None:
    assert requests_go_to("openai", None) == ("https://api.openai.com/v1", True)
    assert requests_go_to("openai-compatible", None) == (None, False)
    assert requests_go_to("anthropic", "https://API.anthropic.com/") == (
        "https://API.anthropic.com/", True)
    error = connection_error("OpenAI", ConnectionError("Connection error."),
                             supplier="openai", base_url=None, started=False)
    assert error.message == ("OpenAI connection failed: could not connect to "
                             "https://api.openai.com/v1 (Connection error.) — is this "
                             "machine online?")
