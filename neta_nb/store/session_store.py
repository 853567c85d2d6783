"""SessionStore: where sessions and their messages are kept (DESIGN §6), the same on
SQLite (a path: one file per user) and on PostgreSQL (a ``postgresql://`` URL: a team's
server) — what differs lives in :mod:`neta_nb.store.sqlite.sqlite` and
:mod:`neta_nb.store.postgres.postgres` behind :class:`~neta_nb.store.database.Database`.

Messages are written at each message boundary; the assistant message being streamed is
checkpointed as a *draft* a few times a second, so a kernel that dies mid-turn loses at
most the last fraction of a second, and :meth:`AgentSession.resume` turns the draft into
a message marked ``interrupted="killed"``.

Rows are JSON documents validated on read. A row that no longer validates (a corrupt
write, a hand edit) is skipped with a warning instead of making the session unreadable.
"""

from __future__ import annotations

import asyncio
import logging
import os
import re
import threading
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import Any

import platformdirs
from pydantic import ValidationError

from ..messages import Message
from .database import Action, Database, Rows, SessionRow, TurnClaimHandle, WriterConnection
from .process_owner import busy_error, current_user
from .records import CompactedView, CompactionRecord, SessionRecord, automatic_title
from .sqlite.sqlite import SqliteDatabase
from .writer import writers_of

log = logging.getLogger(__name__)

__all__ = ["MAX_SESSION_ID", "STORE_URL_VARIABLE", "UNREADABLE_MESSAGE", "CompactedView",
           "CompactionRecord", "SessionRecord", "SessionStore", "check_session_id",
           "database_url", "default_store_path"]

UNREADABLE_MESSAGE = "This message could not be read from the store (its row is damaged)."

STORE_URL_VARIABLE = "NETA_NB_STORE_URL"
"""The environment variable naming the default store: a PostgreSQL URL or a path."""


def default_store_path() -> Path:
    """The per-user default: ``$NETA_NB_HOME/sessions.sqlite3`` if set, else the
    platform's user data directory."""
    home = os.environ.get("NETA_NB_HOME")
    base = Path(home) if home else Path(platformdirs.user_data_dir("neta_nb", appauthor=False))
    return base / "sessions.sqlite3"


_URL = re.compile(r"^([A-Za-z][A-Za-z0-9+.-]*)://")
_POSTGRES_SCHEMES = ("postgresql", "postgres", "postgresql+psycopg", "postgresql+psycopg2")


def database_url(target: object) -> str | None:
    """``target`` as a libpq URL when it names a PostgreSQL database, ``None`` when it is
    a path. A URL of any other scheme (a typo) is a ``ValueError``, never a file of that
    name in the working folder."""
    if not isinstance(target, str):
        return None
    match = _URL.match(target)
    if match is None:
        return None
    scheme = match.group(1).lower()
    if scheme not in _POSTGRES_SCHEMES:
        raise ValueError(f"the session store {target[:match.end()]}… is neither a path nor a "
                         f"postgresql:// URL")
    return "postgresql://" + target[match.end():]


MAX_SESSION_ID = 1000
"""The longest session id (any characters but NUL), the same for every database."""


def check_session_id(session_id: str) -> None:
    """Refuse a session id no database stores alike (NUL, or absurdly long)."""
    if not isinstance(session_id, str) or not session_id:
        raise ValueError("a session id is a non-empty string")
    if "\x00" in session_id or len(session_id) > MAX_SESSION_ID:
        raise ValueError(f"a session id must hold no NUL character and at most "
                         f"{MAX_SESSION_ID} characters")


CLAIM_LIMIT = 10.0
"""Seconds a turn waits for its claim before it runs unclaimed (a server that hangs)."""
DELETE_FLUSH_LIMIT = 5.0
"""Seconds a deletion waits for this process's pending writes of the session."""


