"""An outside agent works in the notebook its chat is on: a session on a notebook page
gives its agent the notebook's MCP server (a token of its own) and the catalog's MCP
servers it is granted, never another; what the agent calls of the notebook's server is
reviewed in that same chat — an ``edit_cell`` is a proposal its Accept applies and its
Reject leaves. The scripted agent (scripted_agent.py) is a real MCP client over HTTP."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import httpx2
import mcp_types as types
import pytest

from neta_nb import AcpAgent, AgentSession
from neta_nb.events import ApprovalRequestEvent, Event
from neta_nb.runtime.acp.notebook_server import notebook_server
from neta_nb.runtime.acp.servers import NOTEBOOK_GRANTS, NOTEBOOK_SERVER
from neta_nb.runtime.mcp_server import MCP_TOOL_NAMES
from neta_nb.runtime.projection import ConversationProjection, NullSink
from neta_nb.tools import AgentToolConfig, ToolCatalog, tool
from neta_nb.tools.mcp.mcp import MCPToolServer
from neta_nb.tools.mcp.mcp_connection import MCPServerParameters

from ...support.notebook_mcp import connected
from ...support.notebook_page import FakeNotebookPage
from ...support.outside_agents import driven
from .test_acp_agent import SCRIPTED

CELLS = [{"id": "c1", "source": "x = 1"}, {"id": "c2", "source": "y = x + 1"}]
EDIT = {"cell_id": "c2", "source": "y = 2"}
REPORTED = {"update": {
    "sessionUpdate": "tool_call", "toolCallId": "t1", "title": "edit_cell", "kind": "edit",
    "status": "pending", "rawInput": EDIT,
    "_meta": {"claudeCode": {"toolName": f"mcp__{NOTEBOOK_SERVER}__edit_cell"}}}}
PERMISSION = {"permission": {
    "toolCall": {"toolCallId": "t1", "title": "edit_cell",
                 "_meta": {"claudeCode": {"toolName": f"mcp__{NOTEBOOK_SERVER}__edit_cell"}}},
    "options": [{"optionId": "ok", "name": "Allow", "kind": "allow_once"},
                {"optionId": "no", "name": "Reject", "kind": "reject_once"}]}}
CALLED = {"mcp": {"server": NOTEBOOK_SERVER, "tool": "edit_cell", "arguments": EDIT}}
COMPLETED = {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                        "status": "completed",
                        "content": [{"type": "content",
                                     "content": {"type": "text", "text": "done"}}]}}


def scripted(tmp_path: Path, steps: list[dict[str, Any]], *, http: bool = True,
             tools: AgentToolConfig | None = None) -> tuple[AcpAgent, Path]:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"steps": steps, "mcp_http": http}))
    agent = AcpAgent("scripted", [sys.executable, str(SCRIPTED), str(script)], cwd=tmp_path,
                     tools=tools)
    return agent, script


def said(script: Path) -> list[dict[str, Any]]:
    """What the agent's MCP steps got back, in order."""
    found = script.with_suffix(".json.mcp")
    return [json.loads(line) for line in found.read_text().splitlines()] if found.exists() \
        else []


def test_an_agent_is_granted_what_a_client_of_the_notebook_server_is() -> None:
    assert NOTEBOOK_GRANTS == MCP_TOOL_NAMES


