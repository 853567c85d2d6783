"""The chat view shows what the runtime does: only a running turn makes it busy, cards say
when a call waits for the user or was rejected or stopped, and nothing keeps spinning after
a turn ends."""

from __future__ import annotations

from typing import Any

from neta_nb import Agent, AgentSession, ScriptedProvider
from neta_nb.widgets import ChatView

from .conftest import SentMessages


def _ops(sent: SentMessages) -> list[dict[str, Any]]:
    return [op for batch in sent.of_kind("batch") for op in batch["ops"]]


async def test_compact_between_turns_leaves_the_view_idle(sent: SentMessages) -> None:
    session = AgentSession(Agent("demo", model=ScriptedProvider(), keep_recent_turns=1,
                                 compact_at=None))
    await session.run("Profile the data")
    await session.run("And again")
    chat = ChatView(session)
    sent.clear()
    event = await session.compact()
    assert event is not None
    assert chat.running is False
    # The marker is drawn, in the batches and in the saved window.
    assert any(op["op"] == "item" and op["item"]["role"] == "compaction" for op in _ops(sent))
    assert any(item["role"] == "compaction" for item in chat.messages)
    assert chat.context == session.context.model_dump()
    # The next turn runs and ends as usual.
    await session.run("Third time")
    assert chat.running is False
