"""What the chat view shows, derived from a session, and how changes travel to its views.

Two pieces, both free of widget code so they can be tested alone:

* :func:`render_message` / :func:`render_window` turn :class:`~neta_nb.messages.Message`
  history into *items*, plain dicts a view renders: user and assistant messages (thinking,
  text, tool and skill cards in call order, interruption and error) and compaction markers.
  ``pos`` orders them (``2 * index`` for the message at ``index`` of the full history, one
  less for a marker drawn before it), ``index`` is what "load older" pages by.
* :class:`OpBatcher` collects view operations (stream text, stream thinking, upsert an item,
  end the live response) into numbered batches, at most one per ``interval``. Consecutive
  text deltas are merged, an item upserted several times in one batch goes once (rendered
  when the batch leaves, so it is the newest state), and text is kept as lists of chunks —
  never a string grown per delta. A view that sees a gap in the numbering asks for a
  snapshot instead of guessing.

Measured in this project (DESIGN §5): one widget message per delta floods the Jupyter
server, which then silently drops messages; one batch per interval (``FLUSH_INTERVAL``)
carries 20,000 deltas with nothing lost.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, Required, TypedDict, cast

from ...messages import (
    DocumentPart,
    FileTextPart,
    ImagePart,
    Message,
    RunStatus,
    SkillExecution,
    ToolExecution,
)
from ...store.sqlite import CompactionRecord
from ..state_bounds import (
    NOTE_CHARS,
    RESULT_CHARS,
    TEXT_CHARS,
    THINKING_CHARS,
    args_json,
    fit_window,
    preview_args,
    preview_text,
    task_preview,
)
from ..streaming import FLUSH_INTERVAL, FrameThrottle, Scheduler, call_later_on_running_loop

__all__ = [
    "DELEGATE_TOOL",
    "FLUSH_INTERVAL",
    "WINDOW",
    "AgentChoice",
    "Approval",
    "BatchMessage",
    "ChatAttachment",
    "ChatCard",
    "ChatItem",
    "ChatOp",
    "ChatSnapshot",
    "CommandReply",
    "CommandRequest",
    "FullText",
    "FullTextRequest",
    "LiveResponse",
    "LiveSnapshot",
    "NoReply",
    "OlderPage",
    "OlderRequest",
    "OpBatcher",
    "SubagentPart",
    "SubagentPlan",
    "SubagentSource",
    "SwitchAgentReply",
    "SwitchAgentRequest",
    "ViewRequest",
    "WindowOp",
    "bounded_outputs",
    "full_text",
    "keep_streamed",
    "render_attachment",
    "render_message",
    "render_window",
    "renderable",
    "stored_run_part",
]


# --- the wire format ---------------------------------------------------------------------
# Each TypedDict mirrors the TS interface of the same name; the file named in its docstring
# holds the twin. A field changed on one side must change on the other.

class ChatCard(TypedDict):
    """A tool, skill or sub-agent card inside an assistant message (TS: ``ChatCard``,
    chat-view-traits.ts). Tool cards carry ``args``, skill cards ``percent``/``step``/
    ``detail``, sub-agent cards ``subagent``. A ``*_chars`` field says its field is a
    preview of a text that long (see ``neta_nb.widgets.state_bounds``)."""

    kind: Literal["tool", "skill", "subagent"]
    id: str
    name: str
    label: str
    status: RunStatus
    result: str | None
    args: NotRequired[dict[str, Any]]
    percent: NotRequired[float]
    step: NotRequired[str | None]
    detail: NotRequired[str | None]
    result_chars: NotRequired[int]
    args_chars: NotRequired[int]
    step_chars: NotRequired[int]
    detail_chars: NotRequired[int]
    outputs: NotRequired[list[dict[str, Any]]]
    """What the tool displayed (:class:`~neta_nb.messages.DisplayItem` dumps)."""
    subagent: NotRequired[SubagentPart]


class SubagentPlan(TypedDict):
    """A sub-agent's plan progress: ``done`` of ``total`` steps (TS: ``SubagentPlan``)."""

    done: int
    total: int