@pytest.mark.parametrize("decision", ["allow_once", "reject"])
async def test_an_edit_of_the_agent_is_a_proposal_decided_in_its_own_chat(
        tmp_path: Path, decision: str) -> None:
    page = FakeNotebookPage(CELLS)
    agent, script = scripted(tmp_path, [REPORTED, PERMISSION, CALLED, COMPLETED])
    session = AgentSession(agent, notebook_page=page)
    session.attach_approver()
    projection, sink = ConversationProjection(), NullSink()
    asked: list[ApprovalRequestEvent] = []
    waiting: list[list[Any]] = []

    def on_event(event: Event) -> None:
        projection.apply(event, sink)
        if isinstance(event, ApprovalRequestEvent):
            asked.append(event)
            waiting.append([(a.id, a.proposal) for a in projection.approvals])
            session.approve(event.id, decision)  # type: ignore[arg-type]

    session.subscribe(on_event)
    async with driven(session):
        await asyncio.wait_for(session.run("make y two"), 60)
    [result] = said(script)
    # The proposal was this chat's, on the card of the agent's own call.
    [request] = asked
    assert request.id == "t1" and request.name == "edit_cell"
    assert request.proposal is not None and request.proposal["cell_id"] == "c2"
    assert [call_id for call_id, _ in waiting[0]] == ["t1"]
    assert waiting[0][0][1] == request.proposal
    # The agent's own permission request for the call was not asked again.
    answers = (tmp_path / "script.json.answers").read_text().splitlines()
    assert [json.loads(line) for line in answers] == [
        {"outcome": "selected", "optionId": "ok"}]
    [card] = [e for m in projection.messages for e in m.metadata.tool_executions]
    assert (card.id, card.name) == ("t1", "edit_cell")
    results = [p for m in session.messages for p in m.tool_results]
    assert [p.tool_call_id for p in results] == ["t1"]
    if decision == "allow_once":
        assert page.cell("c2")["source"] == "y = 2"
        assert card.status == "done" and not result["is_error"]
    else:
        assert page.cell("c2")["source"] == "y = x + 1"
        assert card.status == "rejected" and result["is_error"]
        assert "reject" in result["text"].lower()
    assert results[0].content == card.result


async def test_a_call_the_agent_did_not_report_gets_a_card_of_its_own(tmp_path: Path) -> None:
    page = FakeNotebookPage(CELLS)
    agent, script = scripted(tmp_path, [
        {"mcp": {"server": NOTEBOOK_SERVER, "tool": "read_notebook", "arguments": {}}}])
    session = AgentSession(agent, notebook_page=page)
    async with driven(session):
        await asyncio.wait_for(session.run("read it"), 60)
    [result] = said(script)
    assert not result["is_error"] and "y = x + 1" in result["text"]
    [card] = [e for m in session.messages for e in m.metadata.tool_executions]
    assert card.name == "read_notebook" and card.status == "done"
    [part] = [p for m in session.messages for p in m.tool_results]
    assert part.tool_call_id == card.id


@tool(name="time__now", core=True)
def time_now() -> str:
    """The time."""
    return "noon"


@tool(name="docs__search", core=True)
def docs_search(query: str) -> str:
    """Search the docs."""
    return query


@tool(name="vault__read", core=True)
def vault_read() -> str:
    """Read a secret."""
    return "secret"


def catalog_with_servers() -> ToolCatalog:
    catalog = ToolCatalog.default()
    for item, parameters in [
            (time_now, MCPServerParameters(name="time", command="mcp-server-time",
                                           args=("--local-timezone", "UTC"),
                                           env={"TIME_KEY": "k-env"})),
            (docs_search, MCPServerParameters(name="docs", url="http://127.0.0.1:9/mcp",
                                              headers={"Authorization": "Bearer s3cret"})),
            (vault_read, MCPServerParameters(name="vault", command="vault-mcp"))]:
        catalog.register(item)
        server = MCPToolServer(catalog, parameters, category=None, visibility=None,
                               requires_approval=False)
        server.tool_names = [item.name]
        catalog.mcp_servers.add(server)
    return catalog


@pytest.mark.parametrize("on_page", [True, False])
async def test_the_agent_is_given_its_granted_servers_and_the_notebook_only_on_a_page(
        tmp_path: Path, on_page: bool) -> None:
    grants = AgentToolConfig(enabled=[*NOTEBOOK_GRANTS, "time__now", "docs__search"],
                             disabled=["vault__read"])
    agent, script = scripted(tmp_path, [{"mcp": {"server": NOTEBOOK_SERVER, "tool": None}}],
                             tools=grants)
    session = AgentSession(agent, catalog_with_servers(),
                           notebook_page=FakeNotebookPage(CELLS) if on_page else None)
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 60)
    given = json.loads((tmp_path / "script.json.new").read_text())["mcpServers"]
    expected: list[dict[str, Any]] = [
        {"name": "time", "command": "mcp-server-time", "args": ["--local-timezone", "UTC"],
         "env": [{"name": "TIME_KEY", "value": "k-env"}]},
        {"type": "http", "name": "docs", "url": "http://127.0.0.1:9/mcp",
         "headers": [{"name": "Authorization", "value": "Bearer s3cret"}]}]
    if on_page:
        server = await notebook_server()
        [notebook] = [s for s in given if s["name"] == NOTEBOOK_SERVER]
        assert notebook["url"] == server.url and server.url.startswith("http://127.0.0.1:")
        [header] = notebook["headers"]
        assert header["name"] == "Authorization"
        assert header["value"].startswith("Bearer ") and server.token not in header["value"]
        expected.append(notebook)
        # The agent sees the notebook tools it is granted, and only those.
        [listed] = said(script)
        assert sorted(listed["tools"]) == sorted(NOTEBOOK_GRANTS)
    else:
        assert said(script) == [{"failed": f"no server {NOTEBOOK_SERVER!r} was given"}]
    assert given == expected
    assert [e.message for e in events if e.type == "warning"] == []


