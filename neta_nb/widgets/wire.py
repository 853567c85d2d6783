"""The wire format every widget shares: the request protocol's replies, the records
several widgets draw (a plan step, a turn's usage, the context's fill, a tool's displayed
output) and the batch grid's. Each TypedDict mirrors the TS interface of the same name
(``tests/widgets/test_wire_types.py`` checks both sides field for field, value types and
literals included); the chat view's own are in ``.chat.wire``, the cards' in
``.cards.wire``, the tool panel's in ``.tool_config.traits``.

The records that are dumps of the core's models (``TodoItemDict`` of
:class:`neta_nb.todo.TodoItem`, ``TurnUsageDict`` and ``ContextUsageDict`` of the
:mod:`neta_nb.events` ones, ``DisplayItemDict`` of :class:`neta_nb.messages.DisplayItem`)
are checked against those models by the same test.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Literal, NotRequired, TypedDict

from ..todo import TodoStatus

__all__ = [
    "BatchCounts",
    "BatchFailure",
    "ContextUsageDict",
    "DisplayItemDict",
    "ErrorReply",
    "NoReply",
    "OkReply",
    "OpenRowReply",
    "OpenRowRequest",
    "Reply",
    "TodoItemDict",
    "TurnUsageDict",
]


# --- the request protocol: `Reply<T>` in js/src/anywidget-binding.ts ---------------------
class OkReply(TypedDict):
    """A request that was answered (TS: ``Reply<T>`` with ``ok: true``)."""

    kind: Literal["reply"]
    id: str
    ok: Literal[True]
    result: Mapping[str, object]


class ErrorReply(TypedDict):
    """A request that failed (TS: ``Reply<T>`` with ``ok: false``)."""

    kind: Literal["reply"]
    id: str
    ok: Literal[False]
    error: str


Reply = OkReply | ErrorReply


class NoReply(TypedDict):
    """A request answered with nothing but success (TS: ``NoReply``)."""


# --- records several widgets draw ---------------------------------------------------------
class TodoItemDict(TypedDict):
    """One step of the plan as the widgets carry it: a dumped
    :class:`~neta_nb.todo.TodoItem` (TS: ``TodoItem``, cards/todo-card.ts)."""

    id: str
    content: str
    status: TodoStatus


class TurnUsageDict(TypedDict):
    """A dumped :class:`~neta_nb.events.TurnUsage` (TS: ``TurnUsage``, cards/token-stats.ts)."""

    input_tokens: int
    output_tokens: int
    total_tokens: int
    api_calls: int
    unreported_calls: NotRequired[int]
    """This and the fields below are always sent; absent in state saved before they were."""
    cost_usd: NotRequired[float | None]
    cost_split: NotRequired[dict[str, float] | None]
    session_cost_usd: NotRequired[float | None]


class ContextUsageDict(TypedDict):
    """A dumped :class:`~neta_nb.events.ContextUsage` (TS: ``ContextUsage``,
    cards/token-stats.ts)."""

    used_tokens: int
    max_tokens: int
    percent: float
    estimate: NotRequired[Literal["unreported", "compaction"] | None]
    """This and ``window_assumed`` are always sent; absent in state saved before they were."""
    window_assumed: NotRequired[bool]


class DisplayItemDict(TypedDict):
    """What a tool displayed, as a card carries it: a dumped
    :class:`~neta_nb.messages.DisplayItem` (TS: ``DisplayItem``, rich-output.ts);
    ``omitted`` when the item was left out of widget state for its size (``data`` and
    ``text`` are then ``None``; the kernel keeps it)."""

    type: NotRequired[Literal["display"]]
    """This and the other ``NotRequired`` fields but ``omitted`` are always sent; the view
    draws an item from ``media_type`` and ``data`` alone."""
    media_type: str
    data: str | None
    sha256: NotRequired[str | None]
    name: NotRequired[str | None]
    size: NotRequired[int]
    width: NotRequired[int]
    height: NotRequired[int]
    text: NotRequired[str | None]
    omitted: NotRequired[bool]


# --- the batch grid (js/src/batch/batch-grid.ts) -----------------------------------------
class BatchCounts(TypedDict):
    """The header's counters (TS: ``BatchCounts``, js/src/batch/batch-grid.ts)."""

    queued: int
    running: int
    done: int
    failed: int
    retried: int
    """Attempts made again after a transient failure."""
    input_tokens: int
    """Summed over the finished rows' usage, as stored."""
    output_tokens: int


class BatchFailure(TypedDict):
    """One failed row (TS: ``BatchFailure``)."""

    idx: int
    error: str


class OpenRowRequest(TypedDict):
    """``open_row``: show row ``idx``'s session under the grid (TS: ``OpenRowRequest``)."""

    idx: int


class OpenRowReply(TypedDict):
    """The row now shown (TS: ``OpenRowReply``)."""

    idx: int
    session_id: str

