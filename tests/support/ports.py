"""Ports on 127.0.0.1 for the servers the tests start (JupyterLab, Voilà, PostgreSQL,
llama-server, MCP over HTTP, the demo command's Lab)."""

from __future__ import annotations

import socket

__all__ = ["free_port"]


def free_port() -> int:
    """A TCP port on 127.0.0.1 that was free a moment ago: the OS picks it and the probe
    socket closes before the caller's server binds it (a server that finds it taken
    meanwhile fails to start, or its caller asks for another)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])
