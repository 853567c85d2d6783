"""Crew: the sub-agents a session's ``delegate`` calls run (DESIGN §8, issue 15).

A child is a real :class:`~neta_nb.runtime.session.AgentSession`: its own agent definition,
model (the parent's provider unless the child names one), tools resolved by the same
resolver from the child's own config — so never more than that config allows, never a
globally disabled tool and never the parent's grants — and its own history, stored as a
session of its own linked to the parent's call (``SessionRecord.parent_id`` /
``parent_call_id``).

What the parent sees of a child:

* ``subagent_start {id, agent, task}``, then every event of the child unchanged inside
  ``subagent_event {id, event}`` (a grandchild's arrive wrapped twice), then
  ``subagent_end {id, agent, status, result, usage}``; ``id`` is the ``delegate`` call's.
* The child's tokens in the parent's ``token_update`` (the turn total), with the split
  per child in :attr:`Crew.usage`; the context figure stays the parent's own.
* The child's approval requests, wrapped like any event. The crew remembers which child
  asked (by the request's id), so the parent's ``approve(id, …)`` — the path a chat view
  already uses — reaches the child that waits for it. A child counts the parent's
  attached approvers as its own (see ``Approvals``), so it waits for the parent's UI
  instead of falling to the policy.
* The answer: the child's final text is the ``delegate`` result; a child that failed, was
  stopped or hit a limit gives an error result saying so.

Stop: :meth:`Crew.stop` ends one child (the parent goes on and reads the stop as the
call's error result); the parent's own Stop cancels its tool calls, and a ``delegate``
call that is cancelled stops its child first. The parent then waits (bounded) for its
children to close their histories before it closes its own, so every session's history
stays valid and each child's ``subagent_end`` arrives before the parent's ``done``.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from pathlib import Path
from typing import Any, Protocol

from ....events import (
    ApprovalDecision,
    ApprovalRequestEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    SubagentEndEvent,
    SubagentEvent,
    SubagentStartEvent,
    TokenUpdateEvent,
    TurnUsage,
    prevalidated,
)
from ....messages import Message, SubagentRun, SubagentStatus, ToolDefinition
from ....providers.base import Provider
from ....store.session_store import SessionStore
from ....store.session_writes import SessionPersistence
from ....tools import ToolCatalog
from ....tools.base import ToolFailure
from ....tools.builtin.delegate import delegate_definition
from ....tools.notebook.page import NotebookPage
from ...agent import Agent
from ...approvals import ApprovalPolicy, Approvals
from ...usage_meter import add_usage
from ..state import SessionState
from ..workspace import Workspace
from .tool_limits import bound_result

__all__ = ["STOP_WAIT", "ChildRun", "ChildSession", "Crew", "CrewLink", "NewSession",
           "add_usage", "subagent_history", "wrap_event"]

log = logging.getLogger(__name__)

STOP_WAIT = 10.0
"""Seconds a stopping parent waits for its children to close their histories (a child
stops at its next await; this only bounds one that cannot)."""


_NOTED: frozenset[type] = frozenset({TokenUpdateEvent, SubagentEvent, ApprovalRequestEvent,
                                    DoneEvent, ErrorEvent})
"""The kinds of a child's events the crew notes something of (``Crew._forward``; the
others, deltas above all, it only passes on)."""


_WRAPPED_FIELDS = frozenset({"id", "event"})
def wrap_event(call_id: str, event: Event) -> SubagentEvent:
    """``SubagentEvent(id=call_id, event=event)`` without validating ``event`` again: it
    is already a validated, frozen event, and every event of a child goes through here —
    each streamed delta (see :func:`~neta_nb.events.prevalidated`)."""
    return prevalidated(SubagentEvent, {"type": "subagent_event", "id": call_id,
                                        "event": event}, _WRAPPED_FIELDS)


class ChildSession(Protocol):
    """What the crew uses of a child session (an ``AgentSession``)."""

    @property
    def id(self) -> str: ...
    @property
    def messages(self) -> list[Message]: ...
    @property
    def subagents(self) -> Mapping[str, ChildSession]: ...

    async def run(self, prompt: str, *, mentions: Sequence[Any] | None = None
                  ) -> Message | None: ...
    def cancel(self) -> bool: ...
    def approve(self, call_id: str, decision: ApprovalDecision, *,
                subagent: Sequence[str] | None = None, text: str | None = None) -> bool: ...
    def stop_subagent(self, call_id: str) -> bool: ...
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]: ...


class NewSession(Protocol):
    """How the crew makes a child session: the session class of its parent."""

    def __call__(self, agent: Agent, catalog: ToolCatalog | None = None,
                 store: SessionStore | None = None, *, working_dir: str | Path | None = None,
                 namespace: dict[str, Any] | None = None,
                 approval_policy: ApprovalPolicy = "reject", provider: Provider | None = None,
                 crew_link: CrewLink | None = None,
                 notebook_page: NotebookPage | None = None) -> ChildSession: ...


@dataclass(frozen=True)
class CrewLink:
    """How a child session hangs below its parent: what it takes from the parent."""

    parent_id: str
    call_id: str
    """The parent's ``delegate`` call that runs the child."""
    depth: int
    """1 for a top-level agent's children, 2 for theirs, …"""
    max_depth: int
    """The top-level agent's ``max_subagent_depth``: it holds for the whole tree."""
    approvals: Approvals
    """The parent's approvals: its UI answers the child's requests."""
    saved: SessionPersistence | None = None
    """The parent's writes: a child of a deleted parent stores nothing."""
    turn_end: Callable[[], Awaitable[None] | None] | None = None
    """The end of the turn the child's runs inside (its parent's, and so the top-level
    session's): a cell run the child does not wait for (``run_cell(wait=False)``) starts
    after it; started when the child's own turn ended, its code would hold the parent's
    turn. ``None``: the child's own."""


