"""One MCP server's connection: started once, owned by one task, restarted after a crash.

The official SDK's ``mcp.Client`` is an anyio context manager: it must be entered and left
by the same task, and it lives as long as that block. So every connection gets an *owner
task* that enters the client, publishes it, and waits until it is closed; tool calls from
the session's tasks use the published client (anyio lets any task on the loop send
requests), and cancelling such a call makes the SDK send ``notifications/cancelled``.

A server that dies (its process exits, its HTTP endpoint goes away) fails the calls in
flight with :class:`MCPServerError` naming the server and the reason (for stdio servers the
last lines of its stderr); the next call starts it again. A server that fails to start again
is retried only after a backoff that doubles per failed start (1 s … 60 s), so a model
calling a broken server in a loop does not fork a process per call.

The handshake-era protocol (``mode="legacy"``) is used on purpose: it is what every server
in the registries speaks today, and on it ``tools/list_changed`` and progress arrive as plain
notifications (the 2026 protocol needs a ``subscriptions/listen`` stream for the former).

Stdio servers run in their own process session (the SDK does that): the connection records
each server's process, and :mod:`neta_nb.tools.mcp.mcp_processes` ends what is still alive when
the kernel exits. What it wraps around the SDK's transport is in
:mod:`neta_nb.tools.mcp.mcp_transport`.
"""

from __future__ import annotations

import asyncio
import contextlib
import enum
import logging
import time
from collections.abc import Awaitable, Callable, Coroutine, Mapping
from dataclasses import dataclass, field
from typing import Any, TypeVar

from ...process_exit import end_at_exit, end_with_this_process, release
from .mcp_processes import (
    LIVE_PIDS,
    child_pids,
    end_live_servers,
    exit_reason,
    new_server_pid,
)
from .mcp_stderr import StderrTail
from .mcp_transport import ProgressRelay, watched

try:
    import httpx2
    import mcp_types
    from mcp import Client, MCPError, StdioServerParameters
    from mcp.client.stdio import stdio_client
    from mcp.client.streamable_http import streamable_http_client
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("MCP servers need the official MCP SDK: "
                      "pip install 'neta-nb[mcp]'") from error

__all__ = ["MCPConnection", "MCPServerError", "MCPServerParameters", "ServerStatus"]

log = logging.getLogger(__name__)

_FIRST_BACKOFF = 1.0
_MAX_BACKOFF = 60.0
_STDERR_TAIL_CHARS = 600
_T = TypeVar("_T")
_REMOVED = "it was removed from the catalog"


class ServerStatus(enum.StrEnum):
    """What the panel shows next to a server's name."""

    NOT_STARTED = "not_started"
    """Restored from a session: it starts on the first call."""
    CONNECTING = "connecting"
    CONNECTED = "connected"
    RECONNECTING = "reconnecting"
    FAILED = "failed"
    CLOSED = "closed"


class MCPServerError(RuntimeError):
    """A call could not reach its MCP server. ``str()`` names the server and why, for the
    model and the card."""

    def __init__(self, server: str, reason: str) -> None:
        self.server = server
        self.reason = reason
        super().__init__(f"MCP server '{server}' {reason}")


@dataclass(frozen=True)
class MCPServerParameters:
    """How to reach a server: a command (stdio) or a URL (streamable HTTP)."""

    name: str
    command: str | None = None
    args: tuple[str, ...] = ()
    env: Mapping[str, str] | None = field(default=None, repr=False)
    cwd: str | None = None
    url: str | None = None
    headers: Mapping[str, str] | None = field(default=None, repr=False)
    timeout: float = 30.0
    """Seconds to connect and list tools, and the read timeout of every request."""

    def __post_init__(self) -> None:
        if (self.command is None) == (self.url is None):
            raise ValueError(f"MCP server {self.name!r}: give exactly one of command= "
                             "(a local server over stdio) or url= (streamable HTTP)")
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            raise ValueError(f"MCP server {self.name!r}: url must start with http:// or "
                             f"https://, got {self.url!r}")
        if isinstance(self.args, str):
            raise TypeError(f"MCP server {self.name!r}: args must be a sequence of strings, "
                            "not one string")
        if self.timeout <= 0:
            raise ValueError(f"MCP server {self.name!r}: timeout must be positive seconds")

    @property
    def transport(self) -> str:
        return "stdio" if self.command is not None else "http"


