"""Call ids come from the model and repeat across turns (a server that numbers its calls
per response sends ``call_0`` every turn): a sub-agent card is drawn from its own run, and
the whole of its texts comes from that run, whichever later call reused its id."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.widgets import ChatView

from ..support.delegation import crew_catalog, delegations
from ..support.sessions import FakeProvider, answer
from .conftest import SentMessages


def cards(items: list[dict[str, Any]], call_id: str) -> list[dict[str, Any]]:
    return [card for item in items for card in item.get("cards") or []
            if card["id"] == call_id]


async def test_a_delegate_call_that_started_no_child_is_not_drawn_as_an_earlier_run(
        sent: SentMessages, tmp_path: Path) -> None:
    kid = Agent("kid", model=FakeProvider([answer("turn one child answer")]))
    top = FakeProvider([delegations(("call_0", "kid", "first")), answer("A"),
                        delegations(("call_0", "nosuch", "second")), answer("B")])
    session = AgentSession(Agent("top", model=top, subagents=[kid]), crew_catalog(),
                           SessionStore(tmp_path / "s.db"))
    chat = ChatView(session)
    await session.run("one")
    await session.run("two")
    session.flush()
    first, second = cards(chat.messages, "call_0")
    assert first["subagent"]["task"] == "first"
    assert first["subagent"]["messages"][-1]["text"] == "turn one child answer"
    # The unknown sub-agent never ran: its card says what the call asked, nothing more.
    assert second["subagent"]["task"] == "second" and second["subagent"]["messages"] == []
    # A view opened afterwards draws the same.
    assert cards(ChatView(session).messages, "call_0")[1]["subagent"] == second["subagent"]


@pytest.mark.parametrize("with_store", [True, False])
async def test_the_whole_text_of_an_earlier_run_comes_from_that_run(
        sent: SentMessages, tmp_path: Path, with_store: bool) -> None:
    kid = Agent("kid", model=FakeProvider([answer("first child answer"),
                                           answer("second child answer")]))
    top = FakeProvider([delegations(("call_0", "kid", "t1")), answer("A"),
                        delegations(("call_0", "kid", "t2")), answer("B")])
    session = AgentSession(Agent("top", model=top, subagents=[kid]), crew_catalog(),
                           SessionStore(tmp_path / "s.db") if with_store else None)
    chat = ChatView(session)
    await session.run("x")
    await session.run("y")
    session.flush()
    first, second = (card["subagent"]["messages"][-1] for card in cards(chat.messages, "call_0"))
    assert (first["text"], second["text"]) == ("first child answer", "second child answer")
    for drawn in (first, second):
        reply = chat._full_text({"message_id": drawn["id"], "field": "text",
                                 "path": ["call_0"]})
        assert reply["text"] == drawn["text"]
