"""StoreWriter: one session's writes to its store, in order, off the kernel's event loop —
stored by one thread per store that commits many sessions' writes together
(:class:`SharedWriter`), so a thousand live sessions cost one thread and one connection,
not a thousand of each.

The kernel's event loop never waits on SQLite: another process holding the write lock (a
second notebook, a backup tool) or a full disk stalls this thread, never the stream, Stop
or the widgets. A write that fails is retried, in order, until it succeeds — nothing the
user was shown is dropped, and nothing is written out of order; while writes fail the
session is told once that it is behind, and again when it has caught up. Writes still
pending when the interpreter exits get a few seconds, then each is logged as lost.

Each write carries its rows already serialised (the caller's objects keep changing on the
loop thread). The shared thread takes what every session has pending, in each session's
order, and stores it in one transaction on the database's writer connection
(:class:`~neta_nb.store.database.WriterConnection`), each write inside a savepoint: a write
that can never succeed is dropped alone; a store that is locked or full fails the whole
batch, which is retried.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import logging
import threading
import time
import weakref
from collections import deque
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, ClassVar, Protocol

from .database import Database, Rows, StoreFailure, WriterConnection

__all__ = ["SharedWriter", "StoreFailure", "StoreWriter", "Write", "WrittenStore"]

log = logging.getLogger(__name__)

IDLE_EXIT = 2.0
"""Seconds an idle writer thread waits for more before it ends (a new write starts it
again), closing its connection."""
BATCH_LIMIT = 500
"""Most writes one transaction stores."""
RETRY_DELAYS = (0.05, 0.1, 0.25, 0.5, 1.0, 2.0)
"""Pause before each retry of a failing write; the last one repeats."""
EXIT_GRACE = 3.0
"""Seconds the interpreter's exit waits for pending writes before logging them lost."""
SETTLE_LIMIT = 10.0
"""Longest :meth:`StoreWriter.settled` waits for a write that neither ends nor fails (a
hung network filesystem); the session then carries on as if the store were behind."""


@dataclass(frozen=True, slots=True)
class Write:
    """One change to the store."""

    what: str
    """What it saves, for the log: ``message m_…``, ``draft``, ``record``…"""
    apply: Callable[[Rows], None]
    """Runs the statements (inside the writer's transaction)."""
    key: str | None = None
    """Writes with the same key each replace the whole of what the key names (a message's
    row, the draft): a newer one queued right behind an unstarted older one replaces it."""
    notify: bool = True
    """Tell the store's listeners (the session list) once it is stored."""
    durable: bool = True
    """``False``: a crash may lose the commit (a streaming draft, rewritten a moment
    later); a database may then commit without waiting for its disk."""
    on_stored: Callable[[], None] | None = None
    """Called (on the writer's thread) once the write's transaction has committed."""


class WrittenStore(Protocol):
    """What the writers need of the store they write to (a
    :class:`~neta_nb.store.session_store.SessionStore` is one): its database, a connection
    of its own for the writer thread, and its listeners, told of what was stored."""

    @property
    def database(self) -> Database: ...

    def writer_connection(self) -> WriterConnection: ...

    def notify_changed(self, session_id: str) -> None: ...


