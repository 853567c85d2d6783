"""The chat view's message actions (``message_action``): retry an answer's prompt, edit a
prompt and send it again, rewind to before a prompt, fork at a message — the view follows
each; what is replaced is kept as a branch; refused, with the reason, while a turn runs."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from neta_nb import SessionStore
from neta_nb.widgets import ChatView, SessionSidebar

from ..support.sessions import answer, make_session
from ..support.timing import wait_until
from .conftest import SentMessages


def _act(chat: ChatView, sent: SentMessages, **request: Any) -> dict[str, Any]:
    chat._on_custom_message(chat, {"kind": "message_action", "id": "a1", **request}, [])
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == "a1"]
    sent.clear()
    return reply


async def test_retry_edit_rewind_and_fork_from_the_view(tmp_path: Path,
                                                        sent: SentMessages) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _rec, _provider = make_session(
        [answer("About cats."), answer("Cats again."), answer("About dogs.")], store=store)
    chat = ChatView(session)
    await session.run("Tell me about cats")
    answer_id = session.messages[1].id

    reply = _act(chat, sent, action="retry", message_id=answer_id)
    assert reply["ok"] is True and reply["result"] == {"session_id": session.id}
    await wait_until(lambda: not session.running and len(session.messages) == 2)
    assert [m["text"] for m in chat.messages] == ["Tell me about cats", "Cats again."]

    prompt_id = session.messages[0].id
    assert _act(chat, sent, action="edit", message_id=prompt_id, text="And dogs?")["ok"]
    await wait_until(lambda: not session.running and len(session.messages) == 2)
    assert [m["text"] for m in chat.messages] == ["And dogs?", "About dogs."]

    reply = _act(chat, sent, action="fork", message_id=session.messages[0].id)
    assert reply["ok"] is True and reply["result"]["session_id"] != session.id
    assert chat.session is not None and chat.session.id == reply["result"]["session_id"]
    assert [m["text"] for m in chat.messages] == ["And dogs?"]

    chat.bind(session)
    assert _act(chat, sent, action="rewind", message_id=session.messages[0].id)["ok"]
    assert chat.messages == [] and session.messages == []
    session.flush()
    # Nothing was lost: the retry's, the edit's and the rewind's old turns are branches,
    # and the fork is one too — four, all listed.
    branches = [r for r in store.list_sessions() if r.branch_of == session.id]
    assert len(branches) == 4
    rows = SessionSidebar(store).sessions
    assert sum(1 for row in rows if row["branch_of"] == session.id) == 4
    chat.close()


async def test_a_message_action_is_refused_while_a_turn_runs_and_for_bad_requests(
        sent: SentMessages) -> None:
    gate = asyncio.Event()
    session, _rec, _provider = make_session([answer("one"), [gate.wait, *answer("two")]])
    chat = ChatView(session)
    await session.run("first")
    task = session.start("second")
    await wait_until(lambda: len(session.messages) == 3)
    reply = _act(chat, sent, action="rewind", message_id=session.messages[0].id)
    assert reply["ok"] is False and "running a turn" in reply["error"]
    gate.set()
    await task
    for bad in ({"action": "explode", "message_id": "x"}, {"action": "edit"},
                {"action": "edit", "message_id": session.messages[0].id, "text": "  "},
                {"action": "fork", "message_id": "m_nope"},
                {"action": "edit", "message_id": session.messages[1].id, "text": "x"}):
        reply = _act(chat, sent, **bad)
        assert reply["ok"] is False and reply["error"], bad
    assert [m.text for m in session.messages] == ["first", "one", "second", "two"]
    chat.close()
