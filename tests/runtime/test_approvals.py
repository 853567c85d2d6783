"""Approvals: a broken policy, an approver that goes away, a decision that is not one of
allow_once / allow_always / reject — the gated tool never runs by accident and the turn
never hangs."""

from __future__ import annotations

import asyncio
from typing import Any

from ..support.sessions import answer, assert_valid_history, calls, make_session, ran


async def test_approval_policy_that_raises_gives_an_error_result() -> None:
    """An approval policy function is user code; when it raises, the call must get an
    error result — not escape run() and leave a tool call without a result."""
    ran.clear()

    def broken_policy(name: str, args: dict[str, Any]) -> bool:
        raise ValueError("policy bug")

    session, rec, provider = make_session(
        [calls(("g", "guarded_op", {"x": 1})), answer("carried on"), answer("next")],
        approval_policy=broken_policy)
    await session.run("x")  # must not raise
    assert ran == []
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "g" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"
    await session.run("y")
    assert_valid_history(provider.requests[-1].messages)


async def test_detaching_the_approver_while_a_request_is_pending_does_not_hang() -> None:
    """The chat view is closed while it shows an approval request: nobody will answer, so
    the policy (reject by default) must decide instead of the turn waiting forever."""
    ran.clear()
    session, rec, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("fine")])
    detach = session.attach_approver()
    task = session.start("x")
    await rec.wait_for("approval_request")
    detach()
    await asyncio.wait_for(task, 5)
    assert ran == []
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "g" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"


async def test_an_unknown_approval_decision_is_refused_not_taken_as_allow() -> None:
    """`approve(id, "deny")` from Python (no pydantic check on this path) must not run
    the tool: anything but allow_once / allow_always is not a permission."""
    ran.clear()
    session, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    session.attach_approver()
    refused: list[BaseException] = []

    def decide(event: Any) -> None:
        if event.type == "approval_request":
            try:
                session.approve(event.id, "deny")  # type: ignore[arg-type]
            except ValueError as exc:
                refused.append(exc)
                session.approve(event.id, "reject")

    session.subscribe(decide)
    await asyncio.wait_for(session.run("x"), 5)
    assert ran == []
    assert len(refused) == 1
    assert session.messages[2].tool_results[0].is_error