ToolsChanged = Callable[[], Awaitable[None]]
StatusChanged = Callable[[ServerStatus, str | None], None]


class MCPConnection:
    """A live connection to one server (see the module docstring)."""

    def __init__(self, parameters: MCPServerParameters, *, on_tools_changed: ToolsChanged,
                 on_status: StatusChanged, on_restarted: ToolsChanged | None = None) -> None:
        self.parameters = parameters
        self._on_tools_changed = on_tools_changed
        self._on_restarted = on_restarted
        self._on_status = on_status
        self._client: Client | None = None
        self._owner: asyncio.Task[None] | None = None
        self._stop: asyncio.Event | None = None
        self._lost: asyncio.Event | None = None
        self._start_lock = asyncio.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._stderr: StderrTail | None = None
        self._pid: int | None = None
        self._failures = 0
        self._next_attempt = 0.0
        self._closed = False
        self.status = ServerStatus.CONNECTING
        self.reason: str | None = None
        self.starts = 0
        """How many times the server was started (1 after the first connect)."""
        self._background: set[asyncio.Task[None]] = set()
        self._change_lock = asyncio.Lock()
        self._change_pending = False
        self._http_refusal: str | None = None
        self.restored = False
        """Its tools came from a stored listing: list them again once it has started."""

    # --- lifetime ---------------------------------------------------------------------
    async def open(self) -> None:
        """Start the server and connect; raises :class:`MCPServerError` if it fails."""
        await self._ensure_started()

    async def close(self) -> None:
        """Stop the server (its process, for stdio) and wait until it is gone."""
        self._closed = True
        for task in list(self._background):
            task.cancel()
        await self._stop_owner()
        self._set_status(ServerStatus.CLOSED, None)

    @property
    def pid(self) -> int | None:
        """The stdio server's process id while it runs."""
        return self._pid

    async def _ensure_started(self) -> Client:
        if self._closed:
            raise MCPServerError(self.parameters.name, f"cannot be called: {_REMOVED}")
        running = asyncio.get_running_loop()
        if self._loop is not None and self._loop is not running and self._client is not None:
            raise MCPServerError(self.parameters.name, "belongs to another event loop; "
                                 "call it from the loop that added it")
        async with self._start_lock:
            if self._client is not None and self._lost is not None and not self._lost.is_set():
                return self._client
            restarting = self.starts > 0
            if self._failures and time.monotonic() < self._next_attempt:
                wait = self._next_attempt - time.monotonic()
                raise MCPServerError(self.parameters.name,
                                     f"is not running ({self.reason}); the next attempt to "
                                     f"start it is in {wait:.0f} s")
            await self._stop_owner()
            self._set_status(ServerStatus.RECONNECTING if restarting
                             else ServerStatus.CONNECTING, self.reason)
            try:
                client = await self._start()
            except MCPServerError as exc:
                self._failures += 1
                delay = min(_MAX_BACKOFF, _FIRST_BACKOFF * 2 ** (self._failures - 1))
                self._next_attempt = time.monotonic() + delay
                self._set_status(ServerStatus.FAILED, exc.reason)
                raise
            self._failures = 0
            self.starts += 1
            self._set_status(ServerStatus.CONNECTED, None)
            if (self.starts > 1 or self.restored) and self._on_restarted is not None:
                # A restarted server (or one restored from a session) may list other
                # tools than before: list them again, after this call has its client.
                self._in_background(self._relist(self._on_restarted))
            return client

    async def _start(self) -> Client:
        self._loop = asyncio.get_running_loop()
        self._stop, self._lost = asyncio.Event(), asyncio.Event()
        ready: asyncio.Future[Client] = self._loop.create_future()
        self._owner = asyncio.create_task(self._own(ready, self._stop, self._lost),
                                          name=f"mcp-server-{self.parameters.name}")
        try:
            async with asyncio.timeout(self.parameters.timeout):
                client = await asyncio.shield(ready)
        except TimeoutError:
            # Still in the handshake: nothing to wind down politely, and waiting for the
            # owner to see the stop would add its full grace period to the timeout.
            if self._owner is not None:
                self._owner.cancel()
            last_words = self._stderr_tail()  # stopping the owner closes the stderr
            await self._stop_owner()
            raise MCPServerError(self.parameters.name,
                                 f"did not answer within {self.parameters.timeout:g} s"
                                 + last_words) from None
        except MCPServerError:
            await self._stop_owner()
            raise
        self._client = client
        return client

    async def _own(self, ready: asyncio.Future[Client], stop: asyncio.Event,
                   lost: asyncio.Event) -> None:
        """The owner task: enters the client, publishes it, holds it until stopped."""
        try:
            before = child_pids()
            def on_end() -> None:
                # The server's stream ended by itself (its process exited, the HTTP
                # stream closed): fail the calls in flight now, restart on the next call.
                if not stop.is_set():
                    self._mark_lost(self._exit_reason())

            async with self._client_for(self.parameters, on_end) as client:
                self._pid = new_server_pid(before) if self.parameters.command else None
                if self._pid is not None:
                    LIVE_PIDS.add(self._pid)
                    end_at_exit(end_live_servers)  # SIGTERM taken, if on the main thread
                    end_with_this_process(self._pid)  # and a SIGKILLed kernel
                if not ready.done():
                    ready.set_result(client)
                await stop.wait()
        except asyncio.CancelledError:
            if not ready.done():
                ready.cancel()
            raise
        except BaseException as exc:  # the SDK raises exception groups from its task groups
            reason = _describe(exc) + self._stderr_tail()
            if self._http_refusal is not None:
                reason += f" ({self._http_refusal})"
            if not ready.done():
                ready.set_exception(MCPServerError(self.parameters.name,
                                                   f"failed to start: {reason}"))
            else:
                log.info("MCP server %s stopped: %s", self.parameters.name, reason)
                self.reason = reason
            if not isinstance(exc, Exception):
                raise
        finally:
            lost.set()
            if self._pid is not None:
                LIVE_PIDS.discard(self._pid)
                release(self._pid)
                self._pid = None

    def _client_for(self, parameters: MCPServerParameters, on_end: Callable[[], None]
                    ) -> Client:
        if parameters.command is not None:
            if self._stderr is not None:
                self._stderr.close()
            self._stderr = StderrTail()
            transport: Any = stdio_client(
                StdioServerParameters(command=parameters.command, args=list(parameters.args),
                                      env=dict(parameters.env) if parameters.env else None,
                                      cwd=parameters.cwd),
                errlog=self._stderr.errlog)
        else:
            assert parameters.url is not None
            self._http_refusal = None

            async def note_refusal(response: httpx2.Response) -> None:
                # The SDK turns an HTTP error into "Server returned an error response";
                # the status (401: check the headers) is what the user needs to know.
                if response.status_code >= 400:
                    self._http_refusal = (f"HTTP {response.status_code} "
                                          f"{response.reason_phrase}".strip())

            http = httpx2.AsyncClient(headers=dict(parameters.headers or {}),
                                      timeout=parameters.timeout,
                                      event_hooks={"response": [note_refusal]})
            transport = streamable_http_client(parameters.url, http_client=http)
        return Client(watched(transport, on_end), mode="legacy", cache=None,
                      read_timeout_seconds=None, message_handler=self._on_message,
                      raise_exceptions=False)

    async def _stop_owner(self) -> None:
        owner, self._owner, self._client = self._owner, None, None
        if owner is None:
            return
        if self._stop is not None:
            self._stop.set()
        try:
            # The SDK's own shutdown closes stdin, waits, then kills the process tree.
            async with asyncio.timeout(10):
                await asyncio.shield(owner)
        except TimeoutError:
            owner.cancel()
            with contextlib.suppress(BaseException):
                await owner
        except BaseException:
            pass
        if self._stderr is not None:
            self._stderr.close()
            self._stderr = None

    # --- requests ---------------------------------------------------------------------
    async def list_tools(self) -> list[mcp_types.Tool]:
        """Every tool the server lists (all pages), within the server's timeout."""
        client = await self._ensure_started()
        tools: list[mcp_types.Tool] = []
        cursor: str | None = None
        timeout = self.parameters.timeout
        try:
            async with asyncio.timeout(timeout):
                for _ in range(1000):  # a server that pages forever must not hang the kernel
                    page = await self._request(client, client.list_tools(cursor=cursor))
                    tools.extend(page.tools)
                    cursor = page.next_cursor
                    if not cursor:
                        break
        except TimeoutError:
            raise MCPServerError(self.parameters.name,
                                 f"did not list its tools within {timeout:g} s") from None
        return tools

    async def call_tool(self, name: str, arguments: dict[str, Any],
                        on_progress: Callable[[float, float | None, str | None], None],
                        ) -> mcp_types.CallToolResult:
        """Call ``name``; raises :class:`MCPServerError` if the server is unreachable or
        dies during the call."""
        client = await self._ensure_started()

        return await self._request(client, client.call_tool(
            name, arguments, progress_callback=ProgressRelay(on_progress)))

    async def _request(self, client: Client, request: Awaitable[_T]) -> _T:
        """Await ``request``, failing it as soon as the connection is lost."""
        lost = self._lost
        assert lost is not None
        call = asyncio.ensure_future(request)
        watch = asyncio.ensure_future(lost.wait())
        try:
            await asyncio.wait([call, watch], return_when=asyncio.FIRST_COMPLETED)
        finally:
            watch.cancel()
            if not call.done():
                call.cancel()  # the SDK sends notifications/cancelled for it
                with contextlib.suppress(BaseException):
                    await call
        if self._closed and (call.cancelled() or call.exception() is not None):
            raise MCPServerError(self.parameters.name,
                                 f"stopped during the call: {_REMOVED}")
        if call.cancelled():
            raise MCPServerError(self.parameters.name,
                                 f"stopped during the call: {self.reason or 'connection lost'}")
        error = call.exception()
        if error is not None:
            if lost.is_set():
                raise MCPServerError(self.parameters.name,
                                     f"stopped during the call: {self.reason or _describe(error)}")
            if isinstance(error, MCPError) and error.code == mcp_types.CONNECTION_CLOSED:
                reason = self._exit_reason()
                self._mark_lost(reason)
                raise MCPServerError(self.parameters.name,
                                     f"stopped during the call: {reason}") from None
            if isinstance(error, (ConnectionError, OSError, httpx2.HTTPError)):
                self._mark_lost(_describe(error))
                raise MCPServerError(self.parameters.name,
                                     f"could not be reached: {_describe(error)}") from error
            raise error
        return call.result()

    def _mark_lost(self, reason: str) -> None:
        self.reason = reason
        if self._lost is not None:
            self._lost.set()
        self._set_status(ServerStatus.FAILED, reason)

    async def _on_message(self, message: Any) -> None:
        if isinstance(message, mcp_types.ToolListChangedNotification):
            # Relisting from inside the reader would wait on the reader itself. One
            # listing waits at most: every notification before it starts is answered by
            # it (a server sending thousands must not cost a listing and a redraw each).
            if not self._change_pending:
                self._change_pending = True
                self._in_background(self._relist_changed())
        elif isinstance(message, Exception):
            log.info("MCP server %s sent something unreadable: %s", self.parameters.name,
                     message)

    def _in_background(self, work: Coroutine[Any, Any, None]) -> None:
        # Held until done: the loop keeps only weak references to tasks.
        task = asyncio.get_running_loop().create_task(work)
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _relist_changed(self) -> None:
        async with self._change_lock:
            self._change_pending = False
            await self._relist(self._on_tools_changed)

    async def _relist(self, callback: ToolsChanged) -> None:
        try:
            await callback()
        except Exception:
            log.exception("refreshing the tools of MCP server %s failed", self.parameters.name)

    # --- status -----------------------------------------------------------------------
    def _set_status(self, status: ServerStatus, reason: str | None) -> None:
        if status is not ServerStatus.CONNECTED:
            self.reason = reason
        else:
            self.reason = None
        self.status = status
        self._on_status(status, self.reason)

    def watch_for_exit(self) -> bool:
        """True if the owner task ended by itself (the server went away); then the
        status says so. Called by readers of the status, cheap."""
        if (self._lost is not None and self._lost.is_set() and not self._closed
                and self.status is ServerStatus.CONNECTED):
            self._set_status(ServerStatus.FAILED, self.reason or "connection lost")
            return True
        return False

    def _exit_reason(self) -> str:
        """Why the connection closed, as far as this side can tell."""
        return exit_reason(self._pid) + self._stderr_tail()

    def _stderr_tail(self) -> str:
        """The last lines of a stdio server's stderr, said as a clause."""
        text = self._stderr.ending(_STDERR_TAIL_CHARS) if self._stderr is not None else ""
        return f"; its stderr ends: {text}" if text else ""


def _describe(error: BaseException) -> str:
    """The innermost useful message of an SDK error (they arrive in exception groups)."""
    while isinstance(error, BaseExceptionGroup) and error.exceptions:
        error = error.exceptions[0]
    text = str(error).strip()
    return f"{type(error).__name__}: {text}" if text else type(error).__name__
