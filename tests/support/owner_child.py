"""A kernel stand-in that owns a session's turn: ``python -m tests.support.owner_child DB
SESSION_ID MARKER`` starts a turn in the store at DB (a path or a PostgreSQL URL), writes
MARKER once the answer is streaming, and stays in that turn until it is killed. With
``OWNER_CHILD_HOST`` set it reports that host name, as a kernel on another machine would."""

from __future__ import annotations

import asyncio
import contextlib
import os
import socket
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.providers.base import TextDelta

from .sessions import FakeProvider
from .timing import poll_until

ROOT = Path(__file__).resolve().parents[2]


def start_owner(db: str | Path, session_id: str, marker: Path, *,
                host: str | None = None) -> subprocess.Popen[bytes]:
    """Start the stand-in kernel; it writes ``marker`` once its turn streams."""
    env = {**os.environ, **({"OWNER_CHILD_HOST": host} if host else {})}
    return subprocess.Popen([sys.executable, "-m", "tests.support.owner_child", str(db),
                             session_id, str(marker)], cwd=ROOT, env=env)


@contextlib.contextmanager
def owner_streaming(db: str | Path, session_id: str, marker: Path
                    ) -> Iterator[subprocess.Popen[bytes]]:
    """The stand-in kernel, once its turn streams; killed when the block ends."""
    child = start_owner(db, session_id, marker)
    try:
        poll_until(marker.exists, 30, "the other kernel's turn to stream")
        yield child
    finally:
        child.kill()
        child.wait(10)


def main(db: str, session_id: str, marker: Path) -> None:
    host = os.environ.get("OWNER_CHILD_HOST")
    if host:
        socket.gethostname = lambda: host
    def mark() -> None:
        marker.write_text("streaming")

    async def stay() -> None:
        await asyncio.sleep(3600)

    provider = FakeProvider([[TextDelta("A partial answer"), mark, stay]])
    session = AgentSession(Agent("owner", model=provider), store=SessionStore(db),
                           session_id=session_id)
    asyncio.run(session.run("a long question"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
