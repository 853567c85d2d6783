"""The conversation model shared by providers, the runtime, the store and the widgets.

A conversation is a list of :class:`Message`. Each message has a role and an ordered
list of content parts, so an assistant turn keeps the exact interleaving the model
produced (thinking, text, thinking again, tool calls) — Anthropic requires thinking
blocks and their signatures to be sent back unchanged when tools are in play.

Tool results are stored one per ``tool`` message (``role == "tool"``), the shape the
seed's history scans rely on (``msg.role == "tool" and msg.tool_name == "todo"``).
Providers regroup them as their wire format demands.

Everything here round-trips through JSON without loss (:func:`dump_messages`,
:func:`load_messages`).
"""

from __future__ import annotations

import html
import json
import math
import re
import time
import uuid
from collections.abc import Iterable, Iterator, Sequence
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, TypeAdapter

__all__ = [
    "DisplayItem",
    "DocumentPart",
    "FileLocation",
    "FileTextPart",
    "ImagePart",
    "Interruption",
    "KnownCost",
    "KnownUsage",
    "MentionPart",
    "Message",
    "MessageMetadata",
    "Part",
    "Role",
    "RunStatus",
    "SkillExecution",
    "SubagentRun",
    "SubagentStatus",
    "TextPart",
    "ThinkingPart",
    "ToolCallPart",
    "ToolDefinition",
    "ToolExecution",
    "ToolResultPart",
    "TraceRef",
    "Usage",
    "count_characters",
    "dump_messages",
    "load_messages",
    "new_id",
    "unseen_images_text",
    "valid_conversation",
]

Role = Literal["user", "assistant", "tool"]
Interruption = Literal["cancelled", "interrupted", "error", "killed"]
"""Why an assistant message ended early: the user stopped it, the provider failed, or the
process running the turn died (found on resume)."""


def valid_conversation(messages: Sequence[Message]) -> list[Message]:
    """``messages`` as every provider accepts them: a tool result that answers no call of
    the message right before it is left out, and a call with no result gets an error
    result. Used on what a store hands back (a damaged row can break either rule)."""
    valid: list[Message] = []
    index = 0
    while index < len(messages):
        message = messages[index]
        index += 1
        if message.role == "tool":
            continue  # answers no call right before it
        valid.append(message)
        calls = ({call.id: call for call in message.tool_calls}
                 if message.role == "assistant" else {})
        answered: set[str] = set()
        while index < len(messages) and messages[index].role == "tool":
            ids = {part.tool_call_id for part in messages[index].tool_results}
            if ids and ids <= set(calls) - answered:
                valid.append(messages[index])
                answered |= ids
            index += 1
        for call_id, call in calls.items():
            if call_id not in answered:
                valid.append(Message.tool_result(call_id, call.name, "This call has no result "
                                                 "in the stored history.", is_error=True))
    return valid


def new_id(prefix: str = "") -> str:
    """A short random id, unique enough for messages, sessions and tool calls."""
    return f"{prefix}{uuid.uuid4().hex[:16]}"


class _Model(BaseModel):
    model_config = ConfigDict(extra="forbid")


class TextPart(_Model):
    type: Literal["text"] = "text"
    text: str


class ThinkingPart(_Model):
    """Model reasoning. ``signature`` is the provider's proof of authenticity (Anthropic);
    ``redacted_data`` holds an encrypted block the provider would not show."""

    type: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str | None = None
    redacted_data: str | None = None


class ToolCallPart(_Model):
    """A tool call as the model made it. When the model's arguments were not valid JSON,
    ``args`` is empty and ``raw_args`` keeps the text it sent, so the error shown to the
    model and to the user can quote it."""

    type: Literal["tool_call"] = "tool_call"
    id: str
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    raw_args: str | None = None


class _Binary(_Model):
    """Bytes carried by a message (base64 in ``data``). The store keeps large ones as files
    beside its database and records their ``sha256`` instead; ``data`` is ``None`` for an
    item whose file has gone missing (shown as a placeholder, sent as a description)."""

    media_type: str
    data: str | None = None
    sha256: str | None = None
    name: str | None = None
    size: int = 0
    """Bytes before base64 encoding."""

    @property
    def available(self) -> bool:
        return self.data is not None


class ImagePart(_Binary):
    """An image the model sees: an attachment of a user message or a figure a tool made."""

    type: Literal["image"] = "image"
    width: int = 0
    height: int = 0

    def describe(self) -> str:
        """``640×480 PNG``: the words a model without vision reads instead."""
        kind = self.media_type.split("/")[-1].upper()
        return f"{self.width}×{self.height} {kind}" if self.width else kind


