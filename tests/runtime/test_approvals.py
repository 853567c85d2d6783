"""Approvals: a broken policy, an approver that goes away, a decision that is not one of
allow_once / allow_always / reject — the gated tool never runs by accident and the turn
never hangs."""

from __future__ import annotations

import asyncio
import dataclasses
from typing import Any

import pytest

from neta_nb import AgentToolConfig
from neta_nb.events import PREVIEW_CHARS, ApprovalPreview
from neta_nb.runtime.session.tool_calls.toolbox import Toolbox
from neta_nb.tools import base
from neta_nb.tools.base import ToolContext

from ..support.sessions import (
    answer,
    answer_approvals,
    assert_valid_history,
    calls,
    guarded_op,
    make_session,
    ran,
)


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


async def test_a_python_call_asks_with_its_code_as_the_preview() -> None:
    """The approval shows the code that will run (``Tool.approval_preview``), bounded."""
    code = "print('hi')\n" + "x = 1\n" * 10_000
    session, rec, _ = make_session([calls(("p", "python", {"code": code})), answer("ok")],
                                   agent_options={"tools": AgentToolConfig(enabled=["python"])})
    session.attach_approver()
    answer_approvals(session, "reject")
    await asyncio.wait_for(session.run("x"), 5)
    preview = rec.of("approval_request")[0].preview
    assert preview is not None and preview.language == "python"
    assert preview.code == code[:PREVIEW_CHARS] and preview.cut == len(code) - PREVIEW_CHARS


@pytest.mark.parametrize("how", ["raises", "hangs", "not a preview"])
async def test_a_failing_preview_never_blocks_the_approval(
        how: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A tool's preview is its own code: when it raises, takes too long or answers
    nonsense, the request goes out without one and the decision is the user's as ever."""
    ran.clear()

    async def preview(_: ToolContext, args: dict[str, Any]) -> ApprovalPreview | None:
        if how == "raises":
            raise RuntimeError("preview bug")
        if how == "hangs":
            await asyncio.sleep(60)
        return "code"  # type: ignore[return-value]

    monkeypatch.setattr(base, "PREVIEW_WAIT", 0.2)
    previewed = dataclasses.replace(guarded_op, name="previewed_op", approval_preview=preview)
    session, rec, _ = make_session([calls(("g", "previewed_op", {"x": 1})), answer("ok")],
                                   extra=[previewed])
    session.attach_approver()
    answer_approvals(session, "allow_once")
    await asyncio.wait_for(session.run("x"), 5)
    assert rec.of("approval_request")[0].preview is None
    assert ran == ["guarded_op 1"]


async def test_a_refused_call_builds_no_context(monkeypatch: pytest.MonkeyPatch) -> None:
    """A call's context is made once it may run (a preview makes its own, only when the
    request goes to the user): a call the policy refuses costs none."""
    ran.clear()
    made: list[str] = []
    build = Toolbox.tool_context

    def counting(self: Toolbox, call_id: str, on_progress: base.ProgressCallback,
                 ) -> ToolContext:
        made.append(call_id)
        return build(self, call_id, on_progress)

    monkeypatch.setattr(Toolbox, "tool_context", counting)
    session, _, _ = make_session([calls(("g", "guarded_op", {"x": 1})), answer("ok")])
    await asyncio.wait_for(session.run("x"), 5)  # no approver: the policy rejects
    assert ran == [] and made == []
    assert session.messages[2].tool_results[0].is_error


async def test_an_approver_leaving_while_the_preview_is_made_leaves_it_to_the_policy(
        ) -> None:
    """The chat view closes while the tool describes the call: nobody will answer the
    request, so the policy decides instead of the turn waiting forever."""
    ran.clear()
    detach: list[Any] = []

    async def preview(_: ToolContext, args: dict[str, Any]) -> ApprovalPreview | None:
        detach[0]()
        await asyncio.sleep(0)
        return ApprovalPreview(code=f"guarded_op({args['x']})")

    previewed = dataclasses.replace(guarded_op, name="previewed_op", approval_preview=preview)
    session, rec, _ = make_session([calls(("g", "previewed_op", {"x": 1})), answer("ok")],
                                   extra=[previewed])
    detach.append(session.attach_approver())
    await asyncio.wait_for(session.run("x"), 5)
    assert ran == [] and "approval_request" not in rec.types
    assert "needs the user's approval" in session.messages[2].tool_results[0].content
