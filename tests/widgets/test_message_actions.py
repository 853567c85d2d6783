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


async def test_rewind_and_fork_with_the_notebook_answer_what_the_page_did(
        sent: SentMessages) -> None:
    from neta_nb import AgentToolConfig

    from ..support.notebook_page import FakeNotebookPage
    from ..support.sessions import calls

    page = FakeNotebookPage([{"id": "c1", "source": "x = 1"}, {"id": "c2", "source": "y = 2"}])
    edits = [calls(("e1", "edit_cell", {"cell_id": "c1", "source": "x = 10"}),
                   ("e2", "edit_cell", {"cell_id": "c2", "source": "y = 20"})),
             answer("Edited.")]
    session, _rec, _provider = make_session(
        [*edits, *edits], agent_options={"tools": AgentToolConfig(enabled=[
            "edit_cell"]), "accept_notebook_edits": True})
    chat = ChatView(session)
    session.notebook_page = page  # the page's extension, as the fake answers it
    await session.run("Edit both")
    page.cell("c2")["source"] = "y = 20  # mine"  # the user's edit since

    chat._on_custom_message(chat, {"kind": "message_action", "id": "r1", "action": "rewind",
                                   "message_id": session.messages[0].id, "notebook": True}, [])
    await wait_until(lambda: any(m["id"] == "r1" for m in sent.of_kind("reply")))
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == "r1"]
    sent.clear()
    assert reply["ok"] is True and reply["result"]["session_id"] == session.id
    assert reply["result"]["notebook"] == {
        "restored": [{"cell_id": "c1", "kind": "edit"}],
        "conflicts": [{"cell_id": "c2", "kind": "edit", "reason": "edited"}], "error": None}
    assert [c["source"] for c in page.cells] == ["x = 1", "y = 20  # mine"]
    assert chat.messages == [] and session.messages == []
    assert chat.notebook_restore == reply["result"]["notebook"]  # a view drawn anew says it
    # The saved form says so, with the cell left as the user changed it.
    assert ("Notebook put back; changes undone: 1. Left as you changed them: c2 (changed "
            "since)") in chat._fallback_html()

    # Without a page to put the cells back on: refused, nothing rewound.
    page.cell("c2")["source"] = "y = 2"
    session.notebook_page = page  # the rewind drew the chat again, with its own page
    await session.run("Edit both")
    assert chat.notebook_restore == {}  # a message came after it
    page.available = False
    reply = _act(chat, sent, action="rewind", message_id=session.messages[0].id,
                 notebook=True)
    assert reply["ok"] is False and "needs a JupyterLab or Notebook 7 page" in reply["error"]
    assert len(session.messages) == 5
    page.available = True
    for bad in ({"action": "rewind", "notebook": "yes"}, {"action": "retry", "notebook": True}):
        reply = _act(chat, sent, message_id=session.messages[0].id, **bad)
        assert reply["ok"] is False and "notebook" in reply["error"], bad

    answer_id = session.messages[-1].id
    chat._on_custom_message(chat, {"kind": "message_action", "id": "f1", "action": "fork",
                                   "message_id": session.messages[0].id, "notebook": True}, [])
    await wait_until(lambda: any(m["id"] == "f1" for m in sent.of_kind("reply")))
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == "f1"]
    assert reply["ok"] is True and reply["result"]["session_id"] != session.id
    assert chat.session is not None and chat.session.id == reply["result"]["session_id"]
    assert [c["source"] for c in page.cells] == ["x = 1", "y = 2"]
    assert session.messages[-1].id == answer_id  # the fork's origin is left as it was
    chat.close()
