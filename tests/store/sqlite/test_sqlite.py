"""SessionStore persistence and AgentSession.resume, including a process killed mid-turn."""

from __future__ import annotations

import asyncio
import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.messages import Message, TextPart, ThinkingPart
from neta_nb.providers.base import TextDelta, ThinkingDelta

from ...support.sessions import FakeProvider, Recorder, answer, calls
from ...support.timing import poll_until

PLAN = {"todos": [{"id": "1", "content": "Read", "status": "completed"},
                  {"id": "2", "content": "Write", "status": "in_progress"}]}


def test_store_round_trip_and_listing(store_target: str | Path) -> None:
    from neta_nb.store.session_store import SessionRecord

    store = SessionStore(store_target)
    store.save_session(SessionRecord(id="a", title="First", updated_at=1.0))
    store.save_session(SessionRecord(id="b", title="Second", updated_at=2.0))
    assert [r.id for r in store.list_sessions()] == ["b", "a"]
    messages = [Message.user("hi"), Message.assistant([TextPart(text="hello")])]
    for m in messages:
        store.append_message("a", m)
    assert store.load_messages("a") == messages
    assert store.load_messages("a", offset=1, limit=1) == messages[1:]
    assert store.count_messages("a") == 2
    # Appending a stored id again updates it in place.
    messages[1].metadata.stop_reason = "end_turn"
    store.append_message("a", messages[1])
    assert store.load_messages("a")[1].metadata.stop_reason == "end_turn"
    assert store.count_messages("a") == 2
    store.delete_session("a")
    assert store.get_session("a") is None and store.load_messages("a") == []


def test_corrupt_rows_show_as_unreadable_with_a_warning(store_target: str | Path) -> None:
    path = store_target
    store = SessionStore(path)
    from neta_nb.store.session_store import UNREADABLE_MESSAGE, SessionRecord

    store.save_session(SessionRecord(id="a"))
    for m in (Message.user("one"), Message.user("two"), Message.user("three")):
        store.append_message("a", m)
    # What a bad disk or a hand edit leaves, in either database.
    store.database.execute("UPDATE messages SET data = '{not json' WHERE seq = 1")
    store.database.execute("INSERT INTO sessions (id, data, updated_at) "
                           "VALUES ('bad', '{\"id\": 5, \"title\": []}', 9)")
    reopened = SessionStore(path)
    loaded = reopened.load_messages("a")
    # The damaged message stays visible where it was, as an empty message with the error.
    assert [m.text for m in loaded] == ["one", "", "three"]
    assert loaded[1].metadata.error == UNREADABLE_MESSAGE and not loaded[1].parts
    assert [r.id for r in reopened.list_sessions()] == ["a"]
    assert any("message #1" in w for w in reopened.warnings)
    assert any("session bad" in w for w in reopened.warnings)


async def test_session_persists_and_resumes(store_target: str | Path) -> None:
    store = SessionStore(store_target)
    provider = FakeProvider([
        [ThinkingDelta("plan"), *calls(("t", "todo", PLAN), ("p", "profile_table", {}))],
        answer("All done", thinking="wrap up")])
    agent = Agent("analyst", model=provider, system_prompt="Be brief.",
                  tools=AgentToolConfig(enabled=["profile_table"]))
    session = AgentSession(agent, ToolCatalog.default(), store)
    session.set_thinking_level("high")
    await session.run("Profile the sample data please")

    record = store.get_session(session.id)
    assert record is not None
    assert record.title == "Profile the sample data please"
    assert record.todo_summary == {"total": 2, "pending": 0, "in_progress": 1, "completed": 1,
                                   "cancelled": 0}
    assert record.last_message == "All done" and record.running is False
    assert record.think_level == "high"
    assert record.agent["model"] == "scripted:fake" and record.agent["system_prompt"] == (
        "Be brief.")

    resumed = AgentSession.resume(session.id, store=store, agent=agent)
    assert resumed.messages == session.messages
    assert [i.model_dump() for i in resumed.todo.read()] == PLAN["todos"]
    assert resumed.think_level == "high"
    skill = resumed.messages[1].metadata.skill_executions[0]
    assert (skill.name, skill.status) == ("profile_table", "done")
    assert resumed.usage == session.usage
    # The resumed session continues where it stopped.
    provider.responses.append(answer("continued"))
    await resumed.run("and now?")
    assert store.load_messages(session.id)[-1].text == "continued"


