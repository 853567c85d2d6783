"""SessionPersistence: everything one session writes to its :class:`SessionStore` — its
messages as they change, the draft of the answer being streamed, the compacted view and
the record the session list shows — in one place, so the session's loop never talks to
the database itself. Without a store every write is a no-op.

Every write is serialised here, on the caller's thread (the objects keep changing), and
handed to the session's :class:`~neta_nb.store.writer.StoreWriter`, which stores it on a
thread of its own, in order, retrying until it succeeds: a locked or full store makes the
session *behind*, never blocked and never failing.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from pydantic import ValidationError

from ..escaping import plain_text
from ..events import WarningEvent
from ..labels import t
from ..messages import Message
from .database import Rows
from .process_owner import current_user
from .records import CompactedView, CompactionRecord, SessionRecord, automatic_title, one_line
from .session_store import SessionStore
from .writer import StoreFailure, StoreWriter, Write, writers_of

__all__ = ["SessionPersistence", "StoredHistory", "deleted_warning", "flush_session", "one_line",
           "store_warning"]


@dataclass
class StoredHistory:
    """What a store holds of a session's conversation."""

    messages: list[Message]
    view: list[Message]
    """The model's view: the messages, or after a compaction its prefix and the rest."""
    compactions: list[CompactionRecord]
    draft: Message | None
    """The answer that was streaming when its process died, as far as it was saved (still
    in the store: :meth:`SessionPersistence.clear_draft` once it is a message)."""


LOAD_FLUSH_LIMIT = 5.0
"""Seconds :meth:`SessionPersistence.load` waits for this process's pending writes of
the same session (another object of it, e.g. a view's) before reading without them."""


