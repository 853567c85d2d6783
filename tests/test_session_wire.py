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
