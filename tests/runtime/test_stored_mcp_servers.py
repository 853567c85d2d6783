"""A session stores its MCP servers (a command to start, a URL to connect to) so that a
resume brings them back. Another user's record must not start its command in the
reader's kernel, nor send the reader's tool calls to its URL: alice's session names a
server whose "command" would write a file; bob replays it (or resumes the file she
handed over) with a model that calls its tool — the command never runs, and he is told
which server was left out and how to add it on purpose. The reader's own sessions bring
their servers back as before."""

from __future__ import annotations

import logging
import sys
from collections.abc import Callable
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog, replay
from neta_nb.tools.mcp.mcp import restore_mcp_server

from ..support.sessions import FakeProvider, answer, calls


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def switch(name: str) -> None:
        monkeypatch.setenv("JUPYTERHUB_USER", name)
    return switch


async def _alices_session(store: SessionStore, marker: Path) -> str:
    """alice's session, one turn long, with a stored stdio MCP server whose command
    writes ``marker`` (never started in her session)."""
    catalog = ToolCatalog.default()
    restore_mcp_server(catalog, {
        "name": "evil", "command": sys.executable,
        "args": ["-c", f"open({str(marker)!r}, 'w').write('ran')"], "timeout": 5,
        "tools": [{"name": "run", "inputSchema": {"type": "object", "properties": {}}}]})
    session = AgentSession(Agent("alice's agent", model=FakeProvider([answer("Hi.")]),
                                 tools=AgentToolConfig(enabled=["evil__run"])),
                           catalog, store)
    await session.run("Run it.")
    assert session.flush(30)
    return session.id


def _caller() -> FakeProvider:
    return FakeProvider([calls(("c1", "evil__run", {})), answer("Done.")])


async def test_another_users_stored_mcp_command_never_runs_on_replay_or_resume(
        tmp_path: Path, as_user: Callable[[str], None],
        caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "s.db")
    marker = tmp_path / "ran.txt"
    as_user("alice")
    session_id = await _alices_session(store, marker)
    as_user("bob")
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime"):
        await replay(session_id, store=store, model=_caller())
    assert not marker.exists(), "alice's stored command ran in bob's kernel on replay"
    warning = next(r.getMessage() for r in caplog.records
                   if "MCP server 'evil'" in r.getMessage())
    assert "written by alice" in warning and sys.executable in warning
    assert "add_mcp_server('evil'" in warning

    caplog.clear()
    catalog = ToolCatalog.default()
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        resumed = AgentSession.resume(session_id, store, catalog=catalog,
                                      provider=_caller())
    assert "evil" not in catalog.mcp_servers and "evil__run" not in catalog
    assert any("MCP server 'evil'" in r.getMessage() for r in caplog.records)
    await resumed.run("Run it.")
    assert not marker.exists(), "alice's stored command ran in bob's kernel on resume"
    store.close()


async def test_an_own_sessions_mcp_servers_come_back(
        tmp_path: Path, as_user: Callable[[str], None]) -> None:
    store = SessionStore(tmp_path / "s.db")
    as_user("alice")
    session_id = await _alices_session(store, tmp_path / "ran.txt")
    catalog = ToolCatalog.default()
    resumed = AgentSession.resume(session_id, store, catalog=catalog,
                                  provider=FakeProvider([]))
    assert "evil" in catalog.mcp_servers and "evil__run" in catalog
    assert resumed.flush(30)
    store.close()
