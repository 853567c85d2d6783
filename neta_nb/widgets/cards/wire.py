"""The cards' wire format: the standalone cards' requests, replies and messages (the
chat view draws the same cards from ``..chat.wire``'s ``ChatCard``). Each TypedDict mirrors
the TS interface named in its docstring (``js/src/widgets.ts``, the cards' modules);
``tests/widgets/test_wire_types.py`` checks both sides field for field, value types and
literals included.
"""

from __future__ import annotations

from typing import Literal, NotRequired, TypedDict

from ..chat.wire import FullTextField, SubagentPart

__all__ = ["AppendMessage", "CardFullText", "CardFullTextRequest", "StreamSnapshot",
           "SubagentFullTextRequest", "SubagentSnapshot"]


# --- tool and skill cards (cards/tool-card.ts, cards/skill-card.ts) ----------------------
class CardFullTextRequest(TypedDict):
    """``full_text`` of a standalone card: ``field`` is ``result`` (or ``args`` for a tool
    card) (TS: ``CardFullTextRequest``, tool-card.ts)."""

    field: str


class CardFullText(TypedDict):
    text: str


# --- the thinking block (cards/thinking-block.ts) -----------------------------------------
class AppendMessage(TypedDict):
    """One numbered batch of streamed text (TS: ``AppendMessage``, widgets.ts)."""

    kind: Literal["append"]
    seq: int
    text: str


class StreamSnapshot(TypedDict):
    """The ``snapshot`` reply: the text as of batch ``seq`` (TS: ``StreamSnapshot``,
    widgets.ts)."""

    text: str
    seq: int


# --- the sub-agent card (cards/subagent-card.ts) ------------------------------------------
class SubagentSnapshot(TypedDict):
    """The ``sync`` reply (TS: ``SubagentSnapshot``, widgets.ts): the card whole, as of
    batch ``seq``."""

    seq: int
    part: SubagentPart


class SubagentFullTextRequest(TypedDict):
    """``full_text`` of a message of the transcript (TS: ``FullTextRequest``)."""

    message_id: str
    field: FullTextField
    card_id: NotRequired[str]
    path: NotRequired[list[str]]
    """The runs the message is nested in, from this card's own (none: the card's)."""

