"""The widgets' side of notebook-native I/O: files arriving as a request's binary
buffers become the prompt's attachments (or an error reply, nothing sent); the transcript
item names them; tool cards carry what the tool displayed; the static forms show
placeholders and a bounded thumbnail."""

from __future__ import annotations

import asyncio
import base64
import io
from pathlib import Path

import pytest

from neta_nb import (
    Agent,
    AgentSession,
    AgentToolConfig,
    ScriptedProvider,
    SessionStore,
    ToolCatalog,
)
from neta_nb.events import ToolCallEvent, ToolResultEvent
from neta_nb.messages import FileTextPart
from neta_nb.widgets import ChatView, ToolCard
from neta_nb.widgets.rich_static import THUMBNAIL_BUDGET

from .conftest import SentMessages

Image = pytest.importorskip("PIL.Image")


def _png() -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (20, 10), "red").save(buffer, format="PNG")
    return buffer.getvalue()


def _send(chat: ChatView, sent: SentMessages, text: str, files: list[tuple[str, str, bytes]]
          ) -> dict[str, object]:
    request_id = f"r{len(sent)}"
    content = {"kind": "command", "id": request_id, "command": {
        "type": "send", "text": text,
        "attachments": [{"name": n, "media_type": t, "size": len(b)} for n, t, b in files]}}
    buffers = [memoryview(b) for _, _, b in files]  # as ipywidgets hands them over
    chat._on_custom_message(chat, content, buffers)
    return next(m for m in sent.of_kind("reply") if m["id"] == request_id)


async def test_buffers_become_attachments_of_the_prompt(sent: SentMessages) -> None:
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": "Seen."}]])),
                           ToolCatalog())
    chat = ChatView(session)
    finished = asyncio.Event()
    session.subscribe(lambda event: finished.set() if event.type == "done" else None)
    reply = _send(chat, sent, "Look", [("chart.png", "image/png", _png()),
                                       ("notes.md", "", b"# Notes\n")])
    assert reply["ok"] is True, reply
    await finished.wait()
    user = session.messages[0]
    assert [(p.type, getattr(p, "name", None)) for p in user.parts] == [
        ("text", None), ("image", "chart.png"), ("file_text", "notes.md")]
    file_part = user.parts[2]
    assert isinstance(file_part, FileTextPart)
    assert file_part.media_type == "text/markdown"  # typed by its name
    item = next(i for i in chat.messages if i["role"] == "user")
    assert [(a["name"], a["media_type"]) for a in item["attachments"]] == [
        ("chart.png", "image/png"), ("notes.md", "text/markdown")]
    assert base64.b64decode(item["attachments"][0]["thumbnail"]) == _png()
    assert "[attached: chart.png, " in chat._fallback_text()


async def test_a_refused_file_is_an_error_reply_and_nothing_is_sent(
        sent: SentMessages) -> None:
    session = AgentSession(Agent("a", model=ScriptedProvider()), ToolCatalog())
    chat = ChatView(session)
    reply = _send(chat, sent, "Unzip", [("a.zip", "application/zip", b"PK\x03\x04")])
    assert reply["ok"] is False
    assert "a.zip: application/zip files cannot be sent to a model" in str(reply["error"])
    assert session.messages == [] and not session.running
    described_only = {"kind": "command", "id": "x", "command": {
        "type": "send", "text": "t", "attachments": [{"name": "a.png"}]}}
    chat._on_custom_message(chat, described_only, [])
    assert "1 attachments described, 0 received" in str(sent.of_kind("reply")[-1]["error"])


async def test_tool_cards_carry_outputs_and_their_static_forms_are_bounded() -> None:
    code = ("import matplotlib.pyplot as plt\nimport pandas as pd\nplt.plot([1, 2])\n"
            "pd.DataFrame({'a': [1, 2]})")
    provider = ScriptedProvider([[{"tool_call": {"name": "python", "args": {"code": code}}}],
                                 [{"text": "Done."}]])
    session = AgentSession(Agent("a", model=provider,
                                 tools=AgentToolConfig(enabled=["python"])),
                           namespace={}, approval_policy="allow")
    events: list[object] = []
    session.subscribe(events.append)
    chat = ChatView(session)
    await session.run("Plot")
    card_item = next(i for i in chat.messages if i["role"] == "assistant")["cards"][0]
    assert [o["media_type"] for o in card_item["outputs"]] == ["image/png", "text/html"]
    result = next(e for e in events if isinstance(e, ToolResultEvent))
    call = next(e for e in events if isinstance(e, ToolCallEvent))
    card = ToolCard.from_event(call)
    card.apply(result)
    assert [o["media_type"] for o in card.outputs] == ["image/png", "text/html"]
    assert "[image 640×480]" in card._fallback_text()
    assert "[HTML table]" in card._fallback_html()
    html = card._fallback_html()
    assert html.count('<img alt="[image 640×480]" src="data:image/png;base64,') == 1
    # Past the budget the thumbnail is a placeholder.
    card.outputs = [card.outputs[0]] * (THUMBNAIL_BUDGET // len(card.outputs[0]["data"]) + 2)
    assert card._fallback_html().count("<img ") < len(card.outputs)


def test_card_outputs_in_widget_state_are_bounded() -> None:
    from neta_nb.widgets.chat.drawing.render import OUTPUT_STATE_CHARS, bounded_outputs

    big = {"media_type": "image/png", "data": "A" * (OUTPUT_STATE_CHARS // 2 + 1), "text": None}
    table = {"media_type": "text/html", "data": None, "text": "<table></table>"}
    kept = bounded_outputs([big, table, big])
    assert kept[0] == big and kept[1] == table
    assert kept[2]["omitted"] is True and kept[2]["data"] is None


async def test_a_hostile_page_message_is_bytes_and_names_only(
        sent: SentMessages, tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": "Read."}]])),
                           ToolCatalog(), store=store)
    chat = ChatView(session)
    oversize = _send(chat, sent, "Big", [("big.txt", "text/plain", b"x" * (11 * 1024 ** 2))])
    assert oversize["ok"] is False and "big.txt is 11.0 MB: at most 10.0 MB" in str(
        oversize["error"])
    finished = asyncio.Event()
    session.subscribe(lambda event: finished.set() if event.type == "done" else None)
    # A path where a name goes, and a name JSON can carry but UTF-8 cannot (a lone
    # surrogate, "\ud800" in the page's JSON): the kernel reads no file and stores it.
    reply = _send(chat, sent, "Read", [("/etc/hostname", "text/plain", b"mine"),
                                       ("\ud800.txt", "text/plain", b"second")])
    assert reply["ok"] is True, reply
    await finished.wait()
    session.flush()
    parts = store.load_messages(session.id)[0].parts
    assert [(p.type, getattr(p, "name", None), getattr(p, "text", None)) for p in parts] == [
        ("text", None, "Read"), ("file_text", "/etc/hostname", "mine"),
        ("file_text", "\ufffd.txt", "second")]
