"""What the actions on a drawn message do (``message_action``): retry an answer's prompt,
edit a prompt, rewind to a message or fork at it — the session's branching, asked for by
a view. A fork is a new session the chat view shows at once; the others change the
session shown (its rewind draws it again). A rewind or fork with ``notebook: true`` also
puts back the notebook's cells the agent changed after that point, and answers once the
page has (:func:`notebook_action`)."""

from __future__ import annotations

import asyncio
from typing import Any

from ....runtime.session import AgentSession, NotebookRewind
from ...base import RequestError
from ..wire import MessageActionRequest

__all__ = ["ACTIONS", "message_action", "notebook_action", "wants_notebook"]

ACTIONS = ("retry", "edit", "rewind", "fork")


def _checked(request: MessageActionRequest) -> tuple[str, str]:
    action, message_id = request.get("action"), request.get("message_id")
    if not isinstance(message_id, str) or action not in ACTIONS:
        raise RequestError("message_action needs an 'action' (retry, edit, rewind or "
                           "fork) and a 'message_id'")
    return action, message_id


def wants_notebook(request: MessageActionRequest) -> bool:
    """Whether a rewind or fork is asked to put the notebook back too."""
    notebook = request.get("notebook", False)
    if not isinstance(notebook, bool):
        raise RequestError("'notebook' must be true or false")
    if notebook and request.get("action") not in ("rewind", "fork"):
        raise RequestError("only a rewind or a fork puts the notebook back")
    return notebook


def message_action(session: AgentSession, request: MessageActionRequest) -> AgentSession:
    """Do what ``request`` asks of ``session``; the session to show after it (the
    branch, for a fork). ``RequestError`` names what is wrong with the request, or why
    the session refused."""
    action, message_id = _checked(request)
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
        raise RequestError(_why(exc)) from exc
    return session


def notebook_action(session: AgentSession, request: MessageActionRequest
                    ) -> asyncio.Task[NotebookRewind[Any]]:
    """A rewind or fork that puts the notebook back: its task (the conversation is
    rewound, or the fork made, before it returns; a refusal changes nothing)."""
    action, message_id = _checked(request)
    try:
        if action == "fork":
            return session.fork(message_id, notebook=True)
        return session.rewind(message_id, notebook=True)
    except (RuntimeError, KeyError, ValueError) as exc:
        raise RequestError(_why(exc)) from exc


def _why(exc: Exception) -> str:
    return str(exc.args[0]) if exc.args else str(exc)
