"""OutsideRequests: what outside MCP clients wait for, in one chat view.

A chat view shows, after its own session's waiting approvals, those of every outside
client of the notebook (:mod:`..outside_reviews`) — but the shown session's, its own
there, and none in a client's own review view — and takes the user's decision on them:
the same decision the client's own view would take (the client's session is answered;
its card goes from every view by the call's next event).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from ..base import RequestError
from ..outside_reviews import outside_reviews
from .live import TurnTraits

__all__ = ["OutsideRequests"]

_DECISIONS = ("allow_once", "allow_always", "reject")


class _Shown(Protocol):
    session_id: str
    hosts_outside: bool


class OutsideRequests:
    """Keeps a chat view's share of the clients' waiting requests current, from the
    kernel's registry, until :meth:`close`."""

    def __init__(self, chat: _Shown, turn: TurnTraits) -> None:
        self._chat = chat
        self._turn = turn
        self._stop = outside_reviews.listen(self.changed)

    def changed(self) -> None:
        """The registry changed, or the chat shows another session."""
        review = outside_reviews.is_review(self._chat)
        self._chat.hosts_outside = not review
        self._turn.outside([] if review else outside_reviews.items(self._chat.session_id))

    def decide(self, command: Mapping[str, Any]) -> None:
        """Answer a client's request as ``command`` (an ``approve`` with its ``client``)
        says; a request that no longer waits, or a malformed command, is an error."""
        client, call_id = command.get("client"), command.get("id")
        decision, text = command.get("decision"), command.get("text")
        path = command.get("subagent")
        path = [] if path is None else path
        if not isinstance(client, str) or not isinstance(call_id, str):
            raise RequestError("approve needs a 'client' and an 'id'")
        if decision not in _DECISIONS:
            raise RequestError(f"unknown decision {decision!r}")
        if text is not None and not isinstance(text, str):
            raise RequestError("'text' must be a string")
        if not isinstance(path, list) or not all(isinstance(p, str) for p in path):
            raise RequestError("'subagent' must be a list of run ids")
        if not outside_reviews.decide(client, call_id, decision, path, text):
            raise RequestError(f"{client}'s request is no longer waiting for a decision")

    def close(self) -> None:
        self._stop()
