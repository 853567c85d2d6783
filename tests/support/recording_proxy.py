"""A pass-through HTTP proxy on 127.0.0.1 that records what a client sent to a real local
server (the llama-cpp-python test reads every request body the session sent).

Requests are forwarded as they came, with ``Connection: close`` so that the server ends
each response and the proxy can relay it byte for byte until the server closes: no
parsing of the response, so streamed (SSE) answers arrive exactly as the server wrote
them. Only for loopback test servers.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
from dataclasses import dataclass
from typing import Any

__all__ = ["ProxiedRequest", "RecordingProxy"]


@dataclass
class ProxiedRequest:
    method: str
    path: str
    body: bytes

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


class RecordingProxy:
    """``async with RecordingProxy(port) as proxy``: ``proxy.base_url`` forwards to
    ``127.0.0.1:port``; ``proxy.requests`` lists what went through."""

    def __init__(self, upstream_port: int, *,
                 refuse: dict[str, tuple[int, str]] | None = None) -> None:
        self.upstream_port = upstream_port
        self.refuse = dict(refuse or {})
        """Paths answered here with a status and its words, never forwarded (a server
        without that endpoint, or one that refuses what the request asks)."""
        self.requests: list[ProxiedRequest] = []
        self._server: asyncio.Server | None = None
        self._port = 0
        self._relays: set[asyncio.Task[Any]] = set()

    async def __aenter__(self) -> RecordingProxy:
        self._server = await asyncio.start_server(self._relay, "127.0.0.1", 0)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def __aexit__(self, *exc: object) -> None:
        if self._server is not None:
            self._server.close()
            # Connections still open (a client's keep-alive, a relay mid-stream) are closed
            # here, on this loop: left to the garbage collector they warn in a later test.
            await asyncio.sleep(0)  # a connection accepted just now registers its relay
            while self._relays:
                relays = list(self._relays)
                for relay in relays:
                    relay.cancel()
                await asyncio.gather(*relays, return_exceptions=True)
                self._relays.difference_update(relays)
            await self._server.wait_closed()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    def to(self, path: str) -> list[ProxiedRequest]:
        """The requests to ``path``, in order."""
        return [request for request in self.requests if request.path == path]

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        if task is not None:
            self._relays.add(task)
        upstream_writer: asyncio.StreamWriter | None = None
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            request_line, *lines = head.decode("latin-1").split("\r\n")
            method, path, version = request_line.split(" ", 2)
            headers = [line for line in lines if line]
            length = next((int(line.split(":", 1)[1]) for line in headers
                           if line.lower().startswith("content-length:")), 0)
            body = await reader.readexactly(length) if length else b""
            self.requests.append(ProxiedRequest(method, path, body))
            if path in self.refuse:
                status, words = self.refuse[path]
                said = words.encode()
                writer.write(f"HTTP/1.1 {status} Refused\r\nContent-Length: {len(said)}\r\n"
                             "Connection: close\r\n\r\n".encode("latin-1") + said)
                await writer.drain()
                return
            kept = [line for line in headers if not line.lower().startswith("connection:")]
            forwarded = "\r\n".join([f"{method} {path} {version}", *kept, "Connection: close"])
            upstream_reader, upstream_writer = await asyncio.open_connection(
                "127.0.0.1", self.upstream_port)
            upstream_writer.write(forwarded.encode("latin-1") + b"\r\n\r\n" + body)
            await upstream_writer.drain()
            while chunk := await upstream_reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            for stream in (upstream_writer, writer):
                if stream is not None:
                    stream.close()
                    with contextlib.suppress(Exception):
                        await stream.wait_closed()
            self._relays.discard(task)
