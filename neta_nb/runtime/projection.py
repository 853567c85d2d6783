"""ConversationProjection: one conversation as a chat shows it, from its events alone.

Fed every event of a session in order (DESIGN §4), a projection holds what a chat draws:
the history (messages by id, compaction markers), the response streaming now, whether a
turn runs, the plan, the token figures, the approvals waiting for an answer and, for each
sub-agent run, the same projection of the child's own events (they arrive wrapped in
``subagent_event``), by path — so a child is described exactly like a parent. Built from
a stored history instead (:meth:`~ConversationProjection.from_history`: the plan from the
history's ``todo`` results; a sub-agent run nobody followed with
:meth:`~ConversationProjection.of_run`, its status and figures from the parent's record of
it) or from a live session (:meth:`~ConversationProjection.of_session`, the approvals
waiting from the sessions that asked), it holds the same; tests check that the two agree,
and that a chat drawn from either is the same.

The history events (``message_appended``, ``message_updated``) carry the session's own
:class:`~neta_nb.messages.Message` objects, so a projection shares them and costs no copy;
what it adds is where each is and what changed. Changes go to a :class:`ProjectionSink`
as view operations (stream text, upsert an item, a response starts or ends), each with the
``path`` of the run it belongs to (the ids of the ``delegate`` calls from the top). The
module is pure: no widget library, no session state read while events flow.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ..events import (
    ApprovalPreview,
    ApprovalRequestEvent,
    CompactionEvent,
    ContextUsage,
    DoneEvent,
    Event,
    MessageAppendedEvent,
    MessageUpdatedEvent,
    ProgressEvent,
    SkillEndEvent,
    SkillStartEvent,
    SubagentEndEvent,
    SubagentEvent,
    SubagentStartEvent,
    ThinkingDeltaEvent,
    ThinkingDoneEvent,
    TodoUpdateEvent,
    TokenEvent,
    TokenUpdateEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnStartEvent,
    TurnUsage,
    is_delta,
    unwrap,
)
from ..messages import Message, SubagentRun, SubagentStatus, new_id
from ..store.records import CompactionRecord
from ..todo import TodoStore, TodoSummary
from .projection_sink import NullSink, ProjectionSink
from .usage_meter import turn_figures

if TYPE_CHECKING:
    from .session import AgentSession

__all__ = ["ConversationProjection", "LiveResponse", "NullSink", "PendingApproval",
           "ProjectionSink", "shown"]


@dataclass
class LiveResponse:
    """The assistant response being streamed, before the session has appended it; text
    kept as chunks, joined only when asked (never a string grown per delta)."""

    id: str
    thinking: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    thinking_open: bool = False

    def snapshot(self) -> dict[str, Any]:
        return {"id": self.id, "thinking": "".join(self.thinking), "text": "".join(self.text),
                "thinking_open": self.thinking_open}


@dataclass
class PendingApproval:
    """A tool call waiting for the user's decision: this session's own (``path`` empty)
    or a sub-agent's, ``path`` the runs it is nested in and ``agent`` the one asking."""

    id: str
    name: str
    args: dict[str, Any]
    path: list[str] = field(default_factory=list)
    agent: str | None = None
    proposal: dict[str, Any] | None = None
    """A proposed notebook edit to accept or reject (see ``ApprovalRequestEvent``)."""
    preview: ApprovalPreview | None = None
    """What the call will do, as its tool shows it (see ``ApprovalRequestEvent``)."""


def shown(message: Message, *, nested: bool = False) -> bool:
    """User and assistant messages are drawn; tool results live in their cards, and the
    messages a compaction injects for the model are not part of the conversation shown.
    Inside a sub-agent's card only the child's responses are (its prompt is the card's
    task)."""
    if message.metadata.compacted:
        return False
    return message.role == "assistant" or (message.role == "user" and not nested)


