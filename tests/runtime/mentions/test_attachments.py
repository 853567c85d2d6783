"""``session.run(prompt, attachments=[...])``: images to vision models, text files as
named text blocks, PDFs to models that read them; refusals before anything is sent; the
large bytes stored beside the database and back on resume — a missing file a placeholder,
not a crash."""

from __future__ import annotations

import base64
import hashlib
import io
import random
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, Attachment, AttachmentError, SessionStore, ToolCatalog
from neta_nb.messages import DocumentPart, FileTextPart, ImagePart
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.providers.scripted.scripted import ScriptedProvider

from ...providers.sse_server import AnthropicStream, OpenAIStream, SSEServer

Image = pytest.importorskip("PIL.Image")

CSV = b"region,amount\nnorth,12\nsouth,7\n"
PDF = b"%PDF-1.4\n1 0 obj<<>>endobj\ntrailer<<>>\n%%EOF\n"


def png(width: int = 40, height: int = 30, colour: str = "red") -> bytes:
    buffer = io.BytesIO()
    Image.new("RGB", (width, height), colour).save(buffer, format="PNG")
    return buffer.getvalue()


def anthropic(sse_server: SSEServer, model: str = "claude-sonnet-4-5") -> AnthropicProvider:
    return AnthropicProvider(model, api_key="k", base_url=sse_server.base_url, max_retries=0)