class SubagentPart(TypedDict):
    """What a sub-agent card adds to its ``delegate`` call's card (TS: ``SubagentPart``,
    chat-view-traits.ts): the child's name and task, how its run stands, what it is doing
    now, and its transcript — ``messages`` is ``None`` in a streamed update ("keep yours":
    the transcript streams as operations with a ``path``), the newest items that fit
    otherwise (``has_older`` when earlier ones were left out), with ``live`` the response
    it is streaming."""

    agent: str
    task: str
    status: Literal["running", "done", "error", "cancelled", "interrupted"]
    activity: str | None
    plan: SubagentPlan | None
    tokens: dict[str, int]
    messages: list[ChatItem] | None
    has_older: bool
    live: LiveSnapshot | None


class ChatAttachment(TypedDict):
    """A file of a user message as the transcript shows it (TS: ``ChatAttachment``,
    chat-view-traits.ts). ``thumbnail``: the image's base64 when small enough."""

    name: str
    media_type: str
    size: int
    width: NotRequired[int]
    height: NotRequired[int]
    thumbnail: NotRequired[str | None]
    missing: NotRequired[bool]


class ChatItem(TypedDict, total=False):
    """One drawn message or compaction marker (TS: ``ChatItem``, chat-view-traits.ts). ``text`` and
    ``thinking`` are ``None`` in a streamed update: "keep what you streamed"."""

    id: Required[str]
    role: Required[Literal["user", "assistant", "compaction"]]
    index: Required[int]
    pos: Required[int]
    text: str | None
    thinking: str | None
    cards: list[ChatCard]
    interrupted: Literal["cancelled", "interrupted", "error", "killed"] | None
    error: str | None
    tokens_before: int
    tokens_after: int
    messages_folded: int
    text_chars: int
    """``text`` is a preview of a text this long (see ``neta_nb.widgets.state_bounds``); so for the
    rest."""
    thinking_chars: int
    error_chars: int
    attachments: list[ChatAttachment]


class Approval(TypedDict):
    """A pending approval request (TS: ``Approval``, chat-view-traits.ts); a sub-agent's
    names the child (``agent``) and the run it is in (``path``, as for nested ops)."""

    id: str
    name: str
    args: dict[str, Any]
    args_chars: NotRequired[int]
    agent: NotRequired[str]
    path: NotRequired[list[str]]


class AgentChoice(TypedDict):
    """An agent the selector offers (TS: ``AgentChoice``, chat-view-traits.ts)."""

    name: str
    model: str


class LiveSnapshot(TypedDict):
    """The response being streamed, whole (TS: ``LiveSnapshot``, chat-view-traits.ts)."""

    id: str
    thinking: str
    text: str
    thinking_open: bool


class ChatSnapshot(TypedDict):
    """The ``sync`` reply: everything a view needs to draw the present, as of batch ``seq``
    (TS: ``ChatSnapshot``, chat-view-traits.ts)."""

    seq: int
    session_id: str
    messages: list[ChatItem]
    has_older: bool
    live: LiveSnapshot | None
    running: bool
    todos: list[dict[str, Any]]
    current: dict[str, Any]
    context: dict[str, Any]
    approvals: list[Approval]
    think_level: str
    notice: str


class ViewRequest(TypedDict):
    """``view_opened`` / ``view_closed``: a rendered view of the widget appears or goes
    (TS: ``ViewRequest``, chat-view-binding.ts)."""

    view_id: str


class FullTextRequest(TypedDict):
    """``full_text``: the whole of a field the state holds a preview of — ``text``,
    ``thinking`` or ``error`` of message ``message_id``, or with ``card_id`` the ``result``,
    ``args``, ``step`` or ``detail`` of that card (TS: ``FullTextRequest``,
    chat-view-traits.ts)."""

    message_id: str
    card_id: NotRequired[str]
    field: str
    path: NotRequired[list[str]]
    """Set for a message of a sub-agent's transcript: the runs it is nested in."""


class FullText(TypedDict):
    """The ``full_text`` reply (TS: ``FullText``, chat-view-traits.ts); arguments come as
    indented JSON."""

    text: str


class NoReply(TypedDict):
    """A request answered with nothing but success."""


class OlderRequest(TypedDict):
    """``older``: the page before message index ``before`` (TS: ``OlderRequest``,
    chat-view-binding.ts)."""

    before: int


class OlderPage(TypedDict):
    """The ``older`` reply (TS: ``OlderPage``, chat-view-traits.ts)."""

    session_id: str
    messages: list[ChatItem]
    has_older: bool


