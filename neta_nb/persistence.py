"""SessionPersistence: everything one session writes to its :class:`SessionStore` — its
messages as they change, the draft of the answer being streamed, the compacted view and
the record the session list shows — in one place, so the session's loop never talks to
the database itself. Without a store every write is a no-op.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from .markup import plain_text
from .messages import Message
from .store import CompactedView, CompactionRecord, SessionRecord, SessionStore

__all__ = ["SessionPersistence", "StoredHistory", "one_line"]


@dataclass
class StoredHistory:
    """What a store holds of a session's conversation."""

    messages: list[Message]
    view: list[Message]
    """The model's view: the messages, or after a compaction its prefix and the rest."""
    compactions: list[CompactionRecord]
    draft: Message | None
    """The answer that was streaming when its process died, as far as it was saved."""


class SessionPersistence:
    """The writes of one session. ``describe`` returns the fields of the session's
    record as it stands (title and last message are derived here from the messages)."""

    def __init__(self, session_id: str, store: SessionStore | None,
                 describe: Callable[[], dict[str, Any]]) -> None:
        self.session_id = session_id
        self.store = store
        self._describe = describe

    def message(self, message: Message) -> None:
        """Insert or update one message (a message is saved again whenever its cards
        change)."""
        if self.store is not None:
            self.store.append_message(self.session_id, message)

    def draft(self, message: Message) -> None:
        if self.store is not None:
            self.store.save_draft(self.session_id, message)

    def clear_draft(self) -> None:
        if self.store is not None:
            self.store.clear_draft(self.session_id)

    def view(self, view: CompactedView) -> None:
        if self.store is not None:
            self.store.save_view(self.session_id, view)

    def load(self, store: SessionStore) -> StoredHistory:
        """Read the session's history from ``store`` (taking its draft)."""
        messages = store.load_messages(self.session_id)
        view = [m for m in messages if m.parts]
        compactions: list[CompactionRecord] = []
        stored = store.load_view(self.session_id)
        if stored is not None:
            ids = [m.id for m in view]
            if stored.kept_from in ids:
                view = [*stored.prefix, *view[ids.index(stored.kept_from):]]
                compactions = list(stored.compactions)
            else:
                store.warnings.append(f"session {self.session_id}: the compacted view points "
                                      f"at a missing message; the model sees the full history")
        return StoredHistory(messages, view, compactions, store.take_draft(self.session_id))

    def update(self, **fields: Any) -> None:
        """Change stored fields of the record without rebuilding it."""
        if self.store is not None:
            self.store.update_session(self.session_id, **fields)

    def record(self, messages: Sequence[Message], **fields: Any) -> SessionRecord:
        """The session's record as it stands, with ``fields`` overriding."""
        first_user = next((m.text for m in messages if m.role == "user"), "")
        last = next((m for m in reversed(messages)
                     if m.role in ("user", "assistant") and m.text), None)
        data: dict[str, Any] = {
            "id": self.session_id,
            "title": one_line(first_user, 60) if first_user.strip() else "New chat",
            # A preview line: what the message reads as, not its markdown.
            "last_message": one_line(plain_text(last.text), 120) if last else "",
            "message_count": len(messages),
            **self._describe(),
        }
        data.update(fields)
        return SessionRecord(**data)

    def save_record(self, messages: Sequence[Message], **fields: Any) -> None:
        """Save the record; its creation time, and its running flag unless ``fields``
        set it, are kept from the stored one."""
        if self.store is None:
            return
        existing = self.store.get_session(self.session_id)
        record = self.record(messages, **fields)
        if existing is not None:
            record.created_at = existing.created_at
            if "running" not in fields:
                record.running, record.owner = existing.running, existing.owner
            if "owner_died" not in fields:
                record.owner_died = existing.owner_died
        self.store.save_session(record)


def one_line(text: str, limit: int) -> str:
    """``text`` on one line, cut to ``limit`` characters with an ellipsis."""
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"
