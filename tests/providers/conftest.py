"""Fixtures for provider tests: a local SSE server and an environment without real keys."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from .sse_server import SSEServer

PROVIDER_ENVIRONMENT = ("ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
                        "OPENAI_API_KEY", "OPENAI_BASE_URL", "DEEPSEEK_API_KEY",
                        "DEEPSEEK_BASE_URL")

SECRET_KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"


@pytest.fixture(autouse=True)
def no_provider_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """Keys or endpoints from the machine running the tests must never be used."""
    for name in PROVIDER_ENVIRONMENT:
        monkeypatch.delenv(name, raising=False)


@pytest.fixture
async def sse_server() -> AsyncIterator[SSEServer]:
    async with SSEServer() as server:
        yield server
