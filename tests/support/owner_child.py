"""A kernel stand-in that owns a session's turn: ``python -m tests.support.owner_child DB
SESSION_ID MARKER`` starts a turn in the store at DB, writes MARKER once the answer is
streaming, and stays in that turn until it is killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.providers.base import TextDelta

from .sessions import FakeProvider


def main(db: str, session_id: str, marker: Path) -> None:
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
