"""A stand-in HTTP server the tests script (a Starlette app), served by uvicorn on a
thread at a free port of 127.0.0.1."""

from __future__ import annotations

import contextlib
import socket
import threading
from collections.abc import Iterator

import uvicorn
from starlette.applications import Starlette

__all__ = ["served"]


@contextlib.contextmanager
def served(app: Starlette) -> Iterator[int]:
    """Serve ``app`` while the block runs; its port."""
    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning", lifespan="off"))
    thread = threading.Thread(target=lambda: server.run(sockets=[sock]), daemon=True)
    thread.start()
    try:
        yield int(sock.getsockname()[1])
    finally:
        server.should_exit = True
        thread.join(10)
        sock.close()
