"""A small catalog with one tool per interesting shape, shared by the tool tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from neta_nb.tools import ToolCatalog

from ..support.tools import make_tool


@pytest.fixture
def catalog() -> ToolCatalog:
    """core: todo (planning), read (base); extra: search (base), look (vision, needs
    vision), crew_only (crew, scene 'crew'), gone (base, disabled globally),
    core_gone (base, core, disabled globally)."""
    tools = ToolCatalog([
        make_tool("todo", category="planning", core=True),
        make_tool("read", core=True),
        make_tool("search"),
        make_tool("look", category="vision", capabilities=frozenset({"vision"})),
        make_tool("crew_only", category="crew", scenes=frozenset({"crew"})),
        make_tool("gone"),
        make_tool("core_gone", core=True),
    ])
    tools.disable("gone")
    tools.disable("core_gone")
    return tools


@pytest.fixture
async def default_catalog() -> AsyncIterator[ToolCatalog]:
    """The default catalog; the MCP servers a test adds to it are removed afterwards."""
    tools = ToolCatalog.default()
    yield tools
    for name in list(tools.mcp_servers):
        await tools.remove_mcp_server(name)
