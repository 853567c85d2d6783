"""A local HTTP server that speaks the Anthropic and OpenAI streaming wire formats.

Provider tests point the real ``anthropic`` and ``openai`` SDKs at it (``base_url``), so
the SDKs' own HTTP, SSE parsing and retry code runs exactly as against the vendors. It is
written on raw asyncio streams so a test controls every TCP write: a response body is a
list of byte chunks, each sent as its own HTTP/1.1 chunk and flushed separately (events
split anywhere, even inside a UTF-8 character), and a response can end cleanly, drop the
connection mid-body, or drop it before any status line.

Usage::

    async with SSEServer() as server:
        server.add(anthropic_stream(...))          # responses are served in order
        client = AsyncAnthropic(base_url=server.base_url, api_key="test-key")
        ...
        server.requests[0].json                    # what the SDK sent

Builders at the bottom produce faithful event sequences: :class:`AnthropicStream`
(``message_start`` … ``message_stop`` with pings, thinking + signature, tool_use as
partial JSON) and :class:`OpenAIStream` (chat completion chunks, tool calls by index,
``reasoning_content``, the usage chunk, ``[DONE]``).

Every connection is answered with ``Connection: close`` so each request is one scripted
response, whatever the client's pooling does. A request that finds the queue empty gets a
500 (which the SDKs retry), so a test that scripts too few responses fails loudly.

The queue answers the model calls (``POST …/chat/completions``, ``POST …/messages``,
``POST …:streamGenerateContent`` — Gemini's, for Gemini CLI).
Anything else — the endpoints a session asks a local server for its context window
(``GET /props``, ``GET /models``, ``POST /api/show``) — gets what :meth:`SSEServer.route`
set for its method and path, every time it is asked, or a 404 as from a server that has no
such endpoint; it never takes a scripted model response.

A test anywhere under ``tests/`` takes a running one as the ``sse_server`` fixture
(``tests/conftest.py``), e.g. to point an ``AnthropicProvider(model, api_key="test",
base_url=sse_server.base_url)`` at it and assert on ``sse_server.requests[i].json`` after
each model call of a session; the builders are imported from here
(``from ..providers.sse_server import AnthropicStream``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import json
import time
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

__all__ = [
    "AnthropicStream",
    "OpenAIStream",
    "RecordedRequest",
    "SSEServer",
    "ScriptedHTTPResponse",
    "anthropic_error_body",
    "error_response",
    "history_problem",
    "openai_error_body",
    "split_every",
]

Ending = Literal["complete", "drop", "drop_before_headers"]
_MODEL_CALLS = ("/chat/completions", "/messages", ":streamGenerateContent")
"""How the paths of model calls end (OpenAI's, Anthropic's, Gemini's)."""


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]
    """Lower-cased names."""
    body: bytes
    at: float = 0.0
    """``time.monotonic()`` when the request had arrived whole."""

    @property
    def json(self) -> Any:
        return json.loads(self.body) if self.body else None


@dataclass
class ScriptedHTTPResponse:
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    chunks: list[bytes] = field(default_factory=list)
    """Body pieces; each is written and flushed on its own."""
    ending: Ending = "complete"
    """``complete``: the terminating chunk; ``drop``: close mid-body; ``drop_before_headers``:
    close without answering at all."""
    chunk_delay: float = 0.002
    """Pause between writes, so the client really receives the pieces separately."""
    hold_open: asyncio.Event | None = None
    """When set, the body stops before its end until this event fires (cancellation tests)."""