class ConversationProjection:
    """One conversation as a chat shows it (see the module's docstring). ``path`` is
    empty for a top-level session; a sub-agent run's projection has its path, its
    ``agent`` and its ``task``."""

    def __init__(self, *, path: tuple[str, ...] = (), agent: str = "",
                 task: str = "") -> None:
        self.path = path
        self.agent = agent
        self.task = task
        self.messages: list[Message] = []
        self.compactions: list[CompactionRecord] = []
        self.live: LiveResponse | None = None
        self.streamed: dict[str, tuple[str, str]] = {}
        """Thinking and text the views streamed for a message, by its id: a view keeps
        what it streamed, so a long answer crosses the wire once."""
        self.running = False
        """A turn runs: from ``turn_start`` to its ``done`` (one owner of this fact)."""
        self.status: SubagentStatus = "running"
        """A sub-agent run's status (``subagent_end`` settles it)."""
        self.activity: str | None = None
        """Label of the tool, skill or sub-agent running now."""
        self.todos: list[dict[str, Any]] = []
        self.plan: tuple[int, int] | None = None
        """(completed, total) of the plan, once it has one."""
        self.usage = TurnUsage()
        """The current (or latest) turn's figures, as its last ``token_update`` said."""
        self.context: ContextUsage | None = None
        self.approvals: list[PendingApproval] = []
        """Waiting approvals, in the order asked, the sub-agents' among them (kept by
        the top-level projection only)."""
        self.children: dict[str, ConversationProjection] = {}
        """Sub-agent runs by their ``delegate`` call id (the latest run of an id)."""
        self.session_id: str | None = None
        """A sub-agent run's own session, once the parent's record of the run names it."""
        self._by_session: dict[str, ConversationProjection] = {}
        self._index: dict[str, int] = {}
        self._owner: dict[str, str] = {}  # call id -> id of the message that made it
        self._running_calls: dict[str, str] = {}  # call id -> label, running now
        self._nested = bool(path)

    # --- building -----------------------------------------------------------------------
    @classmethod
    def from_history(cls, messages: Iterable[Message],
                     compactions: Sequence[CompactionRecord] = (), *,
                     path: tuple[str, ...] = (), agent: str = "", task: str = ""
                     ) -> ConversationProjection:
        """A projection of a stored (or any) history, as the events would have built it."""
        projection = cls(path=path, agent=agent, task=task)
        for message in messages:
            projection._add(message)
        projection.compactions = list(compactions)
        projection.usage = turn_figures(projection.messages)
        plan = TodoStore.hydrate_from_history(projection.messages)
        projection._show_plan([item.model_dump() for item in plan.read()], plan.summary())
        return projection

    @classmethod
    def of_run(cls, run: SubagentRun, messages: Iterable[Message], *,
               path: tuple[str, ...]) -> ConversationProjection:
        """A sub-agent run this projection did not follow, at ``path``: its child
        session's history (``messages``) with the status and figures of the parent's
        record of the run (``run``, on the ``delegate`` call's execution)."""
        projection = cls.from_history(messages, path=path, agent=run.agent, task=run.task)
        projection.session_id = run.session_id
        projection.status = run.status
        projection.usage = TurnUsage(input_tokens=run.input_tokens,
                                     output_tokens=run.output_tokens,
                                     total_tokens=run.input_tokens + run.output_tokens,
                                     api_calls=run.api_calls, cost_usd=run.cost_usd)
        return projection

    @classmethod
    def of_session(cls, session: AgentSession) -> ConversationProjection:
        """A projection of ``session`` as it is now — its history, plan, figures, the
        answer it is streaming and its sub-agents running — to be followed with the
        session's events from here on."""
        projection = cls.from_history(session.messages, session.compactions)
        projection._take_state_of(session)
        return projection

    def _take_state_of(self, session: AgentSession) -> None:
        self.running = session.running
        if self.usage.api_calls and session.provider.price is not None:
            # The session's cost from its owner, as its token_update says it.
            self.usage = self.usage.model_copy(update={"session_cost_usd": session.cost_usd})
        self._show_plan([item.model_dump() for item in session.todo.read()],
                        session.todo.summary())
        self.context = session.context
        partial = session.streaming_message if session.running else None
        if partial is not None and partial.parts:
            # Bound mid-answer: start from what already streamed; the events continue it.
            self.live = LiveResponse(id=new_id("live_"),
                                     thinking=[partial.thinking] if partial.thinking else [],
                                     text=[partial.text] if partial.text else [],
                                     thinking_open=_thinking_open(session))
        if session.running:
            for call_id, child in session.subagents.items():
                run = next((e.subagent for m in reversed(self.messages)
                            for e in m.metadata.tool_executions if e.id == call_id), None)
                projection = ConversationProjection.from_history(
                    child.messages, child.compactions, path=(*self.path, call_id),
                    agent=child.agent.name, task=run.task if run is not None else "")
                projection._take_state_of(child)
                if run is not None:
                    projection.status = run.status
                self.children[call_id] = projection
                self._link(projection, child.id)
        if session.running and not self._nested:
            # Made while calls wait for the user: the sessions that asked say which.
            self.approvals = _waiting_calls(session, [], None)

    def _show_plan(self, todos: list[dict[str, Any]], summary: TodoSummary) -> None:
        self.todos = todos
        self.plan = (summary.completed, summary.total) if summary.total else None

    # --- reading ------------------------------------------------------------------------
    def message(self, message_id: str) -> Message | None:
        index = self._index.get(message_id)
        return self.messages[index] if index is not None else None

    def index_of(self, message_id: str) -> int | None:
        return self._index.get(message_id)

    def owner(self, call_id: str) -> Message | None:
        """The message that made the tool call ``call_id`` (the latest, as ids repeat
        across responses)."""
        message_id = self._owner.get(call_id)
        return self.message(message_id) if message_id is not None else None

    @property
    def last_assistant(self) -> Message | None:
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message
        return None

    def run_for(self, call_id: str, session_id: str | None) -> ConversationProjection | None:
        """The sub-agent run of a ``delegate`` call this projection followed: by the
        session its record names (call ids come from the model and repeat across turns),
        else — the record not written yet — by the call id."""
        if session_id is not None:
            return self._by_session.get(session_id)
        # No record: the run has just started (its record follows at once) — or the call
        # never started one (an unknown sub-agent), and the latest run of this id is an
        # earlier call's, whose record names its session.
        child = self.children.get(call_id)
        return child if child is not None and child.session_id is None else None

    def run_with(self, path: Sequence[str], message_id: str) -> ConversationProjection | None:
        """The run at ``path`` that holds the message ``message_id``: call ids repeat
        across turns, so an earlier run of the same ids is looked at too."""
        runs = [self]
        for run_id in path:
            runs = [child for run in runs for child in run._runs_of(run_id)]
        return next((run for run in runs if run.index_of(message_id) is not None), None)

    def _runs_of(self, call_id: str) -> list[ConversationProjection]:
        latest = self.children.get(call_id)
        earlier = [run for run in self._by_session.values()
                   if run.path[-1] == call_id and run is not latest]
        return [latest, *earlier] if latest is not None else earlier

    def answered(self, call_id: str, path: Sequence[str] | None) -> bool:
        """An approval was answered: it leaves :attr:`approvals`. Two children's calls
        can share an id, so the one that goes is the one at ``path`` (the session's own
        has none) — or, with no path, the first under that id, as the session answers."""
        for index, approval in enumerate(self.approvals):
            if approval.id == call_id and (path is None or approval.path == list(path)):
                del self.approvals[index]
                return True
        return False

    def running_run(self, run_id: str) -> ConversationProjection | None:
        """The sub-agent run ``run_id`` (at any depth) while it runs."""
        stack = list(self.children.values())
        while stack:
            run = stack.pop()
            if run.path[-1] == run_id and run.status == "running":
                return run
            stack.extend(run.children.values())
        return None

    def find(self, path: Sequence[str]) -> ConversationProjection | None:
        """The run at ``path`` below this projection (``()``: this one)."""
        found: ConversationProjection | None = self
        for run_id in path:
            found = found.children.get(run_id) if found is not None else None
        return found

    def shown(self, message: Message) -> bool:
        return shown(message, nested=self._nested)

    # --- following events ---------------------------------------------------------------
    # Most events are deltas: kinds are told by type (see events), and a delta is done
    # with after stream().
    def stream(self, event: Event, sink: ProjectionSink) -> bool:
        """Follow ``event`` if it is a streamed delta — of this run, or of a run below it
        (still wrapped) — and say whether it was one."""
        if type(event) is TokenEvent:
            live = self.live if self.live is not None else self._open_live(sink)
            if live.thinking_open:
                live.thinking_open = False
                sink.op("thinking_done", self.path)
            live.text.append(event.text)
            sink.text("text", event.text, self.path)
            return True
        if type(event) is ThinkingDeltaEvent:
            live = self.live if self.live is not None else self._open_live(sink)
            live.thinking_open = True
            live.thinking.append(event.text)
            sink.text("thinking", event.text, self.path)
            return True
        if type(event) is SubagentEvent:
            child = self.children.get(event.id)
            if child is not None:
                return child.stream(event.event, sink)
            return is_delta(event.event)  # a run this projection never saw start
        return False

    def apply(self, event: Event, sink: ProjectionSink) -> None:
        """Follow one event of this session (a sub-agent's still wrapped)."""
        if self.stream(event, sink):
            return
        if type(event) is MessageAppendedEvent:
            self._appended(event.message, sink)
        elif type(event) is MessageUpdatedEvent:
            # By its id: an update of a message this projection never saw appended (it
            # was made after the message came) changes nothing here.
            index = self._index.get(event.message.id)
            if index is not None:
                self._add(event.message, index=index)
                if self.shown(event.message):
                    sink.upsert(event.message.id, self.path)
        elif type(event) is ThinkingDoneEvent:
            if self.live is not None and self.live.thinking_open:
                self.live.thinking_open = False
                sink.op("thinking_done", self.path)
        elif type(event) is SubagentEvent:
            self._child_event(event, sink)
        else:
            self._boundary(event, sink)

    # Complex on purpose (C901): one short branch per event kind.
    def _boundary(self, event: Event, sink: ProjectionSink) -> None:  # noqa: C901
        if isinstance(event, TurnStartEvent):
            self.running = True
            self.usage = TurnUsage()
            # What the views streamed of older answers is drawn from their items now;
            # the last answer is redrawn first (its cards may change), so keep its own.
            last = self.last_assistant
            self.streamed = ({last.id: self.streamed[last.id]}
                             if last is not None and last.id in self.streamed else {})
        elif isinstance(event, TokenUpdateEvent):
            self.usage, self.context = event.current, event.context
        elif isinstance(event, ProgressEvent):
            if self.approvals:
                self.answered(event.id, [])  # allowed: it runs (however it was answered)
            self._changed_call(event.id, sink)
        elif isinstance(event, ToolCallEvent | SkillStartEvent):
            self._running_calls[event.id] = event.label or event.name
            self._changed_call(event.id, sink)
        elif isinstance(event, ToolResultEvent | SkillEndEvent):
            if self.approvals:
                self.answered(event.id, [])  # rejected, or over
            self._running_calls.pop(event.id, None)
            self._changed_call(event.id, sink)
        elif isinstance(event, ApprovalRequestEvent):
            if not self._nested:
                self.approvals.append(PendingApproval(event.id, event.name, dict(event.args),
                                                      proposal=event.proposal,
                                                      preview=event.preview))
        elif isinstance(event, TodoUpdateEvent):
            summary = event.summary
            self._show_plan(list(event.todos), TodoSummary(
                completed=int(summary.get("completed", 0)), total=int(summary.get("total", 0))))
        elif isinstance(event, CompactionEvent):
            self.compactions.append(CompactionRecord(
                after_message=len(self.messages), tokens_before=event.tokens_before,
                tokens_after=event.tokens_after, messages_folded=event.messages_folded))
            sink.upsert(f"compaction-{len(self.compactions) - 1}", self.path)
        elif isinstance(event, SubagentStartEvent):
            self.children[event.id] = ConversationProjection(
                path=(*self.path, event.id), agent=event.agent, task=event.task)
            self._running_calls[event.id] = event.agent
            self._changed_call(event.id, sink)
        elif isinstance(event, SubagentEndEvent):
            child = self.children.get(event.id)
            if child is not None:
                child.finish(event, sink)
            self._running_calls.pop(event.id, None)
            # Its questions can no longer be answered.
            self.approvals = [a for a in self.approvals if a.path[:1] != [event.id]]
            self._changed_call(event.id, sink)
        elif isinstance(event, DoneEvent):
            self._close_live(sink)
            self.running = False
            self._running_calls.clear()
            self.activity = None
            if not self._nested:
                self.approvals = []
        # warning changes nothing a chat draws from the history.

    def _child_event(self, event: SubagentEvent, sink: ProjectionSink) -> None:
        """A child's own event other than a delta (a grandchild's wrapped twice): into
        its projection; the card that holds it changes too (its status line)."""
        child = self.children.get(event.id)
        if child is None:
            return  # a run that started before this projection was made
        if not self._nested:
            ids, innermost = unwrap(event)
            if isinstance(innermost, ApprovalRequestEvent):
                asking = self.find(ids)
                self.approvals.append(PendingApproval(
                    innermost.id, innermost.name, dict(innermost.args), path=ids,
                    agent=asking.agent if asking is not None else child.agent,
                    proposal=innermost.proposal, preview=innermost.preview))
            elif self.approvals and isinstance(innermost, ProgressEvent | ToolResultEvent
                                               | SkillEndEvent):
                self.answered(innermost.id, ids)  # a child's call that waited goes on
        child.apply(event.event, sink)
        self._changed_call(event.id, sink)

    def finish(self, event: SubagentEndEvent, sink: ProjectionSink) -> None:
        """This sub-agent run ended (``subagent_end``)."""
        self._close_live(sink)
        # Its card is drawn whole from now on: what the views streamed of its answers is
        # no longer compared, and a run kept for a long chat holds no second copy of them.
        self.streamed = {}
        self.status = event.status
        self.activity = None
        self._running_calls.clear()
        self.running = False
        usage = event.usage
        if usage.api_calls or usage.total_tokens:
            self.usage = usage

    # --- the history --------------------------------------------------------------------
    def _add(self, message: Message, *, index: int | None = None) -> None:
        if index is None or index >= len(self.messages):
            index = len(self.messages)
            self.messages.append(message)
        else:
            self.messages[index] = message
        self._index[message.id] = index
        for part in message.tool_calls:
            self._owner[part.id] = message.id
        for execution in message.metadata.tool_executions:
            run = execution.subagent
            if run is not None and run.session_id not in self._by_session:
                child = self.children.get(execution.id)
                if child is not None and child.session_id is None:
                    self._link(child, run.session_id)

    def _link(self, child: ConversationProjection, session_id: str) -> None:
        child.session_id = session_id
        self._by_session[session_id] = child

    def _appended(self, message: Message, sink: ProjectionSink) -> None:
        self._add(message)
        ended = False
        if message.role == "assistant" and self.live is not None:
            # The streamed response is now a message: the view keeps its node, and the
            # text it streamed (see ``streamed``).
            live, self.live = self.live, None
            self.streamed[message.id] = ("".join(live.thinking), "".join(live.text))
            sink.op("end", self.path, id=message.id)
            ended = True
        if self.shown(message):
            sink.upsert(message.id, self.path)
        if ended and not self._nested:
            # A response's end goes out at once: its last words are not held back a
            # batch interval (the view draws the final text whole when it gets the end).
            sink.flush()

    def _open_live(self, sink: ProjectionSink) -> LiveResponse:
        live = self.live = LiveResponse(id=new_id("live_"))
        sink.op("live", self.path, id=live.id)
        return live

    def _close_live(self, sink: ProjectionSink) -> None:
        """A response that streamed but never became a message (the turn ended first)."""
        if self.live is not None:
            self.live = None
            sink.op("end", self.path, id=None)

    def _changed_call(self, call_id: str, sink: ProjectionSink) -> None:
        self.activity = next(reversed(self._running_calls.values()), None)
        message_id = self._owner.get(call_id)
        if message_id is not None:
            sink.upsert(message_id, self.path)


def _thinking_open(session: AgentSession) -> bool:
    """A thinking block of the turn in flight is streaming now."""
    turn = session.state.turn
    return turn is not None and turn.thinking_open


def _waiting_calls(session: AgentSession, path: list[str],
                   agent: str | None) -> list[PendingApproval]:
    """The approvals ``session`` and its running sub-agents wait for, as their owners
    (each session's ``Approvals``) hold them; ``path``: the runs ``session`` is nested in."""
    waiting = [PendingApproval(request.id, request.name, dict(request.args), path, agent,
                               proposal=request.proposal, preview=request.preview)
               for request in session.pending_approvals()]
    for call_id, child in session.subagents.items():
        if child.running:
            waiting += _waiting_calls(child, [*path, call_id], child.agent.name)
    return waiting
