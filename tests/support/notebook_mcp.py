"""The notebook's MCP server as its tests drive it: the official ``mcp`` client connected
over real HTTP (:func:`connected`), and — where no notebook page answers — the server with
a stand-in page and a stand-in user who answers each client's approval requests
(:class:`User`, :func:`served`); :class:`Kernel` is the IPython kernel
``serve_notebook_mcp`` asks for.

The widget layer would show each client's review view; here ``User.show`` gives the
client's session a stand-in page (tests/support/notebook_page.py) and answers for the
user. The real page — JupyterLab with the extension — is driven by
tests/browser/test_mcp_server.py.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any, Protocol

import httpx2
import mcp_types as types
from mcp.client.session import ClientSession
from mcp.client.streamable_http import streamable_http_client

from neta_nb.events import ApprovalRequestEvent, Event
from neta_nb.runtime.mcp_server import NotebookMCPServer
from neta_nb.runtime.session import AgentSession
from neta_nb.store.session_store import SessionStore

from .notebook_page import FakeNotebookPage

CELLS = [{"id": "c1", "source": "x = 1\nprint(x)"}, {"id": "c2", "source": "y = x + 1"}]


class Reachable(Protocol):
    """Where a client connects: the server's address and bearer token."""

    @property
    def url(self) -> str: ...

    @property
    def token(self) -> str: ...


@contextlib.asynccontextmanager
async def connected(server: Reachable, name: str = "claude-code", *,
                    on_message: Callable[[Any], None] | None = None,
                    http_timeout: float = 60) -> AsyncIterator[ClientSession]:
    """An initialized client session of the server, named ``name`` (its ``clientInfo``);
    ``on_message`` sees each notification the server sends."""
    async def handler(message: Any) -> None:
        if on_message is not None:
            on_message(message)

    async with httpx2.AsyncClient(headers={"Authorization": f"Bearer {server.token}"},
                                  timeout=http_timeout) as http, \
            streamable_http_client(server.url, http_client=http) as (read, write, *_), \
            ClientSession(read, write, message_handler=handler,
                          client_info=types.Implementation(name=name, version="1")) as client:
        await client.initialize()
        yield client


def text_of(result: types.CallToolResult) -> str:
    """The text of a call's result."""
    return "\n".join(item.text for item in result.content if isinstance(item, types.TextContent))


class OnProgress:
    """Records the progress notifications of one call (the SDK's callback protocol names
    its parameters)."""

    def __init__(self, seen: list[str | None] | None = None) -> None:
        self.seen: list[str | None] = [] if seen is None else seen

    async def __call__(self, progress: float, total: float | None,
                       message: str | None) -> None:
        self.seen.append(message)


class User:
    """Answers each client's approval requests as a test says (``answer``: the decision,
    and the text accepted instead of the proposal); keeps every request it saw."""

    def __init__(self) -> None:
        self.answer: tuple[str, str | None] | None = ("allow_once", None)
        self.requests: list[tuple[str, ApprovalRequestEvent]] = []
        self.asked = asyncio.Event()
        self.sessions: dict[str, AgentSession] = {}
        self.pages: dict[str, FakeNotebookPage] = {}

    def show(self, page_for: Callable[[str], FakeNotebookPage]) -> Callable[[AgentSession],
                                                                          None]:
        def show(session: AgentSession) -> None:
            name = session.agent.name
            self.sessions[name] = session
            session.notebook_page = self.pages[name] = page_for(name)
            session.attach_approver()

            def on_event(event: Event) -> None:
                if isinstance(event, ApprovalRequestEvent):
                    self.requests.append((name, event))
                    self.asked.set()
                    if self.answer is not None:
                        decision, text = self.answer
                        session.approve(event.id, decision, text=text)  # type: ignore[arg-type]

            session.subscribe(on_event)
        return show


@contextlib.asynccontextmanager
async def served(user: User, *, page_for: Callable[[str], FakeNotebookPage] | None = None,
                 store: SessionStore | None = None) -> AsyncIterator[NotebookMCPServer]:
    """A server on this loop (as the kernel's), each client shown to ``user`` with the page
    ``page_for`` gives it (one page of :data:`CELLS` for all by default)."""
    shared = FakeNotebookPage(CELLS)
    server = NotebookMCPServer(kernel_loop=asyncio.get_running_loop(),
                               show_client=user.show(page_for or (lambda _name: shared)),
                               store=store, namespace={"frame": [1, 2, 3]})
    await asyncio.to_thread(server.start)
    try:
        yield server
    finally:
        await asyncio.to_thread(server.stop)


class Kernel:
    """What ``serve_notebook_mcp`` asks of IPython (``get_ipython()``): a shell with a
    kernel, running a cell a notebook page sent (JupyterLab's ``cellId`` in the request's
    metadata)."""

    class kernel:
        @staticmethod
        def get_parent() -> dict[str, Any]:
            return {"metadata": {"cellId": "serve"}}


async def waiting_edit(client: ClientSession, user: User
                       ) -> asyncio.Task[types.CallToolResult]:
    """The client's ``edit_cell`` of ``c2``, once its card waits for the user (who is set
    to answer nothing by the test)."""
    call = asyncio.create_task(
        client.call_tool("edit_cell", {"cell_id": "c2", "source": "y = 2"}))
    await asyncio.wait_for(user.asked.wait(), 30)
    return call
