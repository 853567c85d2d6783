"""What the chat view shows, derived from a conversation: :func:`render_message` and
:func:`render_window` turn :class:`~neta_nb.messages.Message` history into *items*, plain
dicts a view renders — user and assistant messages (thinking, text, tool and skill cards in
call order, interruption and error) and compaction markers. ``pos`` orders them
(``2 * index`` for the message at ``index`` of the full history, one less for a marker
drawn before it); ``index`` is what "load older" pages by. Texts are bounded previews
(see ``neta_nb.widgets.state_bounds``)."""

from __future__ import annotations

import os
from collections.abc import Callable, Sequence
from typing import Any, Literal, cast

from ....messages import (
    DocumentPart,
    FileTextPart,
    ImagePart,
    Message,
    SkillExecution,
    ToolExecution,
)
from ....store.records import CompactionRecord
from ...state_bounds import (
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
from ..wire import ChatAttachment, ChatCard, ChatItem, SubagentPart

__all__ = [
    "CARD_FIELDS",
    "DELEGATE_TOOL",
    "MESSAGE_FIELDS",
    "OUTPUT_STATE_CHARS",
    "THUMBNAIL_CHARS",
    "WINDOW",
    "SubagentSource",
    "bounded_outputs",
    "full_text",
    "keep_streamed",
    "render_attachment",
    "render_marker",
    "render_message",
    "render_window",
    "renderable",
    "stored_run_part",
]


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
``neta_nb.widgets.chat.drawing.subagent_parts``)."""


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
        if fields.get("locations"):
            fields["locations"] = linked_locations(fields["locations"])
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


def linked_locations(locations: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The files a card names, each with the absolute path of this kernel's notebook
    (``notebook``: ``JPY_SESSION_NAME``, which the Jupyter server sets as it starts the
    kernel), by which the page finds the folder it serves and opens the file under it —
    or sees that the notebook it shows is not the kernel's (moved since, another's
    kernel) and says so. Without it when the kernel was not started for a notebook."""
    notebook = os.environ.get("JPY_SESSION_NAME")
    if not notebook or not os.path.isabs(notebook):
        return locations
    return [{**location, "notebook": notebook} for location in locations]


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


