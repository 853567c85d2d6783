"""What an outside agent is sent of a prompt: what the user typed, then what its mentions
referred to and the text files attached, as the blocks a native model reads; images as
images to an agent that takes them. An image before the agent said it takes any, and a
PDF, are refused with the reason — never dropped without a word. Played by the scripted
agent (``scripted_agent.py``), which writes each prompt's blocks down."""

from __future__ import annotations

import asyncio
import base64
import io
import json
import sys
from pathlib import Path
from typing import Any

import pytest
from PIL import Image

from neta_nb import AcpAgent, AgentSession
from neta_nb.events import Event
from neta_nb.runtime.mentions.attachments import Attachment, AttachmentError

from ...support.outside_agents import driven

AGENT = Path(__file__).with_name("scripted_agent.py")
STEPS = [{"update": {"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "text", "text": "Seen."}}}]


def agent_of(tmp_path: Path, **script: Any) -> AcpAgent:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": STEPS, **script}))
    return AcpAgent("scripted", [sys.executable, str(AGENT), str(path)], cwd=tmp_path)


def prompts(tmp_path: Path) -> list[list[dict[str, Any]]]:
    return [json.loads(line) for line in
            (tmp_path / "script.json.prompts").read_text().splitlines()]


def png() -> bytes:
    out = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(out, "PNG")
    return out.getvalue()


async def test_mentions_and_text_files_are_sent_as_a_native_model_reads_them(
        tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path))
    session.namespace["df_rows"] = 1234
    notes = Attachment(b"a,b\n1,2\n", "text/csv", "notes.csv")
    async with driven(session):
        await asyncio.wait_for(session.run("Look at @df_rows and the file.", [notes]), 30)
    [sent] = prompts(tmp_path)
    assert all(block["type"] == "text" for block in sent)
    texts = [block["text"] for block in sent]
    assert texts[0] == "Look at @df_rows and the file."
    mention, attached = texts[1:]
    assert "1234" in mention and "@df_rows" in mention
    assert "notes.csv" in attached and "a,b\n1,2" in attached
    # The same blocks a native model is sent after the prompt.
    prompt = session.messages[0]
    assert texts[1:] == [part.prompt_text() for part in prompt.parts[1:]]  # type: ignore[union-attr]


async def test_an_image_goes_as_an_image_to_an_agent_that_takes_images(tmp_path: Path
                                                                       ) -> None:
    session = AgentSession(agent_of(tmp_path, images=True))
    async with driven(session):
        # Before the agent started, no one knows what it takes: an image is refused,
        # with the reason, before anything is sent.
        with pytest.raises(AttachmentError, match="does not accept images"):
            await session.run("What is this?", [Attachment(png(), "image/png", "dot.png")])
        await asyncio.wait_for(session.run("Hello."), 30)
        # Started, it said it takes images.
        await asyncio.wait_for(session.run("What is this?",
                                           [Attachment(png(), "image/png", "dot.png")]), 30)
    sent = prompts(tmp_path)[-1]
    assert [block["type"] for block in sent] == ["text", "image"]
    assert sent[1]["mimeType"] == "image/png"
    assert base64.b64decode(sent[1]["data"]).startswith(b"\x89PNG")


async def test_an_agent_that_takes_no_images_is_not_offered_one(tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("Hello."), 30)
        with pytest.raises(AttachmentError, match="does not accept images"):
            await session.run("What is this?", [Attachment(png(), "image/png", "dot.png")])
    assert len(prompts(tmp_path)) == 1


async def test_an_image_whose_stored_file_is_missing_is_named_and_said(tmp_path: Path
                                                                       ) -> None:
    """A resumed prompt's image whose file left the store (``data`` None) is sent as its
    name, and the chat says the file is missing (not that the agent takes no images)."""
    from neta_nb.messages import ImagePart, Message, TextPart
    from neta_nb.runtime.acp.turns import AcpTurns

    session = AgentSession(agent_of(tmp_path, images=True))
    events: list[Event] = []
    session.subscribe(events.append)
    prompt = Message(role="user", parts=[
        TextPart(text="look"),
        ImagePart(media_type="image/png", name="dot.png", data=None, sha256="ab" * 32)])
    turns = session.deps.outside
    assert isinstance(turns, AcpTurns)

    class Connection:
        takes_images = True

    blocks = turns._prompt_blocks(prompt, Connection())  # type: ignore[arg-type]
    assert blocks == ["look", "[dot.png: attached in the chat; its stored file is missing]"]
    [warning] = [str(e.message) for e in events if e.type == "warning"]
    assert "dot.png" in warning and "stored file is missing" in warning
    session.close()