class CommandRequest(TypedDict):
    """``command``: one UI→server command of the event protocol (``send``, ``stop``,
    ``set_thinking_level``, ``approve``) (TS: ``CommandRequest``, chat-view-binding.ts)."""

    command: Mapping[str, Any]


class CommandReply(TypedDict, total=False):
    """The ``command`` reply (TS: ``CommandReply``, chat-view-binding.ts)."""

    running: Required[bool]
    think_level: str


class SwitchAgentRequest(TypedDict):
    """``switch_agent`` (TS: ``SwitchAgentRequest``, chat-view-binding.ts)."""

    name: str


class SwitchAgentReply(TypedDict):
    """The session now shown (TS: ``SessionReply``, session-sidebar.ts; the sidebar's
    replies have the same shape)."""

    session_id: str


# The members of the TS ``ChatOp`` union (chat-view-traits.ts), which are unnamed there, and the
# binding's ``WindowOp`` (chat-view-binding.ts). ``path`` (absent at the top) names the
# sub-agent transcript an operation applies to: the ids of the ``delegate`` calls from the
# top, so a grandchild's has two.
class LiveOp(TypedDict):
    op: Literal["live"]
    id: str
    path: NotRequired[list[str]]


class StreamOp(TypedDict):
    op: Literal["text", "thinking"]
    text: str
    path: NotRequired[list[str]]


class ThinkingDoneOp(TypedDict):
    op: Literal["thinking_done"]
    path: NotRequired[list[str]]


class EndOp(TypedDict):
    op: Literal["end"]
    id: str | None
    path: NotRequired[list[str]]


class ItemOp(TypedDict):
    op: Literal["item"]
    item: ChatItem
    path: NotRequired[list[str]]


ChatOp = LiveOp | StreamOp | ThinkingDoneOp | EndOp | ItemOp


class WindowOp(TypedDict):
    """The turn ended: the view sets ``messages`` from these ids (TS: ``WindowOp``,
    chat-view-binding.ts)."""

    op: Literal["window"]
    ids: list[str]
    has_older: bool


class BatchMessage(TypedDict):
    """One numbered batch of view operations (TS: ``BatchMessage``, chat-view-binding.ts)."""

    kind: Literal["batch"]
    seq: int
    ops: list[ChatOp | WindowOp]


WINDOW = 50
"""Rendered items kept in widget state; older ones load on scroll."""

MESSAGE_FIELDS = ("text", "thinking", "error")
CARD_FIELDS = ("result", "args", "step", "detail")


def renderable(message: Message) -> bool:
    """User and assistant messages are drawn; tool results live in their cards, and the
    messages a compaction injects for the model are not part of the conversation shown."""
    return message.role in ("user", "assistant") and not message.metadata.compacted


SubagentSource = Callable[[ToolExecution], "SubagentPart | None"]
"""The sub-agent part of a ``delegate`` call's card (``None``: draw a plain tool card):
the live transcript the chat view follows, or the child session from the store (see
``neta_nb.widgets.chat.subagent_transcript``)."""


DELEGATE_TOOL = "delegate"
"""The crew tool whose calls run sub-agents (its arguments are ``{agent, task}``)."""

_RUN_STATUS: dict[str, Literal["running", "done", "error", "cancelled"]] = {
    "waiting": "running", "running": "running", "done": "done", "error": "error",
    "rejected": "cancelled", "cancelled": "cancelled"}


def stored_run_part(execution: ToolExecution) -> SubagentPart | None:
    """A ``delegate`` call's sub-agent part from its execution alone, without the
    transcript: from the run it records, or — the call made, its child not started yet —
    from the call's arguments, so the card is a sub-agent card from its first frame (one
    node from start to end). Other calls have none."""
    run = execution.subagent
    if run is not None:
        return {"agent": run.agent, "task": task_preview(run.task), "status": run.status,
                "activity": None, "plan": None,
                "tokens": {"input_tokens": run.input_tokens,
                           "output_tokens": run.output_tokens, "api_calls": run.api_calls},
                "messages": [], "has_older": False, "live": None}
    if execution.name != DELEGATE_TOOL or not isinstance(execution.args.get("agent"), str):
        return None
    task = execution.args.get("task")
    return {"agent": execution.args["agent"],
            "task": task_preview(task) if isinstance(task, str) else "",
            "status": _RUN_STATUS[execution.status], "activity": None, "plan": None,
            "tokens": {"input_tokens": 0, "output_tokens": 0, "api_calls": 0},
            "messages": [], "has_older": False, "live": None}