class SessionPersistence:
    """The writes of one session. ``describe`` returns the fields of the session's
    record as it stands (title and last message are derived here from the messages);
    ``on_behind`` hears when writes start failing (a :class:`StoreFailure`) and when all
    is stored again (``None``)."""

    def __init__(self, session_id: str, store: SessionStore | None,
                 describe: Callable[[], dict[str, Any]],
                 on_behind: Callable[[StoreFailure | None], None] | None = None,
                 on_deleted: Callable[[], None] | None = None,
                 parent: SessionPersistence | None = None) -> None:
        self.session_id = session_id
        self.store = store
        self._describe = describe
        self._writer = (StoreWriter(store, session_id, on_behind or (lambda _failure: None))
                        if store is not None else None)
        self._on_deleted = on_deleted or (lambda: None)
        self._parent = parent
        """A sub-agent's: the parent session's writes (deleting the parent deletes it)."""
        self._record_stored = False
        self.deleted = False
        """The store's record of the session was deleted (here or by another kernel)
        after it had been stored: nothing of the session is written any more."""

    @property
    def record_stored(self) -> bool:
        """The session's record is in the store (a write of it committed)."""
        return self._record_stored

    # --- writes -------------------------------------------------------------------------
    def _submit(self, what: str, apply: Callable[[Rows], None],
                key: str | None = None, *, notify: bool = True, durable: bool = True) -> None:
        if self._writer is not None:
            stored = _Stored()
            self._writer.submit(Write(what, self._unless_deleted(apply, stored), key, notify,
                                      durable, on_stored=lambda: self._committed(stored)))

    def _committed(self, stored: _Stored) -> None:
        # Known only once its transaction committed: a write whose commit failed (and is
        # retried) must not make a later retry read "the record is gone, so deleted".
        if stored.record_exists:
            self._record_stored = True

    def _unless_deleted(self, apply: Callable[[Rows], None], stored: _Stored
                        ) -> Callable[[Rows], None]:
        """``apply``, unless the session's record is gone although it was stored: a
        deletion (``SessionStore.delete_session``) sticks — the rest of a turn, or the
        next turn of an idle session in another kernel, would otherwise bring back part
        of the session. Checked in the write's own transaction, so a deletion is either
        wholly before the write or wholly after it."""
        writer = self._writer

        def guarded(rows: Rows) -> None:
            if self.deleted:
                return
            if self._parent_gone(rows) or (not rows.session_exists(self.session_id)
                                           and self._record_stored):
                self.deleted = True
                if writer is not None:
                    writer.deliver(lambda _none: self._on_deleted(), None)
                return
            apply(rows)
            stored.record_exists = rows.session_exists(self.session_id)

        return guarded

    def _parent_gone(self, rows: Rows) -> bool:
        """A sub-agent's parent session was deleted (a child started after that would be
        stored as an orphan): its record, once stored, is missing now."""
        parent = self._parent
        return parent is not None and (parent.deleted or (
            parent.record_stored and not rows.session_exists(parent.session_id)))

    def message(self, message: Message, *, replaces_draft: bool = False) -> None:
        """Insert or update one message (a message is saved again whenever its cards
        change). ``replaces_draft``: it is the answer the draft checkpointed, and the
        draft goes in the same transaction — a kernel killed between two writes would
        leave both, and resume would show the answer twice."""
        if self._writer is None:
            return
        assert self.store is not None
        encoded = self.store.database.encode(message)
        session_id, message_id = self.session_id, message.id

        def apply(rows: Rows) -> None:
            rows.put_message(session_id, message_id, encoded.json)
            rows.ensure_blobs(session_id, encoded)
            if replaces_draft:
                rows.put_draft(session_id, None)

        self._submit(f"message {message_id}", apply,
                     key=None if replaces_draft else f"message:{message_id}")

    def draft(self, message: Message) -> None:
        if self._writer is None:
            return
        assert self.store is not None
        session_id = self.session_id
        encoded = self.store.database.encode(message)

        def apply(rows: Rows) -> None:
            rows.put_draft(session_id, encoded.json)
            rows.ensure_blobs(session_id, encoded)

        self._submit("the draft of the streaming answer", apply, key="draft", notify=False,
                     durable=False)

    def clear_draft(self) -> None:
        session_id = self.session_id
        self._submit("clearing the draft", lambda rows: rows.put_draft(session_id, None),
                     key="draft", notify=False)

    def view(self, view: CompactedView) -> None:
        if self._writer is None:
            return
        session_id, data = self.session_id, view.model_dump_json()
        self._submit("the compacted view", lambda rows: rows.put_view(session_id, data),
                     key="view")

    def forget_messages(self, message_ids: Sequence[str], *, keep_view: bool) -> None:
        """Remove these messages, the last ones of the session (a rewind: a branch keeps
        them); ``keep_view=False`` drops the stored compacted view too."""
        if self._writer is None:
            return
        session_id, ids = self.session_id, list(message_ids)

        def apply(rows: Rows) -> None:
            rows.delete_messages(session_id, ids)
            if not keep_view:
                rows.execute("DELETE FROM views WHERE session_id = ?", (session_id,))

        self._submit(f"the rewind ({len(ids)} messages)", apply)

    def update(self, **fields: Any) -> None:
        """Change stored fields of the record without rebuilding it."""
        session_id = self.session_id

        def apply(rows: Rows) -> None:
            existing = _stored_record(rows, session_id)
            if existing is not None:
                changed = existing.model_copy(update={**fields, "updated_at": time.time()})
                _put_record(rows, changed)

        self._submit(f"the session record ({', '.join(fields)})", apply)

    def create_record(self, messages: Sequence[Message]) -> None:
        """Save the record unless the store has one for this session already."""
        if self._writer is None:
            return
        record = self.record(messages)

        def apply(rows: Rows) -> None:
            if rows.read_session(record.id) is None:
                _put_record(rows, record)

        self._submit("the new session's record", apply)

    def save_record(self, messages: Sequence[Message], **fields: Any) -> None:
        """Save the record; its creation time, and its running flag unless ``fields``
        set it, are kept from the stored one."""
        if self._writer is None:
            return
        record = self.record(messages, **fields)

        def apply(rows: Rows) -> None:
            merged = record.model_copy()
            existing = _stored_record(rows, record.id)
            if existing is not None:
                merged.created_at = existing.created_at
                merged.user = existing.user or merged.user  # whose it is never changes
                if existing.title_by_user:  # a title the user gave stays
                    merged.title, merged.title_by_user = existing.title, True
                if "running" not in fields:
                    merged.running, merged.owner = existing.running, existing.owner
                if "owner_died" not in fields:
                    merged.owner_died = existing.owner_died
            _put_record(rows, merged)

        self._submit("the session record", apply)

    # --- waiting for the store ------------------------------------------------------------
    @property
    def pending(self) -> int:
        """Writes not stored yet."""
        return self._writer.pending if self._writer is not None else 0

    @property
    def failure(self) -> StoreFailure | None:
        """Why writes are failing, while they are."""
        return self._writer.failure if self._writer is not None else None

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every write so far is stored; ``False`` if ``timeout`` ran out."""
        return self._writer.flush(timeout) if self._writer is not None else True

    async def settled(self) -> None:
        """Until every write so far is stored, or the store is known to be behind."""
        if self._writer is not None:
            await self._writer.settled()

    # --- reads ----------------------------------------------------------------------------
    def load(self, store: SessionStore) -> StoredHistory:
        """Read the session's history from ``store``, after what this process still has
        to write of it."""
        flush_session(store, self.session_id, besides=self._writer)
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
        # Read only: the resumed session clears the draft through its writer, so a locked
        # store never blocks the resume.
        return StoredHistory(messages, view, compactions, store.load_draft(self.session_id))

    def record(self, messages: Sequence[Message], **fields: Any) -> SessionRecord:
        """The session's record as it stands, with ``fields`` overriding."""
        last = next((m for m in reversed(messages)
                     if m.role in ("user", "assistant") and m.text), None)
        data: dict[str, Any] = {
            "id": self.session_id,
            "title": automatic_title(messages),
            # A preview line: what the message reads as, not its markdown.
            "last_message": one_line(plain_text(last.text), 120) if last else "",
            "message_count": len(messages),
            "user": current_user(),
            **self._describe(),
        }
        data.update(fields)
        return SessionRecord(**data)



