"""ViewPresence: a widget answers a session's approval requests only while a view of it is
on screen.

A chat view that is bound to a session but never displayed (a cell whose output was
cleared, a notebook run headless by nbconvert) used to make every approval wait forever:
nobody could click. Each rendered view announces itself (``view_opened`` / ``view_closed``);
the widget counts as the session's approver while at least one is open. A short grace
period covers a view that is about to render (the cell that displays the widget runs
just before the turn starts) or re-renders (JupyterLab moving an output): only when no
view appears within it does the session's approval policy decide what is pending.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable

from ...runtime.session import AgentSession

__all__ = ["APPROVAL_VIEW_GRACE", "ViewPresence"]

APPROVAL_VIEW_GRACE = 3.0
"""Seconds an approval may wait for a view to (re)appear before the policy decides."""


class ViewPresence:
    """Attaches a widget as approver of its bound session while a view is displayed."""

    def __init__(self, loop: Callable[[], asyncio.AbstractEventLoop | None], *,
                 grace: float = APPROVAL_VIEW_GRACE) -> None:
        self._loop = loop
        self.grace = grace
        self._views: set[str] = set()
        self._session: AgentSession | None = None
        self._detach: Callable[[], None] | None = None
        self._timer: asyncio.TimerHandle | None = None

    @property
    def attached(self) -> bool:
        return self._detach is not None

    @property
    def views(self) -> int:
        return len(self._views)

    def bind(self, session: AgentSession) -> None:
        self.unbind()
        self._session = session
        self._update()

    def unbind(self) -> None:
        self._cancel_timer()
        self._set_attached(False)
        self._session = None

    def opened(self, view_id: str) -> None:
        self._views.add(view_id)
        self._update()

    def closed(self, view_id: str) -> None:
        self._views.discard(view_id)
        self._update()

    def _update(self) -> None:
        if self._session is None:
            return
        if self._views:
            self._cancel_timer()
            self._set_attached(True)
            return
        loop = self._loop()
        if loop is None or loop.is_closed():
            # No event loop, so no frontend can ever open a view: the policy decides.
            self._set_attached(False)
            return
        self._set_attached(True)
        if self._timer is None:
            self._timer = loop.call_later(self.grace, self._grace_over)

    def _grace_over(self) -> None:
        self._timer = None
        if not self._views:
            self._set_attached(False)  # what is pending goes to the policy now

    def _set_attached(self, attached: bool) -> None:
        if attached and self._detach is None and self._session is not None:
            self._detach = self._session.attach_approver()
        elif not attached and self._detach is not None:
            detach, self._detach = self._detach, None
            detach()

    def _cancel_timer(self) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._timer = None
