"""What :class:`~neta_nb.store.session_store.SessionStore` needs of a database, so one
store behaves the same on SQLite (a file per user, :mod:`neta_nb.store.sqlite.sqlite`) and on
PostgreSQL (a team's server, :mod:`neta_nb.store.postgres.postgres`): the statements that write
one row each (:class:`Rows`, inside a transaction), the reads the store makes, the
connection a session's writer thread writes with, and the claim a running turn holds.

Rows are JSON documents as text; the database never looks inside them except to search.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Callable, Iterator, Sequence
from contextlib import AbstractContextManager
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol

if TYPE_CHECKING:
    from ..messages import Message
    from .blobs import EncodedMessage
    from .bounded_calls import BoundedThreads
    from .records import SessionRecord

__all__ = ["Action", "Database", "Rows", "SessionRow", "StoreFailure", "TurnClaimHandle",
           "WriterConnection"]

Action = Literal["resume", "delete"]

SessionRow = tuple[str, str, int]
"""A session's id, its record's JSON and how many sub-agent sessions it ran."""


class Rows(Protocol):
    """The row statements of one transaction."""

    def put_session(self, session_id: str, data: str, updated_at: float,
                    parent_id: str | None, user: str | None) -> None: ...

    def put_message(self, session_id: str, message_id: str, data: str) -> None:
        """Replace the stored message ``message_id`` in place, or add it at the end."""

    def put_draft(self, session_id: str, data: str | None) -> None:
        """Replace the session's draft (``None``: remove it)."""

    def put_view(self, session_id: str, data: str) -> None: ...

    def read_session(self, session_id: str) -> str | None: ...

    def session_exists(self, session_id: str) -> bool: ...

    def ensure_blobs(self, session_id: str, encoded: EncodedMessage) -> None:
        """Make sure the blobs the row of ``encoded`` names are stored (after the row)."""

    def delete_messages(self, session_id: str, message_ids: Sequence[str]) -> None:
        """Remove these messages of the session (a rewind: its branch keeps copies); the
        blobs only they named are no longer the session's."""

    @property
    def dialect(self) -> Literal["sqlite", "postgresql"]: ...

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """One statement with ``?`` placeholders (either database), its rows if any."""


@dataclass(frozen=True, slots=True)
class StoreFailure:
    """Why the store is behind."""

    kind: Literal["disk_full", "locked", "missing", "error"]
    detail: str

    @property
    def keeps_connection(self) -> bool:
        """A lock ends by itself; a full disk or an I/O error can leave the connection
        unusable, so it is opened again."""
        return self.kind == "locked"

    @classmethod
    def of(cls, exc: sqlite3.Error) -> StoreFailure:
        """A SQLite error's reason (a PostgreSQL error's:
        :func:`~neta_nb.store.postgres.postgres_rows.failure_of`)."""
        code = getattr(exc, "sqlite_errorcode", None)
        primary = code & 0xFF if isinstance(code, int) else None
        text = str(exc) or type(exc).__name__
        if primary == sqlite3.SQLITE_FULL or "disk is full" in text:
            return cls("disk_full", text)
        if primary in (sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED) or "locked" in text:
            return cls("locked", text)
        if primary == sqlite3.SQLITE_CANTOPEN or "unable to open" in text:
            return cls("missing", text)
        return cls("error", text)


class WriterConnection(Protocol):
    """What one session's writer thread writes with."""

    def transact(self, batch: Sequence[tuple[str, Sequence[Callable[[Rows], None]]]], *,
                 durable: bool = True) -> list[list[BaseException | None]]:
        """Store ``batch`` — each session's writes, in its order — in one transaction, no
        other write of those sessions interleaving. Each write runs in a savepoint: one
        that raises something :meth:`failure_of` cannot retry is undone alone and its
        exception returned in its place (``None``: stored); a failure that can be retried
        (a lock, a full disk) raises, and nothing of the batch is stored.
        ``durable=False``: the commit may be lost in a crash (streaming drafts only)."""

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        """Why ``exc`` keeps the write from being stored — a reason to retry — or
        ``None`` when no retry can mend it (the write is dropped)."""

    def close(self) -> None: ...


