"""A stand-in OpenAI-compatible completion server for inline completion: it answers a
fill-in-the-middle request (``POST /v1/completions`` with ``prompt`` and ``suffix``) or a
chat request (``/v1/chat/completions``) or llama.cpp's ``/infill`` from what the request
says, never from a script: at ``name["pre`` it completes the column of ``name`` that starts
with ``pre``, as the variables' block of the prompt lists it (``# name: pandas.DataFrame, …,
columns {revenue: int64}``), and closes the subscript. It records each request's body, how
many were in flight at once, and those whose client hung up before the answer ended."""

from __future__ import annotations

import contextlib
import json
import re
import select
import socket
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FimServer", "answer_for", "fim_server"]

_SUBSCRIPT = re.compile(r"([A-Za-z_]\w*)\[([\"'])(\w*)$")


def answer_for(prompt: str) -> str:
    """The completion at the end of ``prompt`` (the text before the cursor): the rest of
    a column name the prompt's variables list, and the subscript's close; ``""`` when
    there is none."""
    found = _SUBSCRIPT.search(prompt)
    if found is None:
        return ""
    name, quote, typed = found.groups()
    listing = re.search(rf"^\W*{re.escape(name)}: [^\n]*columns \{{([^}}\n]*)\}}", prompt,
                        re.MULTILINE)
    if listing is None:
        return ""
    columns = [item.rpartition(":")[0].strip() for item in listing.group(1).split(", ")]
    match = next((column for column in columns if column.startswith(typed)), None)
    return "" if match is None else f"{match[len(typed):]}{quote}]"


@dataclass
class FimServer:
    port: int
    bodies: list[dict[str, Any]] = field(default_factory=list)
    paths: list[str] = field(default_factory=list)
    in_flight: int = 0
    most_in_flight: int = 0
    hung_up: int = 0
    chunk_delay: float = 0.0
    """Seconds before each piece of an answer (a slow model, for cancellation)."""
    header_delays: tuple[float, ...] = ()
    """Seconds before the answer's headers, one per request in order (a server reading a
    long prompt before it answers, as llama-cpp-python does); the requests after them
    answer at once."""
    fim: bool = True
    """Whether ``/v1/completions`` exists (else it answers 404)."""
    status: int = 200
    """What the fill-in-the-middle endpoints answer: other than 200, that status with a
    line saying why (a server that refuses ``suffix``, or fails)."""
    keep_alive: bool = False
    """Whether a streamed answer leaves the connection open for the next request (a
    chunked body), as real servers do; else it ends with the connection."""
    authorizations: list[str | None] = field(default_factory=list)
    """Each request's ``Authorization`` header."""
    connections: list[socket.socket] = field(default_factory=list)
    """The connections accepted (shut down when the server stops: a kept-alive one
    would stay open in its client)."""
    lock: threading.Lock = field(default_factory=threading.Lock)

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    @property
    def requests(self) -> int:
        with self.lock:
            return len(self.bodies)

    def reset(self) -> None:
        with self.lock:
            self.bodies.clear()
            self.paths.clear()
            self.authorizations.clear()
            self.most_in_flight = self.hung_up = 0


