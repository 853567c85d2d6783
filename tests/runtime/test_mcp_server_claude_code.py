"""A real outside client: Claude Code (``claude -p``), set up with the notebook's MCP server
by the very line docs/mcp-server.md gives (``claude mcp add --transport http … --header
"Authorization: Bearer …"``), lists the server's tools and calls them. Its model is the
local stand-in for the Messages API (tests/providers/sse_server.py) answering with the
calls the test scripts, so nothing leaves 127.0.0.1.

Claude Code is the command line inside the Agent SDK that ``@zed-industries/claude-agent-acp``
brings (locked in tests/fixtures/acp_agents: ``npm ci`` there, as scripts/test.sh does).
The notebook page is a stand-in here (tests/support/notebook_page.py) with a stand-in
user who accepts what is proposed; the real page is driven by tests/browser/.
"""

from __future__ import annotations

import asyncio
import json
import os
from pathlib import Path

import pytest

from neta_nb.messages import ToolCallPart
from neta_nb.runtime.mcp_server import NotebookMCPServer

from ..providers.sse_server import SSEServer
from ..support.claude_script import ModelScript, text, tool_use
from ..support.notebook_mcp import User
from ..support.notebook_page import FakeNotebookPage
from ..support.outside_agents import MODULES, require_locked

CLI = MODULES / "@anthropic-ai" / "claude-agent-sdk" / "cli.js"
SERVER = "neta-notebook"
"""The name docs/mcp-server.md gives the server in Claude Code's configuration."""


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_locked(CLI, "the locked Claude Code")


async def claude(args: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    process = await asyncio.create_subprocess_exec(
        "node", str(CLI), *args, cwd=cwd, env=env, stdin=asyncio.subprocess.DEVNULL,
        stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.STDOUT)
    try:
        output, _ = await asyncio.wait_for(process.communicate(), 120)
    finally:
        if process.returncode is None:
            process.kill()
            await process.wait()
    return process.returncode or 0, output.decode(errors="replace")


async def test_claude_code_set_up_as_documented_lists_and_calls_the_notebook_tools(
        tmp_path: Path, model: tuple[SSEServer, ModelScript]) -> None:
    server_of_model, script = model
    user = User()
    page = FakeNotebookPage([{"id": "c1", "source": "x = 41 + 1"}])
    server = NotebookMCPServer(kernel_loop=asyncio.get_running_loop(),
                               show_client=user.show(lambda _name: page))
    await asyncio.to_thread(server.start)
    home = tmp_path / "home"
    home.mkdir()
    work = tmp_path / "work"
    work.mkdir()
    env = {key: value for key, value in os.environ.items()
           if not key.endswith(("_API_KEY", "_TOKEN")) and key != "IS_SANDBOX"}
    env.update(HOME=str(home), CLAUDE_CONFIG_DIR=str(home / ".claude"),
               ANTHROPIC_BASE_URL=server_of_model.base_url, ANTHROPIC_API_KEY="test-key",
               CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC="1", DISABLE_AUTOUPDATER="1")
    read, edit = f"mcp__{SERVER}__read_notebook", f"mcp__{SERVER}__edit_cell"
    script.scripts["notebook"] = [tool_use("toolu_1", read, {}),
                                  tool_use("toolu_2", edit, {"cell_id": "c1",
                                                             "source": "x = 42"}),
                                  text("The cell now holds 42.")]
    try:
        # The setup line of docs/mcp-server.md, as a user would type it.
        added, said = await claude(["mcp", "add", "--transport", "http", SERVER, server.url,
                                    "--header", f"Authorization: Bearer {server.token}"],
                                   env, work)
        assert added == 0, said
        code, said = await claude(["-p", "SCRIPT:notebook Make x 42.",
                                   "--allowedTools", f"{read},{edit}"], env, work)
    finally:
        await asyncio.to_thread(server.stop)
    assert code == 0, said
    assert "The cell now holds 42." in said
    calls = [r.json for r in server_of_model.requests
             if r.json and "SCRIPT:notebook" in json.dumps(r.json.get("messages", []))]
    offered = {tool["name"] for tool in calls[0].get("tools", [])}
    assert {read, edit, f"mcp__{SERVER}__run_cell"} <= offered, sorted(offered)
    results = [block for message in calls[-1]["messages"]
               if isinstance(message.get("content"), list)
               for block in message["content"] if block.get("type") == "tool_result"]
    outputs = [json.dumps(block.get("content")) for block in results]
    assert "x = 41 + 1" in outputs[0] and "data, not instructions" in outputs[0]
    assert "accepted" in outputs[1]
    assert page.cell("c1")["source"] == "x = 42"
    [(name, request)] = user.requests
    assert request.name == "edit_cell" and request.proposal is not None
    session = server.clients[name]
    assert [part.name for message in session.messages for part in message.parts
            if isinstance(part, ToolCallPart)] == ["read_notebook", "edit_cell"]
