"""The chat view's header opens the list of chats and the tool panel: ``open_panel`` makes
each widget once for the chat (the view draws it from the model id in the reply), the
list follows the chat's store and opens chats in it, the tool panel follows the session
shown, and a chat that cannot have one says why in the user's language."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from ipywidgets import Widget  # type: ignore[import-untyped]
from ipywidgets.widgets.widget import _instances  # type: ignore[import-untyped]

from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.labels import t
from neta_nb.widgets import ChatView, SessionSidebar, ToolConfigPanel
from neta_nb.widgets.chat.stored_session import StoredSession

from .conftest import SentMessages


def _ask(chat: ChatView, sent: SentMessages, **payload: Any) -> dict[str, Any]:
    request_id = f"r{len(sent)}"
    chat._on_custom_message(chat, {"kind": "open_panel", "id": request_id, **payload}, [])
    (reply,) = [m for m in sent.of_kind("reply") if m["id"] == request_id]
    return reply


def _widget(reply: dict[str, Any]) -> Widget:
    """The widget the reply names (a live view gets it from the widget manager by id)."""
    assert reply["ok"] is True, reply
    return _instances[reply["result"]["model_id"]]


def _agent() -> Agent:
    return Agent("analyst", model=ScriptedProvider([[{"text": "Hello."}]]))


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions.sqlite3")


async def test_the_list_of_chats_is_the_stores_attached_to_the_chat(
        store: SessionStore, sent: SentMessages) -> None:
    earlier = AgentSession(_agent(), store=store)
    await earlier.run("Say hello")
    chat = ChatView(AgentSession(_agent(), store=store), lang="zh-CN")
    sidebar = _widget(_ask(chat, sent, panel="sessions"))
    assert isinstance(sidebar, SessionSidebar)
    assert sidebar.store is store and sidebar.chat is chat and sidebar.can_open
    assert sidebar.lang == "zh-CN" and sidebar.height == "100%"
    assert earlier.id in [row["id"] for row in sidebar.sessions]
    assert sidebar.active == chat.session_id
    # Asked again: the same widget, in the chat's language now.
    chat.lang = "en"
    assert _widget(_ask(chat, sent, panel="sessions")) is sidebar
    assert sidebar.lang == "en"
    # A row clicked in it opens that chat here.
    sidebar.open_session(earlier.id)
    assert chat.session_id == earlier.id
    chat.close()
    assert sidebar.comm is None  # closed with the chat


def test_a_chat_kept_in_memory_has_no_list_and_says_how_to_get_one(sent: SentMessages) -> None:
    # A normal state, not a failure: no widget, the text the drawer shows in its place.
    chat = ChatView(AgentSession(_agent()), lang="zh-CN")
    reply = _ask(chat, sent, panel="sessions")
    assert reply["ok"] is True
    assert reply["result"] == {"model_id": "", "empty": t("sessions_need_store", "zh-CN")}
    assert "store=SessionStore()" in reply["result"]["empty"]


def test_the_tool_panel_is_the_sessions_and_follows_the_session_shown(
        sent: SentMessages) -> None:
    first = AgentSession(_agent())
    chat = ChatView(first)
    panel = _widget(_ask(chat, sent, panel="tools"))
    assert isinstance(panel, ToolConfigPanel) and panel.session is first
    assert _widget(_ask(chat, sent, panel="tools")) is panel
    second = AgentSession(_agent())
    chat.bind(second)
    other = _widget(_ask(chat, sent, panel="tools"))
    assert other is not panel and other.session is second
    assert panel.comm is None  # the other session's panel is closed
    chat.close()
    assert other.comm is None


async def test_a_read_only_chat_lists_its_stores_chats_but_has_no_tool_panel(
        store: SessionStore, sent: SentMessages) -> None:
    session = AgentSession(_agent(), store=store)
    await session.run("Say hello")
    chat = ChatView()
    chat.show_stored(StoredSession.read(store, session.id))
    sidebar = _widget(_ask(chat, sent, panel="sessions"))
    assert isinstance(sidebar, SessionSidebar) and sidebar.store is store
    reply = _ask(chat, sent, panel="tools")
    assert reply["ok"] is False and reply["error"] == t("tools_read_only_chat", "en")
    chat.close()


def test_a_side_panel_is_told_the_chats_own_model(sent: SentMessages) -> None:
    chat = ChatView(AgentSession(_agent()))
    chat._on_custom_message(chat, {"kind": "side_panel", "id": "s1"}, [])
    (reply,) = sent.of_kind("reply")
    assert reply == {"kind": "reply", "id": "s1", "ok": True,
                     "result": {"model_id": chat.model_id}}


def test_an_unknown_panel_or_no_session_is_refused(sent: SentMessages) -> None:
    chat = ChatView()
    assert "sessions, tools" in _ask(chat, sent, panel="files")["error"]
    assert _ask(chat, sent, panel="tools")["error"] == "no session is bound to this chat view"
    assert _ask(chat, sent, panel="sessions")["result"]["empty"] == t("sessions_need_store", "en")


def test_the_views_know_whether_the_chat_shown_keeps_branches(store: SessionStore) -> None:
    # Without a store the message actions ask before they drop what follows.
    kept_in_memory = AgentSession(_agent())
    chat = ChatView(kept_in_memory)
    assert chat.keeps_branches is False
    chat.bind(AgentSession(_agent(), store=store))
    assert chat.keeps_branches is True
    chat.bind(kept_in_memory)
    assert chat.keeps_branches is False
    chat.close()


async def test_a_fork_made_here_is_marked_with_a_way_back(sent: SentMessages) -> None:
    original = AgentSession(_agent())  # no store: the original lives in this view only
    await original.run("Say hello")
    chat = ChatView(original)
    prompt_id = original.messages[0].id

    def ask(kind: str, **payload: Any) -> dict[str, Any]:
        request_id = f"r{len(sent)}"
        chat._on_custom_message(chat, {"kind": kind, "id": request_id, **payload}, [])
        (reply,) = [m for m in sent.of_kind("reply") if m["id"] == request_id]
        return reply

    assert chat.fork_of == ""
    reply = ask("message_action", action="fork", message_id=prompt_id)
    fork = chat.session
    assert fork is not None and fork is not original
    assert reply["result"] == {"session_id": fork.id} and chat.fork_of == original.id
    back = ask("back_from_fork")
    assert back["result"] == {"session_id": original.id}
    assert chat.session is original and chat.fork_of == ""
    assert "not a fork" in ask("back_from_fork")["error"]
    chat.close()