def _handler(server: FimServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def setup(self) -> None:
            super().setup()
            with server.lock:
                server.connections.append(self.connection)

        def do_POST(self) -> None:
            sent = self.rfile.read(int(self.headers["Content-Length"]))
            if not sent:
                return  # the client hung up before its body (an aborted request)
            body = json.loads(sent)
            with server.lock:
                server.bodies.append(body)
                server.paths.append(self.path)
                server.authorizations.append(self.headers.get("Authorization"))
                server.in_flight += 1
                server.most_in_flight = max(server.most_in_flight, server.in_flight)
                delay = dict(enumerate(server.header_delays, 1)).get(len(server.bodies), 0.0)
            try:
                if _client_gone(self.connection, delay):
                    with server.lock:
                        server.hung_up += 1
                elif not _refused(self, server.status):
                    self._answer(body)
            finally:
                with server.lock:
                    server.in_flight -= 1

        def _answer(self, body: dict[str, Any]) -> None:
            events = _events(self.path, body, fim=server.fim)
            if events is None:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            chunked = server.keep_alive
            self.send_response(200)
            self.send_header("Content-Type", "text/event-stream")
            # Kept alive, the answer ends with its chunked body's last (empty) chunk.
            self.send_header(*(("Transfer-Encoding", "chunked") if chunked
                               else ("Connection", "close")))
            self.end_headers()
            try:
                for event in events:
                    if _client_gone(self.connection, server.chunk_delay):
                        raise ConnectionResetError("the client hung up")
                    _send(self, f"data: {json.dumps(event)}\n\n".encode(), chunked=chunked)
                _send(self, b"data: [DONE]\n\n", chunked=chunked)
                _send(self, b"", chunked=chunked)
            except OSError:
                with server.lock:
                    server.hung_up += 1

    return Handler


def _send(handler: BaseHTTPRequestHandler, data: bytes, *, chunked: bool) -> None:
    """Write ``data``, as a chunk of a chunked body when ``chunked`` (``b""``: the last)."""
    handler.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n" if chunked else data)
    handler.wfile.flush()


def _client_gone(connection: socket.socket, wait: float) -> bool:
    """Whether the client at ``connection`` hung up, waiting up to ``wait`` seconds for it."""
    readable, _, _ = select.select([connection], [], [], wait)
    if not readable:
        return False
    try:
        peeked: bytes = connection.recv(1, socket.MSG_PEEK)
    except OSError:
        return True
    return peeked == b""


def _refused(handler: BaseHTTPRequestHandler, status: int) -> bool:
    """Whether the request was answered ``status`` (other than 200, at a fill-in-the-middle
    endpoint), with a line saying why."""
    if status == 200 or handler.path not in ("/v1/completions", "/infill"):
        return False
    why = f"status {status}: this server says no".encode()
    handler.send_response(status)
    handler.send_header("Content-Length", str(len(why)))
    handler.end_headers()
    handler.wfile.write(why)
    return True


def _events(path: str, body: dict[str, Any], *, fim: bool) -> list[dict[str, Any]] | None:
    """The stream events answering ``body`` at ``path`` (``None``: no such endpoint): the
    answer in two pieces, a finish for chat, the usage last."""
    if path == "/infill":  # llama.cpp's own: the facts in input_extra, no OpenAI framing
        extra = "".join(item["text"] for item in body.get("input_extra", []))
        text = answer_for(extra + body["input_prefix"])
        pieces = [text[:3], text[3:]]
        return [*({"content": piece, "stop": False} for piece in pieces if piece),
                {"content": "", "stop": True,
                 "timings": {"prompt_n": len(json.dumps(body)) // 4, "predicted_n": 2}}]
    if path == "/v1/completions" and fim:
        text = answer_for(body["prompt"])
        pieces = [text[:3], text[3:]]
        events = [{"choices": [{"index": 0, "text": piece}]} for piece in pieces if piece]
    elif path == "/v1/chat/completions":
        text = answer_for(body["messages"][-1]["content"].rpartition("<CURSOR>")[0])
        pieces = [text[:3], text[3:]]
        events = [{"choices": [{"index": 0, "delta": {"content": piece}}]}
                  for piece in pieces if piece]
        events.append({"choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    else:
        return None
    usage = {"prompt_tokens": len(json.dumps(body)) // 4,
             "completion_tokens": max(1, len(text) // 4)}
    return [*events, {"choices": [], "usage": usage}]


@contextlib.contextmanager
def fim_server(**options: Any) -> Iterator[FimServer]:
    """A :class:`FimServer` on a free port of 127.0.0.1 while the block runs."""
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    state = FimServer(port=int(httpd.server_address[1]), **options)
    httpd.RequestHandlerClass = _handler(state)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    try:
        yield state
    finally:
        for connection in state.connections:
            with contextlib.suppress(OSError):
                connection.shutdown(socket.SHUT_RDWR)
        httpd.shutdown()
        httpd.server_close()
        thread.join(5)
