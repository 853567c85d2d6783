"""``serve_notebook_mcp`` and its review view, with no frontend: the widgets' messages go
nowhere (tests/widgets/conftest.py) and no notebook page answers (a page ran the cell,
but no view of the server opened on it). The real page is driven by
tests/browser/test_mcp_server.py; nbclient by tests/widgets/test_mcp_review_hostile.py."""

from __future__ import annotations

import asyncio
import atexit
from typing import Any

import httpx2
import mcp_types as types
import pytest

import neta_nb
from neta_nb.runtime import mcp_server
from neta_nb.tools.notebook import PAGE_NEEDED
from neta_nb.widgets import ChatView, mcp_review
from neta_nb.widgets.outside_reviews import outside_reviews

from ..support.notebook_mcp import CELLS, Kernel, connected, text_of
from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import make_session
from ..support.timing import wait_until
from .conftest import SentMessages

Served = tuple[list[Any], list[Any]]
"""What a served notebook displayed, and what it registered to run at the kernel's exit."""


@pytest.fixture
def served(monkeypatch: pytest.MonkeyPatch) -> Served:
    """``serve_notebook_mcp`` as a notebook kernel runs it, what it displays and registers
    at exit kept."""
    monkeypatch.setattr(mcp_review, "get_ipython", lambda: Kernel())
    # No frontend here: the client's review view never opens on a page, so its first
    # request need not give it the usual moment.
    monkeypatch.setattr(mcp_server, "PAGE_WAIT", 0.1)
    shown: list[Any] = []
    monkeypatch.setattr(mcp_review, "display", shown.append)
    at_exit: list[Any] = []
    monkeypatch.setattr(atexit, "register", at_exit.append)
    return shown, at_exit


def test_it_refuses_to_start_outside_a_notebook_kernel() -> None:
    with pytest.raises(RuntimeError, match=PAGE_NEEDED):
        neta_nb.serve_notebook_mcp()


def test_the_magic_says_how_it_is_used() -> None:
    with pytest.raises(ValueError, match="usage: %neta_mcp serve"):
        mcp_review.neta_mcp_magic("start")
    with pytest.raises(ValueError, match="--port takes a number"):
        mcp_review.neta_mcp_magic("serve --port eighty")


async def test_each_client_gets_its_review_view_and_the_page_tools_need_the_page(
        served: Served, sent: SentMessages) -> None:
    shown, at_exit = served
    server = neta_nb.serve_notebook_mcp(token="t" * 24)
    try:
        assert at_exit == [server.stop]  # it stops with the kernel
        assert server.token == "t" * 24 and server.url.endswith("/mcp")
        setup = shown[0].children[0].value
        assert "claude mcp add --transport http" in setup and "t" * 24 in setup
        assert "[mcp_servers.neta-notebook]" in setup and "&quot;httpUrl&quot;" in setup
        assert 'bearer_token_env_var = &quot;NETA_NOTEBOOK_MCP_TOKEN&quot;' in setup
        review = shown[0].children[1]
        async with connected(server, "codex") as client:
            await client.list_tools()
            view = review.views["codex"]
            assert isinstance(view, ChatView) and view.session is server.clients["codex"]
            # No view of it opened on the page (closed since): the page tools refuse,
            # saying why.
            result = await client.call_tool("edit_cell", {"cell_id": "c", "source": "x"})
        assert result.is_error
        assert any(PAGE_NEEDED in item.text for item in result.content
                   if isinstance(item, types.TextContent))
    finally:
        await asyncio.to_thread(server.stop)
    assert not server.serving
    server.stop()  # twice: nothing more
    with pytest.raises(httpx2.ConnectError):
        await httpx2.AsyncClient().post(server.url)


async def test_a_clients_request_shows_in_the_users_chat_and_is_decided_there(
        served: Served, sent: SentMessages) -> None:
    shown, _ = served
    mine, _, _ = make_session([])
    chat = ChatView(mine)  # the chat the user works in
    server = neta_nb.serve_notebook_mcp(token="t" * 24)
    review = shown[0].children[1]
    try:
        async with connected(server, "codex") as codex, connected(server, "gemini") as gemini:
            await gemini.list_tools()
            await codex.list_tools()
            # No page opened the client's view here: a stand-in page answers its tools.
            server.clients["codex"].notebook_page = FakeNotebookPage(CELLS)
            asked = asyncio.ensure_future(codex.call_tool("run_cell", {"cell_id": "c1"}))
            await wait_until(lambda: bool(chat.approvals))
            [item] = chat.approvals
            assert (item["client"], item["name"], item["args"]) == (
                "codex", "run_cell", {"cell_id": "c1"})
            own = review.views["codex"].approvals
            assert own == [{k: v for k, v in item.items() if k != "client"}]
            assert review.views["gemini"].approvals == []  # its own view: its own requests

            def decide(decision: str, **extra: Any) -> dict[str, Any]:
                command = {"type": "approve", "id": item["id"], "decision": decision,
                           "client": "codex", **extra}
                return dict(chat._reply("command", "r", {"command": command}))

            assert "unknown decision" in decide("maybe")["error"]
            assert "'text' must be a string" in decide("reject", text=3)["error"]
            assert decide("reject")["ok"] is True
            result = await asyncio.wait_for(asked, 10)
            assert result.is_error and "did not allow 'run_cell'" in text_of(result)
            await wait_until(lambda: not chat.approvals)
            assert review.views["codex"].approvals == []
            assert "no longer waiting" in decide("allow_once")["error"]  # decided once

            # A proposed edit: its diff card, accepted here with the user's own text.
            asked = asyncio.ensure_future(codex.call_tool(
                "edit_cell", {"cell_id": "c2", "source": "y = x + 2"}))
            await wait_until(lambda: bool(chat.approvals))
            [item] = chat.approvals
            assert item["proposal"]["after"] == "y = x + 2" and item["client"] == "codex"
            assert decide("allow_once", text="y = x + 3")["ok"] is True
            result = await asyncio.wait_for(asked, 10)
            assert "changed the proposal before accepting" in text_of(result)
            assert text_of(result).endswith("y = x + 3")
            page = server.clients["codex"].notebook_page
            assert isinstance(page, FakeNotebookPage) and page.cell("c2")["source"] == "y = x + 3"
            await wait_until(lambda: not chat.approvals)
            assert mine.messages == []  # nothing of it reached the user's own session

            # The client's review view closed while a run waits: no chat keeps its card.
            asked = asyncio.ensure_future(codex.call_tool("run_cell", {"cell_id": "c1"}))
            await wait_until(lambda: bool(chat.approvals))
            review.views["codex"].close()
            assert chat.approvals == []
            result = await asyncio.wait_for(asked, 10)
            assert result.is_error  # the session's policy answered: no view asks for it
    finally:
        await asyncio.to_thread(server.stop)
        chat.close()


def test_a_closed_chat_stops_listening_for_outside_requests(sent: SentMessages) -> None:
    listeners = outside_reviews._listeners
    before = len(listeners)
    chat = ChatView(make_session([])[0])
    assert len(listeners) == before + 1
    chat.close()
    assert len(listeners) == before
    outside_reviews.publish("s_other", "codex", [{"id": "x", "name": "run_cell", "args": {}}],
                            lambda *_: True)
    try:
        assert chat.approvals == []
        shown = ChatView(make_session([])[0])  # a chat made while one waits shows it
        assert [a["client"] for a in shown.approvals] == ["codex"]
        shown.close()
    finally:
        outside_reviews.publish("s_other", "codex", [], lambda *_: True)
