"""SessionSidebar: rows from the store (plan badge, running, last message), live refresh,
opening a session in the chat view with its state restored, and "new chat"."""

from __future__ import annotations

import asyncio
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.messages import Message
from neta_nb.widgets import ChatView, SessionSidebar
from neta_nb.widgets.base import RequestError

from ..support.sessions import answer, calls, make_session, ran
from ..support.timing import wait_until
from .conftest import SentMessages


@pytest.fixture
def store(tmp_path: Path) -> SessionStore:
    return SessionStore(tmp_path / "sessions.sqlite3")


def hello_agent() -> Agent:
    return Agent("greeter", model=ScriptedProvider([[{"text": "# Hello\n\n**there**"}]]))


async def test_rows_show_title_plan_badge_and_last_message(store: SessionStore) -> None:
    demo = AgentSession(Agent("analyst", model=ScriptedProvider()), store=store)
    await demo.run("Profile the data")
    greet = AgentSession(hello_agent(), store=store)
    await greet.run("Say hello")
    sidebar = SessionSidebar(store)
    first, second = sidebar.sessions
    assert (first["id"], first["title"], first["agent"]) == (greet.id, "Say hello", "greeter")
    assert first["last_message"] == "Hello there"  # one plain line, no markdown marks
    assert first["todo"] is None and first["running"] is False
    assert second["todo"] == {"completed": 3, "total": 3}
    assert sidebar.can_open is False
    assert repr(sidebar) == "SessionSidebar(2 sessions)"
    assert sidebar._fallback_text().splitlines()[0] == "Say hello — Hello there"
    with pytest.raises(RequestError, match="no chat view"):
        sidebar.open_session(demo.id)


async def test_a_branch_row_says_what_it_branched_from_and_when(store: SessionStore) -> None:
    session = AgentSession(hello_agent(), store=store)
    await session.run("Say hello")
    branch = session.fork(session.messages[-1].id)
    branch.flush()
    sidebar = SessionSidebar(store)
    rows = {row["id"]: row for row in sidebar.sessions}
    made = datetime.fromtimestamp(rows[branch.id]["created_at"])
    assert rows[branch.id]["branch_of"] == session.id
    lines = dict(zip([row["id"] for row in sidebar.sessions],
                     sidebar._fallback_text().splitlines(), strict=True))
    # Same title, same last message: the branch row says what it is, of what, and when.
    assert lines[branch.id] == (f"Say hello (A branch of “Say hello”, made {made:%H:%M})"
                                " — Hello there")
    assert lines[session.id] == "Say hello — Hello there"
    sidebar.lang = "zh-CN"
    assert f"(“Say hello”的分支，创建于 {made:%H:%M})" in sidebar._fallback_text()
    sidebar.close()


async def test_the_preview_is_what_the_message_reads_as(store: SessionStore) -> None:
    answer = "Profiled `sample_sales.csv`: **40 rows**, 3 * 4 cells.\n\n- `region_id` ok"
    session = AgentSession(Agent("a", model=ScriptedProvider([[{"text": answer}]])),
                           store=store)
    await session.run("Profile it")
    sidebar = SessionSidebar(store)
    (row,) = sidebar.sessions
    sidebar.close()
    assert row["last_message"] == "Profiled sample_sales.csv: 40 rows, 3 * 4 cells. • region_id ok"

async def test_the_list_follows_the_store(store: SessionStore) -> None:
    sidebar = SessionSidebar(store)
    assert sidebar.sessions == []
    session = AgentSession(hello_agent(), store=store)
    await session.run("Say hello")
    sidebar.refresh()  # a scheduled refresh would do the same a moment later
    assert [row["id"] for row in sidebar.sessions] == [session.id]


def test_without_a_loop_a_store_change_refreshes_at_once(store: SessionStore) -> None:
    sidebar = SessionSidebar(store)
    assert AgentSession(hello_agent(), store=store).flush(10)
    assert len(sidebar.sessions) == 1