def keep_streamed(item: ChatItem, message: Message,
                  streamed: tuple[str, str] | None) -> ChatItem:
    """``item`` with ``None`` ("keep yours") for the thinking and text the views streamed for
    ``message``, ``streamed`` = (thinking, text): a long answer crosses the wire once. The
    message's whole text is compared, not the preview in ``item``: a text longer than the
    preview bound streamed whole too, and its ``*_chars`` tells the view it holds all of it
    (TS: ``MessageView.update``)."""
    if streamed is not None:
        if message.thinking == streamed[0]:
            item["thinking"] = None
        if message.text == streamed[1]:
            item["text"] = None
    return item


def render_message(message: Message, index: int,
                   subagents: SubagentSource = stored_run_part) -> ChatItem:
    """One message as the view draws it; ``subagents`` draws the sub-agent cards."""
    if message.role == "user":
        user: dict[str, Any] = {"id": message.id, "role": "user", "index": index,
                                "pos": 2 * index, "text": message.text}
        preview_text(user, "text", TEXT_CHARS)
        if message.attachments:
            user["attachments"] = [render_attachment(part) for part in message.attachments]
        return cast(ChatItem, user)
    tools = {t.id: t for t in message.metadata.tool_executions}
    skills = {s.id: s for s in message.metadata.skill_executions}
    def card(kind: Literal["tool", "skill", "subagent"], execution: Any) -> ChatCard:
        # The execution's fields are the card's (plus ones the view ignores), bounded.
        fields: dict[str, Any] = {"kind": kind, **execution.model_dump(exclude={"subagent"})}
        if fields.get("outputs"):
            fields["outputs"] = bounded_outputs(fields["outputs"])
        preview_text(fields, "result", RESULT_CHARS)
        preview_text(fields, "step", NOTE_CHARS)
        preview_text(fields, "detail", NOTE_CHARS)
        preview_args(fields)
        return cast(ChatCard, fields)

    def tool_card(execution: ToolExecution) -> ChatCard:
        part = subagents(execution)
        if part is None:
            return card("tool", execution)
        drawn = card("subagent", execution)
        drawn["subagent"] = part
        return drawn

    cards: list[ChatCard] = []
    # Cards follow the order in which the model made the calls.
    for call in message.tool_calls:
        if call.id in tools:
            cards.append(tool_card(tools.pop(call.id)))
        elif call.id in skills:
            cards.append(card("skill", skills.pop(call.id)))
    cards += [tool_card(t) for t in tools.values()]
    cards += [card("skill", s) for s in skills.values()]
    item: dict[str, Any] = {
        "id": message.id, "role": "assistant", "index": index, "pos": 2 * index,
        "thinking": message.thinking, "text": message.text, "cards": cards,
        "interrupted": message.metadata.interrupted, "error": message.metadata.error}
    preview_text(item, "text", TEXT_CHARS)
    preview_text(item, "thinking", THINKING_CHARS)
    preview_text(item, "error", NOTE_CHARS)
    return cast(ChatItem, item)


OUTPUT_STATE_CHARS = 2_000_000
"""Characters of one card's display items in widget state; items past it are sent as
``omitted`` (the card says they are too large to show in the chat)."""


