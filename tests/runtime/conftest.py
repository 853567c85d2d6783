"""Fixtures several runtime test modules share."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel


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
