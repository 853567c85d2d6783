"""The session driving real SDKs against the local SSE server: what goes over the wire
when the thinking level changes mid-session, and how a failing stream ends a turn."""

from __future__ import annotations

import json
from typing import Any

from neta_nb import Agent, AgentSession, ToolCatalog
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
from ..support.sessions import Recorder

PLAN = json.dumps({"todos": [{"id": "1", "content": "Think", "status": "in_progress"}]})


async def test_level_change_mid_session_changes_the_next_request(sse_server: SSEServer) -> None:
    sse_server.add(
        AnthropicStream().thinking(["Plan ", "first."], signature="sig-1")
        .tool_use("toolu_1", "todo", [PLAN[:20], PLAN[20:]]).finish("tool_use").response(),
        AnthropicStream().text(["Done."]).finish().response(),
        AnthropicStream().text(["Again."]).finish().response(),
    )
    provider = AnthropicProvider("claude-sonnet-4-20250514", api_key="test-key",
                                 base_url=sse_server.base_url, max_retries=0)
    session = AgentSession(Agent("a", model=provider), ToolCatalog.default())
    session.set_thinking_level("high")

    def lower_after_tool(event: Any) -> None:
        if event.type == "todo_update":
            session.set_thinking_level("low")  # mid-turn: applies to the very next call

    session.subscribe(lower_after_tool)
    await session.run("Plan something")
    first, second = (r.json for r in sse_server.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    assert first["max_tokens"] >= 16000 + 4096
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert sse_server.requests[0].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
    # The signed thinking block goes back unchanged with the tool use.
    assistant = second["messages"][1]
    assert assistant["role"] == "assistant"
    assert assistant["content"][0] == {"type": "thinking", "thinking": "Plan first.",
                                       "signature": "sig-1"}
    assert assistant["content"][1]["type"] == "tool_use"
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"

    session.set_thinking_level("off")
    await session.run("And again")
    assert "thinking" not in sse_server.requests[2].json


async def test_openai_stream_cut_midway_ends_turn_with_error_and_keeps_text(
        sse_server: SSEServer) -> None:
    sse_server.add(
        OpenAIStream().reasoning(["Let me see"]).text(["Half an ", "answer"])
        .response(ending="drop"),
        OpenAIStream().text(["Whole answer"]).finish().usage().done().response(),
    )
    provider = OpenAIProvider("o3-mini", api_key="test-key", base_url=sse_server.base_url,
                              max_retries=0)
    session = AgentSession(Agent("a", model=provider), ToolCatalog.default())
    rec = Recorder()
    session.subscribe(rec)
    session.set_thinking_level("high")
    await session.run("question")
    assert rec.types[-2:] == ["error", "done"]
    assert rec.of("error")[0].retryable is True
    partial = session.messages[-1]
    assert partial.metadata.interrupted == "error"
    assert partial.text == "Half an answer"
    assert partial.thinking == "Let me see"
    assert sse_server.requests[0].json["reasoning_effort"] == "high"
    await session.run("retry")
    assert session.messages[-1].text == "Whole answer"


async def test_resume_talks_to_the_same_server_the_same_way(sse_server: SSEServer,
                                                             tmp_path: Any) -> None:
    # An openai-compatible session (a local llama.cpp or Ollama) with its own window and
    # request options resumes against the same URL with the same options — and no key is
    # ever stored.
    from neta_nb import SessionStore
    from neta_nb.providers import create_provider

    sse_server.add(OpenAIStream().text(["first"]).finish().response(),
               OpenAIStream().text(["second"]).finish().response())
    provider = create_provider("openai-compatible:qwen2.5-0.5b", api_key="sk-never-stored",
                               base_url=sse_server.base_url, context_window=4096,
                               request_options={"cache_prompt": True, "temperature": 0.2})
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default(), store)
    await session.run("hello")

    resumed = AgentSession.resume(session.id, store=SessionStore(store.path))
    assert resumed.provider is not provider
    assert resumed.provider.settings() == provider.settings()
    assert resumed.provider.info.context_window == 4096
    await resumed.run("again")
    first, second = (r.json for r in sse_server.requests)
    for body in (first, second):
        assert body["model"] == "qwen2.5-0.5b"
        assert body["cache_prompt"] is True and body["temperature"] == 0.2
    assert [m["content"] for m in second["messages"] if m["role"] == "user"] == [
        "hello", "again"]
    assert b"sk-never-stored" not in (tmp_path / "sessions.sqlite3").read_bytes()


