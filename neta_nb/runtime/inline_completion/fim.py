"""A fill-in-the-middle call, streamed: ``POST {base_url}/completions`` with ``prompt`` and
``suffix`` (the OpenAI-compatible completions API as Ollama and DeepSeek's beta API serve
it), or llama.cpp's own ``POST /infill`` with ``input_prefix``, ``input_suffix`` and the
kernel's facts as ``input_extra`` (``endpoint="infill"``; the server's root, a ``/v1`` at
the end of ``base_url`` left out). Blocking, on the caller's thread; :meth:`FimCall.abort`
from another thread closes the connection, so the server sees the request end, not only the
answer ignored. The standard library's HTTP client: nothing beyond it is needed here."""

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
                 endpoint: str = "completions", extra: str = "") -> None:
        parsed = urllib.parse.urlsplit(base_url.rstrip("/"))
        if parsed.scheme not in ("http", "https") or not parsed.hostname:
            raise ValueError(f"not an http(s) base URL: {base_url!r}")
        if endpoint not in ("completions", "infill"):
            raise ValueError(f"unknown FIM endpoint {endpoint!r}: 'completions' or 'infill'")
        self._endpoint = endpoint
        if endpoint == "infill":
            root = parsed.path.removesuffix("/v1")
            self._path = f"{root}/infill"
            # ``prompt`` is the text up to the cursor with the facts ahead: llama.cpp takes
            # the facts apart (``input_extra``), ahead of its FIM tokens.
            self._body: dict[str, Any] = {
                "input_prefix": prompt[len(extra):] if prompt.startswith(extra) else prompt,
                "input_suffix": suffix, "n_predict": max_tokens, "temperature": 0,
                "stream": True, "cache_prompt": True,
                "input_extra": [{"filename": "kernel.py", "text": extra}] if extra else []}
        else:
            self._path = f"{parsed.path}/completions"
            self._body = {"model": model, "prompt": prompt, "suffix": suffix,
                          "max_tokens": max_tokens, "temperature": 0, "stream": True,
                          "stream_options": {"include_usage": True}}
        self._parsed = parsed
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
            connection.request("POST", self._path,
                               json.dumps(self._body).encode(), headers)
            response = connection.getresponse()
            if response.status != 200:
                detail = response.read(500).decode(errors="replace").strip()
                error = (FimUnsupportedError if response.status in (400, 404, 405, 501)
                         else FimError)
                raise error(f"the completions endpoint answered {response.status}: {detail}")
            usage = self._read(response, on_text)
        except (OSError, http.client.HTTPException, ValueError) as error:
            if self.aborted:
                return None
            raise FimError(f"the completion request failed: {error}") from error
        finally:
            connection.close()
        return usage

    def _read(self, response: http.client.HTTPResponse,
              on_text: Callable[[str], None]) -> Usage | None:
        """The streamed events of ``response`` until its end (or an abort)."""
        usage: Usage | None = None
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
            usage = _usage(chunk.get("usage") or chunk.get("timings")) or usage
            texts = ([chunk.get("content") or ""] if self._endpoint == "infill"
                     else [choice.get("text") or "" for choice in chunk.get("choices") or ()])
            for text in texts:
                if text and not self.aborted:
                    on_text(text)
            if self._endpoint == "infill" and chunk.get("stop"):
                break
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
    """An OpenAI ``usage`` object, or llama.cpp's ``timings`` (``prompt_n``,
    ``predicted_n``)."""
    if not isinstance(report, dict):
        return None
    prompt = report.get("prompt_tokens", report.get("prompt_n"))
    answer = report.get("completion_tokens", report.get("predicted_n"))
    try:
        return Usage(input_tokens=usage_count("prompt_tokens", prompt),
                     output_tokens=usage_count("completion_tokens", answer))
    except UnusableUsage:
        return None