async def test_an_agent_without_http_servers_is_told_of_no_notebook_and_says_why(
        tmp_path: Path) -> None:
    agent, _ = scripted(tmp_path, [], http=False)
    session = AgentSession(agent, notebook_page=FakeNotebookPage(CELLS))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 60)
    assert json.loads((tmp_path / "script.json.new").read_text())["mcpServers"] == []
    assert [e.message for e in events if e.type == "warning"] == [
        f"scripted was not given the MCP server {NOTEBOOK_SERVER} (the agent takes no MCP "
        f"server over HTTP)."]


async def test_a_tool_switched_off_for_the_agent_is_neither_listed_nor_run(
        tmp_path: Path) -> None:
    page = FakeNotebookPage(CELLS)
    grants = AgentToolConfig(enabled=list(NOTEBOOK_GRANTS), disabled=["edit_cell"])
    agent, script = scripted(tmp_path, [{"mcp": {"server": NOTEBOOK_SERVER, "tool": None}},
                                        CALLED], tools=grants)
    session = AgentSession(agent, notebook_page=page)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 60)
    listed, called = said(script)
    assert "edit_cell" not in listed["tools"] and "read_notebook" in listed["tools"]
    assert called["is_error"] and "edit_cell" in called["text"]
    assert page.cell("c2")["source"] == "y = x + 1"


async def test_a_change_of_the_agent_s_grants_is_announced_to_it(tmp_path: Path) -> None:
    agent, _ = scripted(tmp_path, [])
    session = AgentSession(agent, notebook_page=FakeNotebookPage(CELLS))
    changed = asyncio.Event()

    def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with driven(session):
        await asyncio.wait_for(session.run("go"), 60)
        given = json.loads((tmp_path / "script.json.new").read_text())["mcpServers"]
        [notebook] = [s for s in given if s["name"] == NOTEBOOK_SERVER]
        reach = SimpleNamespace(url=notebook["url"], token=notebook["headers"][0]["value"]
                                .removeprefix("Bearer "))
        async with connected(reach, on_message=on_message) as client:
            before = {tool.name for tool in (await client.list_tools()).tools}
            session.agent.tools.set_tool("run_cell", False, session.catalog)
            await asyncio.wait_for(changed.wait(), 30)
            after = {tool.name for tool in (await client.list_tools()).tools}
    assert before - after == {"run_cell"}


async def test_a_closed_session_s_token_is_refused(tmp_path: Path) -> None:
    agent, _ = scripted(tmp_path, [])
    session = AgentSession(agent, notebook_page=FakeNotebookPage(CELLS))
    async with driven(session) as outside:
        await asyncio.wait_for(session.run("go"), 60)
        given = json.loads((tmp_path / "script.json.new").read_text())["mcpServers"]
        [notebook] = [s for s in given if s["name"] == NOTEBOOK_SERVER]
        headers = {h["name"]: h["value"] for h in notebook["headers"]}
        assert await initialize(notebook["url"], headers) == 200
        outside.close()
        assert await initialize(notebook["url"], headers) == 401


