"""A rewind or fork that puts the notebook's cells back too (``notebook=True``).

The conversation goes back as a plain rewind or fork does, at once; the cells the agent
(and the sub-agents it delegated to after that point, theirs in their turn) changed after
that point are then restored on the notebook's page
(:mod:`neta_nb.tools.notebook.changes.restore`: from the cards of its accepted changes, newest
first, a cell the user changed since left alone and reported), as one step of the
notebook's undo history. Everything that can refuse is checked first — the session busy,
an unknown message, no page to restore on, no event loop — so a refused one changes
nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Generic, Protocol, TypeVar

from ...messages import Message
from ...store.session_store import SessionStore
from ...tools.notebook.changes import AppliedChange, applied_changes
from ...tools.notebook.changes.restore import NotebookRestore, restore_notebook
from ...tools.notebook.page import PAGE_NEEDED, NotebookPage

__all__ = ["NotebookRewind", "SubagentHistories", "changes_made", "start_restore",
           "subagent_histories"]

Branch = TypeVar("Branch")
"""What the rewind or fork gives: the kept branch (``AgentSession | None``) or the fork."""


DELEGATE = "delegate"
"""The tool whose calls run a sub-agent."""


class SubagentHistories(Protocol):
    """The history of the sub-agent a ``delegate`` call (by id) ran — empty when there is
    none to be had — and how to find its own sub-agents' in turn."""

    def __call__(self, call_id: str) -> tuple[Sequence[Message], SubagentHistories]: ...


class _Parent(Protocol):
    """What the histories are found from: a session (an ``AgentSession``)."""

    @property
    def id(self) -> str: ...
    @property
    def messages(self) -> list[Message]: ...
    @property
    def subagents(self) -> Mapping[str, _Parent]: ...
    @property
    def store(self) -> SessionStore | None: ...


def subagent_histories(session: _Parent) -> SubagentHistories:
    """The histories of ``session``'s sub-agents: a child of its current (or latest) turn
    as it holds it now, an earlier one (or one of a resumed session) as its store kept it."""
    def find(call_id: str) -> tuple[Sequence[Message], SubagentHistories]:
        live = session.subagents.get(call_id)
        if live is not None:
            return live.messages, subagent_histories(live)
        return _stored(session.store, session.id)(call_id)
    return find


def _stored(store: SessionStore | None, session_id: str) -> SubagentHistories:
    children = ({record.parent_call_id: record.id for record in store.list_children(session_id)}
                if store is not None else {})

    def find(call_id: str) -> tuple[Sequence[Message], SubagentHistories]:
        child = children.get(call_id)
        if store is None or child is None:
            return [], _stored(None, "")
        return store.load_messages(child), _stored(store, child)
    return find


def changes_made(messages: Sequence[Message], children: SubagentHistories
                 ) -> list[AppliedChange]:
    """The accepted changes of ``messages`` (kept or not) in the order made, with each
    ``delegate`` call's sub-agent's own at its call: ``children`` finds their histories."""
    found: list[AppliedChange] = []
    for message in messages:
        found += applied_changes([message], unkept=True)
        for call in message.tool_calls:
            if call.name == DELEGATE:
                history, below = children(call.id)
                found += changes_made(history, below)
    return found


@dataclass
class NotebookRewind(Generic[Branch]):
    """What a rewind or fork with ``notebook=True`` did: ``session`` — the branch a rewind
    kept (``None`` without a store), or the fork — and ``notebook``, the cells put back and
    those left alone (``conflicts``)."""

    session: Branch
    notebook: NotebookRestore


def start_restore(page: NotebookPage | None, changes: Sequence[AppliedChange],
                  branch: Callable[[], Branch],
                  note: Callable[[Branch, NotebookRestore], None]
                  ) -> asyncio.Task[NotebookRewind[Branch]]:
    """Check, then do ``branch()`` (the rewind or fork) and restore ``changes`` (those
    made after the point it goes back to: :func:`changes_made`) on ``page``, in a task: its
    result says what was done, which ``note`` records (in the session the conversation
    goes on in)."""
    if changes and (page is None or not page.available):
        raise RuntimeError(f"putting the notebook back {PAGE_NEEDED} with the chat open on "
                           f"it; rewind without notebook=True to leave the cells as they are")
    asyncio.get_running_loop()  # the restore needs one (RuntimeError without), before all
    kept = branch()

    async def restore() -> NotebookRewind[Branch]:
        outcome = (await restore_notebook(page, changes) if changes and page is not None
                   else NotebookRestore())
        note(kept, outcome)
        return NotebookRewind(kept, outcome)

    return asyncio.ensure_future(restore())
