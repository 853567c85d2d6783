"""A stored session shown read-only: one whose turn another kernel runs. The chat shows
its history as stored so far — no Send, Stop or approvals — reread on ``refresh`` and every
:data:`READ_ONLY_REFRESH_INTERVAL`, and ``take_over`` resumes it here once that turn has
ended (:class:`ReadOnlyMode`, the chat view's read-only mode: ``ChatView.show_stored``
shows a session in it, and it lets go when the view shows something else).

What it draws is a :class:`~neta_nb.runtime.projection.ConversationProjection` of the
stored history — the one model of a conversation the live view draws too, its plan and
its sub-agent cards (:class:`~neta_nb.widgets.chat.drawing.subagent_parts.SubagentRuns`) included.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, cast

from ...messages import ToolExecution
from ...runtime.projection import ConversationProjection
from ...runtime.session import AgentSession
from ...runtime.stored_endpoint import StoredEndpointError
from ..base import RequestError
from .drawing.batcher import OpBatcher
from .drawing.render import render_window
from .drawing.subagent_parts import SubagentRuns
from .live import ChatTraits, TurnTraits
from .stored_session import StoredSession, StoredSessionFollower
from .wire import SubagentPart

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ReadOnlyMode", "ResumeStored"]

READ_ONLY_REFRESH_INTERVAL = 2.0
"""Seconds between two looks at the store while a session of another kernel is shown
read-only (two small queries; the full read only when something changed)."""

ResumeStored = Callable[[str], AgentSession]


class ReadOnlyMode:
    """A chat view's read-only mode (see the module's docstring): :meth:`show` a stored
    session, followed until :meth:`leave`.

    ``chat``: the traits it writes (the turn's state through ``turn``); ``batcher``: the
    view's (its number is the traits' batch number). Hooks of the view:
    ``shown_through(seq)`` records that number, ``shown()`` draws the static form again.
    """

    def __init__(self, chat: ChatTraits, batcher: OpBatcher, turn: TurnTraits, *,
                 window: int, shown_through: Callable[[int], None],
                 shown: Callable[[], None]) -> None:
        self._chat = chat
        self._batcher = batcher
        self._turn = turn
        self._window = window
        self._shown_through = shown_through
        self._shown = shown
        self._resume: ResumeStored | None = None
        self.batch_row: int | None = None
        self.projection = ConversationProjection()
        """The stored session as last read (empty while none is shown)."""
        self.subagents = SubagentRuns()
        """The runs of the session's sub-agent cards, as stored."""
        self.follower: StoredSessionFollower | None = None
        """What rereads the store while a session is shown (``None``: none is)."""

    @property
    def stored(self) -> StoredSession | None:
        """The session shown, as last read."""
        return self.follower.stored if self.follower is not None else None

    def show(self, stored: StoredSession, *, resume: ResumeStored | None = None,
             batch_row: int | None = None) -> None:
        """Show ``stored`` (after :meth:`leave` of any other). ``resume(session_id)``
        opens it here (:meth:`resume_here`); ``batch_row``: the session is that row's of
        a batch run."""
        self.leave()
        self._resume = resume
        self.batch_row = batch_row
        self.subagents = SubagentRuns(stored.store)
        self._batcher.forget_items()
        self._show(stored)
        self.follower = StoredSessionFollower(stored, self._show,
                                              interval=READ_ONLY_REFRESH_INTERVAL)

    def _show(self, stored: StoredSession) -> None:
        chat = self._chat
        projection = self.projection = ConversationProjection.from_history(
            stored.messages, stored.compactions)
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self.part_whole)
        with chat.hold_sync():
            chat.session_id = stored.id
            chat.agent = stored.agent
            chat.agents = [stored.agent]
            chat.messages = cast("list[dict[str, Any]]", items)
            chat.has_older = has_older
            usage = projection.usage
            if usage.api_calls:  # the session's cost as its record keeps it
                usage = usage.model_copy(update={"session_cost_usd": stored.record.cost_usd})
            chat.current = usage.model_dump()
            chat.context = {}
            self._turn.show(projection)  # no turn runs here, nothing to approve
            chat.levels = []
            chat.think_level = stored.record.think_level or ""
            chat.notice = ""
            chat.store_warning = ""  # nothing of it is written from here
            chat.read_only = {"owner": stored.owner, "busy": stored.busy,
                              **({} if self.batch_row is None
                                 else {"batch_row": self.batch_row})}
            self._shown_through(self._batcher.seq)
        self._shown()

    def refresh(self) -> bool:
        """Read the session again; True when something changed (False: none is shown)."""
        if self.follower is None:
            return False
        try:
            return self.follower.refresh()
        except KeyError as exc:
            raise RequestError(str(exc)) from exc

    def resume_here(self, previous: AgentSession | None) -> AgentSession:
        """The session shown resumed in this kernel (``SessionBusyError`` while its turn
        still runs elsewhere): by ``resume``, else ``AgentSession.resume`` with the
        catalog of ``previous``, the live session the view showed last."""
        stored = self.stored
        if stored is None:
            raise RequestError("this chat view is not showing a read-only session")
        try:
            if self._resume is not None:
                return self._resume(stored.id)
            catalog = previous.catalog if previous is not None else None
            return AgentSession.resume(stored.id, store=stored.store, catalog=catalog)
        except StoredEndpointError as exc:  # its message says how to use that server
            raise RequestError(str(exc)) from exc

    def part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card with its transcript, as stored."""
        return self.subagents.part(self.projection, execution)

    def leave(self) -> None:
        """Show nothing any more: stop following the store."""
        if self.follower is not None:
            follower, self.follower = self.follower, None
            follower.close()
        self.projection = ConversationProjection()
        self.subagents = SubagentRuns()
