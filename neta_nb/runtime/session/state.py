"""SessionState: what one session holds, with one owner — its history, token figures,
events, the turn in flight, compactions, the tool resolution cache, its store writes,
plan, approvals and money (:class:`~.spending.Spending`).

Everything else of a session works on this object: the turn runner, the tool runner, the
sub-agents, branching and resume read and change the state here, not one another's
attributes.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol

from ...events import Event, TodoUpdateEvent
from ...messages import SubagentRun
from ...providers.prices import ModelPrice
from ...store.session_store import CompactionRecord, SessionStore
from ...store.session_writes import SessionPersistence, deleted_warning, store_warning
from ...thinking import ThinkLevel, check_think_level
from ...todo import TodoStore
from ...tools.resolution.resolution_cache import ResolutionCache
from ..approvals import ApprovalPolicy, Approvals
from ..event_hub import EventHub
from ..history import History
from ..usage_meter import UsageMeter
from .spending import Spending
from .turn import Turn

__all__ = ["ParentLink", "SessionState"]


class ParentLink(Protocol):
    """What a child session takes from its parent (see
    :class:`~.tool_calls.subagents.CrewLink`): its approvals (the parent's UI answers the
    child's requests) and its writes (a child of a deleted parent stores nothing)."""

    @property
    def approvals(self) -> Approvals: ...

    @property
    def saved(self) -> SessionPersistence | None: ...


class _Children(Protocol):
    def stop_all(self) -> None: ...


class SessionState:
    """The state of one session (see the module's docstring). ``describe`` gives the
    record fields only the session's owner knows (its agent, links and cost)."""

    def __init__(self, session_id: str, store: SessionStore | None,
                 describe: Callable[[], dict[str, Any]], *, context_window: int,
                 window_assumed: bool, think_level: ThinkLevel | None,
                 approval_policy: ApprovalPolicy, parent: ParentLink | None = None) -> None:
        self.id = session_id
        self.events = EventHub()
        self.emit: Callable[[Event], None] = self.events.emit
        """Says an event to every subscriber (bound once: the hot paths keep it)."""
        emit = self.emit
        self.saved = SessionPersistence(session_id, store, describe,
                                        on_behind=lambda f: emit(store_warning(f)),
                                        on_deleted=lambda: emit(deleted_warning()),
                                        parent=parent.saved if parent else None)
        self.meter = UsageMeter(context_window, window_assumed=window_assumed)
        self.spending = Spending(emit)
        self.history = History(self.saved, self.meter, emit)
        self.approvals = Approvals(approval_policy, emit,
                                   parent=parent.approvals if parent else None)
        self.todo = TodoStore()
        self.compactions: list[CompactionRecord] = []
        """Every compaction of this session (the chat view draws a marker for each)."""
        self.think_level: ThinkLevel | None = check_think_level(think_level)
        """The level chosen for this session (``None``: the agent's or model's default)."""
        self.turn: Turn | None = None
        """The turn in flight, from ``start()`` (or ``run()``) to its ``done``."""
        self.compacting = False
        self.notebook_restore: dict[str, Any] | None = None
        """What the last rewind or fork with the notebook did (``SessionRecord``'s)."""
        self.resolved = ResolutionCache()
        self.unusable_usage_said = False
        """A server's unusable usage report was warned about (once a session)."""
        self.rewind_listeners: list[Callable[[], None]] = []
        self.level_listeners: list[Callable[[ThinkLevel], None]] = []

    def save_record(self, **fields: Any) -> None:
        """Store the session's record (with ``fields`` changed)."""
        self.saved.save_record(self.history.messages, **fields)

    # --- the turn in flight -------------------------------------------------------------
    def cancel(self, children: _Children) -> bool:
        """Stop the turn in flight (its ``children`` first): see ``AgentSession.cancel``."""
        turn = self.turn
        if turn is None or turn.task is None or turn.task.done():
            return False
        if turn.cancel_requested:
            return True  # stopping already: a second cancel would outlive the turn
        turn.cancel_requested = True
        children.stop_all()
        if turn.begun:
            turn.task.cancel()
        # else: start() was called but its task has not run yet — cancelling the task now
        # would skip the turn entirely (no user message, no `done`); it starts and stops.
        return True

    def interrupt(self) -> None:
        """A tool (or a sub-agent) was interrupted by a kernel interrupt: stop the turn
        like Stop does."""
        turn = self.turn
        if turn is not None and turn.task is not None and not turn.task.done():
            turn.interrupted = turn.cancel_requested = True
            turn.task.cancel()

    def record_subagent(self, call_id: str, record: SubagentRun) -> None:
        """Keep a child's run on its ``delegate`` call's execution (resume rebuilds the
        nested card from it) and store the message."""
        turn = self.turn
        message = turn.message if turn is not None else None
        if message is None:
            return
        for execution in message.metadata.tool_executions:
            if execution.id == call_id:
                execution.subagent = record
                self.history.changed(message)
                return

    def todo_written(self) -> None:
        """The plan changed (a ``todo`` call): said, and kept on the record."""
        todo = self.todo
        summary = todo.summary()
        self.emit(TodoUpdateEvent(todos=[i.model_dump() for i in todo.read()],
                                  summary=summary.model_dump()))
        self.save_record(todo_summary=summary.model_dump())

    # --- figures ------------------------------------------------------------------------
    def restore_figures(self, price: ModelPrice | None) -> None:
        """The plan, figures and spend that the messages give, in place of what the
        session had counted (a resume, a branch, a rewind)."""
        messages = self.history.messages
        self.todo = TodoStore.hydrate_from_history(list(messages))
        self.spending.price = price
        self.meter.restore(messages, self.compactions)
        self.spending.restore(messages, self.compactions)