def bounded_outputs(outputs: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """``outputs`` with the items past :data:`OUTPUT_STATE_CHARS` emptied and marked."""
    used = 0
    bounded = []
    for item in outputs:
        size = len(item.get("data") or "") + len(item.get("text") or "")
        if used + size > OUTPUT_STATE_CHARS:
            item = {**item, "data": None, "text": None, "omitted": True}
        else:
            used += size
        bounded.append(item)
    return bounded


THUMBNAIL_CHARS = 200_000
"""Base64 characters of an attached image the transcript carries as its thumbnail; a
larger image shows as a chip with its name (widget state stays small)."""


def render_attachment(part: ImagePart | DocumentPart | FileTextPart) -> ChatAttachment:
    """A file of a user message as the transcript's chip shows it."""
    chip: ChatAttachment = {"name": part.name or "attachment", "media_type": part.media_type,
                            "size": part.size}
    if isinstance(part, ImagePart):
        chip["width"], chip["height"] = part.width, part.height
        data = part.data
        chip["thumbnail"] = data if data is not None and len(data) <= THUMBNAIL_CHARS else None
        chip["missing"] = data is None
    elif isinstance(part, DocumentPart):
        chip["missing"] = part.data is None
    return chip


def full_text(messages: Sequence[Message], message_id: str, field_name: str,
              card_id: str | None = None) -> str:
    """The whole text of a field :func:`render_message` may cut. Raises ``LookupError``
    with a message for the user when there is no such message, card or field."""
    allowed = CARD_FIELDS if card_id is not None else MESSAGE_FIELDS
    if field_name not in allowed:
        raise LookupError(f"no field {field_name!r} to show in full; one of {', '.join(allowed)}")
    message = next((m for m in reversed(messages) if m.id == message_id), None)
    if message is None:
        raise LookupError(f"message {message_id!r} is not in this session")
    if card_id is None:
        value = {"text": message.text, "thinking": message.thinking,
                 "error": message.metadata.error}[field_name]
        return value or ""
    executions: list[ToolExecution | SkillExecution] = [
        *message.metadata.tool_executions, *message.metadata.skill_executions]
    execution = next((e for e in executions if e.id == card_id), None)
    if execution is None:
        raise LookupError(f"message {message_id!r} has no tool or skill call {card_id!r}")
    if field_name == "args":
        args = getattr(execution, "args", {})
        text = args_json(args, indent=2)
        if text is None:
            raise LookupError("these arguments are nested too deeply to show as JSON")
        return text
    return getattr(execution, field_name, None) or ""


def render_marker(number: int, record: CompactionRecord) -> ChatItem:
    """The marker drawn where a compaction folded older turns."""
    return {"id": f"compaction-{number}", "role": "compaction",
            "index": record.after_message, "pos": 2 * record.after_message - 1,
            "tokens_before": record.tokens_before, "tokens_after": record.tokens_after,
            "messages_folded": record.messages_folded}


def render_window(messages: Sequence[Message], compactions: Sequence[CompactionRecord], *,
                  before: int | None = None, limit: int = WINDOW,
                  subagents: SubagentSource = stored_run_part
                  ) -> tuple[list[ChatItem], bool]:
    """The last ``limit`` drawn messages with an index below ``before`` (all when
    ``None``), with the compaction markers among them, cut to the newest that fit in
    widget state (:func:`~neta_nb.widgets.state_bounds.fit_window`); and whether older ones
    exist."""
    end = len(messages) if before is None else max(0, min(before, len(messages)))
    picked: list[int] = []
    index = end - 1
    while index >= 0 and len(picked) < limit:
        if renderable(messages[index]):
            picked.append(index)
        index -= 1
    has_older = any(renderable(messages[i]) for i in range(index, -1, -1))
    picked.reverse()
    items = [render_message(messages[i], i, subagents) for i in picked]
    low = picked[0] if picked and has_older else 0
    for number, record in enumerate(compactions):
        if low <= record.after_message <= end:  # a view keys items by id: overlap is harmless
            items.append(render_marker(number, record))
    items.sort(key=lambda item: item["pos"])
    fitted, cut = fit_window(items)
    return fitted, has_older or cut


@dataclass
class LiveResponse:
    """The assistant response being streamed, before the session has appended it."""

    id: str
    thinking: list[str] = field(default_factory=list)
    text: list[str] = field(default_factory=list)
    thinking_open: bool = False

    def snapshot(self) -> LiveSnapshot:
        return {"id": self.id, "thinking": "".join(self.thinking), "text": "".join(self.text),
                "thinking_open": self.thinking_open}


ItemSource = Callable[[str], ChatItem | None]
"""Renders the item with this id as it is now (``None`` when it no longer exists)."""

NestedItemSource = Callable[[tuple[str, ...], str], ChatItem | None]
"""Renders the item with this id of the sub-agent transcript at ``path`` (the ids of the
``delegate`` calls from the top, see ``neta_nb.widgets.chat.subagent_transcript``)."""


class OpBatcher(FrameThrottle):
    """Ordered view operations sent as ``send({"kind": "batch", "seq", "ops"})``, at most
    one batch per ``interval`` (see :class:`FrameThrottle`)."""

    def __init__(self, send: Callable[[BatchMessage], None], item_source: ItemSource, *,
                 nested_source: NestedItemSource | None = None,
                 interval: float = FLUSH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 schedule: Scheduler = call_later_on_running_loop) -> None:
        super().__init__(interval=interval, clock=clock, schedule=schedule)
        self._send = send
        self._item_source = item_source
        self._nested_source = nested_source
        self._ops: list[dict[str, Any]] = []
        self._chunks: list[str] | None = None  # the open text/thinking op's chunks
        self._upserts: set[tuple[tuple[str, ...], str]] = set()
        self._sent_items: dict[tuple[tuple[str, ...], str], ChatItem] = {}
        self.batches = 0
        """Batches sent so far (benchmarks read it)."""

    # --- operations -------------------------------------------------------------------
    # A sub-agent's transcript streams through the same batches: its operations carry
    # ``path``, the ids of the ``delegate`` calls from the top (a grandchild's has two), and
    # the view applies them inside that nested card. Top-level operations have no path.
    def text(self, op: str, delta: str, path: tuple[str, ...] = ()) -> None:
        """Append ``delta`` to the live response's ``op`` stream ("text" or "thinking")
        (of the sub-agent transcript at ``path``)."""
        if not delta:
            return
        last = self._ops[-1] if self._ops else None
        if (last is not None and last["op"] == op and self._chunks is not None
                and last.get("path", ()) == path):
            self._chunks.append(delta)
        else:
            self._chunks = [delta]
            self._ops.append({"op": op, "chunks": self._chunks, "path": path} if path
                             else {"op": op, "chunks": self._chunks})
        self._schedule_text(len(delta))

    def op(self, op: str, path: tuple[str, ...] = (), **fields: Any) -> None:
        """Any other operation (``live``, ``thinking_done``, ``end``, ``reset``)."""
        self._chunks = None
        self._ops.append({"op": op, **fields, "path": list(path)} if path
                         else {"op": op, **fields})
        self._schedule()

    def upsert(self, item_id: str, path: tuple[str, ...] = ()) -> None:
        """Send the item ``item_id`` as it is when the batch leaves (once per batch)."""
        key = (path, item_id)
        if key in self._upserts:
            return
        self._upserts.add(key)
        self._chunks = None
        self._ops.append({"op": "item", "id": item_id, "path": path})
        self._schedule()

    def forget_items(self, keep: str | None = None) -> None:
        """Stop remembering what was sent (a new turn or a new session), except the
        top-level item ``keep``: the message a new turn redraws first (the last answer),
        which is not sent again unless it changed."""
        kept = self._sent_items.get(((), keep)) if keep is not None else None
        self._sent_items.clear()
        if kept is not None:
            self._sent_items[((), keep)] = kept  # type: ignore[index]

    def remember_item(self, item: ChatItem) -> None:
        """Count the top-level ``item`` as sent: the views drew it from the state."""
        self._sent_items[((), item["id"])] = item

    # --- sending ----------------------------------------------------------------------
    def _take(self) -> list[ChatOp | WindowOp] | None:
        ops = self._ops
        self._ops, self._chunks, self._upserts = [], None, set()
        wire: list[ChatOp | WindowOp] = []
        for op in ops:
            if "chunks" in op:
                text: dict[str, Any] = {"op": op["op"], "text": "".join(op["chunks"])}
                if "path" in op:
                    text["path"] = list(op["path"])
                wire.append(cast(ChatOp, text))
            elif op["op"] == "item":
                path = op["path"]
                key = (path, op["id"])
                item = (self._item_source(op["id"]) if not path
                        else self._nested_source(path, op["id"]) if self._nested_source
                        else None)
                if item is None or self._sent_items.get(key) == item:
                    continue  # unchanged since the last batch: nothing to draw
                self._sent_items[key] = item
                wire.append(cast(ChatOp, {"op": "item", "item": item, "path": list(path)}
                                 if path else {"op": "item", "item": item}))
            else:
                # live / thinking_done / end / window, built by op() with their fields.
                wire.append(cast("ChatOp | WindowOp", op))
        return wire or None

    def _deliver(self, seq: int, payload: Any) -> None:
        self.batches += 1
        self._send({"kind": "batch", "seq": seq, "ops": payload})

    def cancel(self) -> None:
        """Drop pending operations (the view will be reset by a state sync)."""
        self._cancel_timer()
        self._ops, self._chunks, self._upserts = [], None, set()