async def test_opening_a_session_restores_history_plan_cards_and_level(
        store: SessionStore, sent: SentMessages) -> None:
    demo = AgentSession(Agent("analyst", model=ScriptedProvider()), store=store)
    demo.set_thinking_level("high")
    await demo.run("Profile the data")
    demo_id = demo.id
    del demo
    current = AgentSession(hello_agent(), store=store)
    chat = ChatView(current)
    sidebar = SessionSidebar(store, chat=chat)
    assert sidebar.active == current.id and sidebar.can_open is True
    sidebar._on_custom_message(sidebar, {"kind": "open", "id": "r1", "session_id": demo_id}, [])
    assert sent[-1] == {"kind": "reply", "id": "r1", "ok": True,
                        "result": {"session_id": demo_id}}
    assert chat.session_id == demo_id and sidebar.active == demo_id
    assert chat.think_level == "high"
    assert [t["status"] for t in chat.todos] == ["completed"] * 3
    cards = [c for m in chat.messages for c in m.get("cards", [])]
    assert [(c["kind"], c["name"], c["status"]) for c in cards] == [
        ("tool", "list_files", "done"), ("skill", "profile_table", "done")]
    # Opening the session already shown changes nothing; a bound session is reused.
    assert sidebar.open_session(demo_id) is chat.session
    shown = chat.session
    sidebar.open_session(current.id)
    assert chat.session is current
    assert sidebar.open_session(demo_id) is shown
    sidebar._on_custom_message(sidebar, {"kind": "open", "id": "r2", "session_id": "nope"}, [])
    assert sent[-1]["ok"] is False and "nope" in sent[-1]["error"]


async def test_new_chat_uses_the_same_agent(store: SessionStore) -> None:
    session = AgentSession(hello_agent(), store=store)
    chat = ChatView(session)
    sidebar = SessionSidebar(store, chat=chat)
    fresh = sidebar.new_chat()
    assert fresh is chat.session and fresh.id != session.id
    assert fresh.agent is session.agent and fresh.store is store
    assert chat.messages == [] and sidebar.active == fresh.id
    # The new record is written in the background; the list follows the store.
    await wait_until(lambda: {row["id"] for row in sidebar.sessions} == {session.id, fresh.id})


async def test_switching_away_leaves_a_running_turn_running_in_the_background(
        store: SessionStore) -> None:
    answer_text = "word " * 80
    session = AgentSession(Agent("slow", model=ScriptedProvider(
        [[{"text": answer_text}]], chars_per_second=400)), store=store)
    other = AgentSession(hello_agent(), store=store)
    await other.run("Say hello")
    chat = ChatView(session)
    sidebar = SessionSidebar(store, chat=chat)
    task = session.start("go")
    await wait_until(lambda: session.streaming_message is not None)  # streaming now

    shown = sidebar.open_session(other.id)  # no "stop first"
    assert shown is not None and chat.session is shown and shown.id == other.id
    assert chat.running is False
    assert session.running and not task.done()
    await wait_until(lambda: _row(sidebar, session.id)["running"] is True)
    assert _row(sidebar, session.id)["elsewhere"] is False  # this kernel's: it can be opened

    # Back to it mid-turn: the same live object, still running, what it said so far shown.
    assert sidebar.open_session(session.id) is session
    assert chat.running is True and chat.messages[0]["text"] == "go"
    # A new chat while it runs: allowed too; the turn ends in the background, stored whole.
    fresh = sidebar.new_chat()
    assert chat.session is fresh
    await task
    assert session.messages[-1].text == answer_text
    await wait_until(lambda: _row(sidebar, session.id)["running"] is False)
    assert sidebar.open_session(session.id) is session
    assert chat.messages[-1]["text"] == answer_text and chat.running is False
    sidebar.close()
    chat.close()


