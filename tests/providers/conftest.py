"""Provider tests: the local SSE server is the ``sse_server`` fixture (tests/conftest.py).
Keys and endpoints from the machine are already gone (tests/support/offline.py); a test
that needs one sets it with monkeypatch and points it at that server."""

from __future__ import annotations

SECRET_KEY = "sk-test-9f8e7d6c5b4a-DO-NOT-LEAK"

