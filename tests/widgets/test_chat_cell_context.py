"""The chat's ``send`` with cells — the context chip's ``cells`` and the prompt's cell
mentions — reads them from the page through the view when sent, and the reply waits for
that: the model gets the page's text then; a cell the page does not have, a bad slice or
a malformed ``cells`` is the send's error reply, and nothing is sent or stored."""

from __future__ import annotations

from typing import Any

from neta_nb.escaping import unquoted
from neta_nb.messages import MentionPart
from neta_nb.widgets import ChatView

from ..support.sessions import answer, make_session
from ..support.timing import wait_until
from .conftest import SentMessages

LIVE = "df = load()  # typed, unsaved\n\tdf.head()"
NOTEBOOK = {"path": "work.ipynb", "dirty": True, "chat_cell_id": "chat", "active_cell_id": "b",
            "own": True, "cells": [
                {"id": "a", "cell_type": "code", "source": "import x", "outputs": [],
                 "execution_count": 1},
                {"id": "b", "cell_type": "code", "source": LIVE, "outputs": [],
                 "execution_count": None},
                {"id": "chat", "cell_type": "code", "source": "chat", "outputs": [],
                 "execution_count": 2}]}


def _open(sent: SentMessages) -> tuple[ChatView, Any, Any]:
    session, _, provider = make_session([answer("ok"), answer("ok")])
    chat = ChatView(session)
    chat._on_custom_message(chat, {"kind": "view_opened", "id": "o", "view_id": "v1",
                                   "notebook_bridge": True}, [])
    return chat, session, provider


async def _send(chat: ChatView, sent: SentMessages, request_id: str,
                command: dict[str, Any], page: dict[str, Any] | None) -> dict[str, Any]:
    """Send ``command``, answer the page's ``read`` with ``page``, return the reply."""
    chat._on_custom_message(chat, {"kind": "command", "id": request_id, "command": command}, [])
    if page is not None:
        await wait_until(lambda: sent.of_kind("notebook_request"), within=5)
        [asked] = sent.of_kind("notebook_request")
        sent.remove(asked)
        assert asked["op"] == "read" and asked["view_id"] == "v1"
        chat._on_custom_message(chat, {"kind": "notebook_reply", "id": f"{request_id}-r",
                                       "request_id": asked["id"], "ok": True,
                                       "result": page}, [])
    await wait_until(lambda: [m for m in sent.of_kind("reply") if m["id"] == request_id],
                     within=5)
    [reply] = [m for m in sent.of_kind("reply") if m["id"] == request_id]
    return reply


def _source(block: str, cell_id: str) -> str:
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if f"· id {cell_id} ·" in line)
    body = []
    for line in lines[start + 1:]:
        if (text := unquoted(line)) is None:
            break
        body.append(text)
    return "\n".join(body)


async def test_the_chip_and_this_send_the_page_text_at_send_time(sent: SentMessages) -> None:
    chat, session, provider = _open(sent)
    reply = await _send(chat, sent, "s1", {"type": "send", "text": "what is @this?",
                                           "cells": ["a"]}, NOTEBOOK)
    assert reply["ok"], reply
    await wait_until(lambda: not session.running and provider.requests, within=5)
    prompt = provider.requests[0].messages[-1]
    parts = [p for p in prompt.parts if isinstance(p, MentionPart)]
    assert [p.mention for p in parts] == ["@this", "@cell:a"]
    assert _source(parts[0].text, "b") == LIVE
    assert _source(parts[1].text, "a") == "import x"
    assert prompt.text == "what is @this?"


async def test_a_cell_the_page_lacks_is_the_sends_error_and_nothing_goes(
        sent: SentMessages) -> None:
    chat, session, provider = _open(sent)
    reply = await _send(chat, sent, "s1", {"type": "send", "text": "see @cells[1:3] too",
                                           "cells": ["gone"]}, NOTEBOOK)
    assert not reply["ok"]
    assert "@cell:gone (the context chip's cell gone is no longer in the notebook" \
        in reply["error"]
    bad = await _send(chat, sent, "s2", {"type": "send", "text": "see @cells[2]"}, None)
    assert not bad["ok"] and "is not a slice of cells" in bad["error"]
    malformed = await _send(chat, sent, "s3", {"type": "send", "text": "hi", "cells": [3]},
                            None)
    assert not malformed["ok"] and "'cells' must be a list" in malformed["error"]
    assert provider.requests == [] and session.messages == []


async def test_a_send_without_cells_answers_at_once(sent: SentMessages) -> None:
    chat, session, provider = _open(sent)
    chat._on_custom_message(chat, {"kind": "command", "id": "s1",
                                   "command": {"type": "send", "text": "mail a@this.org"}}, [])
    [reply] = sent.of_kind("reply")[-1:]
    assert reply["id"] == "s1" and reply["ok"]
    assert sent.of_kind("notebook_request") == []
    await wait_until(lambda: not session.running and provider.requests, within=5)
