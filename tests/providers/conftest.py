"""Fixtures for provider tests: a local SSE server. Keys and endpoints from the machine
are already gone (tests/support/offline.py); a test that needs one sets it with
monkeypatch and points it at this server."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .sse_server import SSEServer

SECRET_KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"


@pytest.fixture
async def sse_server() -> AsyncIterator[SSEServer]:
    async with SSEServer() as server:
        yield server