async def test_an_approval_asked_in_the_background_waits_for_the_user_to_come_back(
        store: SessionStore) -> None:
    ran.clear()
    session, _recorder, _provider = make_session(
        [calls(("g1", "guarded_op", {"x": 1})), answer("done")], store=store)
    other = AgentSession(hello_agent(), store=store)
    chat = ChatView(session)
    chat._presence.grace = 0.05  # no view on screen in this test: the policy would be quick
    chat._presence.opened("view-1")  # ...but one is
    sidebar = SessionSidebar(store, chat=chat)
    task = session.start("run it")
    await wait_until(lambda: bool(chat.approvals))
    sidebar.open_session(other.id)
    assert chat.approvals == []  # the other session has none
    await asyncio.sleep(0.3)  # well past the grace: nothing was decided for the user
    assert not task.done() and ran == []
    sidebar.open_session(session.id)
    assert [a["id"] for a in chat.approvals] == ["g1"]
    chat._command({"command": {"type": "approve", "id": "g1", "decision": "allow_once"}})
    await task
    assert ran == ["guarded_op 1"]
    # Its turn over, nothing holds it: a closed view leaves later turns to the policy.
    assert session.id not in chat._live.background
    sidebar.close()
    chat.close()


async def test_closing_the_view_hands_a_background_turns_approval_to_the_policy(
        store: SessionStore) -> None:
    ran.clear()
    session, _recorder, _provider = make_session(
        [calls(("g1", "guarded_op", {"x": 1})), answer("done")], store=store)
    chat = ChatView(session)
    chat._presence.opened("view-1")
    task = session.start("run it")
    await wait_until(lambda: bool(chat.approvals))
    chat.new_chat()  # the turn goes on in the background, its approval pending
    chat.close()  # nobody is left to click: "reject" (the default policy) decides
    async with asyncio.timeout(5):
        await task
    assert ran == []
    assert "approval" in session.messages[2].tool_results[0].content


def _row(sidebar: SessionSidebar, session_id: str) -> dict[str, object]:
    sidebar.refresh()
    return next(dict(row) for row in sidebar.sessions if row["id"] == session_id)


def test_a_session_another_kernel_runs_opens_read_only_and_is_not_taken_over(
        store: SessionStore) -> None:
    import psutil

    from neta_nb.store.process_owner import ProcessOwner

    session = AgentSession(hello_agent(), store=store)
    assert session.flush(10)
    store.append_message(session.id, Message.user("What runs there?"))
    # A live process that is not this one (pid 1), with its real start time.
    other = ProcessOwner.current().model_copy(
        update={"pid": 1, "started": psutil.Process(1).create_time()})
    store.update_session(session.id, running=True, owner=other)
    chat = ChatView(AgentSession(hello_agent(), store=store))
    sidebar = SessionSidebar(store, chat=chat)
    row = next(r for r in sidebar.sessions if r["id"] == session.id)
    assert row["running"] and row["elsewhere"]
    assert sidebar._open({"session_id": session.id}) == {"session_id": session.id}
    assert chat.session is None and chat.stored is not None
    assert chat.read_only == {"owner": other.describe(), "busy": True}
    assert [m["text"] for m in chat.messages] == ["What runs there?"]
    assert sidebar.active == session.id
    record = store.get_session(session.id)
    assert record is not None and record.running and record.owner == other  # not taken
    with pytest.raises(RequestError, match="read-only: its turn runs in another kernel"):
        chat._command({"command": {"type": "send", "text": "hi"}})
    sidebar.close()


async def test_switching_away_and_back_while_the_store_is_behind_keeps_every_message(
        tmp_path: Path) -> None:
    import sqlite3

    db = tmp_path / "sessions.sqlite3"
    store = SessionStore(db)
    session = AgentSession(hello_agent(), store=store)
    chat = ChatView(session)
    sidebar = SessionSidebar(store, chat=chat)
    other = sqlite3.connect(db, isolation_level=None)
    other.execute("BEGIN IMMEDIATE")  # a backup tool holds the store
    try:
        await session.run("Say hello")
        assert session.store_failure is not None
        sidebar.new_chat()
        # Back to it: the session still saving in this kernel is the one shown again.
        assert sidebar.open_session(session.id) is session
        assert chat.session is not None
        assert [m.text for m in chat.session.messages] == ["Say hello", "# Hello\n\n**there**"]
    finally:
        other.execute("COMMIT")
        other.close()
    assert session.flush(10)
    assert len(store.load_messages(session.id)) == 2
    sidebar.close()


