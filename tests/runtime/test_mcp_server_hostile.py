"""The notebook's MCP server against hostile and careless clients: bad requests, bad
arguments, two connections under one name, connections that go away, a server stopped
while calls wait. Driven as tests/runtime/test_mcp_server.py drives it (the official
client over real HTTP, a stand-in page and user: tests/support/notebook_mcp.py)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from typing import Any

import httpx2
import mcp_types as types
import pytest
from mcp.shared.exceptions import MCPError

from neta_nb.runtime import mcp_guard, mcp_server
from neta_nb.runtime.mcp_server import NotebookMCPServer
from neta_nb.tools import tool
from tests.support.notebook_mcp import (
    OnProgress,
    User,
    connected,
    served,
    text_of,
    waiting_edit,
)
from tests.support.timing import wait_until

ACCEPT = {"Accept": "application/json, text/event-stream",
          "Content-Type": "application/json"}
INITIALIZE = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
    "protocolVersion": "2025-06-18", "capabilities": {},
    "clientInfo": {"name": "raw", "version": "1"}}}


async def test_bad_arguments_are_a_clear_error_and_the_client_goes_on() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        wrong = await client.call_tool("edit_cell", {"cell_id": 5, "source": ["x"]})
        missing = await client.call_tool("edit_cell", {})
        unknown = await client.call_tool("shell", {"command": "rm -rf /"})
        after = await client.call_tool("read_notebook", {})
        page = user.pages["claude-code"]
    assert wrong.is_error and "cell_id" in text_of(wrong), text_of(wrong)
    assert missing.is_error and "cell_id" in text_of(missing), text_of(missing)
    assert unknown.is_error and "no such tool" in text_of(unknown)
    assert not after.is_error and "x = 1" in text_of(after)
    assert user.requests == [] and [op for op, _ in page.requests if op == "edit"] == []


async def test_a_wrong_empty_or_odd_authorization_is_401() -> None:
    user = User()
    async with served(user) as server, httpx2.AsyncClient(timeout=30) as http:
        token = server.token
        answers = [await http.post(server.url, json=INITIALIZE,
                                   headers={**ACCEPT, "Authorization": value})
                   for value in ("", "Bearer", "bearer", f"Basic {token}", f"Bearer {token}x",
                                 f"Bearer {token[:-1]}", f"{token}")]
        query = await http.post(f"{server.url}?token={token}", json=INITIALIZE,
                                headers=ACCEPT)
    assert [a.status_code for a in answers] == [401] * len(answers)
    assert query.status_code == 401  # a token in the URL is no token
    assert all(token not in a.text for a in [*answers, query])


async def test_malformed_requests_are_refused_and_the_server_goes_on() -> None:
    user = User()
    async with served(user) as server:
        auth = {**ACCEPT, "Authorization": f"Bearer {server.token}"}
        async with httpx2.AsyncClient(timeout=30) as http:
            garbage = await http.post(server.url, content=b"{not json", headers=auth)
            not_rpc = await http.post(server.url, json={"hello": 1}, headers=auth)
            array = await http.post(server.url, json=[1, 2, 3], headers=auth)
        async with connected(server) as client:
            after = await client.call_tool("read_notebook", {})
    assert garbage.status_code == 400 and not_rpc.status_code == 400
    assert array.status_code == 400
    assert not after.is_error


async def test_a_huge_body_is_refused_before_it_is_read(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_guard, "MAX_REQUEST_BYTES", 100_000)
    user = User()
    async with served(user) as server:
        auth = {**ACCEPT, "Authorization": f"Bearer {server.token}"}
        huge = b'{"jsonrpc": "2.0", "id": 1, "method": "ping", "pad": "' + b"x" * 300_000
        huge += b'"}'

        async def chunks() -> Any:  # no Content-Length: the body is counted as it comes
            for start in range(0, len(huge), 10_000):
                yield huge[start:start + 10_000]

        async with httpx2.AsyncClient(timeout=30) as http:
            sized = await http.post(server.url, content=huge, headers=auth)
            streamed = await http.post(server.url, content=chunks(), headers=auth)
        async with connected(server) as client:
            after = await client.call_tool("read_notebook", {})
    assert sized.status_code == 413 and streamed.status_code == 413
    assert "100000 bytes" in sized.text
    assert not after.is_error


@tool
def sorted_tool(values: list[int]) -> list[int]:
    """Sort numbers (a tool of the catalog no client is granted)."""
    return sorted(values)


async def test_two_connections_under_one_name_queue_and_neither_cancels_the_other(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(mcp_server, "PROGRESS_EVERY", 0.2)
    user = User()
    user.answer = None
    async with served(user) as server, connected(server, "cursor") as first, \
            connected(server, "cursor") as second:
        waiting = await waiting_edit(first, user)
        behind = OnProgress()
        queued = asyncio.create_task(second.call_tool(
            "insert_cell", {"source": "z = 3"}, progress_callback=behind))
        await wait_until(lambda: len(behind.seen) >= 2, 30)  # kept alive while it waits its turn
        assert not queued.done()
        waiting.cancel()  # the first connection gives up its call
        with contextlib.suppress(asyncio.CancelledError):
            await waiting
        user.asked.clear()
        await asyncio.wait_for(user.asked.wait(), 30)  # the second's card comes up
        name, request = user.requests[-1]
        assert name == "cursor" and request.name == "insert_cell"
        user.sessions["cursor"].approve(request.id, "allow_once")
        result = await asyncio.wait_for(queued, 30)
        page = user.pages["cursor"]
    assert not result.is_error, text_of(result)
    assert page.cell("c2")["source"] == "y = x + 1"  # the call given up did nothing
    assert [a["source"] for op, a in page.requests if op == "insert"] == ["z = 3"]
    assert list(server.clients) == ["cursor"]


async def test_a_client_that_disconnects_mid_call_leaves_the_session_usable() -> None:
    user = User()
    user.answer = None
    async with served(user) as server:
        async def call_and_vanish() -> None:
            async with connected(server, "gemini-cli") as client:
                await client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"})

        gone = asyncio.create_task(call_and_vanish())
        await asyncio.wait_for(user.asked.wait(), 30)
        gone.cancel()  # the client process dies: its connection closes
        with contextlib.suppress(asyncio.CancelledError):
            await gone
        session = user.sessions["gemini-cli"]
        await wait_until(lambda: not session.running, 30)  # its card is closed, not left pending
        user.answer = ("allow_once", None)
        async with connected(server, "gemini-cli") as again:
            result = await again.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 5"})
        page = user.pages["gemini-cli"]
    assert not result.is_error, text_of(result)
    assert page.cell("c2")["source"] == "y = 5"
    assert len(user.requests) == 2


async def test_stopping_the_server_ends_waiting_calls_and_closes_their_cards() -> None:
    user = User()
    user.answer = None
    async with served(user) as server, connected(server) as client:
        call = await waiting_edit(client, user)
        session = user.sessions["claude-code"]
        await asyncio.to_thread(server.stop)
        # Answered before the connection closes: the client reads why, not a broken stream.
        result = await asyncio.wait_for(call, 30)
        await wait_until(lambda: not session.running, 30)  # the card waiting for the user closed
        await asyncio.to_thread(server.stop)  # twice: nothing more
        page = user.pages["claude-code"]
    assert result.is_error and "MCP server was stopped while it waited" in text_of(result)
    assert page.cell("c2")["source"] == "y = x + 1"
    assert not server.serving


async def test_list_changed_is_sent_exactly_when_the_visible_list_changes() -> None:
    user = User()
    announced: list[Any] = []

    def on_message(message: Any) -> None:
        if isinstance(message, types.ToolListChangedNotification):
            announced.append(message)

    async with served(user) as server, connected(server, on_message=on_message) as client:
        await client.list_tools()
        session = user.sessions["claude-code"]
        config, catalog = session.agent.tools, session.catalog
        # Changes that leave the client's list as it was: nothing is announced.
        catalog.register(sorted_tool)  # a tool of the catalog it is not granted
        config.set_inherit_core_tools(True)
        catalog.disable(sorted_tool.name)
        await client.list_tools()
        await asyncio.sleep(0.5)
        assert announced == []
        config.set_tool("edit_cell", False, catalog)  # the list changes: said once
        await wait_until(lambda: len(announced) == 1, 30)
        catalog.enable(sorted_tool.name)
        config.set_tool("run_cell", True, catalog)  # on already
        await client.list_tools()
        await asyncio.sleep(0.5)
        names = {tool.name for tool in (await client.list_tools()).tools}
    assert len(announced) == 1
    assert "edit_cell" not in names and "run_cell" in names


async def test_hostile_resource_names_are_refused_clearly() -> None:
    user = User()
    async with served(user) as server, connected(server) as client:
        refused: dict[str, str] = {}
        for uri in ("notebook://variable/__import__('os').system('id')",
                    "notebook://variable/frame/../../etc/passwd", "notebook://variable/",
                    "notebook://cell/-1", "notebook://cell/\u00b2", "notebook://cell/1e9",
                    "notebook://cell/99999999999999999999999", "notebook://error/x",
                    "file:///etc/passwd", "notebook://variable/" + "a" * 100_000,
                    "notebook://variable/frame%00"):
            with pytest.raises(MCPError) as caught:
                await client.read_resource(uri)
            refused[uri] = str(caught.value)
        after = await client.read_resource("notebook://variable/frame")
    for uri, message in refused.items():
        assert "Traceback" not in message and len(message) < 2_000, (uri, message)
    assert all(message for message in refused.values())
    assert after.contents


async def test_foreign_hosts_are_refused_and_a_taken_port_is_said() -> None:
    user = User()
    async with served(user) as server, httpx2.AsyncClient(timeout=30) as http:
        auth = {**ACCEPT, "Authorization": f"Bearer {server.token}"}
        port = server.url.rsplit(":", 1)[1].split("/")[0]
        statuses = {}
        for host in (f"127.0.0.1.evil.example:{port}", "127.0.0.1", f"localhost:{port}9",
                     f"evil.example:{port}", f"localhost:{port}"):
            answer = await http.post(server.url, json=INITIALIZE,
                                     headers={**auth, "Host": host})
            statuses[host] = answer.status_code
        second = NotebookMCPServer(kernel_loop=asyncio.get_running_loop(),
                                   show_client=lambda _s: None, port=int(port))
        with pytest.raises(OSError, match=f"cannot listen on 127.0.0.1:{port}"):
            second.start()
        second.stop()
        ok = await http.post(server.url, json=INITIALIZE, headers=auth)
    assert statuses == {f"127.0.0.1.evil.example:{port}": 421, "127.0.0.1": 421,
                        f"localhost:{port}9": 421, f"evil.example:{port}": 421,
                        f"localhost:{port}": 200}
    assert ok.status_code == 200


@pytest.mark.parametrize(("name", "agent"), [
    ("<img src=x onerror=alert(1)>", "<img src=x onerror=alert(1)>"),
    ("a\nb\tc", "a b c"), ("\x00\x1b[31mred", "[31mred"), ("     ", "MCP client"),
    ("x" * 1000, "x" * 80), ("../../etc/passwd", "../../etc/passwd"), ("名前 🚀", "名前 🚀")])
async def test_a_hostile_client_name_is_an_agent_like_any(name: str, agent: str) -> None:
    user = User()
    async with served(user) as server, connected(server, name) as client:
        tools = (await client.list_tools()).tools
        result = await client.call_tool("read_notebook", {})
        names = list(server.clients)
    assert tools and not result.is_error, text_of(result)
    assert names == [agent]  # printable, one line: no control character reaches the store


@pytest.mark.parametrize("progress", [True, False])
async def test_a_connection_that_drops_mid_call_closes_its_card(
        monkeypatch: pytest.MonkeyPatch, progress: bool) -> None:
    """The client process dies: its connection closes with no word (no cancellation, no
    DELETE of its session). Its card closes; its next connection is served at once."""
    monkeypatch.setattr(mcp_server, "PROGRESS_EVERY", 0.2)
    user = User()
    user.answer = None
    async with served(user) as server:
        auth = {**ACCEPT, "Authorization": f"Bearer {server.token}"}
        http = httpx2.AsyncClient(timeout=30)
        opened = await http.post(server.url, json=INITIALIZE, headers=auth)
        headers = {**auth, "mcp-session-id": opened.headers["mcp-session-id"],
                   "mcp-protocol-version": "2025-06-18"}
        await http.post(server.url, headers=headers, json={
            "jsonrpc": "2.0", "method": "notifications/initialized"})
        params: dict[str, Any] = {"name": "edit_cell",
                                  "arguments": {"cell_id": "c2", "source": "y = 2"}}
        if progress:
            params["_meta"] = {"progressToken": 7}

        async def call() -> None:
            async with http.stream("POST", server.url, headers=headers, json={
                    "jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": params}) as answer:
                async for _ in answer.aiter_bytes():
                    pass

        calling = asyncio.create_task(call())
        await asyncio.wait_for(user.asked.wait(), 30)
        await http.aclose()  # the connection closes under the waiting call
        calling.cancel()
        with contextlib.suppress(BaseException):
            await calling
        session = user.sessions["raw"]
        await wait_until(lambda: not session.running, 10)
        user.answer = ("allow_once", None)
        async with connected(server, "raw") as again:
            result = await asyncio.wait_for(
                again.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 5"}), 10)
        page = user.pages["raw"]
    assert not result.is_error, text_of(result)
    assert page.cell("c2")["source"] == "y = 5"
    assert [op for op, _ in page.requests if op == "edit"] == [("edit")]


async def test_a_queued_call_given_up_leaves_the_waiting_one_of_the_same_name() -> None:
    user = User()
    user.answer = None
    async with served(user) as server, connected(server, "cursor") as first, \
            connected(server, "cursor") as second:
        waiting = await waiting_edit(first, user)
        queued = asyncio.create_task(second.call_tool("insert_cell", {"source": "z = 3"}))
        await asyncio.sleep(0.5)
        queued.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await queued
        await asyncio.sleep(0.5)
        session = user.sessions["cursor"]
        assert session.running and not waiting.done()  # the first still waits for the user
        [(_, request)] = user.requests
        session.approve(request.id, "allow_once")
        result = await asyncio.wait_for(waiting, 30)
        after = await second.call_tool("read_notebook", {})
        page = user.pages["cursor"]
    assert "accepted" in text_of(result) and page.cell("c2")["source"] == "y = 2"
    assert [op for op, _ in page.requests if op == "insert"] == []
    assert not after.is_error and len(user.requests) == 1


async def test_stop_in_a_cell_answers_at_once_and_logs_no_error(
        capfd: pytest.CaptureFixture[str]) -> None:
    """``srv.stop()`` in a cell runs on the kernel's own thread, its loop held meanwhile:
    a client's open stream of notifications must not make it wait (nor print errors into
    the cell's output)."""
    user = User()
    user.answer = None
    async with served(user) as server, connected(server) as client:
        call = await waiting_edit(client, user)
        session = user.sessions["claude-code"]
        capfd.readouterr()
        started = time.monotonic()
        server.stop()  # on this loop's thread, as a cell calls it
        took = time.monotonic() - started
        result = await asyncio.wait_for(call, 30)
        await wait_until(lambda: not session.running, 30)
    printed = capfd.readouterr()
    assert took < 1.5, took
    assert "ERROR" not in printed.err and "Traceback" not in printed.err, printed.err
    assert result.is_error and "MCP server was stopped" in text_of(result)