class DocumentPart(_Binary):
    """A PDF attached to a user message (for models that read documents)."""

    type: Literal["document"] = "document"


class FileTextPart(_Model):
    """A text file attached to a user message (csv, md, py, json, txt): sent to the model
    as a text block under its name. Not part of :attr:`Message.text`, which is what the
    user typed."""

    type: Literal["file_text"] = "file_text"
    name: str
    media_type: str = "text/plain"
    text: str
    size: int = 0

    def prompt_text(self) -> str:
        """The file as the model reads it: its content under its name."""
        # The name is escaped: a file called `x"></file>` must not end the block early
        # and make what follows look like something other than the file's content.
        return f'<file name="{html.escape(self.name)}">\n{self.text}\n</file>'


class MentionPart(_Model):
    """What an ``@`` mention in a prompt (``@df``, ``@In[5]``, ``@error``) referred to when
    the prompt was sent (``neta_nb.runtime.mentions.mentions``): sent to the model as a text block
    after the prompt, and again with the history, so a resumed session sends the same
    request. Not part of :attr:`Message.text`, which is what the user typed."""

    type: Literal["mention"] = "mention"
    mention: str
    """The mention as written canonically: ``@df``, ``@In[5]``, ``@error``."""
    text: str
    """What it referred to, as plain text (bounded when it was made)."""

    def prompt_text(self) -> str:
        """The block the model reads. The text is the notebook's, untrusted: a
        ``</mention>`` inside it is written ``<\\/mention>`` so it cannot end the block."""
        body = _MENTION_END.sub(r"<\\/\1", self.text)
        return f'<mention name="{html.escape(self.mention)}">\n{body}\n</mention>'


_MENTION_END = re.compile(r"</(mention)", re.IGNORECASE)


def unseen_images_text(images: Sequence[ImagePart], noun: str = "figure") -> str:
    """What a model that cannot see images reads instead of them:
    ``1 figure, 640×480, not shown to this model``. Images whose stored file is missing
    are said to be so."""
    shown = [image for image in images if image.available]
    lines = []
    if shown:
        sizes = ", ".join(f"{i.width}×{i.height}" if i.width else i.media_type for i in shown)
        plural = noun if len(shown) == 1 else noun + "s"
        lines.append(f"[{len(shown)} {plural}, {sizes}, not shown to this model]")
    missing = len(images) - len(shown)
    if missing:
        lines.append(f"[{missing} {noun if missing == 1 else noun + 's'} no longer "
                     "available: the stored file is missing]")
    return "\n".join(lines)


class DisplayItem(_Binary):
    """One thing a tool card shows, as a notebook cell would: ``image/png``,
    ``image/jpeg``, ``image/svg+xml`` (``data`` is the SVG text), ``text/html`` (sanitized
    when shown), ``text/markdown``. Images also go to the model (as :class:`ImagePart`)."""

    type: Literal["display"] = "display"
    width: int = 0
    height: int = 0
    text: str | None = None
    """For text kinds (HTML, SVG, markdown) the text itself; ``data`` stays ``None``."""


class ToolResultPart(_Model):
    type: Literal["tool_result"] = "tool_result"
    tool_call_id: str
    name: str
    content: str
    is_error: bool = False
    images: list[ImagePart] = Field(default_factory=list)
    """Figures the tool made, for models that see images (older rows have none)."""


Part = Annotated[
    TextPart | ThinkingPart | ToolCallPart | ToolResultPart | ImagePart | DocumentPart
    | FileTextPart | MentionPart,
    Field(discriminator="type")
]


MAX_TOKEN_COUNT = 2**53 - 1
"""The largest token count taken as a count: no call comes near it, it is exact as a
float and in the widgets' numbers, and its cost at any price is a finite number."""


class Usage(_Model):
    """Token usage as the provider reported it (never estimated)."""

    input_tokens: int = 0
    output_tokens: int = 0
    cache_read_tokens: int = 0
    cache_write_tokens: int = 0
    thinking_tokens: int = 0

    @property
    def total_tokens(self) -> int:
        return self.input_tokens + self.output_tokens

    @property
    def context_tokens(self) -> int:
        """Tokens the prompt of this call occupied in the context window, cached or not."""
        return self.input_tokens + self.cache_read_tokens + self.cache_write_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            thinking_tokens=self.thinking_tokens + other.thinking_tokens,
        )


