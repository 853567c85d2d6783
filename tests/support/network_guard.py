"""Refuse every network connection that is not to this machine.

Tests must never reach a model vendor: a request to ``api.anthropic.com`` would cost money
(or, here, hang on a closed network). This module patches :mod:`socket` so that name
resolution and ``connect`` accept only loopback (``127.0.0.0/8``, ``::1``, ``localhost``)
and Unix sockets; anything else raises :class:`VendorCallBlocked` in-process, before a
packet leaves, and is recorded in :data:`BLOCKED` so the test runner can fail the test
even when the code under test swallows the error (providers retry and report an ``error``
event instead of raising).

It is stdlib-only and self-contained because the same file is run as an IPython startup
file in the kernels that nbval and the browser tests start.
"""

from __future__ import annotations

import ipaddress
import socket
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    import _socket  # typeshed declares connect/connect_ex on this base of socket.socket

__all__ = ["BLOCKED", "VendorCallBlocked", "install", "is_loopback"]

BLOCKED: list[str] = []
"""``host:port`` of every refused attempt since the list was last cleared."""

_LOOPBACK_NAMES = {"localhost", "localhost.localdomain", "ip6-localhost", "ip6-loopback"}


class VendorCallBlocked(socket.gaierror):
    """A test tried to reach a host other than this machine.

    A ``gaierror`` (name resolution failed), so HTTP clients handle it the way they
    handle an unknown host: as a connection error, without waiting for a timeout."""


def is_loopback(host: Any) -> bool:
    if host is None or host == "":
        return True  # getaddrinfo(None, port): the local wildcard, used to bind servers
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    name = str(host).strip("[]").split("%", 1)[0].lower().rstrip(".")
    if name in _LOOPBACK_NAMES or name.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        return False
    return address.is_loopback or address.is_unspecified


def _refuse(host: Any, port: Any) -> VendorCallBlocked:
    if isinstance(host, bytes):
        host = host.decode("ascii", "replace")
    target = f"{host}:{port}"
    BLOCKED.append(target)
    return VendorCallBlocked(
        socket.EAI_NONAME,
        f"blocked a connection to {target}: tests talk only to 127.0.0.1/localhost/::1 "
        "(point the provider at a local server with base_url)")


def install() -> None:
    """Patch :mod:`socket` once per process; later calls do nothing."""
    if getattr(socket, "_neta_nb_network_guard", False):
        return
    real_getaddrinfo = socket.getaddrinfo
    real_connect = socket.socket.connect
    real_connect_ex = socket.socket.connect_ex

    def getaddrinfo(host: Any, port: Any, *args: Any, **kwargs: Any) -> Any:
        if not is_loopback(host):
            raise _refuse(host, port)
        return real_getaddrinfo(host, port, *args, **kwargs)

    def _check(sock: _socket.socket, address: Any) -> None:
        if sock.family in (socket.AF_INET, socket.AF_INET6) and not is_loopback(address[0]):
            raise _refuse(address[0], address[1])

    def connect(self: _socket.socket, address: Any) -> None:
        _check(self, address)
        real_connect(self, address)

    def connect_ex(self: _socket.socket, address: Any) -> int:
        _check(self, address)
        return real_connect_ex(self, address)

    socket.getaddrinfo = getaddrinfo
    socket.socket.connect = connect  # type: ignore[method-assign]
    socket.socket.connect_ex = connect_ex  # type: ignore[method-assign]
    socket._neta_nb_network_guard = True  # type: ignore[attr-defined]