async def test_the_search_box_filters_and_rename_keeps_the_users_title(
        store: SessionStore) -> None:
    hello = AgentSession(hello_agent(), store=store)
    await hello.run("Say hello")
    other = AgentSession(Agent("a", model=ScriptedProvider([[{"text": "Revenue grew."}]])),
                         store=store)
    await other.run("How did revenue do?")
    hello.flush()
    other.flush()
    sidebar = SessionSidebar(store)
    sidebar.query = "revenue"
    assert [row["id"] for row in sidebar.sessions] == [other.id]
    sidebar.query = "  "
    assert {row["id"] for row in sidebar.sessions} == {hello.id, other.id}
    reply = sidebar._rename({"session_id": hello.id, "title": "Greetings"})
    assert reply == {"session_id": hello.id}
    assert next(r for r in sidebar.sessions if r["id"] == hello.id)["title"] == "Greetings"
    sidebar.query = "greetings"
    assert [row["id"] for row in sidebar.sessions] == [hello.id]
    with pytest.raises(RequestError, match="no session"):
        sidebar._rename({"session_id": "s_missing", "title": "x"})
    with pytest.raises(RequestError, match="needs"):
        sidebar._rename({"session_id": hello.id})  # type: ignore[typeddict-item]
    sidebar.close()


# --- delete, with an undo -----------------------------------------------------------------

async def test_a_deleted_session_leaves_the_list_at_once_and_undo_brings_it_back(
        store: SessionStore, sent: SentMessages) -> None:
    first = AgentSession(hello_agent(), store=store)
    await first.run("Say hello")
    second = AgentSession(hello_agent(), store=store)
    await second.run("Say hello again")
    chat = ChatView(second)
    sidebar = SessionSidebar(store, chat=chat)
    sidebar._on_custom_message(sidebar, {"kind": "delete", "id": "d1",
                                         "session_id": first.id}, [])
    assert sent[-1]["ok"] is True, sent[-1]
    assert [row["id"] for row in sidebar.sessions] == [second.id]
    assert sidebar.deleted == {"id": first.id, "title": "Say hello"}
    assert store.get_session(first.id) is not None  # not yet: the undo is offered
    sidebar._on_custom_message(sidebar, {"kind": "undo_delete", "id": "u1"}, [])
    assert sent[-1]["ok"] is True and sent[-1]["result"] == {"session_id": first.id}
    assert sidebar.deleted == {}
    assert {row["id"] for row in sidebar.sessions} == {first.id, second.id}
    sidebar.close()  # nothing pending: closing deletes nothing
    assert store.get_session(first.id) is not None


async def test_the_store_deletes_it_once_the_undo_is_no_longer_offered(
        store: SessionStore, monkeypatch: pytest.MonkeyPatch) -> None:
    import neta_nb.widgets.chat.panels.session_sidebar as sidebar_module

    monkeypatch.setattr(sidebar_module, "UNDO_SECONDS", 0.05)
    sessions = []
    for prompt in ("one", "two", "three"):
        session = AgentSession(hello_agent(), store=store)
        await session.run(prompt)
        sessions.append(session)
    one, two, three = sessions
    sidebar = SessionSidebar(store)
    sidebar.delete_session(one.id)
    await wait_until(lambda: store.get_session(one.id) is None)  # the time is up
    assert sidebar.deleted == {} and one.id not in {row["id"] for row in sidebar.sessions}
    monkeypatch.setattr(sidebar_module, "UNDO_SECONDS", 3600)
    sidebar.delete_session(two.id)
    sidebar.delete_session(three.id)  # the next deletion: two cannot come back any more
    assert store.get_session(two.id) is None and store.get_session(three.id) is not None
    sidebar.close()  # ...nor can three once the list is gone
    assert store.get_session(three.id) is None


