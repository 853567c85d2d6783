"""``@`` mentions from the chat view to the wire: the view's ``mention_preview`` gives each
chip's rendering, its ``send`` goes to the real ``openai`` and ``anthropic`` SDKs against
the local SSE server, and the request body carries each rendering byte for byte (a 1 GB-
shaped value at most 8 KB of it); an unknown mention is refused before any request; a
resumed session sends the same blocks again."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.widgets import ChatView

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
from ..support.notebook_page import FakeNotebookPage
from ..support.timing import wait_until
from .conftest import SentMessages

np = pytest.importorskip("numpy")
pd = pytest.importorskip("pandas")

MENTIONS = ["@sales", "@big", "@In[2]", "@error", "@file:data/notes.md"]


def _ask(chat: ChatView, sent: SentMessages, kind: str, **payload: Any) -> dict[str, Any]:
    request_id = f"r{len(sent)}"
    chat._on_custom_message(chat, {"kind": kind, "id": request_id, **payload}, [])
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == request_id]
    return reply


def _notebook(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    (tmp_path / "data").mkdir()
    (tmp_path / "data" / "notes.md").write_text("# Notes\nNorth sells most.\n", "utf-8")
    columns: dict[str, int] = {}
    try:
        columns["region"]
    except KeyError as error:
        monkeypatch.setattr(sys, "last_value", error, raising=False)
    return {
        "sales": pd.DataFrame({"region": ["north", "south", "数据"] * 100,
                               "amount": np.arange(300) * 1.5}),
        # 1 GiB of float64 as numpy sees it (a broadcast view: no memory behind it).
        "big": np.broadcast_to(np.arange(16.0), (8_388_608, 16)),
        "In": ["", "import pandas as pd", "sales.groupby('region').amount.sum()"],
        "Out": {2: pd.Series({"north": 7425.0, "south": 7500.0})},
    }


async def _send(chat: ChatView, sent: SentMessages, text: str) -> dict[str, Any]:
    reply = _ask(chat, sent, "command", command={"type": "send", "text": text})
    if reply["ok"]:
        session = chat.session
        assert session is not None
        await wait_until(lambda: not session.running)
    return reply


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_the_request_carries_each_chips_rendering_byte_for_byte(
        vendor: str, sse_server: SSEServer, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        sent: SentMessages) -> None:
    if vendor == "openai":
        sse_server.add(OpenAIStream().text(["Seen."]).finish().usage().done().response(),
                   OpenAIStream().text(["Again."]).finish().usage().done().response())
        provider: Any = OpenAIProvider("gpt-4.1", api_key="k", base_url=sse_server.base_url,
                                       max_retries=0)
    else:
        sse_server.add(AnthropicStream().text(["Seen."]).finish().response(),
                   AnthropicStream().text(["Again."]).finish().response())
        provider = AnthropicProvider("claude-sonnet-4-5", api_key="k",
                                     base_url=sse_server.base_url, max_retries=0)
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("analyst", model=provider), ToolCatalog(), store,
                           namespace=_notebook(tmp_path, monkeypatch), working_dir=tmp_path)
    chat = ChatView(session)
    chips = {}
    for mention in MENTIONS:
        reply = _ask(chat, sent, "mention_preview", mention=mention)
        assert reply["ok"] and reply["result"]["ok"], reply
        chips[mention] = reply["result"]["rendering"]
    assert len(chips["@big"].encode()) <= 8 * 1024 and "shape 8388608×16" in chips["@big"]

    # Unknown: refused with the reason, before any request; nothing stored or shown.
    unknown = _ask(chat, sent, "mention_preview", mention="@salse")
    assert unknown["result"] == {"mention": "@salse", "kind": "variable", "ok": False,
                                 "problem": "no variable named salse in the notebook"}
    refused = await _send(chat, sent, "compare @sales with @salse")
    assert not refused["ok"] and "@salse" in refused["error"]
    assert sse_server.requests == [] and session.messages == [] and chat.messages == []

    typed = ("Compare @sales with @big, explain @In[2] and @error, read @file:data/notes.md "
             "and mail ops@example.com")
    assert (await _send(chat, sent, typed))["ok"]
    body = sse_server.requests[0].body
    for mention, rendering in chips.items():
        # The SDKs write JSON with non-ASCII escaped or not: the rendering is there as the
        # JSON string of exactly these characters, either way.
        escaped = [json.dumps(rendering, ensure_ascii=flag)[1:-1].encode()
                   for flag in (True, False)]
        assert any(form in body for form in escaped), mention
    prompt = sse_server.requests[0].json["messages"][-1]["content"]
    texts = [prompt] if isinstance(prompt, str) else [block["text"] for block in prompt]
    assert texts[0].startswith(typed)  # the prompt exactly as typed comes first
    assert "ops@example.com" in texts[0] and "<mention name=\"@ops\"" not in body.decode()
    assert chat.messages[0]["text"] == typed  # the bubble: what was typed

    # Resumed in a process with none of those values: the same blocks go again.
    session.flush()
    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog, namespace={})
    await resumed.run("and now?")
    first = sse_server.requests[0].json["messages"]
    assert sse_server.requests[1].json["messages"][:len(first)] == first
    chat.close()


async def test_candidates_for_the_popup(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                        sent: SentMessages) -> None:
    session = AgentSession(Agent("analyst", model="scripted"), ToolCatalog(),
                           namespace=_notebook(tmp_path, monkeypatch), working_dir=tmp_path)
    chat = ChatView(session)
    reply = _ask(chat, sent, "mention_candidates", prefix="s")
    assert reply["result"]["candidates"] == [
        {"key": "sales", "mention": "@sales", "kind": "variable",
         "detail": "pandas.DataFrame, shape 300×2", "size": None}]
    files = _ask(chat, sent, "mention_candidates", prefix="file:data/")["result"]
    assert files["candidates"][0]["mention"] == "@file:data/notes.md"
    bad = _ask(chat, sent, "mention_candidates", prefix=3)
    assert bad["ok"] is False and "prefix" in bad["error"]
    # The page's cells are offered once the chat is on a page that answers.
    assert _ask(chat, sent, "mention_candidates", prefix="thi")["result"]["candidates"] == []
    session.notebook_page = FakeNotebookPage([])
    offered = _ask(chat, sent, "mention_candidates", prefix="")["result"]["candidates"]
    assert {"@this", "@cells["} <= {c["mention"] for c in offered}
    chat.close()