class TurnClaimHandle(Protocol):
    def release(self) -> None: ...


class Database(Protocol):
    """One database of sessions."""

    location: str
    """Where it is, for messages: a file's path, or a URL without its password."""
    shared: bool
    """Several users' sessions (sessions listed per user, continued by their owner)."""
    calls: BoundedThreads
    """The threads its calls made off the kernel's loop run on (a turn's claim), its own:
    a server that hangs holds no other store's."""

    def transaction(self, session_id: str | None = None, *,
                    immediate: bool = False) -> AbstractContextManager[Rows]: ...

    def change(self, session_id: str, write: Callable[[Rows], None]) -> None:
        """``write`` in one transaction of the session: the store's own writes, made on
        the caller's thread (often the kernel's loop), so waited for at most a bound
        where the server may hang."""

    def writer_connection(self) -> WriterConnection: ...

    def failure_of(self, exc: Exception) -> StoreFailure | None:
        """As :meth:`WriterConnection.failure_of`, for a failure to connect."""

    # --- reads ------------------------------------------------------------------------
    def read_session(self, session_id: str) -> tuple[str, int] | None:
        """The record's JSON and the child count, or ``None``."""

    def session_rows(self, *, parent_id: str | None, limit: int | None,
                     users: list[str] | None) -> list[SessionRow]:
        """Top-level sessions (``parent_id=None``; of ``users`` when given, records with
        no user included), most recently updated first; or the children of a session."""

    def search_rows(self, words: list[str], *, limit: int,
                    users: list[str] | None) -> list[SessionRow]: ...

    def child_ids(self, session_id: str) -> list[str]: ...

    def message_rows(self, session_id: str, offset: int,
                     limit: int | None) -> list[tuple[int, str]]: ...

    def count_messages(self, session_id: str) -> int: ...

    def draft_row(self, session_id: str) -> str | None: ...

    def view_row(self, session_id: str) -> str | None: ...

    # --- writes the store makes itself ------------------------------------------------
    def delete_session(self, session_id: str) -> None:
        """The session's rows, and the blobs no other session names any more."""

    def settle(self, session_id: str, data: str) -> None:
        """Write the record back if that needs no wait on another writer (else skip)."""

    # --- blobs --------------------------------------------------------------------------
    def encode(self, message: Message) -> EncodedMessage: ...

    def restore(self, message: Message) -> Message: ...

    # --- running turns ----------------------------------------------------------------
    def take_claim(self, session_id: str) -> TurnClaimHandle | None:
        """Claim the session's turn for this process; raises ``SessionBusyError`` while
        another turn (in any process) holds it. ``None`` where no claim can be made."""

    def check_claim(self, session_id: str, action: Action) -> None: ...

    def owner_alive(self, record: SessionRecord) -> bool:
        """Whether the process running ``record``'s turn still runs."""

    # --- other processes' changes -------------------------------------------------------
    def listen(self, callback: Callable[[str], None]) -> Callable[[], None] | None:
        """Hear other processes' changes (``callback(session_id)`` on a thread of the
        database's), listening when it returns; ``None`` where the database cannot tell
        (the store's own writers still notify within this process)."""

    def same_database(self, other: Database) -> bool: ...

    def execute(self, sql: str, params: tuple[Any, ...] = ()) -> list[Any]:
        """Run one statement in the database's own dialect and return its rows (for
        tests and repairs by hand)."""

    def close(self) -> None: ...


def escape_like(text: str) -> str:
    """``text`` matched literally by LIKE (``%``, ``_`` and the escape itself escaped)."""
    return text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")


def iter_words(query: str) -> Iterator[str]:
    """The words of a search, at most eight."""
    yield from query.split()[:8]
