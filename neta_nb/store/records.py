"""The records a store keeps beside a session's messages: the session's own
(:class:`SessionRecord`: what the session list shows and what resume needs), each
compaction (:class:`CompactionRecord`) and the model's compacted view
(:class:`CompactedView`). Plain data, the same for every backend."""

from __future__ import annotations

import math
import time
from collections.abc import Sequence
from typing import Any

from pydantic import BaseModel, Field, model_validator

from ..messages import KnownCost, KnownUsage, Message
from .process_owner import ProcessOwner

__all__ = ["UNTITLED", "CompactedView", "CompactionRecord", "RewoundSpend", "SessionRecord",
           "automatic_title", "one_line"]

UNTITLED = "New chat"
"""The title of a session before its first prompt (views show it in their language)."""


class RewoundSpend(BaseModel):
    """What a session paid for the calls of turns it went back over, each counted once:
    the known cost, how many calls, and whether some call's cost is unknown (then the
    sum is unknown, and ``usd`` is what is known of it)."""

    usd: float = 0.0
    calls: int = 0
    unknown: bool = False

    @model_validator(mode="after")
    def _never_a_credit(self) -> RewoundSpend:
        # A damaged record's negative or non-finite sum is unknown, never a credit
        # against the budget (as a stored cost is: messages.KnownCost).
        if not (math.isfinite(self.usd) and self.usd >= 0) or self.calls < 0:
            self.usd, self.calls, self.unknown = 0.0, max(self.calls, 0), True
        return self


class SessionRecord(BaseModel):
    """What the session list shows and what resume needs to rebuild the agent."""

    id: str
    title: str = UNTITLED
    agent: dict[str, Any] = Field(default_factory=dict)
    """The agent's definition: name, model, system_prompt, tools (config), default level."""
    think_level: str | None = None
    created_at: float = Field(default_factory=time.time)
    updated_at: float = Field(default_factory=time.time)
    todo_summary: dict[str, int] | None = None
    last_message: str = ""
    running: bool = False
    """A turn is in flight — reported true only while :attr:`owner` lives."""
    owner: ProcessOwner | None = None
    """The process running the turn in flight."""
    owner_died: bool = False
    """The owner died mid-turn; resume closes that turn (marked ``killed``)."""
    message_count: int = 0
    mcp_servers: list[dict[str, Any]] = Field(default_factory=list)
    """The MCP servers of the session's catalog: how to start each, its options and the
    tool listing granted — never ``env`` or ``headers``. ``resume`` brings them back."""
    parent_id: str | None = None
    """A sub-agent's session: the session whose ``delegate`` call ran it."""
    parent_call_id: str | None = None
    """A sub-agent's session: the parent's ``delegate`` call id (the nested card's id)."""
    branch_of: str | None = None
    """A branch's: the session it was forked from (:meth:`AgentSession.fork`)."""
    branch_at: str | None = None
    """A branch's: the message of :attr:`branch_of` it was forked at (its last one, but for
    the results of that message's tool calls, which a fork takes along)."""
    cost_usd: KnownCost = None
    """What the session's history has cost in USD so far (sub-agents included), when
    known."""
    rewound: RewoundSpend = Field(default_factory=RewoundSpend)
    """What the session paid for the calls of turns it went back over (retry, edit,
    rewind): not in its history or :attr:`cost_usd`, but counted against its budget
    (records from before it was kept: nothing)."""
    user: str | None = None
    """Whose session it is (the JupyterHub user, else the OS user of the kernel that
    created it); ``None`` in records from before sessions had owners."""
    title_by_user: bool = False
    """The title is the user's (``SessionStore.rename_session``): saving the session keeps
    it instead of deriving one from the first prompt."""
    notebook_restore: dict[str, Any] | None = None
    """The last rewind or fork that put the notebook's cells back: what it did
    (``NotebookRestore.to_json()``) and ``after_message``, how many messages the history
    held then (shown while it holds no more)."""
    child_count: int = 0
    """How many sub-agent sessions this session ran (filled in on every read from the
    store — ``get_session``, ``list_sessions``, ``list_children`` — for the session list's
    badge; what a record stores here is ignored)."""


    @property
    def untitled(self) -> bool:
        """No title yet (no prompt, no rename): views show "New chat" in their language."""
        return self.title == UNTITLED and not self.title_by_user

class CompactionRecord(BaseModel):
    """One compaction, for the chat view's marker: where it happened and what it saved."""

    after_message: int
    """How many messages of the full history existed when it happened."""
    tokens_before: int
    tokens_after: int
    messages_folded: int
    usage: KnownUsage = None
    """What the summarising call cost."""
    cost_usd: KnownCost = None
    """What it cost in USD, when its model had a price (rows from before costs were kept
    have none: they are priced at the model's price when read)."""


class CompactedView(BaseModel):
    """The model's view of a compacted session: injected messages (summary, plan), then
    the full history from the message ``kept_from`` on."""

    prefix: list[Message]
    kept_from: str | None
    compactions: list[CompactionRecord] = Field(default_factory=list)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def automatic_title(messages: Sequence[Message]) -> str:
    """A session's title when the user gave none: its first prompt, on one line."""
    first = next((m.text for m in messages if m.role == "user"), "")
    return one_line(first, 60) if first.strip() else UNTITLED
