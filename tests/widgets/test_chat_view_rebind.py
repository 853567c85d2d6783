"""A chat view switched to another session and back (the sidebar does this) while its
session waits for the user: the approval is shown again, so the turn does not wait for
ever — the view is the session's approver."""

from __future__ import annotations

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
