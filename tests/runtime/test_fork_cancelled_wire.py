"""A fork at an answer whose tool calls a Stop cut short (one result in, its sibling
still running), and at the result that came: the branch is a history the OpenAI and
Anthropic SDKs' servers take."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.messages import valid_conversation
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer, history_problem
from ..support.sessions import hanging_tool, plus


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_fork_at_a_stopped_answer_with_calls_is_a_history_the_vendor_takes(
        wire: str, tmp_path: Path) -> None:
    slow, started = hanging_tool()
    if wire == "openai":
        calling = (OpenAIStream(model="gpt-4o")
                   .tool_call_start(0, "c1", "plus", '{"a": 1, "b": 2}')
                   .tool_call_start(1, "c2", "slow_job", "{}").finish("tool_calls").response())

        def reply(text: str) -> Any:
            return OpenAIStream(model="gpt-4o").text([text]).finish().response()
    else:
        calling = (AnthropicStream().tool_use("c1", "plus", ['{"a": 1, "b": 2}'])
                   .tool_use("c2", "slow_job", ["{}"]).finish("tool_use").response())

        def reply(text: str) -> Any:
            return AnthropicStream().text([text]).finish().response()
    catalog = ToolCatalog.default()
    catalog.register(plus)
    catalog.register(slow)
    store = SessionStore(tmp_path / "s.db")
    async with SSEServer() as server:
        provider: Any = (OpenAIProvider("gpt-4o", api_key="k", base_url=server.base_url,
                                        max_retries=0) if wire == "openai" else
                         AnthropicProvider("claude-sonnet-4-5", api_key="k",
                                           base_url=server.base_url, max_retries=0))
        session = AgentSession(Agent("a", model=provider, tools=AgentToolConfig()), catalog,
                               store=store)
        server.add(calling)
        turn = asyncio.ensure_future(session.run("Add, and run the slow job"))
        await asyncio.wait_for(started.wait(), 10)
        session.cancel()
        await asyncio.wait_for(asyncio.gather(turn, return_exceptions=True), 10)
        answer = next(m for m in session.messages if m.role == "assistant")
        forks_at = [answer, *[m for m in session.messages if m.role == "tool"]]
        assert len(forks_at) >= 2  # plus's result came before the Stop
        for forked_at in forks_at:
            fork = session.fork(forked_at.id)
            server.add(reply("From the fork."))
            await asyncio.wait_for(fork.run("And now?"), 10)
            assert history_problem(server.requests[-1].path, server.requests[-1].json) is None
            assert fork.messages[-1].text == "From the fork."
            assert valid_conversation(fork.messages) == fork.messages
        assert server.pending == 0
    store.close()
