"""One bad row never spoils the rest: text that is not UTF-8 in a message or a session row,
a result whose call is gone, a call whose result is gone, arguments nested hundreds deep."""

from __future__ import annotations

import contextlib
import sqlite3
from pathlib import Path

from neta_nb import AgentSession, SessionStore
from neta_nb.encodable import MAX_NESTING
from neta_nb.messages import Message, ToolCallPart
from neta_nb.store.session_store import SessionRecord

from ...support.sessions import answer, assert_valid_history, calls, make_session


def raw(db: str | Path, sql: str, *params: object) -> None:
    """Run ``sql`` (``?`` placeholders) on the store at ``db`` from a connection of its
    own, as a hand edit or another program would: SQLite's, or PostgreSQL's."""
    if isinstance(db, Path):
        with contextlib.closing(sqlite3.connect(db)) as connection, connection:
            connection.execute(sql, params)
        return
    store = SessionStore(db)
    try:
        store.database.execute(sql.replace("?", "%s"), params)
    finally:
        store.close()


# SQLite only: a PostgreSQL text column cannot hold bytes that are not UTF-8 (the server
# refuses them), so that damage cannot happen there.
def test_text_that_is_not_utf8_in_rows_spoils_nothing(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    for session_id in ("a", "b"):
        store.save_session(SessionRecord(id=session_id, title=f"chat {session_id}",
                                         agent={"name": "x", "model": "scripted"}))
        store.append_message(session_id, Message.user(f"hello {session_id}"))
        store.append_message(session_id, Message.user("second"))
    # Invalid UTF-8 bytes straight into a message row and into a session row.
    raw(db, "UPDATE messages SET data = CAST(? AS TEXT) WHERE session_id = 'a' AND seq = 1",
        b'{"role": "user", "parts": [{"type": "text", "text": "caf\xe9 \xff"}]}')
    raw(db, "UPDATE sessions SET data = CAST(? AS TEXT) WHERE id = 'b'",
        b'{"id": "b", "title": "chat \xff b", "agent": {"name": "x", "model": "scripted"}}')
    reopened = SessionStore(db)
    assert sorted(r.id for r in reopened.list_sessions()) == ["a", "b"]
    assert reopened.get_session("b").title == "chat \ufffd b"  # type: ignore[union-attr]
    resumed = AgentSession.resume("a", store=reopened)
    assert [m.text for m in resumed.messages] == ["hello a", "caf\ufffd \ufffd"]


async def test_resume_repairs_results_and_calls_that_lost_their_partner(
        store_target: str | Path) -> None:
    db = store_target
    store = SessionStore(db)
    session, _, _ = make_session([calls(("c1", "plus", {"a": 1, "b": 2})), answer("3"),
                                  calls(("c2", "plus", {"a": 2, "b": 2})), answer("4")],
                                 store=store)
    await session.run("one")
    await session.run("two")
    # Damage: the first call's assistant row and the second call's result row are gone.
    raw(db, "DELETE FROM messages WHERE session_id = ? AND seq = 1", session.id)
    raw(db, "DELETE FROM messages WHERE session_id = ? AND seq = 6", session.id)
    resumed = AgentSession.resume(session.id, store=SessionStore(db), agent=session.agent,
                                  catalog=session.catalog)
    assert_valid_history(resumed.model_view)
    repaired = [m for m in resumed.model_view if m.role == "tool"]
    assert [(r.tool_results[0].tool_call_id, r.tool_results[0].is_error) for r in repaired] == [
        ("c2", True)]  # c1's orphan result is out; c2 is answered with an error


async def test_arguments_nested_hundreds_deep_are_stored_with_their_result(
        store_target: str | Path) -> None:
    deep: object = "bottom"
    for _ in range(600):
        deep = {"x": deep}
    store = SessionStore(store_target)
    session, rec, _ = make_session([calls(("d", "plus", {"a": 1, "b": deep})), answer("ok")],
                                   store=store)
    await session.run("nest")
    assert [e.stop_reason for e in rec.of("done")] == ["end_turn"]
    stored = SessionStore(store_target).load_messages(session.id)
    assert [m.model_dump() for m in stored] == [m.model_dump() for m in session.messages]
    call = next(p for m in stored for p in m.parts if isinstance(p, ToolCallPart))
    depth, node = 0, call.args["b"]
    while isinstance(node, dict):
        depth, node = depth + 1, node["x"]
    assert depth < MAX_NESTING and "nested deeper" in str(node)
    assert_valid_history(stored)
