"""A stored session shown read-only: one whose turn another kernel runs. The chat shows
its history as stored so far — no Send, Stop or approvals — reread on ``refresh`` and every
:data:`READ_ONLY_REFRESH_INTERVAL`, and ``take_over`` resumes it here once that turn has
ended (:class:`ReadOnlyMode`, the chat view's read-only mode: made by
``ChatView.show_stored``, closed when the view shows something else)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, cast

from ...events import TurnUsage
from ...messages import ToolExecution
from ...runtime.session import AgentSession
from ...runtime.stored_endpoint import StoredEndpointError
from ..base import RequestError
from ..wire import ContextUsageDict, TodoItemDict, TurnUsageDict
from .batcher import OpBatcher
from .live import ChatTraits
from .render import render_window, stored_run_part
from .stored_session import StoredSession, StoredSessionFollower
from .subagent_parts import StoredSubagents
from .wire import ChatSnapshot, SubagentPart

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ReadOnlyMode", "ResumeStored"]

READ_ONLY_REFRESH_INTERVAL = 2.0
"""Seconds between two looks at the store while a session of another kernel is shown
read-only (two small queries; the full read only when something changed)."""

ResumeStored = Callable[[str], AgentSession]


class ReadOnlyMode:
    """``stored`` shown read-only in a chat view (see the module's docstring), followed
    until :meth:`close`.

    ``chat``: the traits it writes; ``batcher``: the view's (its number is the traits'
    batch number). Hooks of the view: ``shown_through(seq)`` records that number,
    ``shown()`` draws the static form again. ``resume(session_id)`` opens the session here
    (:meth:`resume_here`); ``batch_row``: the session is that row's of a batch run.
    """

    def __init__(self, chat: ChatTraits, batcher: OpBatcher, stored: StoredSession, *,
                 window: int, shown_through: Callable[[int], None],
                 shown: Callable[[], None], resume: ResumeStored | None = None,
                 batch_row: int | None = None) -> None:
        self._chat = chat
        self._batcher = batcher
        self._window = window
        self._shown_through = shown_through
        self._shown = shown
        self._resume = resume
        self.batch_row = batch_row
        self.subagents = StoredSubagents(stored.store)
        """The stored transcripts of the session's sub-agents."""
        batcher.forget_items()
        self._show(stored)
        self.follower = StoredSessionFollower(stored, self._show,
                                              interval=READ_ONLY_REFRESH_INTERVAL)
        """What rereads the store while the session is shown."""

    @property
    def stored(self) -> StoredSession:
        """The session as last read."""
        return self.follower.stored

    def _show(self, stored: StoredSession) -> None:
        chat = self._chat
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self.part_whole)
        with chat.hold_sync():
            chat.session_id = stored.id
            chat.agent = stored.agent
            chat.agents = [stored.agent]
            chat.messages = cast("list[dict[str, Any]]", items)
            chat.has_older = has_older
            chat.todos = stored.todos()
            chat.current = TurnUsage().model_dump()
            chat.context = {}
            chat.running = False
            chat.levels = []
            chat.think_level = stored.record.think_level or ""
            chat.approvals = []
            chat.notice = ""
            chat.store_warning = ""  # nothing of it is written from here
            chat.read_only = {"owner": stored.owner, "busy": stored.busy,
                              **({} if self.batch_row is None
                                 else {"batch_row": self.batch_row})}
            self._shown_through(self._batcher.seq)
        self._shown()

    def refresh(self) -> bool:
        """Read the session again; True when something changed."""
        try:
            return self.follower.refresh()
        except KeyError as exc:
            raise RequestError(str(exc)) from exc

    def resume_here(self, previous: AgentSession | None) -> AgentSession:
        """The session resumed in this kernel (``SessionBusyError`` while its turn still
        runs elsewhere): by ``resume``, else ``AgentSession.resume`` with the catalog of
        ``previous``, the live session the view showed last."""
        stored = self.stored
        try:
            if self._resume is not None:
                return self._resume(stored.id)
            catalog = previous.catalog if previous is not None else None
            return AgentSession.resume(stored.id, store=stored.store, catalog=catalog)
        except StoredEndpointError as exc:  # its message says how to use that server
            raise RequestError(str(exc)) from exc

    def snapshot(self) -> ChatSnapshot:
        """Everything a view needs to draw the session (the ``sync`` reply)."""
        stored, chat = self.stored, self._chat
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self.part_whole)
        return {"seq": self._batcher.seq, "session_id": stored.id, "messages": items,
                "has_older": has_older, "live": None, "running": False,
                "todos": cast("list[TodoItemDict]", chat.todos),
                "current": cast("TurnUsageDict", chat.current),
                "context": cast("ContextUsageDict", chat.context),
                "approvals": [], "think_level": chat.think_level, "notice": chat.notice,
                "notice_tone": cast("Literal['error', 'warning']", chat.notice_tone)}

    def part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card with its transcript, as stored."""
        if execution.subagent is not None:
            return self.subagents.part(execution)
        return stored_run_part(execution)

    def close(self) -> None:
        """Stop following the store."""
        self.follower.close()