@dataclass(eq=False)
class ChildRun:
    """One delegation: the child session and how it is going."""

    call_id: str
    agent: Agent
    task: str
    session: ChildSession
    usage: TurnUsage = field(default_factory=TurnUsage)
    status: SubagentStatus = "running"
    stop_reason: str | None = None
    error: str | None = None
    stop_requested: bool = False
    runner: asyncio.Task[Any] | None = None
    answer: Message | None = None

    def record(self) -> SubagentRun:
        return SubagentRun(session_id=self.session.id, agent=self.agent.name, task=self.task,
                           status=self.status, input_tokens=self.usage.input_tokens,
                           output_tokens=self.usage.output_tokens,
                           api_calls=self.usage.api_calls, cost_usd=self.usage.cost_usd)


class Crew:
    """The children of one session: ``state`` is the parent's (its events, the turn
    whose total a child's figures join, where a run's record is kept), ``workspace`` what
    the parent works with (its agent, provider, catalog and places, which a child
    shares); ``new_session`` makes a child (the parent's session class)."""

    def __init__(self, state: SessionState, workspace: Workspace, new_session: NewSession, *,
                 depth: int, max_depth: int) -> None:
        self._state = state
        self._workspace = workspace
        self._new_session = new_session
        self.depth = depth
        self.max_depth = max_depth
        self._emit = state.emit
        self._runs: dict[str, ChildRun] = {}
        self._asked: dict[str, list[ChildRun]] = {}
        """Approval request id → the children (or the children above a grandchild) that
        asked under it, first asker first: ids come from the models and may repeat."""
        self._slots: asyncio.Semaphore | None = None

    # --- what the parent offers -----------------------------------------------------------
    @property
    def can_delegate(self) -> bool:
        """The agent has sub-agents and is above the nesting limit."""
        return bool(self._workspace.agent.subagents) and self.depth < self.max_depth

    def definition(self, base: ToolDefinition) -> ToolDefinition:
        """The ``delegate`` definition this agent's model is shown."""
        return delegate_definition(base, [(child.name, child.description)
                                          for child in self._workspace.agent.subagents])

    # --- state ------------------------------------------------------------------------------
    @property
    def runs(self) -> dict[str, ChildRun]:
        """The delegations of the current (or latest) turn, by call id."""
        return dict(self._runs)

    @property
    def usage(self) -> dict[str, TurnUsage]:
        """Each child's tokens over the current (or latest) turn, by call id."""
        return {call_id: run.usage for call_id, run in self._runs.items()}

    @property
    def turn_usage(self) -> TurnUsage:
        """All children's tokens over the current (or latest) turn."""
        total = TurnUsage()
        for run in self._runs.values():
            total = add_usage(total, run.usage)
        return total

    def begin_turn(self) -> None:
        self._runs.clear()
        self._asked.clear()

    # --- commands ---------------------------------------------------------------------------
    def stop(self, call_id: str) -> bool:
        """Stop one child (the ``id`` of its ``subagent_start``) — or a grandchild, at any
        depth: the chat view offers Stop on every running nested card and names it by
        that id alone; the parent goes on. False when no such child is running."""
        run = self._runs.get(call_id)
        if run is None:
            # Not ours: a running child may have run it (its own crew looks further down).
            return any(child.session.stop_subagent(call_id)
                       for child in list(self._runs.values()) if child.status == "running")
        if run.status != "running":
            return False
        if run.stop_requested:
            return True  # already stopping: a second cancel would cut its closing short
        run.stop_requested = True
        if not run.session.cancel() and run.runner is not None:
            run.runner.cancel()  # still waiting for a free slot: it never starts
        return True

    def stop_all(self) -> None:
        for call_id in list(self._runs):
            self.stop(call_id)

    def approve(self, request_id: str, decision: ApprovalDecision,
                path: Sequence[str] | None = None, text: str | None = None) -> bool:
        """Answer a child's (or a grandchild's) approval request: the one at ``path``
        (the ids of the runs it came through, outermost first), or without a path the
        first still waiting under ``request_id``."""
        askers = self._asked.get(request_id, [])
        if path:
            run = self._runs.get(path[0])
            if run is None or not run.session.approve(request_id, decision,
                                                      subagent=list(path[1:]), text=text):
                return False
            if run in askers:
                askers.remove(run)
        else:
            run = next((each for each in askers
                        if each.session.approve(request_id, decision, text=text)), None)
            if run is None:
                return False
            askers.remove(run)
        if not askers:
            self._asked.pop(request_id, None)
        return True

    async def wait_stopped(self) -> None:
        """Until every child of this turn has closed its history (bounded by
        :data:`STOP_WAIT`)."""
        runners = [run.runner for run in self._runs.values()
                   if run.runner is not None and not run.runner.done()]
        if runners:
            await asyncio.wait(runners, timeout=STOP_WAIT)

    # --- running a child ------------------------------------------------------------------
    async def delegate(self, call_id: str, name: str, task: str) -> str:
        """Run ``task`` on the sub-agent ``name`` and return its answer; raises
        :class:`ToolFailure` (the call's error result) when it cannot give one."""
        agent = self._workspace.agent.subagent(name)
        if agent is None:
            names = ", ".join(child.name for child in self._workspace.agent.subagents)
            raise ToolFailure(f"There is no sub-agent '{name}'. Delegate to one of: {names}.")
        if not task.strip():
            raise ToolFailure("The task is empty. Write the whole task for the sub-agent: "
                              "it sees nothing of this conversation.")
        run = ChildRun(call_id=call_id, agent=agent, task=task, session=self._spawn(agent, call_id))
        self._runs[call_id] = run
        self._emit(SubagentStartEvent(id=call_id, agent=agent.name, task=task))
        self._state.record_subagent(call_id, run.record())
        run.session.subscribe(partial(self._forward, run))
        run.runner = asyncio.ensure_future(self._run(run))
        # A Stop that lands before the runner's first step cancels a coroutine that never
        # starts, so none of _run's own closing runs: the child must still end.
        run.runner.add_done_callback(lambda _: self._end(run))
        try:
            await asyncio.wait([run.runner])
        except asyncio.CancelledError:
            # The parent's call is being stopped (its Stop, its timeout): the child stops
            # with it and the parent waits for it to close (wait_stopped).
            self.stop(call_id)
            raise
        return self._outcome(run)

    def _spawn(self, agent: Agent, call_id: str) -> ChildSession:
        state, place = self._state, self._workspace
        link = CrewLink(parent_id=state.id, call_id=call_id, depth=self.depth + 1,
                        max_depth=self.max_depth, approvals=state.approvals,
                        saved=state.saved, turn_end=place.notebook.turn_end)
        return self._new_session(agent, place.catalog, state.saved.store,
                                 working_dir=place.working_dir, namespace=place.namespace,
                                 approval_policy=state.approvals.policy,
                                 # No model of its own: the parent's provider.
                                 provider=place.provider if agent.model is None else None,
                                 crew_link=link,
                                 # The child works in the parent's notebook (its page, as
                                 # the parent's chat is on it); its proposals reach the
                                 # parent's chat as its approvals do.
                                 notebook_page=place.notebook_page)

    def _child_counted(self) -> None:
        """A sub-agent's figures changed: the turn total follows; the context figure is
        this session's own. A child's spend counts against this session's budgets: one
        that reaches a budget stops the turn, children and all, like Stop."""
        state = self._state
        turn = state.turn
        own = turn.usage if turn is not None else TurnUsage()
        running = self.turn_usage
        spending = state.spending
        place = self._workspace
        self._emit(TokenUpdateEvent(current=spending.turn_total(
            own, running if self._runs else None, place.provider.price),
            context=state.meter.context))
        if turn is not None and not turn.budget_stop and spending.over_budget(
                place.agent, turn.spend, running):
            turn.budget_stop = True
            state.cancel(self)

    def _slots_now(self) -> asyncio.Semaphore:
        if self._slots is None:
            self._slots = asyncio.Semaphore(self._workspace.agent.max_parallel_subagents)
        return self._slots

    async def _run(self, run: ChildRun) -> None:
        try:
            async with self._slots_now():
                if not run.stop_requested:
                    # The task is the parent model's text: an `@` in it is text.
                    run.answer = await run.session.run(run.task, mentions=())
        except asyncio.CancelledError:
            run.stop_reason = run.stop_reason or "cancelled"  # stopped before it started
        except Exception as exc:  # a bug below the child's own error handling: never fatal
            log.exception("sub-agent %s failed", run.agent.name)
            run.stop_reason, run.error = "error", f"{type(exc).__name__}: {exc}"
        self._end(run)

    def _end(self, run: ChildRun) -> None:
        """The child's final status, record and ``subagent_end`` (once)."""
        if run.status != "running":
            return
        if run.stop_requested and run.stop_reason is None:
            run.stop_reason = "cancelled"
        run.status = _status(run.stop_reason)
        self._state.record_subagent(run.call_id, run.record())
        # Bounded as the `delegate` result is: the event reaches every view's state.
        result = bound_result(self._result_text(run), self._workspace.agent.max_tool_result_chars)
        self._emit(SubagentEndEvent(id=run.call_id, agent=run.agent.name, status=run.status,
                                    result=result, usage=run.usage))
        if run.status == "interrupted":
            self._state.interrupt()  # a kernel interrupt stops the whole tree

    def _forward(self, run: ChildRun, event: Event) -> None:
        self._emit(wrap_event(run.call_id, event))
        # Every delta of a child comes here: kinds are told by type (see events) and all
        # but the few noted kinds leave after one set lookup.
        kind = type(event)
        if kind not in _NOTED:
            return
        if kind is TokenUpdateEvent:
            assert isinstance(event, TokenUpdateEvent)
            run.usage = event.current  # a child's own total already holds its children
            self._state.record_subagent(run.call_id, run.record())
            self._child_counted()
        elif kind is SubagentEvent or kind is ApprovalRequestEvent:
            inner = event  # a grandchild's deltas come this way too
            while type(inner) is SubagentEvent:
                inner = inner.event
            if type(inner) is ApprovalRequestEvent:
                self._asked.setdefault(inner.id, []).append(run)
        elif kind is DoneEvent:
            assert isinstance(event, DoneEvent)
            run.stop_reason = event.stop_reason
        elif kind is ErrorEvent:
            assert isinstance(event, ErrorEvent)
            run.error = event.message

    def _result_text(self, run: ChildRun) -> str:
        """What the parent's model reads: the answer, or why there is none."""
        answer = run.answer.text.strip() if run.answer is not None else ""
        name = run.agent.name
        if run.status == "done":
            return answer or f"Sub-agent '{name}' finished without writing an answer."
        so_far = f"\n\nWhat it had written so far:\n{answer}" if answer else ""
        if run.status == "cancelled":
            return f"The user stopped sub-agent '{name}' before it finished.{so_far}"
        if run.status == "interrupted":
            return f"Sub-agent '{name}' was interrupted (a kernel interrupt).{so_far}"
        if run.stop_reason == "max_model_calls":
            why = (f"it used its {run.agent.max_model_calls} model calls without "
                   "finishing")
        elif run.stop_reason == "context_full":
            why = "its context window is full"
        elif run.stop_reason == "budget":
            why = "it reached its budget"
        else:
            why = f"it failed: {run.error}" if run.error else "it failed"
        return f"Sub-agent '{name}' did not finish: {why}.{so_far}"

    def _outcome(self, run: ChildRun) -> str:
        text = self._result_text(run)
        if run.status != "done":
            raise ToolFailure(text)
        return text


def _status(stop_reason: str | None) -> SubagentStatus:
    if stop_reason == "cancelled":
        return "cancelled"
    if stop_reason == "interrupted":
        return "interrupted"
    if stop_reason in (None, "error", "max_model_calls", "context_full", "budget"):
        return "error"  # (a child's own budget: it stopped before it was done)
    return "done"


def subagent_history(session: ChildSession, session_id: str) -> list[Message] | None:
    """The messages of the sub-agent session ``session_id`` if ``session`` holds it (the
    children of its current or latest turn, at any depth)."""
    stack: list[ChildSession] = list(session.subagents.values())
    while stack:
        child = stack.pop()
        if child.id == session_id:
            return child.messages
        stack.extend(child.subagents.values())
    return None