def _known_usage(usage: Usage | None) -> Usage | None:
    """A usage with a negative count (a server's, stored before such reports were
    refused) or one beyond :data:`MAX_TOKEN_COUNT` is unknown when read back, never a
    credit or an infinite cost."""
    # Iterating the model gives its fields as they are (no dump: this runs for every
    # message made with a usage, on the turn's path).
    if usage is None or all(0 <= count <= MAX_TOKEN_COUNT for _, count in usage):
        return usage
    return None


def _known_cost(cost: float | None) -> float | None:
    """A negative or non-finite cost (from such a usage) is unknown when read back."""
    return cost if cost is None or (math.isfinite(cost) and cost >= 0) else None


KnownUsage = Annotated[Usage | None, AfterValidator(_known_usage)]
"""A usage as stored or kept: one with a negative count reads as unknown (``None``)."""
KnownCost = Annotated[float | None, AfterValidator(_known_cost)]
"""A cost in USD as stored or kept: a negative one reads as unknown (``None``)."""


RunStatus = Literal["waiting", "running", "done", "error", "rejected", "cancelled"]
"""What a tool or skill card shows: ``waiting`` for the user's approval, ``running``,
``done``, ``error`` (it failed), ``rejected`` (approval was refused, so it never ran),
``cancelled`` (the turn was stopped before it finished)."""


class TraceRef(_Model):
    """Where a call is in the user's traces: the OpenTelemetry span it ran in (hex ids),
    kept with its card so the card can copy it (see ``neta_nb.runtime.tracing.tracing``)."""

    trace_id: str
    span_id: str


def _optional() -> Any:
    """An optional field absent from stored JSON while unset (``None``): rows written
    before it existed and rows that never set it read and write the same."""
    return Field(default=None, exclude_if=lambda value: value is None)


def _traced() -> Any:
    """A :class:`TraceRef` field (see :func:`_optional`): unset without tracing."""
    return _optional()


class SkillExecution(_Model):
    """What a skill card showed, kept so the card comes back with history."""

    id: str
    name: str
    label: str
    status: RunStatus = "running"
    percent: float = 0.0
    step: str | None = None
    detail: str | None = None
    result: str | None = None
    trace: TraceRef | None = _traced()


SubagentStatus = Literal["running", "done", "error", "cancelled", "interrupted"]


class SubagentRun(_Model):
    """The child session a ``delegate`` call ran, kept on the call's execution so resume
    rebuilds the nested card: the child is a session of its own in the same store
    (``session_id``), linked back to this call."""

    session_id: str
    agent: str
    task: str
    status: SubagentStatus = "running"
    input_tokens: int = 0
    output_tokens: int = 0
    api_calls: int = 0
    cost_usd: KnownCost = _optional()
    """What the child's calls cost in USD (its sub-agents' included), when known."""


class FileLocation(_Model):
    """A file (and line) a call reads or changes, as an outside agent reports it: its
    card links to it."""

    path: str
    """The file's absolute path, as the agent gave it."""
    line: int | None = None
    """Its line, 1-based, when the agent named one."""


class ToolExecution(_Model):
    """What a tool card showed, kept so the card comes back with history."""

    id: str
    name: str
    label: str
    args: dict[str, Any] = Field(default_factory=dict)
    status: RunStatus = "running"
    result: str | None = None
    outputs: list[DisplayItem] = Field(default_factory=list)
    """What the card displays besides the text: figures, tables, images."""
    subagent: SubagentRun | None = None
    """Set for a ``delegate`` call: the child it ran."""
    trace: TraceRef | None = _traced()
    locations: list[FileLocation] = Field(default_factory=list,
                                          exclude_if=lambda value: not value)
    """The files the call reads or changes (an outside agent's ``locations``); absent
    from stored JSON while empty."""


class MessageMetadata(_Model):
    usage: KnownUsage = None
    model: str | None = None
    stop_reason: str | None = None
    interrupted: Interruption | None = None
    error: str | None = None
    skill_executions: list[SkillExecution] = Field(default_factory=list)
    tool_executions: list[ToolExecution] = Field(default_factory=list)
    compacted: bool = False
    """True for a summary message that stands for older, folded turns."""
    trace: TraceRef | None = _traced()
    """The model call's span, when traced."""
    cost_usd: KnownCost = _optional()
    """What the model call cost in USD, when its model has a price (stored per call, so
    a resumed session and the session list know what was spent)."""
    think_level: str | None = _optional()
    """A prompt's: the thinking level its turn ran at (a fork from it restores it)."""


