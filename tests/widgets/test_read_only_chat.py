"""A session another live process runs opens read-only in the chat view: its history as
stored so far, no Send, Stop or approvals, nothing taken over; rereading picks up what the
owner stores; once the owner's turn ends (here: the owner dies) it can be continued here."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.messages import Message, TextPart
from neta_nb.widgets import ChatView, SessionSidebar
from neta_nb.widgets.base import RequestError
from neta_nb.widgets.chat.stored_session import StoredSession, StoredSessionFollower
from tests.support.owner_child import start_owner

from ..support.timing import poll_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


@pytest.fixture
def owner(store_target: str | Path,
          tmp_path: Path) -> Iterator[tuple[str | Path, subprocess.Popen[bytes]]]:
    """Another process that owns session ``s_shared`` and stays in its turn, on either
    backend."""
    db, marker = store_target, tmp_path / "streaming"
    child = start_owner(db, "s_shared", marker)
    try:
        poll_until(marker.exists, 30, "the owner's turn to stream")
        # The streamed text is checkpointed within half a second.
        poll_until(lambda: SessionStore(db).load_draft("s_shared") is not None, 10,
                   "the draft checkpoint")
        yield db, child
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


def kill_owner(db: str | Path, child: subprocess.Popen[bytes]) -> None:
    """The owner dies (SIGKILL), and the store can tell: at once on SQLite (its claim is a
    lock the OS drops with the process), a moment later on PostgreSQL (the server drops
    the claim once it notices the dead client's connection closed)."""
    store = SessionStore(db)
    try:
        record = store.get_session("s_shared")  # its owner is alive: read, not settled
        assert record is not None and record.running
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        poll_until(lambda: not store.database.owner_alive(record), 10,
                   "the store to see the owner gone")
    finally:
        store.close()


def chat_with_sidebar(db: str | Path) -> tuple[SessionStore, ChatView, SessionSidebar]:
    store = SessionStore(db)
    chat = ChatView(AgentSession(Agent("local", model=ScriptedProvider()), store=store))
    return store, chat, SessionSidebar(store, chat=chat)


def test_opening_another_kernels_session_shows_it_read_only(
        owner: tuple[str | Path, subprocess.Popen[bytes]]) -> None:
    db, child = owner
    store, chat, sidebar = chat_with_sidebar(db)
    row = next(r for r in sidebar.sessions if r["id"] == "s_shared")
    assert row["elsewhere"] is True

    assert sidebar.open_session("s_shared") is None
    assert chat.session is None and chat.session_id == "s_shared"
    assert chat.read_only["busy"] is True
    assert chat.read_only["owner"].startswith(f"process {child.pid} on ")
    # What it stored so far, with the answer it is streaming as far as it checkpointed.
    assert [(m["role"], m["text"]) for m in chat.messages] == [
        ("user", "a long question"), ("assistant", "A partial answer")]
    assert chat.agent["name"] == "owner" and chat.running is False
    assert chat.approvals == [] and chat.levels == []
    assert repr(chat) == "ChatView('owner', 2 messages shown, read-only)"
    snapshot = chat._sync({})
    assert snapshot["session_id"] == "s_shared" and snapshot["live"] is None
    assert [m["text"] for m in snapshot["messages"]] == ["a long question", "A partial answer"]

    # Nothing a view sends acts on it: no Send, no Stop, no approval, no level.
    for command in ({"type": "send", "text": "hello"}, {"type": "stop"},
                    {"type": "approve", "id": "x", "decision": "allow_once"},
                    {"type": "set_thinking_level", "level": "high"}):
        reply = chat._reply("command", "r", {"command": command})
        assert reply["ok"] is False and "read-only" in reply["error"]
        assert f"process {child.pid}" in reply["error"]
    reply = chat._reply("take_over", "r", {})
    assert reply["ok"] is False and f"process {child.pid}" in reply["error"]
    chat.lang = "zh-CN"  # the refusal in the view's language
    reply = chat._reply("take_over", "r", {})
    assert reply["ok"] is False and f"进程 {child.pid} 中运行" in reply["error"]
    chat.lang = "en"

    # The owner still has its turn: running, its pid, its draft, nothing added by us.
    record = store.get_session("s_shared")
    assert record is not None and record.running and record.owner is not None
    assert record.owner.pid == child.pid
    assert [m.text for m in store.load_messages("s_shared")] == ["a long question"]
    assert child.poll() is None

    # The owner dies: a refresh shows the turn has ended, and it continues here.
    kill_owner(db, child)
    assert chat._reply("refresh", "r", {})["ok"] is True
    assert chat.read_only == {"owner": "", "busy": False}
    row = next(r for r in sidebar.sessions if r["id"] == "s_shared")
    assert not row["running"] and not row["elsewhere"]  # the list follows the reread
    # Its draft stays until the session is resumed: still shown.
    assert [m["text"] for m in chat.messages] == ["a long question", "A partial answer"]
    reply = chat._reply("take_over", "r", {})
    assert reply == {"kind": "reply", "id": "r", "ok": True,
                     "result": {"session_id": "s_shared"}}
    assert chat.session is not None and chat.session.id == "s_shared"
    assert chat.read_only == {} and chat.stored is None
    assert chat.messages[-1]["interrupted"] == "killed"
    assert chat.messages[-1]["text"] == "A partial answer"  # the owner's draft
    sidebar.close()


async def test_a_read_only_view_follows_what_the_owner_stores(
        owner: tuple[str | Path, subprocess.Popen[bytes]]) -> None:
    # On the loop, as in a kernel: a change the store hears from the server (PostgreSQL's
    # NOTIFY, here of the second store's write) is delivered there, after these steps,
    # not on the listener's thread in the middle of them.
    db, _ = owner
    _, chat, sidebar = chat_with_sidebar(db)
    sidebar.open_session("s_shared")
    follower = chat._follower
    assert isinstance(follower, StoredSessionFollower)
    assert follower.refresh(force=False) is False  # nothing new: no full read, no redraw
    # What the owner writes next (here written for it, from a second connection).
    SessionStore(db).append_message("s_shared", Message.assistant([TextPart(text="Step one")]))
    assert follower.refresh(force=False) is True
    assert [m["text"] for m in chat.messages] == ["a long question", "Step one",
                                                  "A partial answer"]
    assert chat._full_text({"message_id": chat.messages[1]["id"],
                            "field": "text"}) == {"text": "Step one"}
    assert chat._older({"before": 0})["messages"] == []
    # A new chat from the read-only view starts with the last live session's agent.
    fresh = chat.new_chat()
    assert fresh.agent.name == "local" and chat.read_only == {} and chat._follower is None
    sidebar.close()


async def test_the_follower_rereads_on_the_loop_while_the_owner_runs(
        owner: tuple[str | Path, subprocess.Popen[bytes]]) -> None:
    db, child = owner
    seen: list[StoredSession] = []
    follower = StoredSessionFollower(StoredSession.read(SessionStore(db), "s_shared"),
                                     seen.append, interval=3600)
    assert follower._timer is not None  # scheduled on the running loop
    kill_owner(db, child)
    follower._tick()  # what the timer runs
    assert [s.busy for s in seen] == [False]
    assert follower._timer is None  # its turn is over: nothing more to follow
    follower.close()


def test_a_session_that_is_gone_says_so() -> None:
    store = SessionStore(":memory:")
    with pytest.raises(KeyError, match="no session 's_gone'"):
        StoredSession.read(store, "s_gone")
    chat = ChatView()
    with pytest.raises(RequestError, match="not showing a read-only session"):
        chat.take_over()