def store_warning(failure: StoreFailure | None) -> WarningEvent:
    """The event that says the store is behind (``failure``) or has caught up (``None``)."""
    if failure is None:
        return WarningEvent(message=t("store_caught_up"), code="store_caught_up", cleared=True)
    code = f"store_behind_{failure.kind}"
    params = {"detail": failure.detail}
    return WarningEvent(message=t(code, **params), code=code, params=params)


def deleted_warning() -> WarningEvent:
    """The event that says the session's record was deleted from its store."""
    return WarningEvent(message=t("store_session_deleted"), code="store_session_deleted")


def flush_session(store: SessionStore, session_id: str, *,
                  besides: StoreWriter | None = None) -> StoreWriter | None:
    """Wait (a bounded time) for what this process still has to write of a session —
    another object of it, a view's — so a read of the store sees this process's own
    writes (``besides``: the reader's own writer, whose writes follow the read). Returns
    a writer that is still behind, if any: a writer whose store is locked or full is not
    waited for (that wait could be as long as the other program's lock)."""
    for writer in writers_of(store, session_id):
        if writer is besides:
            continue
        if writer.failure is not None or not writer.flush(LOAD_FLUSH_LIMIT):
            store.warnings.append(f"session {session_id}: {writer.pending} writes of it are "
                                  f"not stored yet; they are missing here")
            return writer
    return None


class _Stored:
    """What a write found in its transaction, for after its commit."""

    __slots__ = ("record_exists",)

    def __init__(self) -> None:
        self.record_exists = False


def _put_record(rows: Rows, record: SessionRecord) -> None:
    rows.put_session(record.id, record.model_dump_json(), record.updated_at,
                     record.parent_id, record.user)


def _stored_record(rows: Rows, session_id: str) -> SessionRecord | None:
    data = rows.read_session(session_id)
    if data is None:
        return None
    try:
        return SessionRecord.model_validate_json(data)
    except ValidationError:
        return None  # a damaged record is replaced by the session's own



