"""A sub-agent's run as the parent's chat view draws it: the child's transcript rebuilt
from the child's own events while it runs, or read from the store once it is over.

The parent's stream carries the child's events unchanged, wrapped in ``subagent_event``
(DESIGN §8). :class:`SubagentTranscript` turns them into the same
:class:`~neta_nb.messages.Message` objects the child session stores — an assistant message
per model response, with its thinking, text, and tool and skill executions — so the nested
card is drawn by the same :func:`~neta_nb.widgets.chat.state.render_message` as the top level, live
and after a resume alike. Deltas go to the batcher with the transcript's ``path`` (the ids of
the ``delegate`` calls from the top), so the child streams through the parent's batches,
at most one message per frame, and a view resynced from a snapshot gets the child's state
(its items and the response it is streaming) inside the card.

:class:`StoredSubagents` draws a finished child from its stored session (the
``subagent`` record on the parent's ``delegate`` execution names it), for a resumed
session, a page reload after the turn or a second view — or from the child session itself
while the parent still holds it (a view bound after the child started).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol

from ...events import (
    ApprovalRequestEvent,
    DoneEvent,
    ErrorEvent,
    Event,
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
)
from ...messages import (
    Message,
    Part,
    SkillExecution,
    SubagentStatus,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolExecution,
    new_id,
)
from ...store.sqlite import SessionStore
from ...todo import TodoStore
from ..state_bounds import SUBAGENT_BYTES, SUBAGENT_ITEMS, fit_window, task_preview
from .state import (
    ChatItem,
    LiveResponse,
    SubagentPart,
    SubagentPlan,
    full_text,
    keep_streamed,
    render_message,
    renderable,
)

__all__ = ["OpSink", "StoredSubagents", "SubagentTranscript", "is_delta", "unwrap"]

MAX_STORED_DEPTH = 4
"""Nested children drawn from the store (the runtime's own limit is 2 by default)."""


class OpSink(Protocol):
    """What a transcript sends its changes to (the chat view's batcher)."""

    def text(self, op: str, delta: str, path: tuple[str, ...] = ()) -> None: ...

    def op(self, op: str, path: tuple[str, ...] = (), **fields: Any) -> None: ...

    def upsert(self, item_id: str, path: tuple[str, ...] = ()) -> None: ...


def is_delta(event: Event) -> bool:
    """A streamed delta, however deeply wrapped: it changes a live response only, never a
    card's status line (the path every delta takes stays short)."""
    while type(event) is SubagentEvent:
        event = event.event
    return type(event) is TokenEvent or type(event) is ThinkingDeltaEvent


def unwrap(event: SubagentEvent) -> tuple[list[str], Event]:
    """The ids of the runs an event is nested in (outermost first) and the event itself."""
    ids = [event.id]
    inner: Event = event.event
    while type(inner) is SubagentEvent:
        ids.append(inner.id)
        inner = inner.event
    return ids, inner


class SubagentTranscript:
    """One child's run, followed from its events (see the module docstring)."""

    def __init__(self, run_id: str, agent: str, task: str, *,
                 parent_path: tuple[str, ...] = ()) -> None:
        self.id = run_id
        self.agent = agent
        self.task = task
        self.path: tuple[str, ...] = (*parent_path, run_id)
        self.status: SubagentStatus = "running"
        self.result: str | None = None
        self.messages: list[Message] = []
        self.live: LiveResponse | None = None
        self.activity: str | None = None
        """Label of the tool or skill running now."""
        self.plan: SubagentPlan | None = None
        self.tokens: dict[str, int] = {"input_tokens": 0, "output_tokens": 0, "api_calls": 0}
        self.children: dict[str, SubagentTranscript] = {}
        # Thinking and text the views streamed for a message, by its id: they keep theirs.
        self.streamed: dict[str, tuple[str, str]] = {}
        self._by_id: dict[str, Message] = {}
        self._open: Message | None = None  # the response tool events belong to
        self._running: dict[str, str] = {}  # call id -> label, of tools and skills running

    # --- following events ---------------------------------------------------------------
    # Most events are deltas: kinds are told by type (see events), and a delta is done
    # with after stream().
    def stream(self, event: Event, sink: OpSink) -> bool:
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
            return is_delta(event.event)  # a run this transcript never saw start
        return False

    def apply(self, event: Event, sink: OpSink) -> None:
        """Follow one of the child's own events (a grandchild's still wrapped)."""
        if self.stream(event, sink):
            return
        if type(event) is ThinkingDoneEvent:
            if self.live is not None and self.live.thinking_open:
                self.live.thinking_open = False
                sink.op("thinking_done", self.path)
        elif type(event) is SubagentEvent:
            child = self.children.get(event.id)
            if child is not None:
                child.apply(event.event, sink)  # a grandchild's: it unwraps it in turn
                self._upsert_call(event.id, sink)  # the card's status line changed
        else:
            self._apply_boundary(event, sink)

    def _apply_boundary(self, event: Event, sink: OpSink) -> None:
        if isinstance(event, TokenUpdateEvent):
            self._close_live(sink)  # a model response ended
            current = event.current
            self.tokens = {"input_tokens": current.input_tokens,
                           "output_tokens": current.output_tokens,
                           "api_calls": current.api_calls}
        elif isinstance(event, ToolCallEvent):
            message = self._response(sink)
            message.parts.append(ToolCallPart(id=event.id, name=event.name, args=event.args))
            message.metadata.tool_executions.append(ToolExecution(
                id=event.id, name=event.name, label=event.label, args=event.args))
            self._running[event.id] = event.label or event.name
            self._changed(message, sink)
        elif isinstance(event, ToolResultEvent):
            execution = self._tool(event.id)
            if execution is not None:
                execution.result = event.result
                if execution.status in ("running", "waiting"):
                    execution.status = "error" if event.is_error else "done"
            self._running.pop(event.id, None)
            self._changed_call(event.id, sink)
        elif isinstance(event, ApprovalRequestEvent):
            execution = self._tool(event.id)
            if execution is not None:
                execution.status = "waiting"
                self._changed_call(event.id, sink)
        elif isinstance(event, SkillStartEvent):
            message = self._response(sink)
            message.parts.append(ToolCallPart(id=event.id, name=event.name))
            message.metadata.skill_executions.append(SkillExecution(
                id=event.id, name=event.name, label=event.label))
            self._running[event.id] = event.label or event.name
            self._changed(message, sink)
        elif isinstance(event, ProgressEvent):
            skill = self._skill(event.id)
            if skill is not None:
                skill.percent, skill.step, skill.detail = event.percent, event.step, event.detail
                self._changed_call(event.id, sink)
        elif isinstance(event, SkillEndEvent):
            skill = self._skill(event.id)
            if skill is not None:
                skill.status, skill.result = event.status, event.result
                if event.status == "done":
                    skill.percent = 100.0
            self._running.pop(event.id, None)
            self._changed_call(event.id, sink)
        elif isinstance(event, TodoUpdateEvent):
            summary = event.summary
            self.plan = {"done": int(summary.get("completed", 0)),
                         "total": int(summary.get("total", 0))}
        elif isinstance(event, SubagentStartEvent):
            self.children[event.id] = SubagentTranscript(event.id, event.agent, event.task,
                                                         parent_path=self.path)
            self._running[event.id] = event.agent
            self._changed_call(event.id, sink)
        elif isinstance(event, SubagentEndEvent):
            child = self.children.get(event.id)
            if child is not None:
                child.finish(event, sink)
            self._running.pop(event.id, None)
            self._changed_call(event.id, sink)
        elif isinstance(event, DoneEvent):
            self._close_live(sink)
        elif isinstance(event, ErrorEvent):
            self._close_live(sink)
            message = self._open or self._new_response(sink)
            message.metadata.error = event.message
            message.metadata.interrupted = "error"
            self._changed(message, sink)
        # compaction and warning change nothing the card draws.

    def finish(self, event: SubagentEndEvent, sink: OpSink) -> None:
        """The run ended (``subagent_end``)."""
        self._close_live(sink)
        self.status = event.status
        self.result = event.result
        self.activity = None
        self._running.clear()
        usage = event.usage
        if usage.api_calls or usage.total_tokens:
            self.tokens = {"input_tokens": usage.input_tokens,
                           "output_tokens": usage.output_tokens, "api_calls": usage.api_calls}
        for message in self.messages:  # what was still running stopped with it
            executions: list[ToolExecution | SkillExecution] = [
                *message.metadata.tool_executions, *message.metadata.skill_executions]
            for execution in executions:
                if execution.status in ("running", "waiting"):
                    execution.status = "cancelled"
                    sink.upsert(message.id, self.path)
        if event.status in ("cancelled", "interrupted") and self.messages:
            last = self.messages[-1]
            if last.metadata.interrupted is None:
                last.metadata.interrupted = event.status
                sink.upsert(last.id, self.path)

    # --- the transcript's messages --------------------------------------------------------
    def _open_live(self, sink: OpSink) -> LiveResponse:
        """A new live response (a model response starts streaming)."""
        opened = self._open
        if opened is not None and (opened.metadata.tool_executions
                                   or opened.metadata.skill_executions):
            self._open = None  # tools ran: the model answers in a new response
        live = self.live = LiveResponse(id=new_id("live_"))
        sink.op("live", self.path, id=live.id)
        return live

    def _close_live(self, sink: OpSink) -> None:
        """The streamed response becomes a message of the transcript (same node)."""
        live = self.live
        if live is None:
            return
        self.live = None
        thinking, text = "".join(live.thinking), "".join(live.text)
        parts: list[Part] = []
        if thinking:
            parts.append(ThinkingPart(text=thinking))
        if text:
            parts.append(TextPart(text=text))
        message = Message.assistant(parts)
        self._append(message)
        self.streamed[message.id] = (thinking, text)
        sink.op("end", self.path, id=message.id)
        sink.upsert(message.id, self.path)

    def _new_response(self, sink: OpSink) -> Message:
        message = Message.assistant([])
        self._append(message)
        sink.upsert(message.id, self.path)
        return message

    def _response(self, sink: OpSink) -> Message:
        """The response a tool call belongs to: the one just streamed."""
        self._close_live(sink)
        return self._open or self._new_response(sink)

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        self._by_id[message.id] = message
        self._open = message

    def _owner(self, call_id: str) -> Message | None:
        for message in reversed(self.messages):
            if any(call.id == call_id for call in message.tool_calls):
                return message
        return None

    def _tool(self, call_id: str) -> ToolExecution | None:
        message = self._owner(call_id)
        if message is None:
            return None
        return next((e for e in message.metadata.tool_executions if e.id == call_id), None)

    def _skill(self, call_id: str) -> SkillExecution | None:
        message = self._owner(call_id)
        if message is None:
            return None
        return next((e for e in message.metadata.skill_executions if e.id == call_id), None)

    def _changed(self, message: Message, sink: OpSink) -> None:
        self.activity = next(reversed(self._running.values()), None)
        sink.upsert(message.id, self.path)

    def _changed_call(self, call_id: str, sink: OpSink) -> None:
        message = self._owner(call_id)
        self.activity = next(reversed(self._running.values()), None)
        if message is not None:
            sink.upsert(message.id, self.path)

    def _upsert_call(self, call_id: str, sink: OpSink) -> None:
        message = self._owner(call_id)
        if message is not None:
            sink.upsert(message.id, self.path)

    # --- drawing ----------------------------------------------------------------------
    def find(self, path: Sequence[str]) -> SubagentTranscript | None:
        """The transcript at ``path`` below this one (``path`` starts with this id)."""
        if not path or path[0] != self.id:
            return None
        found: SubagentTranscript | None = self
        for run_id in path[1:]:
            found = found.children.get(run_id) if found is not None else None
        return found

    def item(self, message_id: str) -> ChatItem | None:
        """A message of the transcript as a streamed update draws it."""
        message = self._by_id.get(message_id)
        if message is None:
            return None
        item = render_message(message, self.messages.index(message), self.card_part_streamed)
        return keep_streamed(item, message, self.streamed.get(message_id))

    def card_part_streamed(self, execution: ToolExecution) -> SubagentPart | None:
        child = self.children.get(execution.id)
        return child.part(whole=False) if child is not None else None

    def card_part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        child = self.children.get(execution.id)
        return child.part(whole=True) if child is not None else None

    def part(self, *, whole: bool) -> SubagentPart:
        """The card's sub-agent part; ``whole``: with the transcript (a snapshot, the
        traits), else without it (the transcript streams as nested operations)."""
        messages: list[ChatItem] | None = None
        has_older = False
        if whole:
            items = [render_message(m, i, self.card_part_whole)
                     for i, m in enumerate(self.messages)]
            messages, has_older = bound_transcript(items)
        return {"agent": self.agent, "task": task_preview(self.task), "status": self.status,
                "activity": self.activity, "plan": self.plan, "tokens": dict(self.tokens),
                "messages": messages, "has_older": has_older,
                "live": self.live.snapshot() if whole and self.live is not None else None}

    def full_text(self, message_id: str, field_name: str, card_id: str | None) -> str:
        return full_text(self.messages, message_id, field_name, card_id)


def bound_transcript(items: list[ChatItem]) -> tuple[list[ChatItem], bool]:
    """The newest items of a child's transcript that widget state keeps inside its card
    (:data:`~neta_nb.widgets.state_bounds.SUBAGENT_ITEMS`,
    :data:`~neta_nb.widgets.state_bounds.SUBAGENT_BYTES`)."""
    kept = items[-SUBAGENT_ITEMS:]
    fitted, cut = fit_window(kept, SUBAGENT_BYTES)
    return fitted, cut or len(kept) < len(items)


class StoredSubagents:
    """Sub-agent cards drawn from the child sessions a store holds: the ``subagent``
    record of a ``delegate`` execution names the child session, whose messages are read
    once and kept while the child is over (a running one is read again)."""

    def __init__(self, store: SessionStore | None,
                 live: Callable[[str], list[Message] | None] | None = None) -> None:
        self._store = store
        self._live = live
        """The messages of a child session still in memory (``None``: not one of them)."""
        self._cache: dict[str, list[Message]] = {}

    def messages(self, session_id: str, *, final: bool) -> list[Message]:
        # A view bound after a child started has no transcript of it: the child's own
        # session, while the parent holds it, is the whole truth (a store may lag behind
        # its background writes, and a session without a store has nothing else).
        live = self._live(session_id) if self._live is not None else None
        if live is not None:
            return live
        if self._store is None:
            return []
        cached = self._cache.get(session_id)
        if cached is not None:
            return cached
        try:
            messages = self._store.load_messages(session_id)
        except Exception:  # a damaged or missing child: the card shows its summary alone
            return []
        if final:
            self._cache[session_id] = messages
        return messages

    def part(self, execution: ToolExecution, depth: int = 0) -> SubagentPart | None:
        run = execution.subagent
        if run is None:
            return None
        messages = (self.messages(run.session_id, final=run.status != "running")
                    if depth < MAX_STORED_DEPTH else [])
        def nested(inner: ToolExecution) -> SubagentPart | None:
            return self.part(inner, depth + 1)
        items = [render_message(m, i, nested) for i, m in enumerate(messages)
                 if renderable(m) and m.role == "assistant"]
        bounded, has_older = bound_transcript(items)
        todo = TodoStore()
        todo.hydrate_from_history(messages)
        summary = todo.summary()
        plan: SubagentPlan | None = ({"done": summary.completed, "total": summary.total}
                                     if summary.total else None)
        return {"agent": run.agent, "task": task_preview(run.task), "status": run.status,
                "activity": None, "plan": plan,
                "tokens": {"input_tokens": run.input_tokens,
                           "output_tokens": run.output_tokens, "api_calls": run.api_calls},
                "messages": bounded, "has_older": has_older, "live": None}

    def find_messages(self, root: Sequence[Message], path: Sequence[str]) -> list[Message]:
        """The stored child's messages at ``path`` (ids of ``delegate`` calls from the
        top), or ``LookupError``."""
        messages: Sequence[Message] = root
        for run_id in path:
            execution = next((e for m in reversed(messages)
                              for e in m.metadata.tool_executions if e.id == run_id), None)
            if execution is None or execution.subagent is None:
                raise LookupError(f"no sub-agent run {run_id!r} in this session")
            messages = self.messages(execution.subagent.session_id,
                                     final=execution.subagent.status != "running")
        return list(messages)

