"""A damaged stored agent definition (written into the store by hand, as another program
or a bad edit would): resume, replay and a batch run's resume say which session and which
field, change nothing stored, and an agent given to resume still continues the session."""

from __future__ import annotations

import contextlib
import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, DamagedAgentRecordError, SessionStore, replay
from neta_nb.batch import BatchRun
from neta_nb.providers.scripted.scripted import ScriptedProvider

DAMAGES: list[tuple[str, Any, str, str]] = [
    ("max_model_calls", "many", "max_model_calls", "max_model_calls is 'many'"),
    ("tool_timeout", -1, "tool_timeout", "tool_timeout must be a number of seconds > 0"),
    ("system_prompt", None, "system_prompt", "system_prompt is None"),
    ("subagents", {"helper": {"name": "helper"}}, "subagents", "subagents is {'helper'"),
    ("subagents", [{"name": "helper", "tool_timeout": "soon"}], "subagents[0].tool_timeout",
     "subagents[0].tool_timeout is 'soon'"),
    ("subagents", [{"name": "helper", "max_model_calls": 0}], "subagents[0].max_model_calls",
     "max_model_calls must be at least 1 (in subagents[0])"),
    ("compact_at", True, "compact_at", "compact_at is True"),
    ("provider", {"context_window": "big"}, "provider.context_window",
     "provider.context_window is 'big'"),
    ("provider", {"context_window": 0}, "provider.context_window",
     "provider.context_window is 0"),
    ("provider", {"price": {"input": -1, "output": 1}}, "provider.price",
     "input must be a number ≥ 0 (usd per million tokens), got -1"),
    ("provider", {"price": {"input": 1}}, "provider.price", "provider.price is {'input': 1}"),
    ("provider", {"price": "cheap"}, "provider.price", "provider.price is 'cheap'"),
    ("provider", {"base_url": 5}, "provider.base_url", "provider.base_url is 5"),
    ("provider", {"request_options": ["x"]}, "provider.request_options",
     "provider.request_options is ['x']"),
    ("provider", "openai", "provider", "provider is 'openai'"),
]


def stored_row(db: Path, session_id: str) -> str:
    with contextlib.closing(sqlite3.connect(db)) as connection:
        (data,) = connection.execute("SELECT data FROM sessions WHERE id = ?",
                                     (session_id,)).fetchone()
    return str(data)


def damage(db: Path, session_id: str, field: str, value: Any) -> str:
    """Set the stored agent's ``field`` to ``value`` with SQL; returns the row's text."""
    data = json.loads(stored_row(db, session_id))
    data["agent"][field] = value
    text = json.dumps(data)
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        connection.execute("UPDATE sessions SET data = ? WHERE id = ?", (text, session_id))
    return text


async def stored_session(db: Path) -> AgentSession:
    session = AgentSession(Agent("analyst", model=ScriptedProvider([[{"text": "one"}]])),
                           store=SessionStore(db))
    await session.run("first")
    assert session.flush(10)
    return session


@pytest.mark.parametrize(("field", "value", "named", "said"), DAMAGES)
async def test_resume_and_replay_name_the_session_and_the_field(
        tmp_path: Path, field: str, value: Any, named: str, said: str) -> None:
    db = tmp_path / "s.db"
    session = await stored_session(db)
    row = damage(db, session.id, field, value)

    with pytest.raises(DamagedAgentRecordError) as resumed:
        AgentSession.resume(session.id, store=SessionStore(db))
    with pytest.raises(DamagedAgentRecordError) as replayed:
        await replay(session.id, store=SessionStore(db))

    for caught in (resumed, replayed):
        error = caught.value
        assert str(error).startswith(f"session {session.id!r}: its stored agent "
                                     "definition is damaged: ")
        assert said in str(error)
        assert error.field_name == named
    assert stored_row(db, session.id) == row  # nothing stored was changed
    # An agent given to resume continues the session, and its record is stored again.
    again = AgentSession.resume(session.id, store=SessionStore(db), agent=Agent(
        "analyst", model=ScriptedProvider([[{"text": "two"}]])))
    await again.run("second")
    assert [m.text for m in again.messages] == ["first", "one", "second", "two"]
    assert again.flush(10)
    assert AgentSession.resume(session.id, store=SessionStore(db)).agent.name == "analyst"


async def test_a_sound_record_with_fields_left_out_takes_the_defaults(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    session = await stored_session(db)
    data = json.loads(stored_row(db, session.id))
    data["agent"] = {"name": "analyst", "model": "scripted", "tool_timeout": 30,
                     "unknown_later_field": [1]}
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        connection.execute("UPDATE sessions SET data = ? WHERE id = ?",
                           (json.dumps(data), session.id))
    agent = AgentSession.resume(session.id, store=SessionStore(db)).agent
    assert (agent.tool_timeout, agent.max_model_calls, agent.system_prompt) == (
        30.0, Agent.max_model_calls, Agent("x").system_prompt)


def test_an_agent_refuses_a_tool_timeout_that_is_not_positive() -> None:
    for timeout in (0, -1, float("nan")):
        with pytest.raises(ValueError, match="tool_timeout must be a number of seconds > 0"):
            Agent("a", tool_timeout=timeout)


def test_a_batch_runs_resume_names_the_run_and_the_field(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    Agent("classifier", model="scripted").map(["a", "b"], store=store, run_id="r1").result()
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        (text,) = connection.execute("SELECT data FROM batch_runs WHERE id = 'r1'").fetchone()
        definition = json.loads(text)
        definition["agent"]["system_prompt"] = None
        connection.execute("UPDATE batch_runs SET data = ? WHERE id = 'r1'",
                           (json.dumps(definition),))
    with pytest.raises(DamagedAgentRecordError, match=r"^batch run 'r1': its stored agent "
                       r"definition is damaged: system_prompt is None"):
        BatchRun.resume("r1", store=SessionStore(db))