async def initialize(url: str, headers: dict[str, str]) -> int:
    """The status of an ``initialize`` request to ``url`` with ``headers``."""
    async with httpx2.AsyncClient(headers=headers, timeout=10) as http:
        answer = await http.post(url, json={
            "jsonrpc": "2.0", "id": 1, "method": "initialize",
            "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                       "clientInfo": {"name": "probe", "version": "1"}}},
            headers={"Accept": "application/json, text/event-stream"})
    return answer.status_code


async def test_stop_while_an_edit_waits_closes_its_card_and_tells_the_agent(
        tmp_path: Path) -> None:
    page = FakeNotebookPage(CELLS)
    agent, script = scripted(tmp_path, [REPORTED, CALLED, COMPLETED])
    session = AgentSession(agent, notebook_page=page)
    session.attach_approver()

    def on_event(event: Event) -> None:
        if isinstance(event, ApprovalRequestEvent):
            asyncio.get_running_loop().call_soon(session.cancel)

    session.subscribe(on_event)
    async with driven(session):
        await asyncio.wait_for(session.run("make y two"), 60)
        for _ in range(100):  # the agent's call ends after its turn did
            if said(script):
                break
            await asyncio.sleep(0.1)
    [result] = said(script)
    assert result["is_error"] and "cancelled" in result["text"]
    assert page.cell("c2")["source"] == "y = x + 1"
    [card] = [e for m in session.messages for e in m.metadata.tool_executions]
    assert (card.id, card.status) == ("t1", "cancelled")
    results = [p for m in session.messages for p in m.tool_results]
    assert [p.tool_call_id for p in results] == ["t1"]
    assert session.pending_approvals() == []


@pytest.mark.parametrize("decision", ["allow_once", "reject"])
async def test_a_run_of_the_agent_asks_for_approval_in_its_own_chat(
        tmp_path: Path, decision: str) -> None:
    page = FakeNotebookPage(CELLS)
    page.run_outputs["c1"] = [{"output_type": "stream", "name": "stdout", "text": "1\n"}]
    agent, script = scripted(tmp_path, [
        {"mcp": {"server": NOTEBOOK_SERVER, "tool": "run_cell", "arguments": {"cell_id": "c1"}}}])
    session = AgentSession(agent, notebook_page=page)
    session.attach_approver()
    asked: list[ApprovalRequestEvent] = []

    def on_event(event: Event) -> None:
        if isinstance(event, ApprovalRequestEvent):
            asked.append(event)
            session.approve(event.id, decision)  # type: ignore[arg-type]

    session.subscribe(on_event)
    async with driven(session):
        await asyncio.wait_for(session.run("run the first cell"), 60)
    [request] = asked
    assert request.name == "run_cell" and request.proposal is None
    [result] = said(script)
    ran = [op for op, _ in page.requests if op == "run"]
    [card] = [e for m in session.messages for e in m.metadata.tool_executions]
    assert card.id == request.id
    if decision == "allow_once":
        assert ran == ["run"] and not result["is_error"] and "1" in result["text"]
        assert card.status == "done"
    else:
        assert ran == [] and result["is_error"] and card.status == "rejected"


async def test_past_a_budget_its_calls_of_the_notebook_are_refused(tmp_path: Path) -> None:
    """Once the cost the agent said reached a budget, it is asked nothing more: its call
    of the notebook's server is answered as not run, and nothing is asked of the user."""
    page = FakeNotebookPage(CELLS)
    script = tmp_path / "script.json"
    cost = {"update": {"sessionUpdate": "usage_update", "used": 10, "size": 1000,
                       "cost": {"amount": 0.06, "currency": "USD"}}}
    script.write_text(json.dumps({"mcp_http": True, "steps": [
        {"mcp": {"server": NOTEBOOK_SERVER, "tool": None}}, cost, CALLED]}))
    agent = AcpAgent("scripted", [sys.executable, str(SCRIPTED), str(script)], cwd=tmp_path,
                     turn_budget_usd=0.05)
    session = AgentSession(agent, notebook_page=page)
    session.attach_approver()
    asked: list[Event] = []
    session.subscribe(lambda event: asked.append(event)
                      if event.type == "approval_request" else None)
    async with driven(session):
        await asyncio.wait_for(session.run("make y two"), 60)
    listed, refused = said(script)
    assert "edit_cell" in listed["tools"]
    assert refused["is_error"] and "reached its budget" in refused["text"]
    assert asked == [] and page.cell("c2")["source"] == "y = x + 1"
