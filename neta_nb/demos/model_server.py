"""The outside-agent demo's model: :func:`demo_model_server` starts a local Anthropic
Messages API on 127.0.0.1 that answers from the demo's script
(:mod:`neta_nb.providers.scripted.demo_outside_script`), so Claude Code can run a whole
turn with no key and no network (``ANTHROPIC_BASE_URL`` pointed at it).

A model call (``POST …/messages``) streams its answer as the API does — ``message_start``,
each content block (thinking, text, tool use) as ``content_block_start`` / ``_delta`` /
``_stop``, ``message_delta`` with the stop reason and usage, ``message_stop`` — or, when
not asked to stream, returns the message whole. Whatever else a client asks gets a short
valid answer: a token count, the model list, an empty 200 to ``HEAD``; anything unknown a
404 in the API's error form. The server runs on a daemon thread and ends with
:meth:`DemoModelServer.stop` or when the process exits.
"""

from __future__ import annotations

import json
import re
import threading
import time
import weakref
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from ..process_exit import end_at_exit
from ..providers.scripted.demo_outside_script import demo_answer

__all__ = ["DEMO_MODEL", "DemoModelServer", "demo_model_server"]

DEMO_MODEL = "claude-sonnet-4-5"
"""The model name the demo's server answers as."""

_running: weakref.WeakSet[DemoModelServer] = weakref.WeakSet()


def _stop_running() -> None:
    for server in list(_running):
        server.stop()


