"""The session driving real SDKs against the local SSE server: what goes over the wire
when the thinking level changes mid-session, and how a failing stream ends a turn."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, ToolCatalog
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from .providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
from .support.sessions import Recorder

PLAN = json.dumps({"todos": [{"id": "1", "content": "Think", "status": "in_progress"}]})


@pytest.fixture
async def server() -> Any:
    async with SSEServer() as running:
        yield running


async def test_level_change_mid_session_changes_the_next_request(server: SSEServer) -> None:
    server.add(
        AnthropicStream().thinking(["Plan ", "first."], signature="sig-1")
        .tool_use("toolu_1", "todo", [PLAN[:20], PLAN[20:]]).finish("tool_use").response(),
        AnthropicStream().text(["Done."]).finish().response(),
        AnthropicStream().text(["Again."]).finish().response(),
    )
    provider = AnthropicProvider("claude-sonnet-4-20250514", api_key="test-key",
                                 base_url=server.base_url, max_retries=0)
    session = AgentSession(Agent("a", model=provider), ToolCatalog.default())
    session.set_thinking_level("high")

    def lower_after_tool(event: Any) -> None:
        if event.type == "todo_update":
            session.set_thinking_level("low")  # mid-turn: applies to the very next call

    session.subscribe(lower_after_tool)
    await session.run("Plan something")
    first, second = (r.json for r in server.requests)
    assert first["thinking"] == {"type": "enabled", "budget_tokens": 16000}
    assert first["max_tokens"] >= 16000 + 4096
    assert second["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert server.requests[0].headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"
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
    assert "thinking" not in server.requests[2].json


async def test_openai_stream_cut_midway_ends_turn_with_error_and_keeps_text(
        server: SSEServer) -> None:
    server.add(
        OpenAIStream().reasoning(["Let me see"]).text(["Half an ", "answer"])
        .response(ending="drop"),
        OpenAIStream().text(["Whole answer"]).finish().usage().done().response(),
    )
    provider = OpenAIProvider("o3-mini", api_key="test-key", base_url=server.base_url,
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
    assert server.requests[0].json["reasoning_effort"] == "high"
    await session.run("retry")
    assert session.messages[-1].text == "Whole answer"


async def test_resume_talks_to_the_same_server_the_same_way(server: SSEServer,
                                                             tmp_path: Any) -> None:
    # An openai-compatible session (a local llama.cpp or Ollama) with its own window and
    # request options resumes against the same URL with the same options — and no key is
    # ever stored.
    from neta_nb import SessionStore
    from neta_nb.providers import create_provider

    server.add(OpenAIStream().text(["first"]).finish().response(),
               OpenAIStream().text(["second"]).finish().response())
    provider = create_provider("openai-compatible:qwen2.5-0.5b", api_key="sk-never-stored",
                               base_url=server.base_url, context_window=4096,
                               request_options={"cache_prompt": True, "temperature": 0.2})
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default(), store)
    await session.run("hello")

    resumed = AgentSession.resume(session.id, store=SessionStore(store.path))
    assert resumed.provider is not provider
    assert resumed.provider.settings() == provider.settings()
    assert resumed.provider.info.context_window == 4096
    await resumed.run("again")
    first, second = (r.json for r in server.requests)
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
