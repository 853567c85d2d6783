"""Approvals: who decides whether a tool that needs the user's consent may run.

One :class:`Approvals` per session owns the decisions still pending, the tools the user
allowed "always" (for the rest of the session) and the count of attached approvers (UIs
that answer ``approval_request`` events, such as the chat view). With no approver
attached, the session's :data:`ApprovalPolicy` decides. Every path fails closed: only an
explicit allow runs the tool.

A proposed notebook edit (``neta_nb.tools.notebook``) is decided the same way: its request
carries the proposal, "allow" accepts it (with the user's own text when they changed it
before accepting), and with no one attached the policy decides, rejecting by default.
"""

from __future__ import annotations

import asyncio
import logging
import weakref
from collections.abc import Awaitable, Callable
from typing import Any, Literal, get_args

from ..events import ApprovalDecision, ApprovalPreview, ApprovalRequestEvent, Event
from ..messages import ToolCallPart
from ..tools.notebook.page import EditDecision

__all__ = ["ApprovalPolicy", "Approvals"]

log = logging.getLogger(__name__)

ApprovalPolicy = (
    Literal["reject", "allow"]
    | Callable[[str, dict[str, Any]], bool | Awaitable[bool]]
)
"""What decides a call that needs approval when no UI is attached: reject it, allow it,
or ask a function ``(tool_name, args) -> bool``."""

DECISIONS: tuple[str, ...] = get_args(ApprovalDecision)
_BY_POLICY = "policy"  # an approval nobody can answer any more: the policy decides


