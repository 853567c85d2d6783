"""Fixtures several runtime test modules share."""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

from ..providers.sse_server import SSEServer
from ..support.claude_script import ModelScript


@pytest.fixture
def kernel() -> Iterator[tuple[KernelManager, BlockingKernelClient]]:
    """A real python3 kernel and its client (``tests/support/kernels.py`` talks to it),
    shut down after the test."""
    manager, client = start_new_kernel(kernel_name="python3")
    try:
        yield manager, client
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


@pytest.fixture
async def model() -> AsyncIterator[tuple[SSEServer, ModelScript]]:
    """The local Messages API stand-in answering from a :class:`ModelScript` (Claude Code's
    model in the tests that drive it)."""
    script = ModelScript()
    async with SSEServer() as server:
        server.responder = script
        server.check_history = False  # the agent's own history, not ours
        yield server, script
