"""A kernel stand-in that dies mid-child: ``python -m tests.support.crew_child DB
SESSION_ID MARKER`` runs a planner whose ``delegate`` call starts a researcher; the
researcher streams part of an answer, MARKER is written (holding the child's session id),
and the process stays in that turn until it is killed."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.providers.base import TextDelta

from .sessions import FakeProvider, calls


def main(db: str, session_id: str, marker: Path) -> None:
    session: AgentSession | None = None

    def mark() -> None:
        assert session is not None
        marker.write_text(next(iter(session.subagents.values())).id)

    async def stay() -> None:
        await asyncio.sleep(3600)

    researcher = Agent("researcher", description="Finds facts.",
                       model=FakeProvider([[TextDelta("Half of the findings"), mark, stay]]))
    planner = FakeProvider([calls(("call_r", "delegate",
                                   {"agent": "researcher", "task": "Find facts."}))])
    session = AgentSession(Agent("planner", model=planner, subagents=[researcher]),
                           store=SessionStore(db), session_id=session_id)
    asyncio.run(session.run("Plan and delegate"))


if __name__ == "__main__":
    main(sys.argv[1], sys.argv[2], Path(sys.argv[3]))
