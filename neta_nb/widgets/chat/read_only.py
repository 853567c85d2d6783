"""A stored session shown read-only: one whose turn another kernel runs. The chat shows
its history as stored so far — no Send, Stop or approvals — reread on ``refresh`` and every
:data:`READ_ONLY_REFRESH_INTERVAL`, and ``take_over`` resumes it here once that turn has
ended (:class:`ReadOnlyChat`, the chat view's read-only mode)."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, cast

from ...events import TurnUsage
from ...runtime.session import Agent, AgentSession
from ...runtime.stored_endpoint import StoredEndpointError
from ..base import RequestError
from .live import LiveChat
from .render import render_window
from .stored_session import StoredSession, StoredSessionFollower
from .subagent_parts import StoredSubagents
from .wire import ChatSnapshot

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ReadOnlyChat", "ResumeStored"]

READ_ONLY_REFRESH_INTERVAL = 2.0
"""Seconds between two looks at the store while a session of another kernel is shown
read-only (two small queries; the full read only when something changed)."""

ResumeStored = Callable[[str], AgentSession]


class ReadOnlyChat(LiveChat):
    """The chat view with its read-only mode (see the module's docstring)."""

    def __init__(self, session: AgentSession | None = None, *,
                 agents: Sequence[Agent] = (), **kwargs: Any) -> None:
        self._resume_stored: ResumeStored | None = None
        self._batch_row: int | None = None
        super().__init__(session, agents=agents, **kwargs)

    @property
    def stored(self) -> StoredSession | None:
        """The stored session shown read-only, if any (see :meth:`show_stored`)."""
        return self._follower.stored if self._follower is not None else None

    @property
    def previous_session(self) -> AgentSession | None:
        """The live session shown before the current one (or before a read-only view)."""
        return self._previous

    def show_stored(self, stored: StoredSession, *, resume: ResumeStored | None = None,
                    batch_row: int | None = None) -> None:
        """Show ``stored`` read-only — a session whose turn another kernel runs — without
        taking it over. ``resume(session_id)`` opens it here once that turn has ended (the
        ``take_over`` request); by default ``AgentSession.resume`` with the last live
        session's catalog. ``batch_row``: the session is that row's of a batch run — the
        bar says so and offers no "Continue here"."""
        self.unbind()  # a running turn goes on in the background
        self._leave_stored()
        self._resume_stored = resume
        self._batch_row = batch_row
        self._batcher.forget_items()
        self._stored_subagents = StoredSubagents(stored.store)
        self._show_stored_state(stored)
        self._follower = StoredSessionFollower(stored, self._show_stored_state,
                                               interval=READ_ONLY_REFRESH_INTERVAL)

    def _show_stored_state(self, stored: StoredSession) -> None:
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self._part_whole)
        with self.hold_sync():
            self.session_id = stored.id
            self.agent = stored.agent
            self.agents = [stored.agent]
            self.messages = cast("list[dict[str, Any]]", items)
            self.has_older = has_older
            self.todos = stored.todos()
            self.current = TurnUsage().model_dump()
            self.context = {}
            self.running = False
            self.levels = []
            self.think_level = stored.record.think_level or ""
            self.approvals = []
            self.notice = ""
            self.store_warning = ""  # nothing of it is written from here
            self.read_only = {"owner": stored.owner, "busy": stored.busy,
                              **({} if self._batch_row is None
                                 else {"batch_row": self._batch_row})}
            self._seq = self._batcher.seq
        self._static_form.refresh()

    def refresh(self) -> bool:
        """Read the session shown read-only again; True when something changed."""
        if self._follower is None:
            return False
        try:
            return self._follower.refresh()
        except KeyError as exc:
            raise RequestError(str(exc)) from exc

    def _leave_stored(self) -> None:
        super()._leave_stored()
        self._resume_stored = None
        self._batch_row = None

    def take_over(self) -> AgentSession:
        """Resume the session shown read-only here, now that its turn has ended
        elsewhere (``SessionBusyError`` if it still runs)."""
        stored = self.stored
        if stored is None:
            raise RequestError("this chat view is not showing a read-only session")
        try:
            if self._resume_stored is not None:
                session = self._resume_stored(stored.id)
            else:
                catalog = self._previous.catalog if self._previous is not None else None
                session = AgentSession.resume(stored.id, store=stored.store, catalog=catalog)
        except StoredEndpointError as exc:  # its message says how to use that server
            raise RequestError(str(exc)) from exc
        self.bind(session)
        return session

    def _stored_snapshot(self, stored: StoredSession) -> ChatSnapshot:
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self._part_whole)
        return {"seq": self._batcher.seq, "session_id": stored.id, "messages": items,
                "has_older": has_older, "live": None, "running": False,
                "todos": self.todos, "current": self.current, "context": self.context,
                "approvals": [], "think_level": self.think_level, "notice": self.notice,
                "notice_tone": self.notice_tone}