class Message(_Model):
    """One turn of the conversation: a role and its ordered parts (text, thinking, tool
    calls, tool results), with the usage and stop reason the provider reported."""

    id: str = Field(default_factory=lambda: new_id("m_"))
    role: Role
    parts: list[Part] = Field(default_factory=list)
    created_at: float = Field(default_factory=time.time)
    metadata: MessageMetadata = Field(default_factory=MessageMetadata)

    # --- constructors -------------------------------------------------------------
    @classmethod
    def user(cls, text: str) -> Message:
        return cls(role="user", parts=[TextPart(text=text)])

    @classmethod
    def assistant(cls, parts: list[Part], **metadata: Any) -> Message:
        return cls(role="assistant", parts=parts, metadata=MessageMetadata(**metadata))

    @classmethod
    def tool_result(
        cls, tool_call_id: str, name: str, content: str, *, is_error: bool = False,
        images: Sequence[ImagePart] = (),
    ) -> Message:
        part = ToolResultPart(tool_call_id=tool_call_id, name=name, content=content,
                              is_error=is_error, images=list(images))
        return cls(role="tool", parts=[part])

    # --- views --------------------------------------------------------------------
    @property
    def text(self) -> str:
        """All text parts joined: what a reader would call the message's content."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def thinking(self) -> str:
        return "\n\n".join(p.text for p in self.parts if isinstance(p, ThinkingPart) and p.text)

    @property
    def tool_calls(self) -> list[ToolCallPart]:
        return [p for p in self.parts if isinstance(p, ToolCallPart)]

    @property
    def tool_results(self) -> list[ToolResultPart]:
        return [p for p in self.parts if isinstance(p, ToolResultPart)]

    def __repr__(self) -> str:
        # Short and stable (no ids or timestamps): it is what a notebook cell shows.
        text = self.text or self.thinking
        shown = text if len(text) <= 60 else text[:59] + "…"
        extras = [f"{len(self.tool_calls)} tool calls"] if self.tool_calls else []
        extras += [f"{r.name} result" + (" (error)" if r.is_error else "")
                   for r in self.tool_results]
        if self.metadata.interrupted:
            # A failed call's message may have no text at all: what failed is shown, so
            # the value a cell displays is never taken for an (empty) answer.
            failure = f" ({self.metadata.error})" if self.metadata.error else ""
            extras.append(f"interrupted: {self.metadata.interrupted}{failure}")
        tail = "".join(f", {extra}" for extra in extras)
        return f"Message({self.role}, {shown!r}{tail})"

    @property
    def attachments(self) -> list[ImagePart | DocumentPart | FileTextPart]:
        """The files attached to a user message, in order."""
        return [p for p in self.parts if isinstance(p, ImagePart | DocumentPart | FileTextPart)]

    @property
    def mentions(self) -> list[MentionPart]:
        """What the ``@`` mentions of a user message referred to, in order."""
        return [p for p in self.parts if isinstance(p, MentionPart)]

    def binaries(self) -> Iterator[_Binary]:
        """Every item carrying bytes: attachments, tool result images, card outputs."""
        for part in self.parts:
            if isinstance(part, ImagePart | DocumentPart):
                yield part
            elif isinstance(part, ToolResultPart):
                yield from part.images
        for execution in self.metadata.tool_executions:
            yield from execution.outputs

    @property
    def tool_name(self) -> str | None:
        """For a ``tool`` message, the name of the tool whose result it carries."""
        results = self.tool_results
        return results[0].name if results else None


class ToolDefinition(_Model):
    """A tool as a provider sends it to a model: name, description, JSON schema."""

    name: str
    description: str
    parameters: dict[str, Any]


_messages_adapter: TypeAdapter[list[Message]] = TypeAdapter(list[Message])


def count_characters(messages: Iterable[Message]) -> int:
    """Characters a model reads in these messages (text, thinking, calls, results)."""
    total = 0
    for message in messages:
        for part in message.parts:
            if isinstance(part, (TextPart, ThinkingPart)):
                total += len(part.text)
            elif isinstance(part, ToolCallPart):
                total += len(part.name) + len(part.raw_args or json.dumps(part.args))
            elif isinstance(part, ToolResultPart):
                total += len(part.content)
            elif isinstance(part, FileTextPart):
                total += len(part.text) + len(part.name)
            elif isinstance(part, MentionPart):
                total += len(part.text) + len(part.mention)
    return total


def dump_messages(messages: list[Message]) -> str:
    return _messages_adapter.dump_json(messages).decode()


def load_messages(data: str | bytes) -> list[Message]:
    return _messages_adapter.validate_json(data)