class StoreWriter:
    """The ordered, retrying writes of one session. ``on_behind(failure)`` is called when
    writes start failing (again when the reason changes) and ``on_behind(None)`` once
    everything is stored again; both, like the store's change notifications, on the loop
    of whoever submitted last (the thread itself when there is none)."""

    def __init__(self, store: WrittenStore, session_id: str,
                 on_behind: Callable[[StoreFailure | None], None]) -> None:
        self.store = store
        self.session_id = session_id
        self._on_behind = on_behind
        self._cond = threading.Condition()
        self._pending: deque[Write] = deque()
        self._taken = 0
        """Writes at the head of the queue the shared thread is storing right now."""
        self._failure: StoreFailure | None = None
        self._warned = False
        self._waiters: list[tuple[asyncio.AbstractEventLoop, asyncio.Future[None]]] = []
        self._loop: asyncio.AbstractEventLoop | None = None
        _writers.add(self)

    # --- the caller's side ------------------------------------------------------------
    def submit(self, write: Write) -> None:
        """Queue ``write`` behind every earlier one; returns at once."""
        with contextlib.suppress(RuntimeError):
            self._loop = asyncio.get_running_loop()
        with self._cond:
            pending = self._pending
            replaceable = (pending and write.key is not None and pending[-1].key == write.key
                           and len(pending) > self._taken)
            if replaceable:
                pending[-1] = write
            else:
                pending.append(write)
        SharedWriter.of(self.store).wake(self)

    @property
    def _thread(self) -> threading.Thread | None:
        """The thread storing this writer's writes (``None`` while none runs)."""
        return SharedWriter.of(self.store).thread

    @property
    def pending(self) -> int:
        """Writes not stored yet."""
        with self._cond:
            return len(self._pending)

    @property
    def failure(self) -> StoreFailure | None:
        """Why writes are failing, while they are."""
        return self._failure

    def pending_writes(self) -> list[str]:
        with self._cond:
            return [write.what for write in self._pending]

    def flush(self, timeout: float | None = None) -> bool:
        """Block until every write so far is stored; ``False`` if ``timeout`` ran out."""
        with self._cond:
            return self._cond.wait_for(lambda: not self._pending, timeout)

    async def settled(self) -> None:
        """Wait until every write so far is stored — or until the writer is known to be
        behind, which the session has then been told about."""
        loop = asyncio.get_running_loop()
        with self._cond:
            if not self._pending or self._failure is not None:
                return
            future: asyncio.Future[None] = loop.create_future()
            self._waiters.append((loop, future))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(asyncio.shield(future), SETTLE_LIMIT)

    # --- the shared thread's side --------------------------------------------------------
    def _take(self, limit: int) -> list[Write]:
        """The writes to store now (the head of the queue, up to ``limit``)."""
        with self._cond:
            taken = list(itertools.islice(self._pending, limit))
            self._taken = len(taken)
            return taken

    def _failed(self, failure: StoreFailure) -> None:
        with self._cond:
            self._taken = 0
            news = failure != self._failure
            # Another connection holding the lock for a moment is routine (a batch run's
            # leases, another kernel): the log hears of it only if the retry fails too
            # (a failure is pending already).
            if not self._warned and (failure.kind != "locked" or self._failure is not None):
                self._warned = True
                log.warning("session %s: not saved yet (%s); retrying", self.session_id,
                            failure.detail)
            self._failure = failure
            self._wake_waiters()
        if news:
            self.deliver(self._on_behind, failure)

    def _stored(self, write: Write) -> None:
        if write.on_stored is not None:
            write.on_stored()
        # Listeners first: once flush() returns, a listener called on this thread (no
        # loop to hand it to) has seen the change.
        if write.notify:
            self.deliver(self.store.notify_changed, self.session_id)
        with self._cond:
            self._pending.popleft()
            self._taken = max(0, self._taken - 1)
            recovered = False
            if not self._pending:
                recovered = self._failure is not None
                if self._warned:  # before flush() returns: its caller may read the log
                    log.warning("session %s: saved again", self.session_id)
                self._failure, self._warned = None, False
                self._cond.notify_all()
                self._wake_waiters()
        if recovered:
            self.deliver(self._on_behind, None)

    def _wake_waiters(self) -> None:
        waiters, self._waiters = self._waiters, []
        for loop, future in waiters:
            with contextlib.suppress(RuntimeError):  # that loop is closed: nobody waits
                loop.call_soon_threadsafe(_resolve, future)

    def deliver(self, callback: Callable[[Any], None], argument: object) -> None:
        """Call ``callback(argument)`` on the loop of whoever submitted last (on this
        thread when there is none)."""
        loop = self._loop
        if loop is not None and not loop.is_closed():
            with contextlib.suppress(RuntimeError):
                loop.call_soon_threadsafe(_call_logged, callback, argument)
                return
        _call_logged(callback, argument)


