"""ToolConfigPanel and MCP servers: the server's status on its section, a changed
description listed (and its tool off) until the view acknowledges it."""

from __future__ import annotations

import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import psutil
import pytest

pytest.importorskip("mcp", reason="needs the MCP SDK: pip install 'neta-nb[mcp]'")

from neta_nb.tools import AgentToolConfig, ToolCatalog, ToolContext
from neta_nb.widgets import ToolConfigPanel

from ..support.timing import wait_until
from .conftest import SentMessages

TEST_SERVER = Path(__file__).parents[1] / "support" / "mcp_test_server.py"


@pytest.fixture
async def catalog() -> AsyncIterator[ToolCatalog]:
    tools = ToolCatalog.default()
    await tools.add_mcp_server("t", command=sys.executable, args=[str(TEST_SERVER), "stdio"],
                               category="test server")
    yield tools
    for name in list(tools.mcp_servers):
        await tools.remove_mcp_server(name)


def _reply(panel: ToolConfigPanel, sent: SentMessages, kind: str, **payload: Any
           ) -> dict[str, Any]:
    request_id = f"r{len(sent)}"
    panel._on_custom_message(panel, {"kind": kind, "id": request_id, **payload}, [])
    return next(m for m in sent.of_kind("reply") if m["id"] == request_id)


async def test_status_change_and_acknowledgement(catalog: ToolCatalog, sent: SentMessages
                                                 ) -> None:
    config = AgentToolConfig(enabled=["t__shifty"])
    panel = ToolConfigPanel(catalog, config)
    [server] = panel.mcp_servers
    assert server["name"] == "t" and server["category"] == "test server"
    assert (server["status"], server["status_text"]) == ("connected", "MCP server · connected")
    assert server["changed"] == []
    assert {t["name"] for t in panel.tools if t["category"] == "test server"} >= {"t__shifty"}

    await catalog["t__change_description"].invoke({}, ToolContext())
    await wait_until(lambda: panel.mcp_servers[0]["changed"], within=20, interval=0.02)
    [change] = panel.mcp_servers[0]["changed"]
    assert change["name"] == "t__shifty" and change["old_description"].startswith("<img")
    assert panel.states["t__shifty"]["state"] == "globally_disabled"
    assert panel.states["t__shifty"]["reason"].startswith("Suspended until the user reviews it")
    assert "t__shifty" not in panel.enabled_tools

    refused = _reply(panel, sent, "acknowledge_change", name="t__echo")
    assert "no description change" in refused["error"]
    # A view that still shows an older text cannot grant the current one.
    stale = _reply(panel, sent, "acknowledge_change", name="t__shifty",
                   description=change["old_description"])
    assert "changed again after it was shown" in stale["error"]
    assert "t__shifty" not in panel.enabled_tools
    assert "string" in _reply(panel, sent, "acknowledge_change", name="t__shifty",
                              description=3)["error"]
    assert _reply(panel, sent, "acknowledge_change", name="t__shifty",
                  description=change["new_description"]).get("error") is None
    assert panel.mcp_servers[0]["changed"] == []
    assert "t__shifty" in panel.enabled_tools

    panel.lang = "zh-CN"
    assert panel.mcp_servers[0]["status_text"] == "MCP 服务 · 已连接"
    psutil.Process(catalog.mcp_servers["t"].connection.pid).kill()
    await wait_until(lambda: panel.mcp_servers[0]["status"] == "failed", within=20, interval=0.02)
    assert panel.mcp_servers[0]["status_text"].startswith("MCP 服务 · 连接失败：")
    panel.close()