class SessionStore:
    """Where sessions are kept: ``SessionStore(path)`` (SQLite, the default under the
    user's data folder) or ``SessionStore("postgresql://user@host:5432/db")`` (needs
    ``neta-nb[postgres]``); with no argument, ``$NETA_NB_STORE_URL`` when set. Safe to
    share between sessions and threads of one process; each write is its own
    transaction."""

    def __init__(self, path: str | Path | None = None) -> None:
        if path is None:
            path = os.environ.get(STORE_URL_VARIABLE) or default_store_path()
        self.database: Database
        url = database_url(path)
        if url is not None:
            from .postgres.postgres import PostgresDatabase  # psycopg only for those who use it

            self.database = PostgresDatabase(url)
        else:
            self.database = SqliteDatabase(Path(path))
        self.target = str(path)
        """What opens this store again in another process (a path, or a URL with its
        password: never shown)."""
        self.location = self.database.location
        """Where the sessions are, for messages: the file, or the URL without password."""
        self._lock = threading.RLock()
        self._listeners: list[Callable[[str], None]] = []
        self._stop_listening: Callable[[], None] | None = None
        self.warnings: list[str] = []
        """Problems met while reading (corrupt rows skipped), newest last."""
        self._claims_settling: dict[str, asyncio.Future[TurnClaimHandle | None]] = {}
        """A claim a stopped turn gave up waiting for, by session: still being taken (on
        a thread), and released as soon as it is; the session's next claim waits for it."""

    @property
    def path(self) -> Path:
        """The SQLite file (a PostgreSQL store has none: see :attr:`location`)."""
        if isinstance(self.database, SqliteDatabase):
            return self.database.path
        raise AttributeError(f"a PostgreSQL store has no file path; it is at {self.location}")

    @property
    def blobs(self) -> Any:
        """Where large images and documents of messages are kept (see
        :mod:`neta_nb.store.blobs`)."""
        return getattr(self.database, "blobs", None)

    def writer_connection(self) -> WriterConnection:
        """A connection of its own for a writer thread (see :class:`StoreWriter
        <neta_nb.store.writer.StoreWriter>`)."""
        return self.database.writer_connection()

    # --- change notification ---------------------------------------------------------
    def subscribe(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(session_id)`` after any change to a session or its messages —
        this process's own, and on PostgreSQL other processes' too (within a second,
        through LISTEN/NOTIFY; listening when this returns; called on the loop that was
        running when subscribing, else on the listener's thread). Returns the function
        that unsubscribes."""
        with self._lock:
            self._listeners.append(callback)
            if self._stop_listening is None:
                self._stop_listening = self.database.listen(self._changed)

        def unsubscribe() -> None:
            with self._lock:
                if callback in self._listeners:
                    self._listeners.remove(callback)
                if not self._listeners and self._stop_listening is not None:
                    stop, self._stop_listening = self._stop_listening, None
                    stop()

        return unsubscribe

    def notify_changed(self, session_id: str) -> None:
        """Tell the listeners that ``session_id`` changed (a writer that wrote it with a
        connection of its own calls this)."""
        self._changed(session_id)

    def _changed(self, session_id: str) -> None:
        for listener in list(self._listeners):
            listener(session_id)

    # --- sessions ---------------------------------------------------------------------
    def save_session(self, record: SessionRecord) -> None:
        """Insert or replace a session's record."""
        check_session_id(record.id)
        data = record.model_dump_json()
        self.database.change(record.id, lambda rows: rows.put_session(
            record.id, data, record.updated_at, record.parent_id, record.user))
        self._changed(record.id)

    def update_session(self, session_id: str, **fields: Any) -> SessionRecord:
        """Change some fields of a session's record (``updated_at`` is refreshed)."""
        with self._lock:
            record = self.get_session(session_id)
            if record is None:
                raise KeyError(f"no session {session_id!r} in {self.location}")
            record = record.model_copy(update={**fields, "updated_at": time.time()})
            self.save_session(record)
        return record

    def rename_session(self, session_id: str, title: str | None) -> SessionRecord:
        """Give a session the user's title, kept whenever the session is saved again;
        ``None`` or blank: back to the automatic one (its first prompt). ``KeyError``
        for a session the store does not have."""
        text = " ".join((title or "").split())[:TITLE_CHARS]
        if text:
            return self.update_session(session_id, title=text, title_by_user=True)
        return self.update_session(session_id, title_by_user=False,
                                   title=automatic_title(self.load_messages(session_id)))

    def search_sessions(self, query: str, *, limit: int = 50,
                        all_users: bool = False) -> list[SessionRecord]:
        """Top-level sessions whose title or messages contain ``query`` (case-insensitive
        for ASCII letters; every word of it, anywhere), most recently updated first, at
        most ``limit``. A blank query lists the sessions as :meth:`list_sessions`."""
        words = query.split()[:8]
        if not words:
            return self.list_sessions(limit, all_users=all_users)
        return self._records(self.database.search_rows(
            words, limit=max(1, limit), users=self._users(all_users)))

    def get_session(self, session_id: str) -> SessionRecord | None:
        found = self.database.read_session(session_id)
        if found is None:
            return None
        records = self._records([(session_id, *found)])
        return records[0] if records else None

    def list_sessions(self, limit: int | None = None, *,
                      all_users: bool = False) -> list[SessionRecord]:
        """Top-level sessions (not sub-agents' own), most recently updated first, each
        with :attr:`SessionRecord.child_count` — the current user's (and those stored
        before sessions had owners), or everyone's with ``all_users=True``. Unreadable
        records are skipped."""
        return self._records(self.database.session_rows(
            parent_id=None, limit=limit, users=self._users(all_users)))

    def list_children(self, session_id: str) -> list[SessionRecord]:
        """The sub-agent sessions ``session_id`` ran, oldest first, each with its own
        :attr:`SessionRecord.child_count`."""
        rows = self.database.session_rows(parent_id=session_id, limit=None, users=None)
        return sorted(self._records(rows), key=lambda record: record.created_at)

    @property
    def shared(self) -> bool:
        """A store several users share (PostgreSQL): sessions are listed per user and
        continued only by their owner. A SQLite file is one user's: every session in it
        is theirs, whoever the kernel says it runs for."""
        return self.database.shared

    def _users(self, all_users: bool) -> list[str] | None:
        return None if all_users or not self.shared else [current_user()]

    def _records(self, rows: list[SessionRow]) -> list[SessionRecord]:
        records = []
        for session_id, data, children in rows:
            try:
                record = SessionRecord.model_validate_json(data)
            except ValidationError as exc:
                self._warn(f"session {session_id}: unreadable record skipped "
                           f"({_first_error(exc)})")
                continue
            record.child_count = int(children)
            records.append(self._settle_owner(record))
        return records

    def _settle_owner(self, record: SessionRecord) -> SessionRecord:
        """A running record whose owner died is no longer running; that is written back
        the first time anyone reads it (the sidebar, ``resume``), so the session list
        never shows a dead kernel's turn as running."""
        if not record.running or record.owner is None or self.database.owner_alive(record):
            return record
        settled = record.model_copy(update={"running": False, "owner": None,
                                            "owner_died": True})
        self.database.settle(record.id, settled.model_dump_json())
        return settled

    # --- running turns ----------------------------------------------------------------
    def claim_turn(self, session_id: str) -> TurnClaimHandle | None:
        """This process's claim on the session's turn, taken before the turn stores
        anything and released when it ends; it goes with the process if that dies.
        Raises :class:`SessionBusyError` while a turn of it runs anywhere."""
        return self.database.take_claim(session_id)

    async def claim_turn_soon(self, session_id: str) -> TurnClaimHandle | None:
        """:meth:`claim_turn` off the event loop (a database's server may be slow, or
        hang): after :data:`CLAIM_LIMIT` seconds the turn runs unclaimed, its writes
        retried in the background. A claim that arrives after the turn stopped waiting
        is released at once."""
        # On the store's own kept threads, not the loop's executor: a claim stuck on a
        # hung server must not take one of the few threads the loop's own work needs.
        settling = self._claims_settling.get(session_id)
        if settling is not None and not settling.done():
            # The claim of this session's turn that was stopped while it waited (a rerun
            # right after a Stop): taken on a thread and released when it arrives. Asked
            # for before that, this claim would find it held, as if by another process.
            await asyncio.wait([settling], timeout=CLAIM_LIMIT)
        future = asyncio.wrap_future(self.database.calls.submit(
            partial(self.claim_turn, session_id)))
        try:
            return await asyncio.wait_for(asyncio.shield(future), CLAIM_LIMIT)
        except (TimeoutError, asyncio.CancelledError) as exc:
            def late(done: asyncio.Future[TurnClaimHandle | None]) -> None:
                if self._claims_settling.get(session_id) is done:
                    del self._claims_settling[session_id]
                if not done.cancelled() and done.exception() is None:
                    claim = done.result()
                    if claim is not None:
                        claim.release()

            # Registered first: it releases the claim before a waiting next claim goes on.
            future.add_done_callback(late)
            self._claims_settling[session_id] = future
            if isinstance(exc, asyncio.CancelledError):
                raise
            log.warning("session %s: the store gave no turn claim within %s s; the turn "
                        "runs unclaimed", session_id, CLAIM_LIMIT)
            return None

    def check_not_busy(self, session_id: str, *, action: Action = "resume") -> None:
        """Raise :class:`SessionBusyError` if a turn of the session runs in a live
        process (this one included), whether or not its record says so yet."""
        self.database.check_claim(session_id, action)
        record = self.get_session(session_id)  # a dead owner's turn is settled here
        if record is not None and record.running and record.owner is not None:
            raise busy_error(session_id, record.owner, action=action)

    def delete_session(self, session_id: str) -> None:
        """Delete a session and the sub-agent sessions it ran (theirs too), and the blobs
        no other session uses. Raises :class:`SessionBusyError`, deleting nothing, while
        a turn of the session or of one of its sub-agents runs in a live process (this
        one included): stop the turn first. A session object that is still open (idle
        here, or in another kernel) stores nothing more of it afterwards."""
        tree = self._session_tree(session_id)
        for doomed in tree:
            self._check_idle(doomed)
        for doomed in reversed(tree):  # children first: a parent never outlives them
            self.database.delete_session(doomed)
            self._changed(doomed)

    def _session_tree(self, session_id: str) -> list[str]:
        """The session and every sub-agent session under it (a damaged store's cycle of
        parent links included only once)."""
        tree, queue = [session_id], [session_id]
        while queue:
            fresh = [child for child in self.database.child_ids(queue.pop())
                     if child not in tree]
            tree += fresh
            queue += fresh
        return tree

    def _check_idle(self, session_id: str) -> None:
        # This process's own writes of it first: a turn that just started may not have
        # stored its running flag yet (where no turn claim can be made, e.g. in memory).
        for writer in writers_of(self, session_id):
            writer.flush(DELETE_FLUSH_LIMIT)
        self.check_not_busy(session_id, action="delete")

    # --- messages ---------------------------------------------------------------------
    def append_message(self, session_id: str, message: Message) -> None:
        """Add a message at the end of a session's history; a message whose id is already
        stored is replaced in place (metadata updates after tool runs)."""
        encoded = self.database.encode(message)

        def write(rows: Rows) -> None:
            rows.put_message(session_id, message.id, encoded.json)
            rows.ensure_blobs(session_id, encoded)

        self.database.change(session_id, write)
        self._changed(session_id)

    def load_messages(self, session_id: str, *, offset: int = 0,
                      limit: int | None = None) -> list[Message]:
        """A session's messages in order (a window when ``offset``/``limit`` are given).
        Rows that fail validation are skipped and reported in :attr:`warnings`."""
        messages = []
        for seq, data in self.database.message_rows(session_id, offset, limit):
            try:
                messages.append(self.database.restore(Message.model_validate_json(data)))
            except ValidationError as exc:
                # Shown where it was (an empty message carrying the error: it never goes
                # to the model), not dropped without a trace.
                self._warn(f"session {session_id}: message #{seq} is unreadable "
                           f"({_first_error(exc)})")
                placeholder = Message.assistant([], error=UNREADABLE_MESSAGE)
                placeholder.id = f"m_unreadable_{seq}"
                messages.append(placeholder)
        return messages

    def count_messages(self, session_id: str) -> int:
        return self.database.count_messages(session_id)

    # --- the streaming draft ----------------------------------------------------------
    def save_draft(self, session_id: str, message: Message) -> None:
        """Checkpoint the assistant message being streamed (replaced on each call)."""
        encoded = self.database.encode(message)

        def write(rows: Rows) -> None:
            rows.put_draft(session_id, encoded.json)
            rows.ensure_blobs(session_id, encoded)

        self.database.change(session_id, write)

    def take_draft(self, session_id: str) -> Message | None:
        """Remove and return the draft left by a turn that never finished, if any."""
        draft = self.load_draft(session_id)
        self.clear_draft(session_id)
        return draft

    def load_draft(self, session_id: str) -> Message | None:
        """The draft left by a turn that never finished, if any (read only)."""
        data = self.database.draft_row(session_id)
        if data is None:
            return None
        try:
            return self.database.restore(Message.model_validate_json(data))
        except ValidationError as exc:
            self._warn(f"session {session_id}: unreadable draft dropped ({_first_error(exc)})")
            return None

    def clear_draft(self, session_id: str) -> None:
        self.database.change(session_id, lambda rows: rows.put_draft(session_id, None))

    # --- the compacted view -----------------------------------------------------------
    def save_view(self, session_id: str, view: CompactedView) -> None:
        """Store what the model sees after compaction; the full history stays in
        ``messages``."""
        data = view.model_dump_json()
        self.database.change(session_id, lambda rows: rows.put_view(session_id, data))
        self._changed(session_id)

    def load_view(self, session_id: str) -> CompactedView | None:
        data = self.database.view_row(session_id)
        if data is None:
            return None
        try:
            return CompactedView.model_validate_json(data)
        except ValidationError as exc:
            self._warn(f"session {session_id}: unreadable compacted view ignored "
                       f"({_first_error(exc)}); the model will see the full history")
            return None

    # --- housekeeping -----------------------------------------------------------------
    def same_database(self, other: SessionStore) -> bool:
        """Whether ``other`` keeps its sessions in the same database as this store."""
        return other is self or self.database.same_database(other.database)

    def _warn(self, text: str) -> None:
        self.warnings.append(text)

    def close(self) -> None:
        with self._lock:
            if self._stop_listening is not None:
                stop, self._stop_listening = self._stop_listening, None
                stop()
        self.database.close()

    def __repr__(self) -> str:
        return f"SessionStore({self.location!r})"


def _first_error(exc: ValidationError) -> str:
    errors = exc.errors()
    return errors[0]["msg"] if errors else str(exc)


TITLE_CHARS = 200
"""The longest title a user can give a session."""
