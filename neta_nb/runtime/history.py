"""History: the one place a session's conversation grows or changes.

Every message appended (a prompt, an answer, a tool result, a closing marker) and every
change to one already there (a card's status, an approval, a sub-agent's run) passes
here, and here alone it is counted into the model's view, handed to the store and said as
an event (``message_appended``, ``message_updated``). So the stream of events is complete,
and what the model is sent stays sized as it grows: the context estimate of a server that
reports no usage reads a running count instead of walking the history on every call.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Protocol

from ..events import Event, message_appended_event, message_updated_event
from ..messages import Message, count_characters

__all__ = ["History"]


class _Store(Protocol):
    def message(self, message: Message, *, replaces_draft: bool = False) -> None: ...


class _Meter(Protocol):
    def appended(self, characters: int) -> None: ...


class History:
    """A session's messages and the model's view of them (see
    :attr:`AgentSession.model_view`), with the view's size in characters."""

    def __init__(self, store: _Store, meter: _Meter, emit: Callable[[Event], None]) -> None:
        self._store, self._meter, self._emit = store, meter, emit
        self.messages: list[Message] = []
        """The conversation so far, in order (the session's own list)."""
        self.view: list[Message] = []
        """What the model is sent: :attr:`messages` less empty ones, or after a
        compaction the summary, the preserved plan and the turns kept verbatim."""
        self.view_characters = 0
        """Characters the model reads in :attr:`view` (``count_characters``), kept as
        messages arrive."""
        self._index: dict[str, int] = {}

    def append(self, message: Message, *, replaces_draft: bool = False) -> None:
        """Add ``message`` at the end: counted, stored, said."""
        index = len(self.messages)
        self.messages.append(message)
        self._index[message.id] = index
        # Interrupted answers with nothing in them carry no information for the model,
        # and some APIs reject empty assistant turns: they stay out of the model's view.
        if message.parts:
            characters = count_characters((message,))
            self.view.append(message)
            self.view_characters += characters
            # A complete answer's tokens are in its own usage; a cut one usually has none.
            if message.role != "assistant" or message.metadata.usage is None:
                self._meter.appended(characters)
        self._store.message(message, replaces_draft=replaces_draft)
        self._emit(message_appended_event(index, message))

    def changed(self, message: Message) -> None:
        """``message``, already in the history, changed (its metadata: cards, marks):
        stored again and said."""
        self._store.message(message)
        index = self._index.get(message.id)
        if index is not None:
            self._emit(message_updated_event(index, message))

    def index_of(self, message_id: str) -> int | None:
        """Where message ``message_id`` is in :attr:`messages` (``None``: not there)."""
        return self._index.get(message_id)

    def load(self, messages: list[Message], view: list[Message]) -> None:
        """Start from a stored conversation (resume); nothing is stored or said."""
        self.messages = messages
        self._index = {message.id: index for index, message in enumerate(messages)}
        self.set_view(view)

    def set_view(self, view: Sequence[Message]) -> None:
        """The model's view was rebuilt (a compaction, a repair on resume)."""
        self.view = list(view)
        self.view_characters = count_characters(self.view)
