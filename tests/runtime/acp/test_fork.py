"""A fork of a whole chat with an outside agent starts the fork's agent session as a copy
of the chat's (``session/fork``): the agent remembers what was said. A fork at an earlier
message, or of an agent that does not copy sessions, starts a new session and says so.
Played by the scripted agent (``scripted_agent.py``); with the real Claude Code in
``test_claude_code.py``."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

from neta_nb import AcpAgent, AgentSession, SessionStore
from neta_nb.events import Event
from neta_nb.runtime.acp.turns import AcpTurns

from ...support.outside_agents import driven

AGENT = Path(__file__).with_name("scripted_agent.py")


def agent_of(tmp_path: Path, **script: Any) -> AcpAgent:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [{"update": {
        "sessionUpdate": "agent_message_chunk",
        "content": {"type": "text", "text": "Done."}}}], **script}))
    return AcpAgent("scripted", [sys.executable, str(AGENT), str(path)], cwd=tmp_path)


def lines(tmp_path: Path, suffix: str) -> list[str]:
    path = tmp_path / f"script.json.{suffix}"
    return path.read_text().splitlines() if path.exists() else []


def outside(session: AgentSession) -> AcpTurns:
    turns = session.deps.outside
    assert isinstance(turns, AcpTurns)
    return turns


def warnings(events: list[Event]) -> list[str]:
    return [str(e.message) for e in events if e.type == "warning"]


async def test_a_fork_of_the_whole_chat_copies_the_agents_session(tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, can_fork=True))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        await asyncio.wait_for(session.run("two"), 30)
    original = outside(session).session_id
    fork = session.fork(session.messages[-1].id)
    events: list[Event] = []
    fork.subscribe(events.append)
    async with driven(fork):
        answer = await asyncio.wait_for(fork.run("three"), 30)
    assert answer is not None and answer.text == "Done."
    assert lines(tmp_path, "forks") == [original]
    assert outside(fork).session_id == "fork-1"
    assert outside(session).session_id == original  # the chat forked from goes on as it was
    assert not any("new session" in text for text in warnings(events))


async def test_a_fork_at_an_earlier_message_starts_a_new_session_and_says_so(
        tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path, can_fork=True))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        await asyncio.wait_for(session.run("two"), 30)
    fork = session.fork(session.messages[1].id)  # after the first answer
    events: list[Event] = []
    fork.subscribe(events.append)
    async with driven(fork):
        await asyncio.wait_for(fork.run("again"), 30)
    assert lines(tmp_path, "forks") == []
    assert any("started a new session" in text for text in warnings(events))


async def test_an_agent_that_copies_no_session_starts_a_new_one_and_says_why(
        tmp_path: Path) -> None:
    session = AgentSession(agent_of(tmp_path))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
    fork = session.fork(session.messages[-1].id)
    events: list[Event] = []
    fork.subscribe(events.append)
    async with driven(fork):
        await asyncio.wait_for(fork.run("two"), 30)
    assert "session/fork" not in lines(tmp_path, "calls")
    assert any("does not offer to copy a session (session/fork)" in text
               for text in warnings(events))


async def test_the_copy_is_made_as_the_fork_is_and_a_resumed_fork_continues_it(
        tmp_path: Path) -> None:
    """The agent's session is copied when the fork is made (the chat forked from waits
    for the copy before its next prompt): what it says after is not in the copy. A fork
    resumed from the store continues its copy (``session/load``)."""
    store = SessionStore(tmp_path / "s.db")
    agent = agent_of(tmp_path, can_fork=True, can_load=True, load_ok=True)
    session = AgentSession(agent, store=store)
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        original = outside(session).session_id
        fork = session.fork(session.messages[-1].id)
        # The chat forked from goes on at once: its prompt waits for the copy.
        await asyncio.wait_for(session.run("two"), 30)
        calls = lines(tmp_path, "calls")
        assert calls.index("session/fork") < len(calls) - 1 - calls[::-1].index(
            "session/prompt")
    assert lines(tmp_path, "forks") == [original]
    assert fork.flush(10)
    record = store.get_session(fork.id)
    assert record is not None
    assert record.agent["outside"] == {"protocol": "acp", "session_id": "fork-1"}
    await outside(fork).aclose()
    resumed = AgentSession.resume(fork.id, store, agent=agent)
    async with driven(resumed):
        await asyncio.wait_for(resumed.run("three"), 30)
    assert lines(tmp_path, "forks") == [original]  # not copied again
    assert outside(resumed).session_id == "fork-1"
    assert "session/load" in lines(tmp_path, "calls")
    store.close()


async def test_a_fork_gone_back_before_its_first_turn_copies_nothing(tmp_path: Path
                                                                     ) -> None:
    session = AgentSession(agent_of(tmp_path, can_fork=True))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        await asyncio.wait_for(session.run("two"), 30)
        fork = session.fork(session.messages[-1].id)
        copy = outside(fork)._copying
        assert copy is not None
        await asyncio.wait([copy])
        fork.rewind(fork.messages[2].id)  # back before "two"
        events: list[Event] = []
        fork.subscribe(events.append)
        async with driven(fork):
            await asyncio.wait_for(fork.run("instead"), 30)
    # The copy (made of the whole chat) is not used: the agent starts anew, saying why.
    assert outside(fork).session_id != "fork-1"
    assert any("went back to an earlier message" in text for text in warnings(events))


async def test_a_copy_that_fails_is_not_tried_again_later(tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    """A copy tried later would hold what the chat forked from said since: when it fails
    as the fork is made, the fork starts a session of its own, saying why, and never
    copies afterwards (a rewind of it neither)."""
    from neta_nb.providers.base import ProviderError
    from neta_nb.runtime.acp.connection import AcpConnection

    session = AgentSession(agent_of(tmp_path, can_fork=True))
    async with driven(session):
        await asyncio.wait_for(session.run("one"), 30)
        await asyncio.wait_for(session.run("two"), 30)
        real = AcpConnection.fork_session

        async def refused(self: AcpConnection, *args: Any) -> str:
            raise ProviderError("no such session")

        monkeypatch.setattr(AcpConnection, "fork_session", refused)
        fork = session.fork(session.messages[-1].id)
        events: list[Event] = []
        fork.subscribe(events.append)
        async with driven(fork):
            await asyncio.wait_for(fork.run("three"), 30)
            assert outside(fork).stored() == {"protocol": "acp",
                                              "session_id": "scripted-1"}
            monkeypatch.setattr(AcpConnection, "fork_session", real)
            fork.rewind(fork.messages[2].id)
            await asyncio.wait_for(fork.run("instead"), 30)
    assert lines(tmp_path, "forks") == []
    assert any("could not copy the session this chat was forked from: no such session"
               in text for text in warnings(events))
