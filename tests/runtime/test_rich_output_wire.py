"""A figure the ``python`` tool draws reaches the model over the real SDKs and the local
SSE server: an image block inside Anthropic's ``tool_result``; for OpenAI-compatible
models the ``tool`` message's text and an accompanying ``user`` message of ``image_url``
parts; a model without vision reads a description instead and receives no image."""

from __future__ import annotations

import base64
import io
import json
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ToolCatalog
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer

pytest.importorskip("matplotlib")
Image = pytest.importorskip("PIL.Image")

PLOT = json.dumps({"code": "import matplotlib.pyplot as plt\nplt.plot([1, 4, 9])"})


def _session(provider: Any) -> AgentSession:
    agent = Agent("plotter", model=provider, tools=AgentToolConfig(enabled=["python"]))
    return AgentSession(agent, ToolCatalog.default(), namespace={}, approval_policy="allow")


def _png_size(data: str) -> tuple[int, int]:
    raw = base64.b64decode(data)
    assert raw.startswith(b"\x89PNG"), "not a PNG"
    with Image.open(io.BytesIO(raw)) as image:
        size: tuple[int, int] = image.size
        return size


async def test_anthropic_gets_the_figure_as_an_image_block_in_the_tool_result(
        sse_server: SSEServer) -> None:
    sse_server.add(
        AnthropicStream().tool_use("toolu_1", "python", [PLOT]).finish("tool_use").response(),
        AnthropicStream().text(["A rising curve."]).finish().response())
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="k", base_url=sse_server.base_url,
                                 max_retries=0)
    session = _session(provider)
    await session.run("Plot squares")
    second = sse_server.requests[1].json
    result = second["messages"][2]["content"][0]
    assert result["type"] == "tool_result" and result["tool_use_id"] == "toolu_1"
    text, image = result["content"]
    assert text["type"] == "text" and "[Displayed: image (640×480 PNG)]" in text["text"]
    assert image["type"] == "image" and image["source"]["media_type"] == "image/png"
    assert _png_size(image["source"]["data"]) == (640, 480)
    # The card has the figure too, and matplotlib's figure was closed after the call.
    execution = session.messages[1].metadata.tool_executions[0]
    assert [o.media_type for o in execution.outputs] == ["image/png"]
    import matplotlib.pyplot as plt
    assert plt.get_fignums() == []


async def test_openai_gets_the_tool_text_then_a_user_message_with_the_image(
        sse_server: SSEServer) -> None:
    sse_server.add(
        OpenAIStream().tool_call_start(0, "call_1", "python", PLOT)
        .finish("tool_calls").done().response(),
        OpenAIStream().text(["Squares."]).finish().done().response())
    provider = OpenAIProvider("gpt-4o", api_key="k", base_url=sse_server.base_url, max_retries=0)
    await _session(provider).run("Plot squares")
    messages = sse_server.requests[1].json["messages"]
    roles = [m["role"] for m in messages]
    assert roles == ["system", "user", "assistant", "tool", "user"]
    tool = messages[3]
    assert tool["tool_call_id"] == "call_1" and "[Displayed: image (640×480 PNG)]" in tool[
        "content"]
    caption, picture = messages[4]["content"]
    assert caption == {"type": "text", "text": "Images from tool call call_1 (python):"}
    assert picture["type"] == "image_url"
    url = picture["image_url"]["url"]
    assert url.startswith("data:image/png;base64,")
    assert _png_size(url.split(",", 1)[1]) == (640, 480)


async def test_a_model_without_vision_reads_a_description_and_gets_no_image(
        sse_server: SSEServer) -> None:
    sse_server.add(
        OpenAIStream(model="deepseek-chat").tool_call_start(0, "call_1", "python", PLOT)
        .finish("tool_calls").done().response(),
        OpenAIStream(model="deepseek-chat").text(["Ok."]).finish()
        .done().response())
    provider = OpenAIProvider("deepseek-chat", supplier="deepseek", api_key="k",
                              base_url=sse_server.base_url, max_retries=0)
    assert not provider.info.supports("vision")
    await _session(provider).run("Plot squares")
    body = sse_server.requests[1].body.decode()
    messages = sse_server.requests[1].json["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "tool"]
    assert "[1 figure, 640×480, not shown to this model]" in messages[3]["content"]
    assert "image_url" not in body and "base64" not in body


async def test_anthropic_without_vision_gets_text_only_in_the_tool_result(
        sse_server: SSEServer) -> None:
    from neta_nb.providers.models import ModelInfo, register_model

    register_model(ModelInfo(supplier="anthropic", model="claude-text-only",
                             context_window=100_000, max_output_tokens=4096,
                             capabilities=frozenset({"tools"})))
    sse_server.add(
        AnthropicStream().tool_use("toolu_1", "python", [PLOT]).finish("tool_use").response(),
        AnthropicStream().text(["Ok."]).finish().response())
    provider = AnthropicProvider("claude-text-only", api_key="k", base_url=sse_server.base_url,
                                 max_retries=0)
    await _session(provider).run("Plot squares")
    result = sse_server.requests[1].json["messages"][2]["content"][0]
    assert isinstance(result["content"], str)
    assert "[1 figure, 640×480, not shown to this model]" in result["content"]