class DemoModelServer:
    """A scripted Messages API on ``127.0.0.1`` (a free port): :attr:`url` is its base
    URL. ``chars_per_second`` paces the streamed text and thinking to a readable speed
    (0: as fast as it can)."""

    def __init__(self, *, chars_per_second: float = 0.0) -> None:
        if chars_per_second < 0:
            raise ValueError(f"chars_per_second must be 0 or more, got {chars_per_second!r}")
        self.chars_per_second = chars_per_second
        self.model_calls = 0
        """The model calls answered so far."""
        self._http = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._http.daemon_threads = True
        self._http.demo = self  # type: ignore[attr-defined]
        self._thread = threading.Thread(target=self._http.serve_forever,
                                        name="neta-nb-demo-model", daemon=True)
        self._thread.start()
        self._stopped = False
        _running.add(self)
        end_at_exit(_stop_running)

    @property
    def url(self) -> str:
        host, port = self._http.server_address[:2]
        return f"http://{host!s}:{port}"

    @property
    def running(self) -> bool:
        return not self._stopped

    def stop(self) -> None:
        """Stop serving (the port is freed); calling it again does nothing."""
        if self._stopped:
            return
        self._stopped = True
        _running.discard(self)
        self._http.shutdown()
        self._http.server_close()

    def __repr__(self) -> str:
        state = f"serving {self.url}" if self.running else "stopped"
        return f"DemoModelServer({state})"

    # --- answers ----------------------------------------------------------------------
    def answer(self, body: dict[str, Any]) -> dict[str, Any]:
        """The whole message the demo answers ``body`` with."""
        self.model_calls += 1
        blocks, stop_reason = demo_answer(body)
        content = [dict(block, signature="offline-demo") if block["type"] == "thinking"
                   else block for block in blocks]
        return {"id": f"msg_demo_{self.model_calls}", "type": "message",
                "role": "assistant", "model": body.get("model") or DEMO_MODEL,
                "content": content, "stop_reason": stop_reason, "stop_sequence": None,
                "usage": {"input_tokens": _estimate(body), "output_tokens":
                          max(1, len(json.dumps(content)) // 4)}}

    def events(self, message: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
        """``message`` as the stream of server-sent events the API sends."""
        usage = message["usage"]
        start = dict(message, content=[], stop_reason=None,
                     usage={"input_tokens": usage["input_tokens"], "output_tokens": 1})
        yield "message_start", {"type": "message_start", "message": start}
        for index, block in enumerate(message["content"]):
            kind = block["type"]
            empty = ({"type": "thinking", "thinking": "", "signature": ""}
                     if kind == "thinking" else {"type": "text", "text": ""}
                     if kind == "text" else dict(block, input={}))
            yield "content_block_start", {"type": "content_block_start", "index": index,
                                          "content_block": empty}
            for delta in _deltas(block):
                yield "content_block_delta", {"type": "content_block_delta", "index": index,
                                              "delta": delta}
            yield "content_block_stop", {"type": "content_block_stop", "index": index}
        yield "message_delta", {"type": "message_delta",
                                "delta": {"stop_reason": message["stop_reason"],
                                          "stop_sequence": None},
                                "usage": {"output_tokens": usage["output_tokens"]}}
        yield "message_stop", {"type": "message_stop"}

    def pause_after(self, event: dict[str, Any]) -> float:
        """How long to wait after sending ``event``, to stream at the chosen pace."""
        if not self.chars_per_second or event.get("type") != "content_block_delta":
            return 0.0
        delta = event["delta"]
        piece = delta.get("text") or delta.get("thinking") or ""
        return len(piece) / self.chars_per_second


def _pieces(text: str, size: int = 12) -> list[str]:
    """``text`` in pieces of about ``size`` characters, each ending after a space (but the
    last): joined, they are ``text`` exactly."""
    pieces: list[str] = []
    current = ""
    for word in re.split(r"(?<= )", text):
        current += word
        if len(current) >= size:
            pieces.append(current)
            current = ""
    if current:
        pieces.append(current)
    return pieces


def _deltas(block: dict[str, Any]) -> Iterator[dict[str, Any]]:
    kind = block["type"]
    if kind == "thinking":
        for piece in _pieces(block["thinking"]):
            yield {"type": "thinking_delta", "thinking": piece}
        yield {"type": "signature_delta", "signature": block["signature"]}
    elif kind == "text":
        for piece in _pieces(block["text"]):
            yield {"type": "text_delta", "text": piece}
    else:
        arguments = json.dumps(block["input"])
        for at in range(0, len(arguments), 40):
            yield {"type": "input_json_delta", "partial_json": arguments[at:at + 40]}


def _estimate(body: dict[str, Any]) -> int:
    """A rough token count of a request (the demo has no tokenizer): a quarter of its
    characters."""
    return max(1, len(json.dumps(body)) // 4)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    server: ThreadingHTTPServer

    def log_message(self, format: str, *args: Any) -> None:
        return  # a notebook's output is no place for an access log

    @property
    def demo(self) -> DemoModelServer:
        return self.server.demo  # type: ignore[attr-defined, no-any-return]

    def _path(self) -> str:
        return self.path.split("?", 1)[0].rstrip("/")

    def _body(self) -> Any:
        length = int(self.headers.get("Content-Length") or 0)
        data = self.rfile.read(length) if length else b""
        try:
            return json.loads(data) if data else {}
        except ValueError:
            return None

    def _json(self, status: int, value: Any) -> None:
        data = json.dumps(value).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.send_header("Connection", "close")
        self.end_headers()
        self.wfile.write(data)
        self.close_connection = True

    def _error(self, status: int, kind: str, message: str) -> None:
        self._json(status, {"type": "error", "error": {"type": kind, "message": message}})

    def do_HEAD(self) -> None:
        self.send_response(200)
        self.send_header("Content-Length", "0")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True

    def do_GET(self) -> None:
        if self._path().endswith("/models"):
            self._json(200, {"data": [{"type": "model", "id": DEMO_MODEL,
                                       "display_name": "Offline demo model",
                                       "created_at": "2025-01-01T00:00:00Z"}],
                             "has_more": False, "first_id": DEMO_MODEL,
                             "last_id": DEMO_MODEL})
        else:
            self._error(404, "not_found_error", f"the offline demo has no {self._path()}")

    def do_POST(self) -> None:
        body = self._body()
        path = self._path()
        if not isinstance(body, dict):
            self._error(400, "invalid_request_error", "the body is not a JSON object")
        elif path.endswith("/messages/count_tokens"):
            self._json(200, {"input_tokens": _estimate(body)})
        elif not path.endswith("/messages"):
            self._error(404, "not_found_error", f"the offline demo has no {path}")
        elif body.get("stream"):
            self._stream(self.demo.answer(body))
        else:
            self._json(200, self.demo.answer(body))

    def _stream(self, message: dict[str, Any]) -> None:
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.send_header("Cache-Control", "no-cache")
        self.send_header("Transfer-Encoding", "chunked")
        self.send_header("Connection", "close")
        self.end_headers()
        self.close_connection = True
        try:
            for name, event in self.demo.events(message):
                data = f"event: {name}\ndata: {json.dumps(event)}\n\n".encode()
                self.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
                self.wfile.flush()
                pause = self.demo.pause_after(event)
                if pause:
                    time.sleep(pause)
            self.wfile.write(b"0\r\n\r\n")
        except (BrokenPipeError, ConnectionResetError):
            return  # the client stopped reading (a Stop): nothing more to send


def demo_model_server(*, chars_per_second: float = 0.0) -> DemoModelServer:
    """Start the demo's local Messages API (see :class:`DemoModelServer`)."""
    return DemoModelServer(chars_per_second=chars_per_second)
