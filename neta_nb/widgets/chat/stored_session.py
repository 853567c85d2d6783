"""A session read from the store without taking it over: what a chat view shows, read-only,
of a session whose turn another process (another kernel) is running.

Resuming such a session would be taking it over (``AgentSession.resume`` refuses with
``SessionBusyError``). Reading is not: the record, the messages stored so far and the
compaction markers come from the store's read API, nothing is written, and the owner
keeps its turn. :meth:`StoredSession.reread` picks up what the owner stored since, and
:attr:`StoredSession.busy` turns false once the owner's turn ends or the owner dies —
then the session can be resumed here.
"""

from __future__ import annotations

import asyncio
import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ...messages import Message
from ...store.session_store import CompactionRecord, SessionRecord, SessionStore

__all__ = ["StoredSession", "StoredSessionFollower"]

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class StoredSession:
    """One read of a stored session: its record, messages (with the answer being
    streamed, as far as the owner checkpointed it) and compaction markers."""

    store: SessionStore
    record: SessionRecord
    messages: list[Message]
    compactions: list[CompactionRecord]

    @classmethod
    def read(cls, store: SessionStore, session_id: str) -> StoredSession:
        """Read ``session_id`` from ``store``; ``KeyError`` when there is no such session."""
        record = store.get_session(session_id)
        if record is None:
            raise KeyError(f"no session {session_id!r} in {store.location}")
        view = store.load_view(session_id)
        messages = store.load_messages(session_id)
        # A dead owner's draft stays until someone resumes the session (which turns it
        # into the turn's last message): shown either way.
        draft = (store.load_draft(session_id) if record.running or record.owner_died
                 else None)
        if draft is not None:
            # The answer the owner is streaming, as far as it checkpointed it. Each
            # checkpoint is a new message object: one id keeps it one drawn message.
            draft.id = f"draft_{session_id}"
            messages.append(draft)
        return cls(store, record, messages,
                   list(view.compactions) if view is not None else [])

    @property
    def id(self) -> str:
        return self.record.id

    @property
    def busy(self) -> bool:
        """A live owner is running a turn (the record says running only while it lives)."""
        return self.record.running and self.record.owner is not None

    @property
    def owner(self) -> str:
        """Who runs the turn, in words ("process 4242 on host"), or "" when nobody does."""
        owner = self.record.owner
        return owner.describe() if owner is not None and self.busy else ""

    @property
    def agent(self) -> dict[str, str]:
        """``{name, model}`` of the session's agent, as stored."""
        data: dict[str, Any] = self.record.agent
        return {"name": str(data.get("name", "")), "model": str(data.get("model") or "")}

    @property
    def _stored_count(self) -> int:
        return sum(1 for m in self.messages if not m.id.startswith("draft_"))

    def _draft_changed(self) -> bool:
        draft = self.store.load_draft(self.id)
        shown = next((m for m in self.messages if m.id.startswith("draft_")), None)
        if draft is None or shown is None:
            return (draft is None) != (shown is None)
        return draft.parts != shown.parts

    def reread(self, *, force: bool = False) -> StoredSession | None:
        """This session read again if the store holds something newer — more messages, a
        changed record (the turn ended, the owner died) — or if ``force``; else ``None``.
        The check is two small queries, cheap enough to poll; a message the owner
        rewrites in place (its cards) shows at the next change or forced read."""
        record = self.store.get_session(self.id)
        if record is None:
            raise KeyError(f"session {self.id!r} is no longer in {self.store.location}")
        if (not force and record.updated_at == self.record.updated_at
                and record.running == self.record.running
                and self.store.count_messages(self.id) == self._stored_count
                and not ((record.running or record.owner_died) and self._draft_changed())):
            return None
        return StoredSession.read(self.store, self.id)


class StoredSessionFollower:
    """Keeps the read of a stored session current while a view shows it: reread on
    :meth:`refresh`, when the store says the session changed (another process's change
    too, on a store that hears them: PostgreSQL's LISTEN/NOTIFY), and every ``interval``
    seconds on the running loop while its owner's turn runs (the streaming draft is not
    announced); ``on_change(stored)`` gets each newer read."""

    def __init__(self, stored: StoredSession, on_change: Callable[[StoredSession], None], *,
                 interval: float) -> None:
        self.stored = stored
        self._on_change = on_change
        self._interval = interval
        self._timer: asyncio.TimerHandle | None = None
        self._closed = False
        # A store heard from another process with no loop to hand over to (a script) calls
        # from its listener's thread: a reread there and close() never interleave.
        self._lock = threading.RLock()
        self._unsubscribe: Callable[[], None] | None = stored.store.subscribe(
            self._on_store_change)
        self._schedule()

    def _on_store_change(self, session_id: str) -> None:
        # "" is "anything may have changed" (a listener that reconnected).
        if session_id not in (self.stored.id, ""):
            return
        try:
            self.refresh(force=False)
        except Exception:
            log.warning("rereading session %s failed", self.stored.id, exc_info=True)
            return
        self._schedule()

    def refresh(self, *, force: bool = True) -> bool:
        """Read again (only if something changed unless ``force``); True if it had."""
        with self._lock:
            if self._closed:
                return False
            newer = self.stored.reread(force=force)
            if newer is None:
                return False
            self.stored = newer
            self._on_change(newer)
            return True

    def close(self) -> None:
        with self._lock:  # after a reread in flight: nothing is shown once closed
            self._closed = True
        self._cancel_timer()
        if self._unsubscribe is not None:
            unsubscribe, self._unsubscribe = self._unsubscribe, None
            unsubscribe()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None

    def _schedule(self) -> None:
        self._cancel_timer()
        if not self.stored.busy:
            return  # nothing more happens there until someone resumes it
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return  # no loop (a script): refresh() still rereads
        self._timer = loop.call_later(self._interval, self._tick)

    def _tick(self) -> None:
        self._timer = None
        try:
            self.refresh(force=False)
        except Exception:
            # A store that cannot be read right now (locked, gone) is tried again at the
            # next tick; a Refresh click reports the error where the user clicked.
            log.warning("rereading session %s failed", self.stored.id, exc_info=True)
        self._schedule()
