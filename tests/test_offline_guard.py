"""The test run is offline: no provider key reaches the code under test or any child
process, and a connection to anything but this machine fails the test at name
resolution, in-process, before a packet leaves."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from pathlib import Path
from types import SimpleNamespace

import httpx
import pytest

from neta_nb import Agent, AgentSession
from neta_nb.providers.anthropic import AnthropicProvider

from .support import network_guard, offline
from .support.offline import PROVIDER_ENVIRONMENT


def test_provider_environment_is_cleared_for_the_whole_run() -> None:
    assert [name for name in PROVIDER_ENVIRONMENT if name in os.environ] == []


def test_child_processes_inherit_the_cleared_environment() -> None:
    # nbval's kernels and the browser tests' JupyterLab are started with os.environ.
    names = ",".join(("ANTHROPIC_API_KEY", "OPENAI_API_KEY", "DEEPSEEK_API_KEY"))
    code = f"import os; print([n for n in {names.split(',')!r} if n in os.environ])"
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, env=os.environ.copy()).stdout
    assert out.strip() == "[]"


def test_a_vendor_host_fails_at_resolution_with_a_clear_message(
        blocked_connections: list[str]) -> None:
    with pytest.raises(httpx.ConnectError, match=r"blocked a connection to api\.anthropic\.com"):
        httpx.get("https://api.anthropic.com/v1/messages", timeout=5)
    with pytest.raises(network_guard.VendorCallBlocked, match=r"tests talk only to 127\.0\.0\.1"):
        socket.create_connection(("api.openai.com", 443), timeout=5)
    assert blocked_connections == ["api.anthropic.com:443", "api.openai.com:443"]


def test_a_numeric_remote_address_is_refused_at_connect(blocked_connections: list[str]) -> None:
    with socket.socket() as sock, pytest.raises(network_guard.VendorCallBlocked):
        sock.connect(("203.0.113.7", 443))
    assert blocked_connections == ["203.0.113.7:443"]


async def test_async_connections_are_refused_too(blocked_connections: list[str]) -> None:
    with pytest.raises(OSError, match=r"blocked a connection to api\.deepseek\.com"):
        await asyncio.open_connection("api.deepseek.com", 443)
    assert blocked_connections == ["api.deepseek.com:443"]


async def test_a_session_on_a_real_vendor_is_blocked_and_recorded(
        blocked_connections: list[str]) -> None:
    # A provider swallows the failure into an `error` event; the recorded attempt is what
    # fails such a test (see the autouse fixture in tests/support/offline.py).
    # No base_url: the SDK's default, the vendor's public host. No retries: no backoff.
    provider = AnthropicProvider("claude-sonnet-4-6", api_key="sk-test", max_retries=0)
    session = AgentSession(Agent("a", model=provider))
    errors: list[str] = []
    session.subscribe(lambda event: errors.append(event.message)
                      if event.type == "error" else None)
    await session.run("hi")
    assert len(errors) == 1 and "Anthropic connection failed" in errors[0]
    assert blocked_connections and blocked_connections[0] == "api.anthropic.com:443"


def test_loopback_stays_reachable() -> None:
    assert all(network_guard.is_loopback(host) for host in
               ("127.0.0.1", "127.3.4.5", "localhost", "::1", "[::1]", None, ""))
    assert not any(network_guard.is_loopback(host) for host in
                   ("api.anthropic.com", "10.0.0.1", "8.8.8.8", "localhost.evil.com"))
    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        socket.create_connection(("localhost", port), timeout=5).close()


def test_a_test_that_reaches_out_fails_even_if_it_catches_the_error() -> None:
    # Drives the plugin's pytest_runtest_call wrapper around a test body that swallows the
    # refusal, the way a provider turns it into an `error` event.
    stand_in = SimpleNamespace(fixturenames=["tmp_path"])
    body = offline.pytest_runtest_call(stand_in)  # type: ignore[arg-type]  # reads fixturenames only
    next(body)
    with contextlib.suppress(OSError):
        socket.getaddrinfo("api.openai.com", 443)
    with pytest.raises(pytest.fail.Exception, match=r"tried to connect to api\.openai\.com:443"):
        body.send(None)
    assert network_guard.BLOCKED == []


def test_kernels_run_the_guard_as_a_startup_file() -> None:
    # nbval and JupyterLab start IPython kernels; IPYTHONDIR points them at the guard.
    startup = Path(os.environ["IPYTHONDIR"], "profile_default", "startup")
    assert [p.name for p in startup.iterdir()] == ["00-neta-nb-network-guard.py"]
    code = ("import socket\n"
            "try:\n    socket.getaddrinfo('api.anthropic.com', 443)\n"
            "except OSError as error:\n    print('refused:', error)\n")
    out = subprocess.run([sys.executable, "-m", "IPython", "--quick", "--no-banner", "-c", code],
                         capture_output=True, text=True, timeout=60, env=os.environ.copy())
    assert "refused:" in out.stdout and "blocked a connection to api.anthropic.com" in out.stdout
