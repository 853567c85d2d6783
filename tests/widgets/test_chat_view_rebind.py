"""A chat view switched to another session and back (the sidebar does this) while its
session waits for the user: the approval is shown again, so the turn does not wait for
ever — the view is the session's approver."""

from __future__ import annotations

import asyncio

from neta_nb import AgentToolConfig, tool
from neta_nb.widgets import ChatView

from ..support.sessions import answer, calls, make_session
from ..support.timing import wait_until
from .conftest import SentMessages


async def test_a_pending_approval_survives_switching_away_and_back(sent: SentMessages) -> None:
    asking, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    other, _, _ = make_session([])
    chat = ChatView(asking)
    chat._view_opened({"view_id": "v"})
    task = asking.start("go")
    await wait_until(lambda: bool(chat.approvals))
    chat.bind(other)
    chat.bind(asking)
    assert [a["id"] for a in chat._sync({})["approvals"]] == ["g"]
    assert [a["id"] for a in chat.approvals] == ["g"]
    chat._command({"command": {"type": "approve", "id": "g", "decision": "allow_once"}})
    assert chat.approvals == []
    assert (await task) is not None and asking.messages[-1].text == "ok"


async def test_a_view_bound_after_a_turn_shows_that_turns_figures() -> None:
    session, _, _ = make_session([calls(("t", "todo", {"todos": []})), answer("ok")])
    earlier = ChatView(session)
    await session.run("go")
    said = earlier.current
    assert said["api_calls"] == 2
    later = ChatView(session)  # a second view, or the first one bound again
    assert {key: later.current[key] for key in ("input_tokens", "output_tokens",
                                                 "total_tokens", "api_calls")} == {
        key: said[key] for key in ("input_tokens", "output_tokens", "total_tokens",
                                   "api_calls")}
    earlier.bind(make_session([])[0])
    assert earlier.current["api_calls"] == 0  # a session with no turn: nothing to show
    earlier.bind(session)
    assert earlier.current["api_calls"] == 2


released = asyncio.Event()


@tool(requires_approval=True)
async def gated_wait(x: int) -> str:
    """Needs the user's approval, then runs until the test lets it end."""
    await released.wait()
    return f"waited {x}"


async def test_an_approval_answered_elsewhere_leaves_the_view(sent: SentMessages) -> None:
    """Answered from a cell (or another view), not by this view's buttons: the card goes
    when the call goes on, while it still runs — not at the turn's end."""
    released.clear()
    session, _, _ = make_session([calls(("g", "gated_wait", {"x": 1})), answer("ok")],
                                 extra=[gated_wait],
                                 agent_options={"tools": AgentToolConfig(
                                     enabled=["gated_wait"])})
    chat = ChatView(session)
    chat._view_opened({"view_id": "v"})
    task = session.start("go")
    await wait_until(lambda: bool(chat.approvals))
    assert session.approve("g", "allow_once")
    await wait_until(lambda: not chat.approvals)
    assert session.running  # the call runs on: only its approval is over
    released.set()
    await task