async def test_anthropic_gets_image_text_file_and_pdf_blocks(sse_server: SSEServer,
                                                             tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(png())
    sse_server.add(AnthropicStream().text(["Seen."]).finish().response())
    session = AgentSession(Agent("a", model=anthropic(sse_server)), ToolCatalog())
    await session.run("What do these show?", attachments=[
        tmp_path / "chart.png", (CSV, "text/csv", "sales.csv"), (PDF, "application/pdf",
                                                                  "report.pdf")])
    content = sse_server.requests[0].json["messages"][0]["content"]
    assert [block["type"] for block in content] == ["text", "image", "text", "document"]
    assert content[0] == {"type": "text", "text": "What do these show?"}
    assert content[1]["source"]["media_type"] == "image/png"
    assert base64.b64decode(content[1]["source"]["data"]) == png()
    assert content[2]["text"] == f'<file name="sales.csv">\n{CSV.decode()}\n</file>'
    assert content[3]["title"] == "report.pdf"
    assert base64.b64decode(content[3]["source"]["data"]) == PDF
    # The transcript keeps what the user typed apart from the files.
    user = session.messages[0]
    assert user.text == "What do these show?"
    assert [type(p) for p in user.attachments] == [ImagePart, FileTextPart, DocumentPart]


async def test_openai_gets_image_url_and_text_parts(sse_server: SSEServer) -> None:
    sse_server.add(OpenAIStream().text(["Ok."]).finish().response())
    provider = OpenAIProvider("gpt-4o", api_key="k", base_url=sse_server.base_url, max_retries=0)
    session = AgentSession(Agent("a", model=provider), ToolCatalog())
    await session.run("Look", attachments=[Attachment(png(), "image/png", "a.png"),
                                           (CSV, "text/csv", "sales.csv")])
    user = sse_server.requests[0].json["messages"][1]
    assert user["role"] == "user"
    text, image, csv = user["content"]
    assert text == {"type": "text", "text": "Look"}
    assert image["image_url"]["url"] == "data:image/png;base64," + base64.b64encode(
        png()).decode()
    assert csv["type"] == "text" and csv["text"].startswith('<file name="sales.csv">')


@pytest.mark.parametrize(("model", "supplier", "attachment", "why"), [
    ("gpt-4o", "openai", (PDF, "application/pdf", "r.pdf"),
     "r.pdf: the model openai:gpt-4o does not accept PDF documents"),
    ("deepseek-chat", "deepseek", (b"", "image/png", "p.png"),
     "p.png: the model deepseek:deepseek-chat does not accept images"),
    ("gpt-4o", "openai", (b"PK\x03\x04", "application/zip", "data.zip"),
     "data.zip: application/zip files cannot be sent to a model"),
    ("gpt-4o", "openai", (b"x" * (10 * 1024 * 1024 + 1), "text/plain", "big.txt"),
     "big.txt is 10.0 MB: at most 10.0 MB per file"),
    ("gpt-4o", "openai", (b"\xff\xfe\x00", "text/csv", "bad.csv"), "bad.csv is not UTF-8"),
])
async def test_refused_before_anything_is_sent_and_the_session_stays_usable(
        sse_server: SSEServer, model: str, supplier: str, attachment: Any, why: str) -> None:
    provider = OpenAIProvider(model, supplier=supplier, api_key="k",
                              base_url=sse_server.base_url, max_retries=0)
    store = SessionStore(":memory:")
    session = AgentSession(Agent("a", model=provider), ToolCatalog(), store=store)
    with pytest.raises(AttachmentError) as refused:
        await session.run("Read this", attachments=[attachment])
    assert str(refused.value).startswith(why)
    assert sse_server.requests == [] and session.messages == []
    assert not session.running
    with pytest.raises(AttachmentError):
        session.start("Read this", attachments=[attachment])
    assert not session.running
    sse_server.add(OpenAIStream(model=model).text(["Fine."]).finish().response())
    answer = await session.run("Without it then")
    assert answer is not None and answer.text == "Fine."
    session.flush()
    assert [m.text for m in store.load_messages(session.id)] == ["Without it then", "Fine."]


async def test_pil_images_and_large_images_are_downscaled(sse_server: SSEServer) -> None:
    sse_server.add(AnthropicStream().text(["Ok."]).finish().response())
    session = AgentSession(Agent("a", model=anthropic(sse_server)), ToolCatalog())
    await session.run("Big", attachments=[Image.new("RGB", (4000, 1000), "blue")])
    block = sse_server.requests[0].json["messages"][0]["content"][1]
    with Image.open(io.BytesIO(base64.b64decode(block["source"]["data"]))) as sent:
        assert sent.size == (1568, 392)
    with pytest.raises(AttachmentError, match="cannot attach a int"):
        await session.run("x", attachments=[3])


async def test_stored_beside_the_database_and_back_on_resume(tmp_path: Path) -> None:
    path = tmp_path / "sessions.db"
    store = SessionStore(path)
    noise = Image.frombytes("RGB", (200, 100), random.Random(7).randbytes(200 * 100 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    picture = buffer.getvalue()  # too large to stay in the row
    assert len(picture) > 8 * 1024
    session = AgentSession(Agent("a", model=ScriptedProvider()), ToolCatalog(), store=store)
    await session.run("Keep this", attachments=[(picture, "image/png", "g.png")])
    session.flush()
    blobs = list((tmp_path / "sessions.db.blobs").iterdir())
    assert [b.read_bytes() for b in blobs] == [picture]
    row = store.database.execute("SELECT data FROM messages ORDER BY seq")[0][0]
    assert base64.b64encode(picture).decode()[:100] not in row and blobs[0].name in row

    resumed = AgentSession.resume(session.id, SessionStore(path), provider=ScriptedProvider())
    image = resumed.messages[0].attachments[0]
    assert isinstance(image, ImagePart)
    assert image.data is not None and base64.b64decode(image.data) == picture

    blobs[0].unlink()
    reopened = AgentSession.resume(session.id, SessionStore(path),
                                   provider=ScriptedProvider())
    missing = reopened.messages[0].attachments[0]
    assert isinstance(missing, ImagePart) and missing.data is None and missing.name == "g.png"
    from neta_nb.providers.anthropic import to_anthropic_messages
    blocks = to_anthropic_messages(reopened.messages)[0]["content"]
    assert blocks[1] == {"type": "text", "text": "[1 image no longer available: the stored "
                                                 "file is missing]"}
    await reopened.run("Still there?")  # the session goes on


async def test_a_tool_figure_comes_back_on_resume_and_a_lost_one_is_a_placeholder(
        tmp_path: Path) -> None:
    pytest.importorskip("matplotlib")
    from neta_nb import AgentToolConfig
    from neta_nb.widgets.chat.drawing.render import render_message

    code = ("import matplotlib.pyplot as plt\n"
            "plt.scatter(range(300), [i * 7 % 31 for i in range(300)])")
    script = [[{"tool_call": {"name": "python", "args": {"code": code}}}], [{"text": "Ok."}]]
    path = tmp_path / "s.db"
    session = AgentSession(Agent("a", model=ScriptedProvider(script),
                                 tools=AgentToolConfig(enabled=["python"])),
                           ToolCatalog.default(), store=SessionStore(path), namespace={},
                           approval_policy="allow")
    await session.run("Plot")
    session.flush()
    figure = session.messages[1].metadata.tool_executions[0].outputs[0]
    assert figure.data is not None and len(figure.data) > 8 * 1024
    blob = tmp_path / "s.db.blobs" / hashlib.sha256(base64.b64decode(figure.data)).hexdigest()
    assert blob.is_file()

    def resumed() -> AgentSession:
        return AgentSession.resume(session.id, SessionStore(path),
                                   provider=ScriptedProvider(script))

    again = resumed()
    assert again.messages[1].metadata.tool_executions[0].outputs[0].data == figure.data
    assert again.messages[2].tool_results[0].images[0].data == figure.data  # for the model
    blob.unlink()
    lost = resumed()
    card = render_message(lost.messages[1], 1)["cards"][0]
    assert card["outputs"][0]["data"] is None  # the card draws its placeholder
    assert lost.messages[2].tool_results[0].images[0].available is False


async def test_deleting_a_session_removes_the_blobs_only_it_used(tmp_path: Path) -> None:
    path = tmp_path / "s.db"
    store = SessionStore(path)
    noise = Image.frombytes("RGB", (120, 80), random.Random(3).randbytes(120 * 80 * 3))
    buffer = io.BytesIO()
    noise.save(buffer, format="PNG")
    shared = (buffer.getvalue(), "image/png", "shared.png")
    sessions = []
    for _ in range(2):
        session = AgentSession(Agent("a", model=ScriptedProvider()), ToolCatalog(),
                               store=store)
        await session.run("Keep", attachments=[shared])
        session.flush()
        sessions.append(session)
    blobs = tmp_path / "s.db.blobs"
    assert len(list(blobs.iterdir())) == 1
    store.delete_session(sessions[0].id)
    assert len(list(blobs.iterdir())) == 1  # the other session still shows it
    store.delete_session(sessions[1].id)
    assert list(blobs.iterdir()) == []
