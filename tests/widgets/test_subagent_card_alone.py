"""``SubagentCard`` subscribed to the parent session, as its docstring shows: it takes
its own run's events and nothing of the parent's (whose history events would otherwise
become messages of the child's transcript)."""

from __future__ import annotations

from typing import Any

from neta_nb import Agent, AgentSession
from neta_nb.events import SubagentStartEvent
from neta_nb.widgets import SubagentCard

from ..support.delegation import crew_catalog, delegations
from ..support.sessions import FakeProvider, answer
from .conftest import SentMessages


async def test_a_card_on_the_parents_events_shows_only_its_run(sent: SentMessages) -> None:
    kid = Agent("kid", model=FakeProvider([answer("child answer")]))
    top = FakeProvider([delegations(("c1", "kid", "task")), answer("parent final answer")])
    session = AgentSession(Agent("top", model=top, subagents=[kid]), crew_catalog())
    cards: list[SubagentCard] = []

    def on_event(event: Any) -> None:
        if isinstance(event, SubagentStartEvent):
            card = SubagentCard.from_event(event)
            cards.append(card)
            session.subscribe(card.apply)

    session.subscribe(on_event)
    await session.run("go")
    (card,) = cards
    assert card.status == "done"
    assert [m["text"] for m in card.part["messages"]] == ["child answer"]
    synced = card._sync({})["part"]["messages"]
    assert synced is not None
    assert [m["text"] for m in synced] == ["child answer"]
