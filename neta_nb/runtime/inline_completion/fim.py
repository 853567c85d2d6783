"""A fill-in-the-middle call: ``POST {base_url}/completions`` with ``prompt`` and
``suffix``, streamed (the OpenAI-compatible completions API that llama.cpp's server, vLLM
and others serve). Blocking, on the caller's thread; :meth:`FimCall.abort` from another
thread closes the connection, so the server sees the request end, not only the answer
ignored. The standard library's HTTP client: nothing beyond it is needed here."""

from __future__ import annotations

import contextlib
import http.client
import json
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

from ...messages import Usage
from ...providers.base import UnusableUsage, usage_count

__all__ = ["FimCall", "FimError", "FimUnsupportedError"]


class FimError(RuntimeError):
    """The server answered the completion request with an error, or the connection
    failed."""


class FimUnsupportedError(FimError):
    """The server has no completions endpoint, or refuses ``suffix`` (404, 400, 405,
    501): the completer asks it as a chat model instead."""


class FimCall:
    """One streamed completion request."""

    def __init__(self, base_url: str, *, model: str, prompt: str, suffix: str,
                 max_tokens: int, api_key: str | None = None, timeout: float = 30.0,
                 stop: list[str] | None = None) -> None:
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"not an http(s) base URL: {base_url!r}")
        self._parsed = parsed
        self._body = {"model": model, "prompt": prompt, "suffix": suffix,
                      "max_tokens": max_tokens, "temperature": 0, "stream": True,
                      "stream_options": {"include_usage": True},
                      **({"stop": stop} if stop else {})}
        self._key = api_key
        self._timeout = timeout
        self._lock = threading.Lock()
        self._connection: http.client.HTTPConnection | None = None
        self.aborted = False

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body the call sends."""
        return self._body

    def run(self, on_text: Callable[[str], None]) -> Usage | None:
        """Send the request and hand each piece of text to ``on_text`` as it arrives;
        the usage the server reported (``None``: none). Returns quietly once aborted."""
        parsed = self._parsed
        kind = (http.client.HTTPSConnection if parsed.scheme == "https"
                else http.client.HTTPConnection)
        connection = kind(parsed.hostname or "", parsed.port, timeout=self._timeout)
        with self._lock:
            if self.aborted:
                return None
            self._connection = connection
        headers = {"Content-Type": "application/json", "Accept": "text/event-stream"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        usage: Usage | None = None
        try:
            connection.request("POST", f"{parsed.path}/completions",
                               json.dumps(self._body).encode(), headers)
            response = connection.getresponse()
            if response.status != 200:
                detail = response.read(500).decode(errors="replace").strip()
                error = (FimUnsupportedError if response.status in (400, 404, 405, 501)
                         else FimError)
                raise error(f"the completions endpoint answered {response.status}: {detail}")
            while not self.aborted:
                line = response.readline()
                if not line:
                    break
                data = line.strip()
                if not data.startswith(b"data:"):
                    continue
                payload = data[5:].strip()
                if payload == b"[DONE]":
                    break
                chunk = json.loads(payload)
                usage = _usage(chunk.get("usage")) or usage
                for choice in chunk.get("choices") or ():
                    text = choice.get("text") or ""
                    if text and not self.aborted:
                        on_text(text)
        except (OSError, http.client.HTTPException, ValueError) as error:
            if self.aborted:
                return None
            raise FimError(f"the completion request failed: {error}") from error
        finally:
            connection.close()
        return usage

    def abort(self) -> None:
        """End the request now (from any thread): its connection is shut."""
        with self._lock:
            self.aborted = True
            connection = self._connection
        sock = connection.sock if connection is not None else None
        if sock is not None:
            with contextlib.suppress(OSError):
                sock.shutdown(socket.SHUT_RDWR)


def _usage(report: Any) -> Usage | None:
    if not isinstance(report, dict):
        return None
    try:
        return Usage(input_tokens=usage_count("prompt_tokens", report.get("prompt_tokens")),
                     output_tokens=usage_count("completion_tokens",
                                               report.get("completion_tokens")))
    except UnusableUsage:
        return None