def test_provider_settings_never_carry_credentials() -> None:
    from neta_nb.providers import create_provider

    provider = create_provider("openai-compatible:m", api_key="sk-secret",
                               base_url="http://user:token@127.0.0.1:8080/v1")
    settings = provider.settings()
    assert settings["base_url"] == "http://127.0.0.1:8080/v1"
    assert "sk-secret" not in json.dumps(settings) and "token" not in json.dumps(settings)


# --- a local server: its own window, no usage --------------------------------------------


async def test_a_local_server_reports_its_window_and_the_meter_uses_it(
        sse_server: SSEServer) -> None:
    sse_server.json_route("GET", "/props", {"default_generation_settings": {"n_ctx": 4096}})
    sse_server.add(OpenAIStream().text(["hi"]).finish().usage(300, 20).done().response())
    provider = OpenAIProvider("smollm2", supplier="openai-compatible",
                              base_url=sse_server.base_url, max_retries=0)
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default())
    assert session.context.window_assumed and session.context.max_tokens == 128_000
    rec = Recorder()
    session.subscribe(rec)

    await session.run("hello")

    (update,) = rec.of("token_update")
    assert update.context.max_tokens == 4096 and not update.context.window_assumed
    assert update.context.percent == round(100 * 320 / 4096, 1)
    assert [r.path for r in sse_server.requests].count("/props") == 1
    assert "error" not in rec.types


async def test_a_server_that_reports_no_window_keeps_the_default_marked_assumed(
        sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["hi"]).finish().usage(300, 20).done().response())
    provider = OpenAIProvider("smollm2", supplier="openai-compatible",
                              base_url=sse_server.base_url, max_retries=0)
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default())
    rec = Recorder()
    session.subscribe(rec)

    await session.run("hello")

    (update,) = rec.of("token_update")
    assert update.context.max_tokens == 128_000 and update.context.window_assumed
    assert rec.types[-1] == "done" and "error" not in rec.types
    assert session.messages[-1].text == "hi"


async def test_usage_a_server_does_not_send_is_unknown_and_the_context_estimated(
        sse_server: SSEServer) -> None:
    plan_call = OpenAIStream(model="m")
    plan_call.tool_call_start(0, "call_1", "todo", PLAN)
    sse_server.add(plan_call.finish("tool_calls").done().response(),  # no usage chunk
               OpenAIStream(model="m").text(["Planned."]).finish().done().response(),
               OpenAIStream(model="m").text(["Again."]).finish().usage(900, 10).done()
               .response())
    provider = OpenAIProvider("m", supplier="openai-compatible", base_url=sse_server.base_url,
                              max_retries=0, context_window=4096)
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default())
    rec = Recorder()
    session.subscribe(rec)

    await session.run("plan")

    first, second = rec.of("token_update")
    assert (first.current.api_calls, first.current.unreported_calls) == (1, 1)
    assert (second.current.api_calls, second.current.unreported_calls) == (2, 2)
    assert second.current.input_tokens == 0 and second.current.output_tokens == 0
    # The window is estimated from what was sent — system prompt, tool definitions,
    # history — and the update says so.
    request = sse_server.requests[-1].json
    sent = len(json.dumps(request["messages"])) + len(json.dumps(request["tools"]))
    assert second.context.estimate == "unreported"
    assert sent // 8 < second.context.used_tokens < sent // 2
    assert second.context.used_tokens > first.context.used_tokens
    assert session.usage.input_tokens == 0  # spend is never estimated
    assert "error" not in rec.types

    await session.run("again")
    third = rec.of("token_update")[-1]
    assert third.current.unreported_calls == 0 and third.current.input_tokens == 900
    assert third.context.estimate is None and third.context.used_tokens == 910