async def test_resume_rebuilds_the_agent_from_the_store(store_target: str | Path) -> None:
    store = SessionStore(store_target)
    agent = Agent("demo", model="scripted", tools=AgentToolConfig(disabled=["list_files"]))
    session = AgentSession(agent, store=store)
    resumed = AgentSession.resume(session.id, store=store)
    assert resumed.agent.name == "demo"
    assert resumed.provider.model_id == session.provider.model_id
    assert resumed.agent.tools.disabled == ["list_files"]


async def test_cancelled_turn_is_stored_marked(store_target: str | Path) -> None:
    store = SessionStore(store_target)
    forever = asyncio.Event()
    provider = FakeProvider([[TextDelta("partial"), forever.wait]])
    session = AgentSession(Agent("a", model=provider), store=store)
    rec = Recorder()
    session.subscribe(rec)
    task = session.start("go")
    await rec.wait_for("token")
    session.cancel()
    await task
    stored = store.load_messages(session.id)
    assert stored[-1].text == "partial" and stored[-1].metadata.interrupted == "cancelled"
    record = store.get_session(session.id)
    assert record is not None and record.running is False


def test_resume_closes_dangling_tool_calls(store_target: str | Path) -> None:
    store = SessionStore(store_target)
    from neta_nb.messages import ToolCallPart
    from neta_nb.store.session_store import SessionRecord

    store.save_session(SessionRecord(id="x", agent={"name": "a", "model": "scripted"},
                                     running=True))
    store.append_message("x", Message.user("go"))
    store.append_message("x", Message.assistant([ToolCallPart(id="c", name="list_files")]))
    resumed = AgentSession.resume("x", store=store)
    roles = [m.role for m in resumed.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    assert resumed.messages[2].tool_results[0].tool_call_id == "c"
    assert "kernel stopped" in resumed.messages[2].tool_results[0].content
    assert resumed.messages[3].metadata.interrupted == "killed"
    assert resumed.flush(10)
    assert store.get_session("x").running is False  # type: ignore[union-attr]


CHILD = textwrap.dedent("""
    import asyncio, sys
    sys.path.insert(0, {root!r})
    from neta_nb import Agent, AgentSession, SessionStore
    from neta_nb.providers.base import TextDelta, ThinkingDelta
    from tests.support.sessions import FakeProvider, answer, calls

    async def stall():
        print("STREAMING", flush=True)
        await asyncio.Event().wait()  # streams no further until the process is killed

    provider = FakeProvider([
        calls(("t", "todo", {plan!r})),
        [ThinkingDelta("considering"), TextDelta("The answer is being wri"), stall],
    ])
    store = SessionStore({db!r})
    session = AgentSession(Agent("a", model=provider), store=store, session_id="killed")
    asyncio.run(session.run("question"))
""")


def has_draft(db: str | Path, session_id: str) -> bool:
    store = SessionStore(db)
    try:
        return store.load_draft(session_id) is not None
    finally:
        store.close()


def test_killed_process_loses_no_completed_message(store_target: str | Path) -> None:
    db = store_target
    root = str(Path(__file__).resolve().parents[3])
    code = CHILD.format(root=root, plan=PLAN, db=str(db))
    child = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE,
                             text=True, start_new_session=True)
    try:
        assert child.stdout is not None
        assert child.stdout.readline().strip() == "STREAMING"
        # The draft checkpoint happens on the first delta; wait until it is on disk.
        poll_until(lambda: has_draft(db, "killed"), within=20, what="no draft checkpoint stored")
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait(timeout=20)
        if child.stdout is not None:
            child.stdout.close()
    store = SessionStore(db)
    record = store.get_session("killed")
    # It died mid-turn: reading the record settles it (not running, the owner died).
    assert record is not None and record.running is False and record.owner_died
    resumed = AgentSession.resume("killed", store=store)
    roles = [m.role for m in resumed.messages]
    assert roles == ["user", "assistant", "tool", "assistant"]
    last = resumed.messages[-1]
    assert last.metadata.interrupted == "killed"
    assert last.parts[0] == ThinkingPart(text="considering")
    assert last.text
    assert "The answer is being wri".startswith(last.text)
    assert resumed.todo.summary().total == 2
    assert store.get_session("killed").running is False  # type: ignore[union-attr]


@pytest.mark.parametrize("bad", ["not a level", 3])
def test_resume_tolerates_a_bad_level(store_target: str | Path, bad: object) -> None:
    from neta_nb.store.session_store import SessionRecord

    store = SessionStore(store_target)
    store.save_session(SessionRecord(id="x", agent={"name": "a", "model": "scripted"},
                                     think_level=str(bad)))
    assert AgentSession.resume("x", store=store).messages == []
