"""A kernel that dies while a sub-agent runs: resume shows the parent's call and the
child's own session both interrupted, and the nested card's record intact."""

from __future__ import annotations

import contextlib
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from neta_nb import AgentSession, SessionStore

from ..support.sessions import assert_valid_history
from ..support.timing import poll_until

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def _has_draft(db: Path, session_id: str) -> bool:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        return bool(connection.execute("SELECT count(*) FROM drafts WHERE session_id = ?",
                                       (session_id,)).fetchone()[0])


def test_a_kernel_killed_mid_child_leaves_both_interrupted_on_resume(tmp_path: Path) -> None:
    db, marker = tmp_path / "sessions.sqlite3", tmp_path / "child"
    process = subprocess.Popen([sys.executable, "-m", "tests.support.crew_child", str(db),
                                "s_parent", str(marker)], cwd=ROOT)
    try:
        poll_until(lambda: marker.exists() and marker.read_text(), 30,
                   "the child's answer to stream")
        child_id = marker.read_text()
        poll_until(lambda: _has_draft(db, child_id), 10, "the child's draft checkpoint")
        os.kill(process.pid, signal.SIGKILL)
        process.wait(10)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait(10)

    store = SessionStore(db)
    listed = store.list_sessions()
    assert [(r.id, r.child_count, r.running) for r in listed] == [("s_parent", 1, False)]
    resumed = AgentSession.resume("s_parent", store=store)
    assert resumed.flush(10)
    delegating = resumed.messages[1]
    (execution,) = delegating.metadata.tool_executions
    assert execution.subagent is not None
    assert (execution.subagent.session_id, execution.subagent.agent,
            execution.subagent.status) == (child_id, "researcher", "interrupted")
    assert execution.status == "error"
    assert resumed.messages[-1].metadata.interrupted == "killed"
    assert_valid_history(resumed.messages)

    # The child's own session was closed the same way: its streamed text kept, killed.
    child = SessionStore(db).load_messages(child_id)
    assert [m.text for m in child] == ["Find facts.", "Half of the findings"]
    assert child[-1].metadata.interrupted == "killed"
    record = SessionStore(db).get_session(child_id)
    assert record is not None and not record.running and not record.owner_died
    assert (record.parent_id, record.parent_call_id) == ("s_parent", "call_r")
    # Stored as the resume left it: a second resume finds nothing left to settle.
    again = AgentSession.resume("s_parent", store=SessionStore(db))
    assert again.messages[1].metadata.tool_executions[0].subagent.status == "interrupted"  # type: ignore[union-attr]
    assert len(again.messages) == len(resumed.messages)

    # The chat view of the resumed parent rebuilds the nested card from the stored child:
    # marked interrupted, its transcript the child's kept text (the task is the card's
    # header, not a message of its own).
    from neta_nb.widgets import ChatView

    view = ChatView(again)
    [card] = [c for item in view.messages for c in item.get("cards", [])]
    assert card["kind"] == "subagent"
    part = card["subagent"]
    assert (part["agent"], part["status"]) == ("researcher", "interrupted")
    texts = [m.get("text") for m in part["messages"]]
    assert texts == ["Half of the findings"] and part["task"] == "Find facts."
    view.close()
