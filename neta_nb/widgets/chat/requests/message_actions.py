"""What the actions on a drawn message do (``message_action``): retry an answer's prompt,
edit a prompt, rewind to a message or fork at it — the session's branching, asked for by
a view. A fork is a new session the chat view shows at once; the others change the
session shown (its rewind draws it again)."""

from __future__ import annotations

from ....runtime.session import AgentSession
from ...base import RequestError
from ..wire import MessageActionRequest

__all__ = ["ACTIONS", "message_action"]

ACTIONS = ("retry", "edit", "rewind", "fork")


def message_action(session: AgentSession, request: MessageActionRequest) -> AgentSession:
    """Do what ``request`` asks of ``session``; the session to show after it (the
    branch, for a fork). ``RequestError`` names what is wrong with the request, or why
    the session refused."""
    action, message_id = request.get("action"), request.get("message_id")
    if not isinstance(message_id, str) or action not in ACTIONS:
        raise RequestError("message_action needs an 'action' (retry, edit, rewind or "
                           "fork) and a 'message_id'")
    try:
        if action == "fork":
            return session.fork(message_id)
        if action == "rewind":
            session.rewind(message_id)
        elif action == "edit":
            text = request.get("text")
            if not isinstance(text, str) or not text.strip():
                raise RequestError("an edit needs the prompt's new 'text'")
            session.edit(message_id, text)
        else:
            session.retry(message_id)
    except (RuntimeError, KeyError, ValueError) as exc:
        raise RequestError(str(exc.args[0]) if exc.args else str(exc)) from exc
    return session
