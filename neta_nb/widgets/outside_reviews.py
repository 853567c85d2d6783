"""The decisions outside clients wait for, shown in the chat the user is looking at.

An outside MCP client of the notebook (:mod:`.mcp_review`) has a session and a chat view
of its own, under the cell that started the server. Its proposed edits and runs wait for
the user there — out of sight when the user works in another chat of the notebook (inline
or in the side panel). So every live chat view of the kernel also shows, after its own,
the approvals the clients' sessions wait for: the same cards (the diff with Accept / Edit
first / Reject, Allow / Reject for a run), marked with the client's name, and a decision
taken there is the one the client's own view would take. A client's own review view shows
no other client's requests (they have views of their own beside it); any other chat that
shows a client's session (the user bound it there) shows that client's requests as its
own, and every other client's after them.

:data:`outside_reviews` is the kernel's one registry: the review publishes each client's
waiting approvals as its view shows them, and chat views listen.
"""

from __future__ import annotations

import weakref
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ..events import ApprovalDecision

__all__ = ["Decide", "OutsideReviews", "outside_reviews"]

Decide = Callable[[str, ApprovalDecision, Sequence[str], "str | None"], bool]
"""Answer one of a client's requests: ``(call id, decision, sub-agent path, text)``; False
when it no longer waits."""


@dataclass
class _Client:
    name: str
    items: list[dict[str, Any]]
    decide: Decide


class OutsideReviews:
    """The waiting approvals of every outside client's session, by session id."""

    def __init__(self) -> None:
        self._clients: dict[str, _Client] = {}
        self._listeners: list[weakref.WeakMethod[Callable[[], None]]] = []
        self._reviews: weakref.WeakSet[object] = weakref.WeakSet()

    def publish(self, session_id: str, client: str, items: Sequence[dict[str, Any]],
                decide: Decide) -> None:
        """``client``'s session ``session_id`` waits for ``items`` now (its view's
        ``approvals``; none: nothing waits, and the registry lets go of the session),
        answered through ``decide``."""
        marked = [{**item, "client": client} for item in items]
        known = self._clients.get(session_id)
        if marked:
            self._clients[session_id] = _Client(client, marked, decide)
        else:
            self._clients.pop(session_id, None)
        if (known.items if known is not None else []) != marked:
            self._changed()

    def add_review(self, view: object) -> None:
        """``view`` is a client's own review view: it shows no one else's requests."""
        self._reviews.add(view)
        self._changed()

    def is_review(self, view: object) -> bool:
        """Whether ``view`` is a client's own review view."""
        return view in self._reviews

    def items(self, shown_session: str) -> list[dict[str, Any]]:
        """What a chat view (not a review view) showing ``shown_session`` shows of the
        clients' requests: every client's but the shown session's (its own there)."""
        return [item for session_id, client in self._clients.items()
                if session_id != shown_session for item in client.items]

    def decide(self, client: str, call_id: str, decision: ApprovalDecision,
               path: Sequence[str] = (), text: str | None = None) -> bool:
        """Answer ``client``'s request ``call_id`` as its own view would; False when no
        such request waits."""
        for known in list(self._clients.values()):
            if known.name == client and any(item["id"] == call_id for item in known.items):
                return known.decide(call_id, decision, path, text)
        return False

    def listen(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call the bound method ``callback`` after every change; returns the function
        that stops it. Held weakly: a view that is gone stops listening by itself."""
        reference = weakref.WeakMethod(callback)
        self._listeners.append(reference)

        def stop() -> None:
            if reference in self._listeners:
                self._listeners.remove(reference)

        return stop

    def _changed(self) -> None:
        # Over a copy: a listener may stop another one (or itself), or add one, meanwhile.
        for reference in list(self._listeners):
            callback = reference()
            if callback is None:
                self._listeners.remove(reference)  # its view is gone
            elif reference in self._listeners:
                callback()


outside_reviews = OutsideReviews()
"""The kernel's registry (one notebook per kernel: its server's clients, its chats)."""
