"""The notebook's MCP server for an outside agent's session: when the session's chat is on
a notebook page, the agent is given the notebook's tools (``read_notebook``,
``edit_cell``, ``run_cell``…) as an MCP server over HTTP in ``session/new`` (and
``session/load``), and what it calls there is reviewed in that same chat.

One server per kernel loop (:func:`notebook_server`, started on first use, on 127.0.0.1,
stopped at exit) serves every such session; each session has a bearer token of its own
(:meth:`~neta_nb.runtime.mcp_server.NotebookMCPServer.bind`), so a request is known to be
its agent's. :class:`SessionNotebook` answers them: ``tools/list`` shows the notebook
tools the session's agent is granted (its tool config, as the tool panel edits it), and a
call runs as a call of the session's current turn — its card, approval, diff proposal
(Accept / Edit / Reject, Undo after) and result in the chat, as a native agent's call
(:meth:`~.turns.AcpTurns.notebook_call`).
"""

from __future__ import annotations

import asyncio
import atexit
from collections.abc import Awaitable, Callable
from typing import Any

from ...messages import ToolResultPart
from ..mcp_server import NotebookMCPServer, client_catalog
from ..session.deps import TurnDeps
from .servers import NOTEBOOK_SERVER, McpServerSpec

try:
    import mcp_types as types
    from mcp.server.session import ServerSession
    from mcp.shared.exceptions import MCPError
except ImportError as error:  # pragma: no cover - mcp_server raised it first
    raise ImportError("The notebook's MCP server needs the official MCP SDK: "
                      "pip install 'neta-nb[mcp]'") from error

__all__ = ["SessionNotebook", "notebook_server"]

_INVALID_PARAMS = -32602
_servers: dict[asyncio.AbstractEventLoop, NotebookMCPServer] = {}
"""The server of each kernel loop (one in a kernel; tests run several loops)."""

Call = Callable[[str, dict[str, Any]], Awaitable[ToolResultPart]]


async def notebook_server() -> NotebookMCPServer:
    """The notebook's MCP server of the running loop (the kernel's), started if it is not
    serving. It serves bound sessions only: its own token is never shown."""
    loop = asyncio.get_running_loop()
    for other in [known for known in _servers if known.is_closed()]:
        _servers.pop(other).stop()
    server = _servers.get(loop)
    if server is not None and server.serving:
        return server
    server = NotebookMCPServer(kernel_loop=loop, show_client=_nobody)
    await asyncio.to_thread(server.start)
    _servers[loop] = server
    atexit.register(server.stop)
    return server


def _nobody(_session: object) -> None:
    """A client with the server's own token: there is none (the token is never shown)."""


class SessionNotebook:
    """An outside agent's session as the notebook server's client (see the module):
    ``call`` runs a call in the session's turn."""

    def __init__(self, name: str, deps: TurnDeps, call: Call) -> None:
        self.name = name
        self._deps = deps
        self._call = call
        self.connections: dict[str, ServerSession] = {}
        self._served = frozenset(client_catalog().names)
        self._token: str | None = None
        self._server: NotebookMCPServer | None = None
        self._visible: tuple[str, ...] | None = None
        """The tools ``tools/list`` showed as of the last announcement."""
        place = deps.workspace
        # A change of the agent's grants (the tool panel) or of the catalog is announced
        # to the agent (notifications/tools/list_changed) when what it is shown changed.
        place.agent.tools.subscribe(self._changed)
        place.catalog.subscribe(self._changed)

    async def spec(self) -> McpServerSpec:
        """The server's entry for ``session/new``: its address and this session's token
        (made once; the server started if it is not serving)."""
        server = await notebook_server()
        if server is not self._server or self._token is None:
            self.release()
            self._server, self._token = server, server.bind(self)
        return McpServerSpec(NOTEBOOK_SERVER, url=server.url,
                             headers={"Authorization": f"Bearer {self._token}"})

    def _changed(self, _: object) -> None:
        if self._server is not None and self._token is not None:
            self._server.grants_changed(self)

    def list_changed(self) -> bool:
        visible = tuple(self.granted_names())
        if visible == self._visible:
            return False
        self._visible = visible
        return True

    def release(self) -> None:
        """Withdraw this session's token (the agent's requests get 401 from now on)."""
        if self._server is not None and self._token is not None:
            self._server.unbind(self._token)
        self._server = self._token = None

    def granted_names(self) -> list[str]:
        """The notebook tools the session's agent is granted, as its chat resolves them."""
        return [name for name in self._deps.toolbox.resolution().names if name in self._served]

    # --- what the server asks (on the kernel's loop) ---------------------------------
    def granted(self) -> list[types.Tool]:
        resolution = self._deps.toolbox.resolution()
        self._visible = tuple(item.name for item in resolution.tools if item.name in self._served)
        return [types.Tool(name=item.name, title=item.label or None,
                           description=item.description, input_schema=item.parameters)
                for item in resolution.tools if item.name in self._served]

    def resources(self) -> list[types.Resource]:
        return []

    def read_resource(self, uri: str) -> str:
        raise MCPError(_INVALID_PARAMS, f"{uri!r}: this server offers no resources to "
                       f"{self.name}; read the notebook with read_notebook")

    async def call(self, name: str, args: dict[str, Any]) -> ToolResultPart:
        if name not in self._served:
            return ToolResultPart(tool_call_id="", name=name, is_error=True,
                                  content=f"'{name}' is not available: the notebook serves "
                                          f"no such tool. The tools you may call: "
                                          f"{', '.join(self.granted_names()) or 'none'}.")
        return await self._call(name, args)
