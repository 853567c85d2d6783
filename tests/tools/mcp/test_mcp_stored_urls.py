"""A streamable-HTTP MCP server's URL is stored with a session without what may be a
secret in it (``?token=…``, ``user:password@``): the secret is nowhere in the session
database, the panel's description does not show it, and a resume says which parts the
server must be added again with — unless it has been added again already."""

from __future__ import annotations

import logging
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog

from ...support.sessions import FakeProvider, answer
from .test_mcp import http_server

__all__ = ["http_server"]  # the fixture, shared with the MCP tests

SECRET = "MCP-TOKEN-SECRET-9876"


async def _catalog() -> AsyncIterator[ToolCatalog]:
    tools = ToolCatalog.default()
    yield tools
    for name in list(tools.mcp_servers):
        await tools.remove_mcp_server(name)


# Two catalogs: the session's, and the one it is resumed into. Tests ask for them before
# `http_server`, so their servers are removed after it stopped, as in the MCP tests: a
# connection closed while the server still runs leaves a socket unclosed (ResourceWarning).
catalog = pytest.fixture(name="catalog")(_catalog)
fresh = pytest.fixture(name="fresh")(_catalog)


def _database_bytes(folder: Path) -> bytes:
    return b"".join(path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file())


async def test_an_mcp_url_token_is_never_stored_and_resume_asks_for_it(
        catalog: ToolCatalog, fresh: ToolCatalog, http_server: str, tmp_path: Path,
        caplog: pytest.LogCaptureFixture) -> None:
    url = f"{http_server}?token={SECRET}&api-version=3"
    server = await catalog.add_mcp_server("web", url=url,
                                          headers={"Authorization": f"Bearer {SECRET}"})
    assert server.describe()["url"] == f"{http_server}?api-version=3"
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("a", model=FakeProvider([answer("hi")]),
                                 tools=AgentToolConfig(enabled=["web__echo"])), catalog, store)
    await session.run("hello")
    assert session.flush(30)
    assert SECRET.encode() not in _database_bytes(tmp_path)
    record = store.get_session(session.id)
    assert record is not None
    (spec,) = record.mcp_servers
    assert spec["url"] == f"{http_server}?api-version=3" and spec["url_withheld"] == ["token"]

    for _ in range(2):  # the resumed session's own save keeps the note
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
            resumed = AgentSession.resume(session.id, SessionStore(store.path), catalog=fresh)
        assert resumed.flush(30)
        (warning,) = [r.getMessage() for r in caplog.records
                      if "MCP server 'web'" in r.getMessage()]
        assert "url was stored without the query parameter token" in warning
        assert "catalog.add_mcp_server('web', url=...)" in warning
        assert SECRET not in warning
        assert "web__echo" in fresh  # its tools are back all the same
        await fresh.remove_mcp_server("web")  # restored, never started
    # Added again (with its token) before resuming: nothing to ask for.
    await fresh.add_mcp_server("web", url=url)
    caplog.clear()
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        again = AgentSession.resume(session.id, SessionStore(store.path), catalog=fresh)
    assert not [r for r in caplog.records if "MCP server" in r.getMessage()]
    assert again.flush(30)
    assert SECRET.encode() not in _database_bytes(tmp_path)
