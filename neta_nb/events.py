"""The event protocol between the runtime and any UI (DESIGN §4).

Server→UI events describe what an agent does, in order; a UI renders from them alone.
UI→server commands are what a user can ask of a running session.

Each is a pydantic model with a ``type`` discriminator. :data:`event_adapter` parses any
event from JSON or a dict; :data:`command_adapter` does the same for commands.

The event classes are final (nothing subclasses them), so code that every streamed delta
passes through tells kinds by ``type(event) is TokenEvent``: ``isinstance`` on a pydantic
model goes through ``ABCMeta``'s check (pydantic's metaclass derives from it), a few times
slower, and a sub-agent's delta meets several such tests on its way to a view.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SerializerFunctionWrapHandler,
    TypeAdapter,
    model_serializer,
)

from .messages import Message

__all__ = [
    "HISTORY_EVENTS",
    "ApprovalDecision",
    "ApprovalPreview",
    "ApprovalRequestEvent",
    "ApproveCommand",
    "Command",
    "CompactionEvent",
    "ContextUsage",
    "DoneEvent",
    "ErrorEvent",
    "Event",
    "MessageAppendedEvent",
    "MessageUpdatedEvent",
    "PreviewCell",
    "ProgressEvent",
    "SendCommand",
    "SetThinkingLevelCommand",
    "SkillEndEvent",
    "SkillStartEvent",
    "StopCommand",
    "SubagentEndEvent",
    "SubagentEvent",
    "SubagentStartEvent",
    "ThinkingDeltaEvent",
    "ThinkingDoneEvent",
    "TodoUpdateEvent",
    "TokenEvent",
    "TokenUpdateEvent",
    "ToolCallEvent",
    "ToolResultEvent",
    "TurnStartEvent",
    "TurnUsage",
    "WarningEvent",
    "command_adapter",
    "event_adapter",
    "is_delta",
    "message_appended_event",
    "message_updated_event",
    "parse_command",
    "parse_event",
    "prevalidated",
    "thinking_delta_event",
    "token_event",
    "unwrap",
]


class _Event(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


E = TypeVar("E", bound=_Event)

_new = object.__new__
# The setters of a pydantic model's four slots, taken once: calling a slot's own setter
# skips the attribute lookup ``object.__setattr__`` repeats on every call.
_set_dict, _set_fields_set, _set_extra, _set_private = (
    BaseModel.__dict__[name].__set__ for name in (
        "__dict__", "__pydantic_fields_set__", "__pydantic_extra__", "__pydantic_private__"))


def prevalidated(cls: type[E], values: dict[str, Any], fields_set: frozenset[str]) -> E:
    """``cls(**values)`` for values already known to be valid — every field, ``type``
    included, with ``fields_set`` the ones given rather than defaulted — built the way
    pydantic's ``model_construct`` does but without its per-field loop. For the events
    built once per streamed delta (a token from the provider's text, a child's event
    wrapped for its parent): validating them costs more than the rest of a delta's way to
    a view. The result equals the validated event (``tests/test_events.py`` checks it)."""
    event = _new(cls)
    _set_dict(event, values)
    _set_fields_set(event, set(fields_set))  # pydantic-core wants a set of its own
    _set_extra(event, None)
    _set_private(event, None)
    return event


_TEXT_FIELDS = frozenset({"text"})


def token_event(text: str) -> TokenEvent:
    """``TokenEvent(text=text)`` for a ``str`` already made encodable (the turn's delta)."""
    return prevalidated(TokenEvent, {"type": "token", "text": text}, _TEXT_FIELDS)


def thinking_delta_event(text: str) -> ThinkingDeltaEvent:
    """``ThinkingDeltaEvent(text=text)``, as :func:`token_event`."""
    return prevalidated(ThinkingDeltaEvent, {"type": "thinking_delta", "text": text},
                        _TEXT_FIELDS)


# --- server → UI ------------------------------------------------------------------


class TokenEvent(_Event):
    """A piece of the assistant's answer text, as it streams."""

    type: Literal["token"] = "token"
    text: str


class ThinkingDeltaEvent(_Event):
    type: Literal["thinking_delta"] = "thinking_delta"
    text: str


class ThinkingDoneEvent(_Event):
    type: Literal["thinking_done"] = "thinking_done"


class ToolCallEvent(_Event):
    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    label: str
    args: dict[str, Any]


class ToolResultEvent(_Event):
    type: Literal["tool_result"] = "tool_result"
    id: str
    name: str
    result: str
    is_error: bool = False
    outputs: list[dict[str, Any]] = Field(default_factory=list)
    """What the card displays besides the text (:class:`~neta_nb.messages.DisplayItem`
    dumps: figures, tables); empty for plain results, and then left out of the dump so a
    plain result keeps the shape it always had."""

    @model_serializer(mode="wrap")
    def _without_empty_outputs(self, handler: SerializerFunctionWrapHandler) -> Any:
        data = handler(self)
        if isinstance(data, dict) and not data.get("outputs", True):
            del data["outputs"]
        return data


class SkillStartEvent(_Event):
    type: Literal["skill_start"] = "skill_start"
    id: str
    name: str
    label: str


class ProgressEvent(_Event):
    type: Literal["progress"] = "progress"
    id: str
    percent: float
    step: str | None = None
    detail: str | None = None


class SkillEndEvent(_Event):
    type: Literal["skill_end"] = "skill_end"
    id: str
    name: str
    status: Literal["done", "error"]
    result: str | None = None


class TodoUpdateEvent(_Event):
    type: Literal["todo_update"] = "todo_update"
    todos: list[dict[str, str]]
    summary: dict[str, int]


class TurnUsage(_Event):
    """Usage accumulated over the current turn (all model calls since the user's prompt),
    as the provider reported it."""

    input_tokens: int = 0
    output_tokens: int = 0
    total_tokens: int = 0
    api_calls: int = 0
    unreported_calls: int = 0
    """Calls whose response carried no usage (some local servers never send it): their
    tokens are unknown, not zero, so the token figures are a lower bound — or, when every
    call is unreported, unknown (the stats show ``↑? ↓?``)."""
    cost_usd: float | None = None
    """What the turn's calls cost in USD, sub-agents included; ``None`` while a call's
    cost is unknown (its model has no price, or it reported no usage) — never 0 for
    "unknown"."""
    cost_split: dict[str, float] | None = None
    """The cost by kind: ``input``, ``cache_read``, ``cache_write``, ``output`` (this
    session's own calls) and ``subagents``."""
    session_cost_usd: float | None = None
    """The session's cost so far, this turn included (what the token line shows beside
    the turn's); ``None`` when unknown."""


class ContextUsage(_Event):
    """How full the model's context window is after the latest call; ``percent`` is
    computed by the runtime so every UI shows the same figure."""

    used_tokens: int = 0
    max_tokens: int = 0
    percent: float = 0.0
    estimate: Literal["unreported", "compaction"] | None = None
    """Why ``used_tokens`` is an estimate (~4 characters a token) rather than reported:
    the server sent no usage for the latest call (``unreported``), or the history was
    compacted since (``compaction``). ``None``: the provider's own figure. An estimate
    lasts until the next call that reports usage."""
    window_assumed: bool = False
    """``max_tokens`` is the default for a model nobody described: not in the model
    table, no ``context_window`` given, and the server did not report one."""


class TokenUpdateEvent(_Event):
    type: Literal["token_update"] = "token_update"
    current: TurnUsage
    context: ContextUsage


class PreviewCell(BaseModel):
    """One cell an approval names (the cells ``run_all`` runs, in order): its id, its
    name as the notebook shows it (``[2]``, or its position ``3``) and its first line."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    cell_id: str
    cell_label: str = ""
    first_line: str = ""


class ApprovalPreview(BaseModel):
    """What a call waiting for approval will do, as its tool describes it to the user
    (``Tool.approval_preview``): the code it will run and, for a notebook cell, which cell
    (its id, and its name as the notebook shows it: ``[2]``, or its position ``3``
    before it ran).
    ``code`` is at most :data:`PREVIEW_CHARS` long; ``cut`` counts the characters left
    out. A call that runs no code of its own says what it does in ``summary`` (shown in
    place of "It runs this code"; what a restart loses) and names the cells it acts on
    in ``cells``, in order (at most :data:`PREVIEW_CELLS`; ``cells_left_out`` counts the
    rest)."""

    model_config = ConfigDict(extra="forbid", frozen=True)

    code: str = ""
    language: str = "python"
    cell_id: str | None = None
    cell_label: str | None = None
    cut: int = 0
    summary: str = ""
    cells: list[PreviewCell] = []
    cells_left_out: int = 0

    def bounded(self) -> ApprovalPreview:
        """This preview with its code cut to :data:`PREVIEW_CHARS` (and its labels to a
        line, its cells to :data:`PREVIEW_CELLS`)."""
        code, cut = self.code, self.cut
        if len(code) > PREVIEW_CHARS:
            code, cut = code[:PREVIEW_CHARS], cut + len(code) - PREVIEW_CHARS
        cells = [cell.model_copy(update={
            "cell_id": cell.cell_id[:200], "cell_label": cell.cell_label[:80],
            "first_line": cell.first_line[:200]}) for cell in self.cells[:PREVIEW_CELLS]]
        return self.model_copy(update={
            "code": code, "cut": cut, "language": self.language[:40],
            "cell_id": None if self.cell_id is None else self.cell_id[:200],
            "cell_label": None if self.cell_label is None else self.cell_label[:80],
            "summary": self.summary[:PREVIEW_CHARS], "cells": cells,
            "cells_left_out": self.cells_left_out + len(self.cells) - len(cells)})


PREVIEW_CHARS = 20_000
"""The most of a call's code an approval request carries (a cell may be very long)."""
PREVIEW_CELLS = 200
"""The most cells an approval request names."""


class ApprovalRequestEvent(_Event):
    type: Literal["approval_request"] = "approval_request"
    id: str
    name: str
    args: dict[str, Any]
    proposal: dict[str, Any] | None = None
    """A proposed notebook edit to accept or reject (``neta_nb.tools.notebook``): the
    cell, its text before and after and their diff. ``None``: a call waiting to run."""
    preview: ApprovalPreview | None = None
    """What the call will do, as its tool shows it (the code it runs); ``None``: its
    arguments say it."""


class CompactionEvent(_Event):
    type: Literal["compaction"] = "compaction"
    tokens_before: int
    tokens_after: int
    messages_folded: int


class DoneEvent(_Event):
    type: Literal["done"] = "done"
    stop_reason: str


class ErrorEvent(_Event):
    type: Literal["error"] = "error"
    message: str
    retryable: bool = False


class WarningEvent(_Event):
    """Something the user should know that stops nothing — e.g. the store is behind: what
    is shown is not saved yet and is being retried. ``code`` names the label the views
    show (in their language, with ``params``); ``cleared`` says the condition is over."""

    type: Literal["warning"] = "warning"
    message: str
    code: str | None = None
    params: dict[str, str] = Field(default_factory=dict)
    cleared: bool = False


class TurnStartEvent(_Event):
    """A turn begins; its prompt follows as ``message_appended``. With ``message_*`` and
    ``done`` it makes the stream complete: a projection of events alone knows when the
    session runs and what its history holds."""

    type: Literal["turn_start"] = "turn_start"


class MessageAppendedEvent(_Event):
    """A message joined the history at ``index`` (a prompt, an answer, a tool result, a
    closing marker): said from the one place the history grows. ``message`` is the
    session's own object — later changes to it come as ``message_updated``; a subscriber
    that keeps it and needs it as of now copies it."""

    type: Literal["message_appended"] = "message_appended"
    index: int
    message: Message


class MessageUpdatedEvent(_Event):
    """A message already in the history changed: a card's status or result, an
    approval's decision, a sub-agent's run, the interruption marker of a cut turn."""

    type: Literal["message_updated"] = "message_updated"
    index: int
    message: Message


_HISTORY_FIELDS = frozenset({"index", "message"})


def message_appended_event(index: int, message: Message) -> MessageAppendedEvent:
    """``MessageAppendedEvent`` for the session's own (valid) message, not validated
    again: every tool round trip appends two."""
    return prevalidated(MessageAppendedEvent, {"type": "message_appended", "index": index,
                                               "message": message}, _HISTORY_FIELDS)


def message_updated_event(index: int, message: Message) -> MessageUpdatedEvent:
    """``MessageUpdatedEvent``, as :func:`message_appended_event`."""
    return prevalidated(MessageUpdatedEvent, {"type": "message_updated", "index": index,
                                              "message": message}, _HISTORY_FIELDS)


HISTORY_EVENTS = frozenset({"turn_start", "message_appended", "message_updated"})
"""The events that describe the history rather than what streams; a view that draws
only streamed cards may pass them by."""


class SubagentStartEvent(_Event):
    """A sub-agent starts on a task the parent delegated. ``id`` is the parent's
    ``delegate`` tool call id, so a UI places the child's card where the call is."""

    type: Literal["subagent_start"] = "subagent_start"
    id: str
    agent: str
    task: str


class SubagentEvent(_Event):
    """One of the child's own events, unchanged (so every card renders nested); a
    grandchild's arrive wrapped twice."""

    type: Literal["subagent_event"] = "subagent_event"
    id: str
    event: Event


class SubagentEndEvent(_Event):
    """The child finished. ``result`` is what the parent's model reads as the
    ``delegate`` result (the answer, or the reason it failed); ``usage`` the child's own
    tokens over its run."""

    type: Literal["subagent_end"] = "subagent_end"
    id: str
    agent: str
    status: Literal["done", "error", "cancelled", "interrupted"]
    result: str | None = None
    usage: TurnUsage = Field(default_factory=TurnUsage)


Event = Annotated[
    TokenEvent
    | ThinkingDeltaEvent
    | ThinkingDoneEvent
    | ToolCallEvent
    | ToolResultEvent
    | SkillStartEvent
    | ProgressEvent
    | SkillEndEvent
    | TodoUpdateEvent
    | TokenUpdateEvent
    | ApprovalRequestEvent
    | CompactionEvent
    | DoneEvent
    | ErrorEvent
    | WarningEvent
    | SubagentStartEvent
    | SubagentEvent
    | SubagentEndEvent
    | TurnStartEvent
    | MessageAppendedEvent
    | MessageUpdatedEvent,
    Field(discriminator="type"),
]
SubagentEvent.model_rebuild()

event_adapter: TypeAdapter[Event] = TypeAdapter(Event)


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


def parse_event(data: str | bytes | dict[str, Any]) -> Event:
    """Parse one event from JSON text or a plain dict."""
    if isinstance(data, dict):
        return event_adapter.validate_python(data)
    return event_adapter.validate_json(data)


# --- UI → server ------------------------------------------------------------------

ApprovalDecision = Literal["allow_once", "allow_always", "reject"]


class SendCommand(_Event):
    type: Literal["send"] = "send"
    text: str


class StopCommand(_Event):
    """Stop the running turn — or, with ``subagent``, only that child (the ``id`` of its
    ``subagent_start``); the parent goes on and reads the child's stop as an error
    result."""

    type: Literal["stop"] = "stop"
    subagent: str | None = None


class SetThinkingLevelCommand(_Event):
    type: Literal["set_thinking_level"] = "set_thinking_level"
    level: Literal["off", "minimal", "low", "medium", "high", "adaptive"]


class ApproveCommand(_Event):
    """Answer an ``approval_request``. ``subagent`` names who asked: the ids of the
    ``subagent_event`` wrappers the request came in (outermost first), ``[]`` for the
    session's own request. Two children's calls can share an id (a server that sends
    none gets ``call_0`` for each), so the path, not the id, says whose call may run;
    ``None`` (no path) answers the first request waiting under that id."""

    type: Literal["approve"] = "approve"
    id: str
    decision: ApprovalDecision
    subagent: list[str] | None = None
    text: str | None = None
    """For a proposed notebook edit accepted after the user changed it: the text they
    accepted instead of the proposal's."""


Command = Annotated[
    SendCommand | StopCommand | SetThinkingLevelCommand | ApproveCommand,
    Field(discriminator="type"),
]

command_adapter: TypeAdapter[Command] = TypeAdapter(Command)


def parse_command(data: str | bytes | dict[str, Any]) -> Command:
    if isinstance(data, dict):
        return command_adapter.validate_python(data)
    return command_adapter.validate_json(data)
