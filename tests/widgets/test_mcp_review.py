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

from ..support.notebook_mcp import Kernel, connected
from .conftest import SentMessages


def test_it_refuses_to_start_outside_a_notebook_kernel() -> None:
    with pytest.raises(RuntimeError, match=PAGE_NEEDED):
        neta_nb.serve_notebook_mcp()


def test_the_magic_says_how_it_is_used() -> None:
    with pytest.raises(ValueError, match="usage: %neta_mcp serve"):
        mcp_review.neta_mcp_magic("start")
    with pytest.raises(ValueError, match="--port takes a number"):
        mcp_review.neta_mcp_magic("serve --port eighty")


async def test_each_client_gets_its_review_view_and_the_page_tools_need_the_page(
        monkeypatch: pytest.MonkeyPatch, sent: SentMessages) -> None:
    monkeypatch.setattr(mcp_review, "get_ipython", lambda: Kernel())
    # No frontend here: the client's review view never opens on a page, so its first
    # request need not give it the usual moment.
    monkeypatch.setattr(mcp_server, "PAGE_WAIT", 0.1)
    shown: list[Any] = []
    monkeypatch.setattr(mcp_review, "display", shown.append)
    at_exit: list[Any] = []
    monkeypatch.setattr(atexit, "register", at_exit.append)
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