class SharedWriter:
    """The one thread that stores the writes of every session of one store."""

    _by_store: ClassVar[weakref.WeakKeyDictionary[WrittenStore, SharedWriter]] = (
        weakref.WeakKeyDictionary())
    _registry_lock: ClassVar[threading.Lock] = threading.Lock()

    def __init__(self, store: WrittenStore) -> None:
        self._store = weakref.ref(store)
        self._cond = threading.Condition()
        self._ready: dict[StoreWriter, None] = {}  # writers with writes, in arrival order
        self.thread: threading.Thread | None = None

    @classmethod
    def of(cls, store: WrittenStore) -> SharedWriter:
        with cls._registry_lock:
            found = cls._by_store.get(store)
            if found is None:
                found = cls._by_store[store] = cls(store)
            return found

    def wake(self, writer: StoreWriter) -> None:
        """``writer`` has writes to store."""
        with self._cond:
            self._ready[writer] = None
            self._cond.notify_all()
            if self.thread is not None:
                return
            thread = threading.Thread(target=self._work, daemon=True,
                                      name="neta-nb-store-writer")
            try:
                thread.start()
            except RuntimeError:
                # No thread to be had (the process is out of them): the writes stay
                # queued, in order, and the next write tries again.
                log.exception("no thread to save with; %d sessions' writes wait",
                              len(self._ready))
                return
            self.thread = thread

    def _next_batch(self) -> list[tuple[StoreWriter, list[Write]]] | None:
        """What to store next; ``None`` when idle long enough to end the thread."""
        with self._cond:
            if not self._ready:
                self._cond.wait_for(lambda: bool(self._ready), IDLE_EXIT)
                if not self._ready:
                    self.thread = None
                    return None
            writers = list(self._ready)
            self._ready.clear()
        batch, room = [], BATCH_LIMIT
        for index, writer in enumerate(writers):
            if room <= 0:  # the rest next time, in the same order
                with self._cond:
                    for later in writers[index:]:
                        self._ready[later] = None
                break
            writes = writer._take(room)
            if writes:
                batch.append((writer, writes))
                room -= len(writes)
        return batch

    def _work(self) -> None:
        connection: WriterConnection | None = None
        attempt = 0
        try:
            while True:
                batch = self._next_batch()
                store = self._store()
                if batch is None or store is None:
                    return
                if not batch:
                    continue
                try:
                    if connection is None:
                        connection = store.writer_connection()
                    outcomes = connection.transact(
                        [(writer.session_id, [write.apply for write in writes])
                         for writer, writes in batch],
                        durable=any(write.durable for _, writes in batch for write in writes))
                except Exception as exc:
                    failure = (connection.failure_of(exc) if connection is not None
                               else store.database.failure_of(exc))
                    if failure is None:
                        # A closed store, or a failure no retry can mend: dropped, or
                        # retrying would block every later write for ever.
                        self._dropped(batch, exc)
                        continue
                    if not failure.keeps_connection and connection is not None:
                        connection.close()
                        connection = None
                    self._failed(batch, failure, attempt)
                    attempt += 1
                    continue
                attempt = 0
                self._stored(batch, outcomes)
        finally:
            if connection is not None:
                connection.close()

    def _again(self, writers: list[StoreWriter]) -> None:
        with self._cond:
            for writer in writers:
                self._ready[writer] = None

    def _stored(self, batch: list[tuple[StoreWriter, list[Write]]],
                outcomes: list[list[BaseException | None]]) -> None:
        for (writer, writes), errors in zip(batch, outcomes, strict=True):
            for write, error in zip(writes, errors, strict=True):
                if error is not None:
                    log.error("session %s: %s could not be saved and is dropped",
                              writer.session_id, write.what, exc_info=error)
                writer._stored(write)
            with writer._cond:
                more = bool(writer._pending)
            if more:
                self._again([writer])

    def _dropped(self, batch: list[tuple[StoreWriter, list[Write]]], exc: Exception) -> None:
        for writer, writes in batch:
            for write in writes:
                log.error("session %s: %s could not be saved and is dropped (%s)",
                          writer.session_id, write.what, exc)
                writer._stored(write)
        self._again([writer for writer, _ in batch])

    def _failed(self, batch: list[tuple[StoreWriter, list[Write]]], failure: StoreFailure,
                attempt: int) -> None:
        for writer, _writes in batch:
            writer._failed(failure)
        time.sleep(RETRY_DELAYS[min(attempt, len(RETRY_DELAYS) - 1)])
        self._again([writer for writer, _ in batch])


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():
        future.set_result(None)


def _call_logged(callback: Callable[[Any], None], argument: object) -> None:
    try:
        callback(argument)
    except Exception:
        log.exception("store notification %r failed", callback)


_writers: weakref.WeakSet[StoreWriter] = weakref.WeakSet()


def writers_of(store: WrittenStore, session_id: str) -> list[StoreWriter]:
    """This process's writers of one session of ``store``'s database (two sessions objects
    may share an id: a view's session and one resumed from the store)."""
    return [writer for writer in list(_writers)
            if writer.session_id == session_id and _same_database(writer.store, store)]


def _same_database(one: WrittenStore, other: WrittenStore) -> bool:
    return one is other or one.database.same_database(other.database)


@atexit.register
def _flush_at_exit() -> None:
    deadline = time.monotonic() + EXIT_GRACE
    for writer in list(_writers):
        if writer.flush(max(0.0, deadline - time.monotonic())):
            continue
        reason = writer.failure.detail if writer.failure else "the process is exiting"
        for what in writer.pending_writes():
            log.error("session %s: %s was never saved (%s)", writer.session_id, what, reason)
