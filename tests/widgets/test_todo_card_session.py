"""``TodoCard(session)``: following the plan again (``follow``) keeps following the
session's turns, so a step in progress spins while a turn runs."""

from __future__ import annotations

import asyncio

from neta_nb.widgets import TodoCard

from ..support.sessions import answer, calls, make_session
from ..support.timing import wait_until


async def test_following_the_plan_again_keeps_the_turns() -> None:
    plan = {"todos": [{"id": "1", "content": "A", "status": "in_progress"}]}
    hold = asyncio.Event()
    session, _, _ = make_session([calls(("t1", "todo", plan)), [hold.wait, *answer("done")]])
    card = TodoCard(session)
    card.follow(session.todo)
    task = session.start("go")
    await wait_until(lambda: bool(card.todos))
    assert card.working is True and card.paused is False
    hold.set()
    await task
    assert card.working is False and card.paused is True
    card.unfollow()
    task = session.start("again")
    assert card.working is False  # unfollowed: hears no turn
    hold.set()
    await task