async def test_a_store_that_fails_in_the_background_leaves_the_list_and_says_so(
        store: SessionStore, monkeypatch: pytest.MonkeyPatch,
        caplog: pytest.LogCaptureFixture) -> None:
    """A refresh after another kernel's change, the search box, and the deletion once
    the undo runs out happen where no request waits for an answer: a store whose server
    is down or hung must not lose the deletion unsaid, nor leave a traceback in the loop."""
    import neta_nb.widgets.chat.panels.session_sidebar as sidebar_module

    monkeypatch.setattr(sidebar_module, "UNDO_SECONDS", 0.05)
    monkeypatch.setattr(sidebar_module, "REFRESH_INTERVAL", 0.05)
    loop_errors: list[dict[str, Any]] = []
    asyncio.get_running_loop().set_exception_handler(lambda _, error: loop_errors.append(error))
    one = AgentSession(hello_agent(), store=store)
    await one.run("one")
    sidebar = SessionSidebar(store)
    rows = list(sidebar.sessions)
    failing = OSError("the session store did not answer within 10 s")

    def fails(*_args: Any, **_kwargs: Any) -> Any:
        raise failing

    with monkeypatch.context() as down:
        down.setattr(store, "list_sessions", fails)
        down.setattr(store, "search_sessions", fails)
        sidebar._on_store_change(one.id)
        await wait_until(lambda: "could not be read from the store" in caplog.text)
        sidebar.query = "one"
        assert sidebar.sessions == rows  # as it was
        sidebar.query = ""
    with monkeypatch.context() as down:
        down.setattr(store, "delete_session", fails)
        sidebar.delete_session(one.id)  # off the list; the store is asked when time is up
        assert sidebar.sessions == []
        await wait_until(lambda: f"session {one.id} was not deleted" in caplog.text)
        assert sidebar.deleted == {}
    assert store.get_session(one.id) is not None
    sidebar.refresh()  # the store answers again: the session is back in the list
    assert [row["id"] for row in sidebar.sessions] == [one.id]
    assert caplog.text.count("the session store did not answer within 10 s") >= 3
    assert loop_errors == []
    sidebar.close()


async def test_deleting_the_shown_session_moves_the_chat_to_a_new_one(
        store: SessionStore) -> None:
    session = AgentSession(hello_agent(), store=store)
    await session.run("Say hello")
    chat = ChatView(session)
    sidebar = SessionSidebar(store, chat=chat)
    sidebar.delete_session(session.id)
    assert chat.session is not None and chat.session.id != session.id
    assert chat.messages == [] and sidebar.active == chat.session.id
    sidebar.undo_delete()
    assert sidebar.open_session(session.id) is not None
    assert chat.messages[0]["text"] == "Say hello"
    sidebar.close()


async def test_a_running_session_is_not_deleted_and_its_row_says_why(
        store: SessionStore, sent: SentMessages) -> None:
    session = AgentSession(Agent("slow", model=ScriptedProvider(
        [[{"text": "x" * 400}]], chars_per_second=400)), store=store)
    chat = ChatView(session)
    sidebar = SessionSidebar(store, chat=chat)
    task = session.start("go")
    await wait_until(lambda: session.streaming_message is not None)
    sidebar._on_custom_message(sidebar, {"kind": "delete", "id": "d1",
                                         "session_id": session.id}, [])
    assert sent[-1]["ok"] is False
    assert sent[-1]["error"] == "This chat's turn is running: stop it before deleting the chat."
    assert sidebar.deleted == {} and chat.session is session
    sidebar.lang = "zh-CN"
    with pytest.raises(RequestError, match="请先停止"):
        sidebar.delete_session(session.id)
    await task
    with pytest.raises(RequestError, match="not in the store"):
        sidebar.delete_session("s_nope")
    sidebar.close()
