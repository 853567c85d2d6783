"""Outside agents in the tests: where the ones run for real are (locked in
tests/fixtures/acp_agents: ``npm ci`` there, as scripts/test.sh does), the skip (or, under
``CI``, the failure) when they are missing, a session's agent ended after its test, and
whether a process they started has ended."""

from __future__ import annotations

import contextlib
import os
import shutil
import time
from collections.abc import AsyncIterator
from pathlib import Path

import psutil
import pytest

from neta_nb import AgentSession
from neta_nb.runtime.acp.turns import AcpTurns

__all__ = ["BIN", "MODULES", "driven", "gone", "require_locked"]

MODULES = Path(__file__).parents[1] / "fixtures" / "acp_agents" / "node_modules"
BIN = MODULES / ".bin"


def require_locked(program: Path, what: str) -> None:
    """Skip the test, saying so, unless ``program`` (one of the locked agents' files) and
    Node.js are there; under ``CI`` fail instead: the CI installs the fixture, so the test
    must run there."""
    if program.exists() and shutil.which("node") is not None:
        return
    missing = (f"{what} is not installed: run `npm ci` in tests/fixtures/acp_agents "
               "(scripts/test.sh does)")
    if os.environ.get("CI"):
        pytest.fail(missing, pytrace=False)
    pytest.skip(missing)


def gone(pid: int, within: float = 3.0) -> bool:
    """The process ``pid`` ended within ``within`` seconds (a zombie waiting for its
    parent's ``wait`` has ended)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            if psutil.Process(pid).status() == psutil.STATUS_ZOMBIE:
                return True
        except psutil.NoSuchProcess:
            return True
        time.sleep(0.05)
    return False


@contextlib.asynccontextmanager
async def driven(session: AgentSession) -> AsyncIterator[AcpTurns]:
    """The driver of ``session``'s outside agent; the agent's process is ended and reaped
    when the block ends."""
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    try:
        yield outside
    finally:
        await outside.aclose()
