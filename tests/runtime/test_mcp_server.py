"""The notebook's MCP server, driven by the official ``mcp`` Python client over real HTTP
on 127.0.0.1, with a stand-in page and user (tests/support/notebook_mcp.py).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import shlex
import tomllib
from typing import Any

import httpx2
import mcp_types as types
import pytest
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

from neta_nb.messages import ToolCallPart
from neta_nb.runtime import mcp_server
from neta_nb.runtime.mcp_server import NotebookMCPServer
from neta_nb.runtime.tracing.tracing import configure_tracing
from neta_nb.store.session_store import SessionStore
from neta_nb.tools.notebook import notebook_tools
from neta_nb.tools.notebook.reading import UNTRUSTED
from tests.support.notebook_mcp import (
    CELLS,
    OnProgress,
    User,
    connected,
    served,
    text_of,
    waiting_edit,
)
from tests.support.notebook_page import FakeNotebookPage
from tests.support.timing import wait_until


async def test_the_notebook_tools_are_listed_with_their_own_schemas() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        listed = {tool.name: tool for tool in (await client.list_tools()).tools}
    assert set(listed) == set(mcp_server.MCP_TOOL_NAMES)
    own = {tool.name: tool for tool in notebook_tools()}
    assert listed["edit_cell"].input_schema == own["edit_cell"].parameters
    assert listed["edit_cell"].description == own["edit_cell"].description


async def test_read_notebook_returns_the_pages_text_framed_as_untrusted() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("read_notebook", {})
    assert not result.is_error
    text = text_of(result)
    assert "x = 1" in text and "c2" in text
    assert UNTRUSTED.splitlines()[0] in text


async def test_an_accepted_edit_changes_the_cell_and_the_client_reads_so() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})
        page = user.pages["claude-code"]
    assert "accepted" in text_of(result)
    assert page.cell("c2")["source"] == "y = 2"
    name, request = user.requests[0]
    assert name == "claude-code" and request.proposal is not None
    assert request.proposal["before"] == "y = x + 1"


async def test_a_rejected_edit_leaves_the_cell_and_the_client_reads_rejected() -> None:
    user = User()
    user.answer = ("reject", None)
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})
        page = user.pages["claude-code"]
    assert "rejected" in text_of(result)
    assert page.cell("c2")["source"] == "y = x + 1"
    assert [op for op, _ in page.requests if op == "edit"] == []


async def test_an_edit_accepted_with_the_users_text_says_that_text() -> None:
    user = User()
    user.answer = ("allow_once", "y = 3")
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})
        page = user.pages["claude-code"]
    assert "y = 3" in text_of(result)
    assert page.cell("c2")["source"] == "y = 3"


async def test_a_cell_changed_while_the_user_decides_is_not_overwritten() -> None:
    user = User()
    user.answer = None
    async with served(user) as server, connected(server) as client:
        call = await waiting_edit(client, user)
        page = user.pages["claude-code"]
        page.cell("c2")["source"] = "y = 'typed meanwhile'"
        name, request = user.requests[0]
        user.sessions[name].approve(request.id, "allow_once")
        result = await asyncio.wait_for(call, 30)
    assert result.is_error
    assert "changed while they were deciding" in text_of(result)
    assert page.cell("c2")["source"] == "y = 'typed meanwhile'"


async def test_the_call_waits_for_the_decision_with_progress(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "PROGRESS_EVERY", 0.2)
    user = User()
    user.answer = None
    seen: list[str | None] = []

    async with served(user) as server, connected(server) as client:
        call = asyncio.create_task(client.call_tool(
            "edit_cell", {"cell_id": "c1", "source": "x = 2"}, progress_callback=OnProgress(seen)))
        await asyncio.wait_for(user.asked.wait(), 30)
        await asyncio.sleep(1.0)
        assert not call.done()  # the client waits for the user
        name, request = user.requests[0]
        user.sessions[name].approve(request.id, "reject")
        result = await asyncio.wait_for(call, 30)
    assert "rejected" in text_of(result)
    assert len(seen) >= 2
    assert all(message and "waiting" in message for message in seen)


async def test_run_cell_needs_approval_and_returns_its_outputs() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("run_cell", {"cell_id": "c1"})
        page = user.pages["claude-code"]
    assert not result.is_error, text_of(result)
    assert "execution count 1" in text_of(result)
    assert user.requests[0][1].name == "run_cell"
    assert page.cell("c1")["execution_count"] == 1


async def test_a_refused_run_does_not_run() -> None:
    user = User()
    user.answer = ("reject", None)
    async with served(user) as server, connected(server) as client:
        result = await client.call_tool("run_cell", {"cell_id": "c1"})
        page = user.pages["claude-code"]
    assert result.is_error
    assert "did not allow" in text_of(result)
    assert [op for op, _ in page.requests if op == "run"] == []


async def test_a_tool_switched_off_is_not_listed_refused_and_announced() -> None:
    user = User()
    changed = asyncio.Event()

    def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            changed.set()

    async with served(user) as server, connected(server, on_message=on_message) as client:
        await client.list_tools()
        session = user.sessions["claude-code"]
        session.agent.tools.set_tool("edit_cell", False, session.catalog)
        await asyncio.wait_for(changed.wait(), 30)
        names = {tool.name for tool in (await client.list_tools()).tools}
        result = await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})
        page = user.pages["claude-code"]
    assert "edit_cell" not in names and "read_notebook" in names
    assert result.is_error
    assert "switched off" in text_of(result)
    assert user.requests == [] and page.cell("c2")["source"] == "y = x + 1"


async def test_no_token_is_401_a_foreign_origin_403_a_foreign_host_421() -> None:
    user = User()
    async with served(user) as server, httpx2.AsyncClient(timeout=30) as http:
        body = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": {"name": "x", "version": "1"}}}
        accept = {"Accept": "application/json, text/event-stream"}
        none = await http.post(server.url, json=body, headers=accept)
        wrong = await http.post(server.url, json=body,
                                headers={**accept, "Authorization": "Bearer nope"})
        foreign = await http.post(server.url, json=body, headers={
            **accept, "Authorization": f"Bearer {server.token}",
            "Origin": "http://localhost:8888"})
        rebound = await http.post(server.url, json=body, headers={
            **accept, "Authorization": f"Bearer {server.token}",
            "Host": "attacker.example"})
        own = await http.post(server.url, json=body, headers={
            **accept, "Authorization": f"Bearer {server.token}",
            "Origin": server.url.rsplit("/", 1)[0]})
    assert none.status_code == 401 and wrong.status_code == 401
    assert none.headers["www-authenticate"].startswith("Bearer")
    assert foreign.status_code == 403
    assert rebound.status_code == 421  # DNS rebinding: a name other than the server's
    assert own.status_code == 200
    assert server.token not in repr(server)


async def test_two_clients_are_two_agents_with_their_own_sessions(tmp_path: Any) -> None:
    user = User()
    store = SessionStore(tmp_path / "calls.db")
    async with served(user, store=store) as server, \
            connected(server, "claude-code") as first, connected(server, "gemini-cli") as second:
        results = await asyncio.gather(
            first.call_tool("insert_cell", {"source": "a = 1"}),
            second.call_tool("insert_cell", {"source": "b = 2"}))
        sessions = dict(server.clients)
    assert all(not r.is_error for r in results), [text_of(r) for r in results]
    assert set(sessions) == {"claude-code", "gemini-cli"}
    assert {name for name, _ in user.requests} == {"claude-code", "gemini-cli"}
    for name, session in sessions.items():
        session.flush(10)
        messages = store.load_messages(session.id)
        calls = [part.name for message in messages for part in message.parts
                 if isinstance(part, ToolCallPart)]
        assert calls == ["insert_cell"], name
        record = store.get_session(session.id)
        assert record is not None and record.agent["name"] == name


async def test_two_servers_edit_their_own_notebooks() -> None:
    users = User(), User()
    pages = FakeNotebookPage(CELLS, path="one.ipynb"), FakeNotebookPage(CELLS, path="two.ipynb")
    async with served(users[0], page_for=lambda _n: pages[0]) as one, \
            served(users[1], page_for=lambda _n: pages[1]) as two, \
            connected(one) as first, connected(two) as second:
        for n in range(50):  # 100 edits, interleaved
            await asyncio.gather(
                first.call_tool("edit_cell", {"cell_id": "c1", "source": f"one {n}"}),
                second.call_tool("edit_cell", {"cell_id": "c1", "source": f"two {n}"}))
    assert pages[0].cell("c1")["source"] == "one 49"
    assert pages[1].cell("c1")["source"] == "two 49"
    assert len([op for op, _ in pages[0].requests if op == "edit"]) == 50
    assert all(a["source"].startswith("one") for op, a in pages[0].requests if op == "edit")
    assert all(a["source"].startswith("two") for op, a in pages[1].requests if op == "edit")


class SlowPage(FakeNotebookPage):
    """A page whose runs take ``seconds``."""

    def __init__(self, seconds: float) -> None:
        super().__init__(CELLS)
        self.seconds = seconds

    async def request(self, op: str, args: dict[str, Any], *,
                      wait: float | None = None) -> dict[str, Any]:
        if op == "run":
            await asyncio.sleep(self.seconds)
        return await super().request(op, args, wait=wait)


async def test_a_long_run_keeps_the_call_alive_and_its_outputs_are_bounded(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "PROGRESS_EVERY", 0.2)
    user = User()
    page = SlowPage(1.5)
    page.run_outputs["c1"] = [{"output_type": "stream", "name": "stdout",
                               "text": "row\n" * 200_000}]
    seen: list[str | None] = []

    async with served(user, page_for=lambda _name: page) as server, \
            connected(server) as client:
        result = await client.call_tool("run_cell", {"cell_id": "c1"},
                                        progress_callback=OnProgress(seen))
    assert not result.is_error, text_of(result)
    assert len(seen) >= 3
    text = text_of(result)
    assert "execution count 1" in text
    assert len(text) < 120_000  # the session's bound on a result (Agent.max_tool_result_chars)


async def test_mention_targets_are_resources_as_the_grants_allow() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        uris = {str(r.uri) for r in (await client.list_resources()).resources}
        frame = await client.read_resource("notebook://variable/frame")
        session = user.sessions["claude-code"]
        with pytest.raises(Exception, match="@nothing_here: no variable named nothing_here"):
            await client.read_resource("notebook://variable/nothing_here")
        session.agent.tools.set_tool("list_variables", False, session.catalog)
        after = {str(r.uri) for r in (await client.list_resources()).resources}
        with pytest.raises(Exception, match="switched off"):
            await client.read_resource("notebook://variable/frame")
    assert "notebook://variable/frame" in uris
    [content] = frame.contents
    assert isinstance(content, types.TextResourceContents)
    assert content.text.startswith('<mention name="@frame">') and "list" in content.text
    assert "notebook://variable/frame" not in after


def test_the_setup_lines_are_what_each_client_reads() -> None:
    url, token = "http://127.0.0.1:8765/mcp", "secret-token-0123456789"
    lines = mcp_server.setup_lines(url, token)
    claude = shlex.split(lines["Claude Code"])
    assert claude[:5] == ["claude", "mcp", "add", "--transport", "http"]
    assert claude[5:] == ["neta-notebook", url, "--header", f"Authorization: Bearer {token}"]
    codex = lines["Codex (~/.codex/config.toml)"]
    assert f"export {mcp_server.TOKEN_VARIABLE}={token}" in codex
    toml = tomllib.loads(codex.split("# in ~/.codex/config.toml:\n")[1])
    assert toml == {"mcp_servers": {"neta-notebook": {
        "url": url, "bearer_token_env_var": mcp_server.TOKEN_VARIABLE}}}
    gemini = json.loads(lines["Gemini CLI (~/.gemini/settings.json)"])["mcpServers"]
    assert gemini["neta-notebook"]["httpUrl"] == url
    assert gemini["neta-notebook"]["headers"] == {"Authorization": f"Bearer {token}"}
    cursor = json.loads(lines["Cursor (~/.cursor/mcp.json)"])["mcpServers"]
    assert cursor == {"neta-notebook": {"url": url,
                                        "headers": {"Authorization": f"Bearer {token}"}}}


def test_bad_addresses_ports_and_tokens_are_refused_clearly() -> None:
    loop = asyncio.new_event_loop()
    try:
        cases: list[tuple[dict[str, Any], str]] = [
            ({"host": "0.0.0.0"}, "loopback address only"), ({"port": 70000}, "port must be 0"),
            ({"token": "short"}, "at least 16 printable")]
        for options, message in cases:
            with pytest.raises(ValueError, match=message):
                NotebookMCPServer(kernel_loop=loop, show_client=lambda _s: None, **options)
    finally:
        loop.close()


async def test_a_client_whose_edits_the_user_accepts_automatically_is_not_asked() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        await client.list_tools()
        server.clients["claude-code"].agent.accept_notebook_edits = True
        result = await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})
        page = user.pages["claude-code"]
    assert "accepted without asking" in text_of(result)
    assert page.cell("c2")["source"] == "y = 2"
    assert user.requests == []


async def test_a_clients_call_is_traced_as_a_turn_of_its_agent() -> None:
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    configure_tracing(tracer_provider=provider)
    try:
        user = User()
        async with served(user) as server, connected(server) as client:
            await client.call_tool("read_notebook", {})
    finally:
        configure_tracing(tracer_provider=None, capture_content=None)
    names = [span.name for span in exporter.get_finished_spans()]
    assert "invoke_agent claude-code" in names
    assert "execute_tool read_notebook" in names


async def test_stop_in_the_notebook_ends_the_clients_waiting_call() -> None:
    user = User()
    user.answer = None
    async with served(user) as server, connected(server) as client:
        call = await waiting_edit(client, user)
        assert user.sessions["claude-code"].cancel()  # the chat view's Stop
        result = await asyncio.wait_for(call, 30)
        page = user.pages["claude-code"]
        after = await client.call_tool("read_notebook", {})  # the client goes on
    assert result.is_error and "stopped in the notebook" in text_of(result)
    assert page.cell("c2")["source"] == "y = x + 1"
    assert not after.is_error


async def test_a_call_the_client_gives_up_stops_its_turn() -> None:
    user = User()
    user.answer = None
    async with served(user) as server, connected(server) as client:
        call = await waiting_edit(client, user)
        call.cancel()  # the client cancels its request
        with contextlib.suppress(asyncio.CancelledError):
            await call
        session = user.sessions["claude-code"]
        await wait_until(lambda: not session.running, 10)
        assert not session.running  # the turn waiting for the user ended with it
        after = await client.call_tool("read_notebook", {})
    assert not after.is_error, text_of(after)
    assert user.pages["claude-code"].cell("c2")["source"] == "y = x + 1"


async def test_a_cell_started_without_waiting_is_followed_with_cell_status() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        listed = {tool.name for tool in (await client.list_tools()).tools}
        assert {"run_cell", "cell_status"} <= listed
        started = await client.call_tool("run_cell", {"cell_id": "c1", "wait": False})
        assert not started.is_error, text_of(started)
        page = user.pages["claude-code"]

        async def state() -> str:
            result = await client.call_tool("cell_status", {"cell_id": "c1"})
            assert not result.is_error, text_of(result)
            return text_of(result)

        # Started once the call that asked for it has returned: the client's call is its turn.
        for _ in range(50):
            if "c1" in page.executing:
                break
            await asyncio.sleep(0.1)
        assert "running" in await state()
        page.end_run("c1")
        assert "done" in await state()
    assert [args for op, args in page.requests if op == "run"] == [
        {"cell_id": "c1", "wait": False}]
