"""A fill-in-the-middle call, streamed (``pip install 'neta-nb[openai]'``): the openai SDK's
``POST {base_url}/completions`` with ``prompt`` and ``suffix`` (the OpenAI-compatible
completions API as Ollama and DeepSeek's beta API serve it), or llama.cpp's own
``POST /infill`` with ``input_prefix``, ``input_suffix`` and the kernel's facts as
``input_extra`` (``endpoint="infill"``; the server's root, a ``/v1`` at the end of
``base_url`` left out), read with httpx2's server-sent events reader (httpx2: the HTTP
client the SDK runs on).

Blocking, on the caller's thread, with a client of its own that makes no retry (a
completion is stale by the time a retry would answer). :meth:`FimCall.abort` from another
thread shuts the connection's socket down, so the server sees the request end at once and
the reading thread wakes; the reading thread then closes the stream and its client.
Closing the response from the other thread alone would not do: the reading thread stays
blocked in its read, and the socket stays open, until the server's next piece arrives.
The socket is the one httpcore's ``trace`` extension reports when the connection is made
(the request may still wait for its answer's headers then: a server reads the whole
prompt before it answers).
"""

from __future__ import annotations

import contextlib
import socket
import threading
import urllib.parse
from collections.abc import Callable
from typing import Any

try:
    import httpx2
    import openai
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("Fill-in-the-middle completion needs the openai SDK: "
                      "pip install 'neta-nb[openai]'") from error

from ..messages import Usage
from .base import UnusableUsage, usage_count
from .openai import LOCAL_SERVER_KEY

__all__ = ["FimCall", "FimError", "FimUnsupportedError"]

_UNSUPPORTED_STATUS = frozenset({400, 404, 405, 501})
_CONNECTED = frozenset({"connection.connect_tcp.complete", "connection.start_tls.complete"})
"""httpcore's trace events whose ``return_value`` is the connection's network stream."""


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
        self._base_url = parsed.geturl()
        if endpoint == "infill":
            # ``prompt`` is the text up to the cursor with the facts ahead: llama.cpp takes
            # the facts apart (``input_extra``), ahead of its FIM tokens.
            self._body: dict[str, Any] = {
                "input_prefix": prompt[len(extra):] if prompt.startswith(extra) else prompt,
                "input_suffix": suffix, "n_predict": max_tokens, "temperature": 0,
                "stream": True, "cache_prompt": True,
                "input_extra": [{"filename": "kernel.py", "text": extra}] if extra else []}
        else:
            self._body = {"model": model, "prompt": prompt, "suffix": suffix,
                          "max_tokens": max_tokens, "temperature": 0, "stream": True,
                          "stream_options": {"include_usage": True}}
        self._key = api_key
        self._timeout = timeout
        self._lock = threading.Lock()
        self._socket: socket.socket | None = None
        self.aborted = False

    @property
    def body(self) -> dict[str, Any]:
        """The JSON body the call sends."""
        return self._body

    def run(self, on_text: Callable[[str], None]) -> Usage | None:
        """Send the request and hand each piece of text to ``on_text`` as it arrives;
        the usage the server reported (``None``: none). Returns quietly once aborted."""
        if self.aborted:
            return None
        http = openai.DefaultHttpxClient(timeout=self._timeout,
                                         event_hooks={"request": [self._watch]})
        try:
            with http:
                if self._endpoint == "infill":
                    return self._infill(http, on_text)
                return self._complete(http, on_text)
        except FimError:
            raise
        except (openai.APIError, httpx2.HTTPError, OSError, ValueError) as error:
            if self.aborted:
                return None
            if isinstance(error, openai.APIStatusError):
                raise _status_error(error.status_code, error.response) from error
            reason = error.__cause__ if isinstance(error, openai.APIConnectionError) else None
            raise FimError(f"the completion request failed: {reason or error}") from error

    def abort(self) -> None:
        """End the request now (from any thread): its connection is shut down."""
        with self._lock:
            self.aborted = True
            sock = self._socket
        if sock is not None:
            _shut(sock)

    # --- the two endpoints ---------------------------------------------------------------
    def _complete(self, http: httpx2.Client,
                  on_text: Callable[[str], None]) -> Usage | None:
        client = openai.OpenAI(api_key=self._key or LOCAL_SERVER_KEY, base_url=self._base_url,
                               max_retries=0, timeout=self._timeout, http_client=http)
        body = self._body
        usage: Usage | None = None
        with client.completions.create(
                model=body["model"], prompt=body["prompt"], suffix=body["suffix"],
                max_tokens=body["max_tokens"], temperature=body["temperature"], stream=True,
                stream_options={"include_usage": True}) as stream:
            for chunk in stream:
                if self.aborted:
                    break
                report = chunk.usage.model_dump() if chunk.usage is not None else None
                usage = _usage(report or getattr(chunk, "timings", None)) or usage
                for choice in chunk.choices:
                    if choice.text and not self.aborted:
                        on_text(choice.text)
        return usage

    def _infill(self, http: httpx2.Client, on_text: Callable[[str], None]) -> Usage | None:
        root = self._base_url.removesuffix("/v1")
        headers = {"Accept": "text/event-stream"}
        if self._key:
            headers["Authorization"] = f"Bearer {self._key}"
        usage: Usage | None = None
        with http.stream("POST", f"{root}/infill", json=self._body,
                         headers=headers) as response:
            if response.status_code != 200:
                response.read()
                raise _status_error(response.status_code, response)
            for event in httpx2.EventSource(response):
                if self.aborted or event.data.startswith("[DONE]"):
                    break
                chunk = event.json()
                if not isinstance(chunk, dict):
                    continue
                usage = _usage(chunk.get("usage") or chunk.get("timings")) or usage
                text = chunk.get("content")
                if isinstance(text, str) and text and not self.aborted:
                    on_text(text)
                if chunk.get("stop"):
                    break
        return usage

    def _watch(self, request: httpx2.Request) -> None:
        """The client's request hook: have httpcore report the connection it makes."""
        request.extensions["trace"] = self._trace

    def _trace(self, name: str, info: dict[str, Any]) -> None:
        if name not in _CONNECTED:
            return
        stream = info.get("return_value")
        sock = stream.get_extra_info("socket") if stream is not None else None
        if not isinstance(sock, socket.socket):
            return
        with self._lock:
            self._socket = sock
            aborted = self.aborted
        if aborted:  # aborted while connecting
            _shut(sock)


def _shut(sock: socket.socket) -> None:
    """Shut ``sock`` down both ways: the peer sees the end, a read blocked on it wakes.
    (The plain socket's own shutdown, also for a TLS socket: ``SSLSocket.shutdown``
    would unwrap it under the reading thread.)"""
    with contextlib.suppress(OSError):
        socket.socket.shutdown(sock, socket.SHUT_RDWR)


def _status_error(status: int, response: httpx2.Response) -> FimError:
    """The error for an answer with ``status``, in the server's words."""
    detail = response.text[:500].strip()
    error = FimUnsupportedError if status in _UNSUPPORTED_STATUS else FimError
    return error(f"the completions endpoint answered {status}: {detail}")


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