class Approvals:
    """Pending approval decisions, "allow always" grants and attached approvers."""

    def __init__(self, policy: ApprovalPolicy, emit: Callable[[Event], None], *,
                 parent: Approvals | None = None) -> None:
        self.policy: ApprovalPolicy = policy
        self._emit = emit
        self._approvers = 0
        # Each pending call's request and the answer to come, in the order asked.
        self._pending: dict[str, tuple[ApprovalRequestEvent, asyncio.Future[str]]] = {}
        self._texts: dict[str, str] = {}  # what the user accepted instead of a proposal
        self._always_allowed: set[str] = set()
        # A sub-agent's approvals: the parent's UI answers them (the request travels in a
        # `subagent_event`), so the child counts the parent's approvers as its own.
        self._parent = parent
        self._children: weakref.WeakSet[Approvals] = weakref.WeakSet()
        if parent is not None:
            parent.adopt(self)

    def adopt(self, child: Approvals) -> None:
        """``child`` (a sub-agent's approvals) waits for this session's approvers: when
        the last one leaves, its pending requests fall to its policy too."""
        self._children.add(child)

    @property
    def attached(self) -> bool:
        """A UI answers this session's requests: its own, or its parent's."""
        return self._approvers > 0 or (self._parent is not None and self._parent.attached)

    def _release_pending(self) -> None:
        """No one is left to answer: the policy decides what is still pending (a closed
        chat view must not leave a turn — or a child's — waiting forever)."""
        if self.attached:
            return
        for _request, future in list(self._pending.values()):
            if not future.done():
                future.set_result(_BY_POLICY)
        for child in list(self._children):
            child._release_pending()

    def pending(self) -> list[ApprovalRequestEvent]:
        """The requests still waiting for the user's answer, in the order asked (a view
        shown mid-turn draws them from here)."""
        return [request for request, future in self._pending.values() if not future.done()]

    def _waiting(self, request: ApprovalRequestEvent) -> asyncio.Future[str]:
        """The answer to ``request``, to come (the request is pending from now on)."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        self._pending[request.id] = (request, future)
        return future

    def attach(self) -> Callable[[], None]:
        """Declare that a UI will answer approval requests; returns a function that
        detaches it (calling it twice detaches once)."""
        self._approvers += 1
        detached = False

        def detach() -> None:
            nonlocal detached
            if detached:
                return
            detached = True
            self._approvers -= 1
            self._release_pending()

        return detach

    def allows_always(self, name: str) -> bool:
        """The user answered "allow always" for the tool ``name`` in this session."""
        return name in self._always_allowed

    def answer(self, call_id: str, decision: ApprovalDecision, *,
               text: str | None = None) -> bool:
        """Resolve a pending request. False when it is no longer pending (the turn was
        stopped meanwhile: a harmless race with Stop). ``text``: for a proposed edit the
        user accepted after changing it, the text they accepted."""
        if decision not in DECISIONS:
            raise ValueError(f"unknown approval decision {decision!r}; "
                             f"choose one of {', '.join(DECISIONS)}")
        if text is not None and not isinstance(text, str):
            raise ValueError("an accepted edit's text must be a string")
        waiting = self._pending.get(call_id)
        if waiting is None or waiting[1].done():
            return False
        if text is not None and decision != "reject":
            self._texts[call_id] = text
        waiting[1].set_result(decision)
        return True

    async def decide_edit(self, call_id: str, name: str, args: dict[str, Any],
                          proposal: dict[str, Any], *,
                          accept_without_asking: bool = False) -> EditDecision:
        """Whether the user accepts a proposed notebook edit, and the text they accepted
        when they changed it first (``None``: the proposal as it was). Asked of the
        attached UI like an approval; ``accept_without_asking`` (the agent's option)
        accepts at once (the call's card still shows the diff, from its result). Who
        decided is said (``by``): the model is not told the user rejected an edit no one
        was asked about."""
        call = ToolCallPart(id=call_id, name=name, args=args)
        if accept_without_asking:
            return EditDecision(True, None, "agent")
        if not self.attached:
            allowed, _ = await self._by_policy(call, "")
            return EditDecision(allowed, None, "policy")
        request = ApprovalRequestEvent(id=call.id, name=call.name, args=call.args,
                                       proposal=proposal)
        future = self._waiting(request)
        self._emit(request)
        try:
            decision = await future
        finally:
            self._pending.pop(call.id, None)
            text = self._texts.pop(call.id, None)
        if decision == _BY_POLICY:
            allowed, _ = await self._by_policy(call, "")
            return EditDecision(allowed, None, "policy")
        accepted = decision != "reject"
        return EditDecision(accepted, text if accepted else None, "user")

    async def decide_edits(self, asked: list[tuple[str, str, dict[str, Any], dict[str, Any]]],
                           *, accept_without_asking: bool = False) -> list[EditDecision]:
        """What the user decides on several proposed notebook changes shown together
        (``asked``: each one's call id, tool name, arguments and proposal, as
        :meth:`decide_edit` takes them): every request goes out at once, and the
        decisions come back in the same order once all are answered."""
        if accept_without_asking:
            return [EditDecision(True, None, "agent") for _ in asked]
        if not self.attached:
            decided = []
            for call_id, name, args, _proposal in asked:
                allowed, _ = await self._by_policy(ToolCallPart(id=call_id, name=name,
                                                                args=args), "")
                decided.append(EditDecision(allowed, None, "policy"))
            return decided
        waiting = []
        for call_id, name, args, proposal in asked:
            request = ApprovalRequestEvent(id=call_id, name=name, args=args,
                                           proposal=proposal)
            waiting.append(self._waiting(request))
            self._emit(request)
        decisions: list[EditDecision] = []
        try:
            await asyncio.gather(*waiting)
        finally:
            for call_id, *_ in asked:
                self._pending.pop(call_id, None)
                text = self._texts.pop(call_id, None)
                decisions.append(EditDecision(False, text, "user"))
        for index, ((call_id, name, args, _proposal), future) in enumerate(
                zip(asked, waiting, strict=True)):
            decision = future.result()
            if decision == _BY_POLICY:
                allowed, _ = await self._by_policy(ToolCallPart(id=call_id, name=name,
                                                                args=args), "")
                decisions[index] = EditDecision(allowed, None, "policy")
            elif decision != "reject":
                decisions[index] = EditDecision(True, decisions[index].text, "user")
            else:
                decisions[index] = EditDecision(False, None, "user")
        return decisions

    async def decide(self, call: ToolCallPart, *,
                     on_waiting: Callable[[], None] | None = None,
                     preview: Callable[[], Awaitable[ApprovalPreview | None]] | None = None,
                     ) -> tuple[bool, str]:
        """Whether ``call`` may run, and if not, the error text the model reads.
        ``on_waiting`` is called just before the request goes to the user (only then:
        a grant or the policy decides at once); ``preview`` says what the call will do,
        asked only when the request goes to the user (``tools.base.preview_call``)."""
        if call.name in self._always_allowed:
            return True, ""
        rejected = f"The user did not allow '{call.name}' to run."
        shown = await preview() if preview is not None and self.attached else None
        # Checked after the preview, which may take a while: an approver that left
        # meanwhile answers nothing, and the policy decides (no request left waiting).
        if self.attached:
            request = ApprovalRequestEvent(id=call.id, name=call.name, args=call.args,
                                           preview=shown)
            future = self._waiting(request)
            if on_waiting is not None:
                on_waiting()
            self._emit(request)
            try:
                decision = await future
            finally:
                self._pending.pop(call.id, None)
                # A text answered with a call's approval is no edit's: a later edit under
                # the same id (ids may repeat across responses) must not find it.
                self._texts.pop(call.id, None)
            if decision != _BY_POLICY:
                if decision == "allow_always":
                    self._always_allowed.add(call.name)
                return decision in ("allow_once", "allow_always"), rejected
        return await self._by_policy(call, rejected)

    async def _by_policy(self, call: ToolCallPart, rejected: str) -> tuple[bool, str]:
        policy = self.policy
        if policy == "allow":
            return True, ""
        if policy == "reject":
            return False, (f"'{call.name}' needs the user's approval and no one was "
                           f"there to give it, so it did not run.")
        try:
            verdict = policy(call.name, dict(call.args))
            if not isinstance(verdict, bool):
                verdict = await verdict
        except Exception as exc:
            log.exception("approval policy failed for %s", call.name)
            return False, (f"'{call.name}' did not run: deciding whether to allow it "
                           f"failed ({type(exc).__name__}: {exc}).")
        return bool(verdict), rejected
