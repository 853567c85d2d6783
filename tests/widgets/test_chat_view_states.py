"""The chat view shows what the runtime does: only a running turn makes it busy, cards say
when a call waits for the user or was rejected or stopped, and nothing keeps spinning after
a turn ends."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, ScriptedProvider, ToolCatalog, tool
from neta_nb.events import ProgressEvent
from neta_nb.widgets import ChatView
from neta_nb.widgets.chat.drawing.render import render_window

from ..support.sessions import FakeProvider, answer, calls
from ..support.timing import wait_until
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


# --- cards: waiting for approval, rejected, cancelled --------------------------------

_gates: list[asyncio.Event] = []


def new_gate() -> asyncio.Event:
    """A gate for this test's loop (an asyncio.Event binds to the first loop it waits on)."""
    _gates.append(asyncio.Event())
    return _gates[-1]


@tool(core=True, requires_approval=True, label="Deploy")
async def deploy(target: str) -> str:
    """Needs approval; waits for the test's gate once running."""
    await _gates[-1].wait()
    return f"deployed {target}"


@tool(core=True, label="Slow")
async def slow() -> str:
    """Runs until the test's gate opens."""
    await _gates[-1].wait()
    return "slow done"


def _session(responses: list[list[Any]], **options: Any) -> AgentSession:
    provider = FakeProvider(responses)
    return AgentSession(Agent("helper", model=provider), ToolCatalog([deploy, slow]),
                        provider=provider, **options)


def _card(chat: ChatView, session: AgentSession) -> dict[str, Any]:
    assistant = next(m for m in reversed(session.messages) if m.role == "assistant")
    item = chat._item(assistant.id)
    if item is None:  # not this turn's: render it as the window does
        item = next(i for i in render_window(session.messages, [])[0] if i["id"] == assistant.id)
    return dict(item["cards"][0])


async def test_a_call_waiting_for_approval_says_so_then_runs() -> None:
    gate = new_gate()
    session = _session([calls(("d1", "deploy", {"target": "prod"})), answer("ok")])
    chat = ChatView(session)
    events: list[Any] = []
    session.subscribe(events.append)
    task = session.start("ship it")
    await wait_until(lambda: bool(chat.approvals))
    assert _card(chat, session)["status"] == "waiting"
    chat._command({"command": {"type": "approve", "id": "d1", "decision": "allow_once"}})
    await wait_until(lambda: _card(chat, session)["status"] == "running")
    # The view hears of it while the tool runs (a progress event redraws the card).
    assert any(isinstance(e, ProgressEvent) and e.id == "d1" for e in events)
    gate.set()
    await task
    card = chat.messages[-2]["cards"][0]
    assert (card["status"], card["result"]) == ("done", "deployed prod")
    chat.close()


async def test_a_rejected_call_ends_rejected_and_the_model_reads_why() -> None:
    session = _session([calls(("d1", "deploy", {"target": "prod"})), answer("fine")])
    chat = ChatView(session)
    task = session.start("ship it")
    await wait_until(lambda: bool(chat.approvals))
    chat._command({"command": {"type": "approve", "id": "d1", "decision": "reject"}})
    await task
    card = chat.messages[-2]["cards"][0]
    assert card["status"] == "rejected"
    (result,) = [p for m in session.messages for p in m.tool_results]
    assert result.is_error and "did not allow" in result.content
    chat.close()


async def test_no_approver_and_a_rejecting_policy_is_rejected_too() -> None:
    session = _session([calls(("d1", "deploy", {"target": "prod"})), answer("fine")])
    await session.run("ship it")
    assistant = next(m for m in session.messages if m.role == "assistant")
    assert assistant.metadata.tool_executions[0].status == "rejected"


@pytest.mark.parametrize("stage", ["waiting", "running"])
async def test_stop_leaves_cancelled_cards_and_nothing_running(stage: str) -> None:
    gate = new_gate()
    call = ("d1", "deploy", {"target": "prod"}) if stage == "waiting" else ("s1", "slow", {})
    session = _session([calls(call), answer("never")])
    chat = ChatView(session)
    task = session.start("go")
    await wait_until(lambda: any(m.metadata.tool_executions for m in session.messages
                                 if m.role == "assistant"))
    await wait_until(lambda: _card(chat, session)["status"] == stage)
    chat._command({"command": {"type": "stop"}})
    await task
    (card,) = [card for item in chat.messages for card in item.get("cards", [])]
    assert card["status"] == "cancelled"
    assert chat.running is False and chat.approvals == []
    gate.set()
    chat.close()
