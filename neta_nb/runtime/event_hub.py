"""EventHub: delivers a session's events to its subscribers, in order, on the loop the
session runs on.

Tools report progress from worker threads; subscribers — widgets among them — must only
ever be called from the kernel's thread, so an event emitted on another thread is handed
to the loop. A subscriber that raises is logged and never breaks the turn.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable
from threading import get_ident

from ..events import Event

__all__ = ["EventHub"]

log = logging.getLogger(__name__)


class EventHub:
    """Subscribers of one event stream."""

    def __init__(self) -> None:
        # A tuple replaced on every change, so emit loops over it as it is — no copy per
        # event (each streamed delta) — while a callback may still (un)subscribe.
        self._subscribers: tuple[Callable[[Event], None], ...] = ()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None

    def bind_to_running_loop(self) -> None:
        """Deliver on the calling thread's running loop from now on."""
        self._loop = asyncio.get_running_loop()
        self._loop_thread = get_ident()

    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event; returns the unsubscribe function."""
        self._subscribers = (*self._subscribers, callback)

        def unsubscribe() -> None:
            subscribers = self._subscribers
            if callback in subscribers:
                at = subscribers.index(callback)
                self._subscribers = subscribers[:at] + subscribers[at + 1:]

        return unsubscribe

    def deliver(self, callback: Callable[[], None], what: str) -> None:
        """Call ``callback()`` as a subscriber is called: on the session's loop (it may
        set a widget's traits), a failure logged and kept from the caller."""
        if self._loop_thread is not None and get_ident() != self._loop_thread:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self.deliver, callback, what)
            return
        try:
            callback()
        except Exception:
            log.exception("%s listener %r failed", what, callback)

    def emit(self, event: Event) -> None:
        if self._loop_thread is not None and get_ident() != self._loop_thread:
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self.emit, event)
            return
        for callback in self._subscribers:
            try:
                callback(event)
            except Exception:
                log.exception("event subscriber %r failed on %s", callback, event.type)
