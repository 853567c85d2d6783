"""The HTTP checks of the notebook's MCP server (:mod:`.mcp_server`), before anything of
the MCP SDK's sees a request: the bearer token (401 without it, compared in constant time),
a browser ``Origin`` other than the server's own (403), a body larger than
:data:`MAX_REQUEST_BYTES` (413, refused before it is read). It also marks each POST with
an event set when its connection closes (:func:`connection_gone`: the call it carries is
not waited for), and ends the clients' open notification streams when the server stops.
"""

from __future__ import annotations

import asyncio
import contextlib
import hmac
from collections.abc import Callable, Collection
from typing import Any

from starlette.types import ASGIApp, Receive, Scope, Send

__all__ = ["MAX_REQUEST_BYTES", "Guard", "connection_gone"]

MAX_REQUEST_BYTES = 16_000_000
"""The largest request body the server reads (413 beyond it): a cell's text is far
smaller, and a client — even one holding the token — cannot make the kernel hold more."""
_GONE = "neta_nb.connection_gone"
"""The key of the ASGI scope under which :class:`Guard` keeps a POST's "its connection
closed" event."""


class Guard:
    """The token and origin checks, before anything of the SDK's sees a request."""

    def __init__(self, app: ASGIApp, token: str, origins: set[str],
                 stopping: Callable[[], asyncio.Event | None],
                 bound: Callable[[], Collection[str]] = tuple) -> None:
        self._app = app
        self._expected = f"Bearer {token}".encode()
        self._bound = bound
        """The tokens given to sessions (each one's calls go to its own chat)."""
        self._origins = origins
        self._stopping = stopping

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http":
            headers = {key.decode("latin-1").lower(): value
                       for key, value in scope.get("headers", [])}
            origin = headers.get("origin")
            if origin is not None and origin.decode("latin-1") not in self._origins:
                await _refuse(send, 403, "This server answers no web page: the request's "
                              "Origin is not the server's own.")
                return
            given = headers.get("authorization", b"")
            if not self._known(given):
                await _refuse(send, 401, "The notebook's MCP server needs its bearer token "
                              "(Authorization: Bearer <token>, as shown where it started).",
                              bearer=True)
                return
            if scope.get("method") == "POST":
                read = await _bounded_body(headers.get("content-length"), receive)
                if read is None:
                    return  # the client went away
                if isinstance(read, str):
                    await _refuse(send, 413, read)
                    return
                gone = asyncio.Event()
                scope[_GONE] = gone
                receive = _replay(read, receive, gone)
            elif scope.get("method") == "GET":  # a client's stream of notifications
                await self._until_stopped(scope, receive, send)
                return
        await self._app(scope, receive, send)

    def _known(self, given: bytes) -> bool:
        """``given`` (an Authorization header) carries the server's token or a bound one;
        each compared in constant time."""
        known = hmac.compare_digest(given, self._expected)
        for token in self._bound():
            known = hmac.compare_digest(given, f"Bearer {token}".encode()) or known
        return known

    async def _until_stopped(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Serve a request that streams until its client leaves — or until the server
        stops: then its stream ends, so that stopping waits for no one."""
        stopping = self._stopping()
        if stopping is None:
            await self._app(scope, receive, send)
            return
        started = False

        async def sending(message: Any) -> None:
            nonlocal started
            started = started or message["type"] == "http.response.start"
            await send(message)

        serving = asyncio.ensure_future(self._app(scope, receive, sending))
        stopped = asyncio.ensure_future(stopping.wait())
        try:
            await asyncio.wait({serving, stopped}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            stopped.cancel()
        if serving.done():
            serving.result()
            return
        serving.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await serving
        if started:
            with contextlib.suppress(Exception):  # the client may be gone already
                await send({"type": "http.response.body", "body": b"", "more_body": False})


async def _bounded_body(length: bytes | None, receive: Receive) -> bytes | str | None:
    """A request's body, read up to :data:`MAX_REQUEST_BYTES`; the refusal's text beyond
    it (before reading what a Content-Length announces), ``None`` if the client left."""
    limit = MAX_REQUEST_BYTES
    too_big = (f"The request's body is larger than the {limit} bytes this server reads.")
    if length is not None and (not length.isdigit() or int(length) > limit):
        return too_big
    body = bytearray()
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        body += message.get("body", b"")
        if len(body) > limit:
            return too_big
        if not message.get("more_body", False):
            return bytes(body)


def _replay(body: bytes, receive: Receive, gone: asyncio.Event) -> Receive:
    """``receive`` that gives ``body`` (read already) first, then what comes after it: a
    disconnect, which also sets ``gone``."""
    given = False

    async def replayed() -> Any:
        nonlocal given
        if not given:
            given = True
            return {"type": "http.request", "body": body, "more_body": False}
        message = await receive()
        if message["type"] == "http.disconnect":
            gone.set()
        return message
    return replayed


def connection_gone(request: object) -> asyncio.Event | None:
    """What :class:`Guard` sets when the connection of ``request`` (a POST) closes."""
    scope = getattr(request, "scope", None)
    event = scope.get(_GONE) if isinstance(scope, dict) else None
    return event if isinstance(event, asyncio.Event) else None


async def _refuse(send: Send, status: int, text: str, *, bearer: bool = False) -> None:
    body = text.encode()
    headers = [(b"content-type", b"text/plain; charset=utf-8"),
               (b"content-length", str(len(body)).encode())]
    if bearer:
        headers.append((b"www-authenticate", b'Bearer realm="neta-notebook"'))
    await send({"type": "http.response.start", "status": status, "headers": headers})
    await send({"type": "http.response.body", "body": body})