class SSEServer:
    """A scripted HTTP/1.1 server on 127.0.0.1 with a random port."""

    def __init__(self) -> None:
        self.requests: list[RecordedRequest] = []
        self._queue: list[ScriptedHTTPResponse] = []
        self._routes: dict[tuple[str, str], ScriptedHTTPResponse] = {}
        self._server: asyncio.Server | None = None
        self._port = 0
        self._handlers: set[asyncio.Task[None]] = set()
        self.responder: Callable[[RecordedRequest], ScriptedHTTPResponse] | None = None
        """Answers a model call when no scripted response is queued: a function of the
        request (e.g. of its prompt), so concurrent calls get their own answers."""
        self.in_flight = 0
        """Model calls being answered right now."""
        self.most_in_flight = 0
        self.check_history = True
        """Answer a model call whose history the vendor would refuse — a tool call without
        its result right after it, a result of no call right before it — with the 400
        the vendor sends (:func:`history_problem`), as Anthropic and OpenAI do. Off for
        a local server's lenient template (results sent as user messages)."""

    # -- lifecycle -------------------------------------------------------------------
    async def start(self) -> SSEServer:
        self._server = await asyncio.start_server(self._serve, "127.0.0.1", 0)
        self._port = self._server.sockets[0].getsockname()[1]
        return self

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
            for task in list(self._handlers):
                task.cancel()
            for task in list(self._handlers):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await task
            await self._server.wait_closed()
            self._server = None

    async def __aenter__(self) -> SSEServer:
        return await self.start()

    async def __aexit__(self, *exc: object) -> None:
        await self.close()

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self._port}"

    # -- scripting ---------------------------------------------------------------------
    def add(self, *responses: ScriptedHTTPResponse) -> None:
        self._queue.extend(responses)

    def route(self, method: str, path: str, response: ScriptedHTTPResponse) -> None:
        """Answer every ``method path`` request with ``response`` (not a model call)."""
        self._routes[(method.upper(), path)] = response

    def json_route(self, method: str, path: str, body: Any, status: int = 200) -> None:
        self.route(method, path, ScriptedHTTPResponse(
            status=status, headers={"Content-Type": "application/json"},
            chunks=[json.dumps(body).encode()]))

    @property
    def pending(self) -> int:
        """Scripted responses not served yet."""
        return len(self._queue)

    # -- serving -----------------------------------------------------------------------
    async def _serve(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            await self._answer(reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError):
            pass
        finally:
            self._handlers.discard(task)
            writer.close()
            with contextlib.suppress(Exception):
                await writer.wait_closed()

    async def _answer(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        head = await reader.readuntil(b"\r\n\r\n")
        request_line, *header_lines = head.decode("latin-1").split("\r\n")
        method, path, _ = request_line.split(" ", 2)
        headers: dict[str, str] = {}
        for line in header_lines:
            if line:
                name, _, value = line.partition(":")
                headers[name.strip().lower()] = value.strip()
        length = int(headers.get("content-length", "0"))
        body = await reader.readexactly(length) if length else b""
        self.requests.append(RecordedRequest(method, path, headers, body, time.monotonic()))

        bare_path = path.split("?", 1)[0]  # Claude Code asks for /v1/messages?beta=true
        routed = self._routes.get((method.upper(), bare_path))
        if routed is not None:
            response = routed
        elif not (method == "POST" and bare_path.endswith(_MODEL_CALLS)):
            response = error_response(404, {"error": {"type": "not_found",
                                                      "message": f"no route {path}"}})
        elif self.check_history and (problem := history_problem(
                bare_path, self.requests[-1].json)) is not None:
            response = error_response(400, anthropic_error_body("invalid_request_error", problem)
                                      if bare_path.endswith("/messages") else
                                      openai_error_body("invalid_request_error", problem))
        elif self._queue:
            response = self._queue.pop(0)
        elif self.responder is not None:
            response = self.responder(self.requests[-1])
        else:
            response = error_response(
                500, {"error": {"type": "test_error", "message": "no scripted response left"}})
        if response.ending == "drop_before_headers":
            return
        model_call = routed is None
        if model_call:
            self.in_flight += 1
            self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await self._write(writer, response)
        finally:
            if model_call:
                self.in_flight -= 1

    async def _write(self, writer: asyncio.StreamWriter, response: ScriptedHTTPResponse) -> None:
        head_lines = [f"HTTP/1.1 {response.status} {_reason(response.status)}",
                      "Transfer-Encoding: chunked", "Connection: close"]
        head_lines += [f"{name}: {value}" for name, value in response.headers.items()]
        writer.write(("\r\n".join(head_lines) + "\r\n\r\n").encode("latin-1"))
        await writer.drain()
        for index, chunk in enumerate(response.chunks):
            if response.hold_open is not None and index == len(response.chunks) - 1:
                await response.hold_open.wait()
            if not chunk:
                continue
            writer.write(f"{len(chunk):x}\r\n".encode() + chunk + b"\r\n")
            await writer.drain()
            if response.chunk_delay:
                await asyncio.sleep(response.chunk_delay)
        if response.ending == "complete":
            writer.write(b"0\r\n\r\n")
            await writer.drain()


def _reason(status: int) -> str:
    return {200: "OK", 400: "Bad Request", 401: "Unauthorized", 404: "Not Found",
            429: "Too Many Requests",
            500: "Internal Server Error", 503: "Service Unavailable",
            529: "Overloaded"}.get(status, "Status")


# --- what the vendors refuse ------------------------------------------------------------


def history_problem(path: str, body: Any) -> str | None:
    """Why Anthropic (``…/messages``) or OpenAI (``…/chat/completions``) would answer 400 to
    this request's history, in the vendor's words, or ``None``: every tool call must be
    answered right after the message that made it, and every result must answer a call
    of the message right before it."""
    messages = body.get("messages", []) if isinstance(body, dict) else []
    if path.endswith("/messages"):
        return _anthropic_problem(messages)
    return _openai_problem(messages)


def _blocks(message: dict[str, Any], kind: str) -> list[dict[str, Any]]:
    content = message.get("content")
    return [b for b in content if b.get("type") == kind] if isinstance(content, list) else []


def _anthropic_problem(messages: list[dict[str, Any]]) -> str | None:
    for index, message in enumerate(messages):
        before = messages[index - 1] if index else {}
        called = {b["id"] for b in _blocks(before, "tool_use")} \
            if before.get("role") == "assistant" else set()
        answered = {b["tool_use_id"] for b in _blocks(message, "tool_result")}
        if answered - called:
            return (f"messages.{index}.content: unexpected `tool_use_id` found in "
                    f"`tool_result` blocks: {sorted(answered - called)[0]}. Each "
                    "`tool_result` block must have a corresponding `tool_use` block in the "
                    "previous message.")
        if message.get("role") == "assistant" and _blocks(message, "tool_use"):
            after = messages[index + 1] if index + 1 < len(messages) else {}
            results = {b["tool_use_id"] for b in _blocks(after, "tool_result")}
            missing = [b["id"] for b in _blocks(message, "tool_use") if b["id"] not in results]
            if after.get("role") != "user" or missing:
                return (f"messages.{index + 1}: `tool_use` ids were found without "
                        f"`tool_result` blocks immediately after: {', '.join(missing)}. "
                        "Each `tool_use` block must have a corresponding `tool_result` block "
                        "in the next message.")
    return None


def _openai_problem(messages: list[dict[str, Any]]) -> str | None:
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.get("role") == "tool":
            return (f"Invalid parameter: messages with role 'tool' must be a response to a "
                    f"preceeding message with 'tool_calls'. (messages.[{index - 1}])")
        calls = [c["id"] for c in message.get("tool_calls") or []] \
            if message.get("role") == "assistant" else []
        answered: set[str] = set()
        while index < len(messages) and messages[index].get("role") == "tool":
            call_id = messages[index].get("tool_call_id")
            if not isinstance(call_id, str) or call_id not in calls:
                return (f"Invalid parameter: messages with role 'tool' must be a response to "
                        f"a preceeding message with 'tool_calls'. (messages.[{index}])")
            answered.add(call_id)
            index += 1
        missing = [call_id for call_id in calls if call_id not in answered]
        if missing:
            return ("An assistant message with 'tool_calls' must be followed by tool "
                    "messages responding to each 'tool_call_id'. The following tool_call_ids "
                    f"did not have response messages: {', '.join(missing)}")
    return None


# --- building responses --------------------------------------------------------------------


def split_every(data: bytes, size: int) -> list[bytes]:
    return [data[i:i + size] for i in range(0, len(data), size)]


def error_response(status: int, body: dict[str, Any], *,
                   headers: dict[str, str] | None = None) -> ScriptedHTTPResponse:
    return ScriptedHTTPResponse(status=status,
                                headers={"Content-Type": "application/json", **(headers or {})},
                                chunks=[json.dumps(body).encode()])


def anthropic_error_body(error_type: str, message: str) -> dict[str, Any]:
    return {"type": "error", "error": {"type": error_type, "message": message}}


def openai_error_body(error_type: str, message: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": error_type, "param": None, "code": code}}


def _padded_json(value: Any, pad: bool) -> str:
    # Real servers differ in spacing; padded JSON (spaces after separators) must parse too.
    return json.dumps(value, ensure_ascii=False) if pad else json.dumps(
        value, ensure_ascii=False, separators=(",", ":"))


class _SSEBuilder:
    def __init__(self, *, pad_json: bool = False) -> None:
        self.pad_json = pad_json
        self.wire: list[str] = []

    def raw(self, text: str) -> None:
        """Anything verbatim: a keep-alive comment (``": ping\\n\\n"``), a broken line."""
        self.wire.append(text)

    def to_bytes(self) -> bytes:
        return "".join(self.wire).encode("utf-8")

    def response(self, *, split: int | Sequence[int] | None = None, ending: Ending = "complete",
                 headers: dict[str, str] | None = None,
                 chunk_delay: float = 0.002) -> ScriptedHTTPResponse:
        """The stream as an HTTP response; ``split`` cuts the bytes every ``split`` bytes
        (or at the given offsets), ignoring event and character boundaries."""
        data = self.to_bytes()
        if split is None:
            chunks = [event.encode("utf-8") for event in self.wire]
        elif isinstance(split, int):
            chunks = split_every(data, split)
        else:
            offsets = [0, *sorted(split), len(data)]
            chunks = [data[a:b] for a, b in itertools.pairwise(offsets)]
        return ScriptedHTTPResponse(
            status=200, headers={"Content-Type": "text/event-stream", **(headers or {})},
            chunks=chunks, ending=ending, chunk_delay=chunk_delay)


class AnthropicStream(_SSEBuilder):
    """A Messages API event stream, built block by block."""

    def __init__(self, *, model: str = "claude-sonnet-4-5", input_tokens: int = 25,
                 cache_read: int = 0, cache_write: int = 0, pad_json: bool = False,
                 ping: bool = True) -> None:
        super().__init__(pad_json=pad_json)
        self._index = 0
        self.event("message_start", {"type": "message_start", "message": {
            "id": "msg_test", "type": "message", "role": "assistant", "model": model,
            "content": [], "stop_reason": None, "stop_sequence": None,
            "usage": {"input_tokens": input_tokens, "output_tokens": 1,
                      "cache_creation_input_tokens": cache_write,
                      "cache_read_input_tokens": cache_read}}})
        if ping:
            self.event("ping", {"type": "ping"})

    def event(self, name: str, data: dict[str, Any]) -> AnthropicStream:
        self.wire.append(f"event: {name}\ndata: {_padded_json(data, self.pad_json)}\n\n")
        return self

    def _block(self, start: dict[str, Any], deltas: Iterable[dict[str, Any]]) -> None:
        index = self._index
        self._index += 1
        self.event("content_block_start", {"type": "content_block_start", "index": index,
                                           "content_block": start})
        for delta in deltas:
            self.event("content_block_delta", {"type": "content_block_delta", "index": index,
                                               "delta": delta})
        self.event("content_block_stop", {"type": "content_block_stop", "index": index})

    def thinking(self, pieces: Sequence[str], signature: str | None = "sig-abc") -> AnthropicStream:
        deltas: list[dict[str, Any]] = [{"type": "thinking_delta", "thinking": p} for p in pieces]
        if signature is not None:
            deltas.append({"type": "signature_delta", "signature": signature})
        self._block({"type": "thinking", "thinking": "", "signature": ""}, deltas)
        return self

    def redacted_thinking(self, data: str) -> AnthropicStream:
        self._block({"type": "redacted_thinking", "data": data}, [])
        return self

    def text(self, pieces: Sequence[str]) -> AnthropicStream:
        self._block({"type": "text", "text": "", "citations": None},
                    [{"type": "text_delta", "text": p} for p in pieces])
        return self

    def tool_use(self, tool_id: str, name: str, json_pieces: Sequence[str]) -> AnthropicStream:
        self._block({"type": "tool_use", "id": tool_id, "name": name, "input": {}},
                    [{"type": "input_json_delta", "partial_json": p} for p in json_pieces])
        return self

    def error(self, error_type: str, message: str) -> AnthropicStream:
        self.event("error", anthropic_error_body(error_type, message))
        return self

    def finish(self, stop_reason: str = "end_turn", *, output_tokens: int = 42,
               thinking_tokens: int | None = None, stop: bool = True) -> AnthropicStream:
        usage: dict[str, Any] = {"output_tokens": output_tokens}
        if thinking_tokens is not None:
            usage["output_tokens_details"] = {"thinking_tokens": thinking_tokens}
        self.event("message_delta", {"type": "message_delta",
                                     "delta": {"stop_reason": stop_reason,
                                               "stop_sequence": None},
                                     "usage": usage})
        if stop:
            self.event("message_stop", {"type": "message_stop"})
        return self


class OpenAIStream(_SSEBuilder):
    """A Chat Completions chunk stream (``data:`` lines, ending with ``[DONE]``)."""

    def __init__(self, *, model: str = "gpt-5", pad_json: bool = False) -> None:
        super().__init__(pad_json=pad_json)
        self.model = model
        self.chunk({"role": "assistant", "content": ""})

    def chunk(self, delta: dict[str, Any], finish_reason: str | None = None) -> OpenAIStream:
        self.data({"id": "chatcmpl-test", "object": "chat.completion.chunk", "created": 1,
                   "model": self.model, "choices": [{"index": 0, "delta": delta,
                                                     "finish_reason": finish_reason,
                                                     "logprobs": None}],
                   "usage": None})
        return self

    def data(self, payload: dict[str, Any]) -> OpenAIStream:
        self.wire.append(f"data: {_padded_json(payload, self.pad_json)}\n\n")
        return self

    def reasoning(self, pieces: Sequence[str],
                  field_name: str = "reasoning_content") -> OpenAIStream:
        for piece in pieces:
            self.chunk({field_name: piece})
        return self

    def text(self, pieces: Sequence[str]) -> OpenAIStream:
        for piece in pieces:
            self.chunk({"content": piece})
        return self

    def tool_call_start(self, index: int, call_id: str, name: str,
                        arguments: str = "") -> OpenAIStream:
        return self.chunk({"tool_calls": [{"index": index, "id": call_id, "type": "function",
                                           "function": {"name": name,
                                                        "arguments": arguments}}]})

    def tool_call_args(self, index: int, arguments: str) -> OpenAIStream:
        return self.chunk({"tool_calls": [{"index": index, "function": {"arguments": arguments}}]})

    def finish(self, finish_reason: str = "stop") -> OpenAIStream:
        return self.chunk({}, finish_reason=finish_reason)

    def usage(self, prompt_tokens: int = 30, completion_tokens: int = 12, *,
              cached_tokens: int = 0, reasoning_tokens: int = 0,
              extra: dict[str, Any] | None = None) -> OpenAIStream:
        usage: dict[str, Any] = {
            "prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
            "prompt_tokens_details": {"cached_tokens": cached_tokens},
            "completion_tokens_details": {"reasoning_tokens": reasoning_tokens},
            **(extra or {})}
        return self.data({"id": "chatcmpl-test", "object": "chat.completion.chunk",
                          "created": 1, "model": self.model, "choices": [], "usage": usage})

    def error(self, message: str, error_type: str = "server_error") -> OpenAIStream:
        return self.data(openai_error_body(error_type, message))

    def done(self) -> OpenAIStream:
        self.wire.append("data: [DONE]\n\n")
        return self
