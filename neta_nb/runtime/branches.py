"""Branches of a conversation: :meth:`AgentSession.fork` — a new session whose history is
another's up to a message, stored as a branch of it.

Everything a session shows besides its messages follows from them, so a branch is its
messages and the state they give: the plan is the latest ``todo`` result among them, the
skill and tool cards are their metadata, the token, context and cost figures their usage,
and the thinking level the one its last prompt ran at. What it is forked from is never
written to. A branch starts uncompacted (the model is sent the branch's messages; it is
compacted again when it grows past the agent's threshold) and holds no sub-agent
sessions of its own (the cards of its parent's delegations show their runs as stored).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..thinking import THINK_LEVELS, ThinkLevel
from ..todo import TodoStore

if TYPE_CHECKING:
    from ..messages import Message
    from .session import AgentSession

__all__ = ["fork_session", "message_index"]


def message_index(session: AgentSession, message_id: str) -> int:
    """Where ``message_id`` is in the session's history (``KeyError`` if nowhere)."""
    for index, message in enumerate(session.messages):
        if message.id == message_id:
            return index
    raise KeyError(f"session {session.id!r} has no message {message_id!r}")


def fork_session(session: AgentSession, message_id: str) -> AgentSession:
    """See :meth:`AgentSession.fork`."""
    if session.running:
        raise RuntimeError(f"session {session.id!r} is running a turn: stop it "
                           f"(session.stop()) before forking it")
    upto = session.messages[: message_index(session, message_id) + 1]
    branch = type(session)(session.agent, session.catalog, session.store,
                           think_level=_level_at(upto, session), provider=session.provider,
                           namespace=session.namespace, working_dir=session.working_dir,
                           approval_policy=session.approval_policy)
    branch.branch_of, branch.branch_at = session.id, message_id
    for message in upto:
        branch._history.append(message.model_copy(deep=True))
    branch.todo = TodoStore.hydrate_from_history(branch.messages)
    branch._meter.price = branch.provider.price
    branch._meter.restore(branch.messages, [])
    branch.restore_spend(branch.messages)
    branch._save_record(running=False, owner=None, owner_died=False)
    return branch


def _level_at(messages: list[Message], session: AgentSession) -> ThinkLevel | None:
    """The thinking level the last prompt of ``messages`` ran at; without one recorded
    (stored before levels were), the session's setting."""
    for message in reversed(messages):
        level = message.metadata.think_level if message.role == "user" else None
        for known in THINK_LEVELS:
            if level == known:
                return known
    return session._think_level
