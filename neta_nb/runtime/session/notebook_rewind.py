"""A rewind or fork that puts the notebook's cells back too (``notebook=True``).

The conversation goes back as a plain rewind or fork does, at once; the cells the agent
changed after that point are then restored on the notebook's page
(:mod:`neta_nb.tools.notebook.changes.restore`: from the cards of its accepted changes, newest
first, a cell the user changed since left alone and reported), as one step of the
notebook's undo history. Everything that can refuse is checked first — the session busy,
an unknown message, no page to restore on, no event loop — so a refused one changes
nothing.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Generic, TypeVar

from ...messages import Message
from ...tools.notebook.changes import applied_changes
from ...tools.notebook.changes.restore import NotebookRestore, restore_notebook
from ...tools.notebook.page import PAGE_NEEDED, NotebookPage

__all__ = ["NotebookRewind", "start_restore"]

Branch = TypeVar("Branch")
"""What the rewind or fork gives: the kept branch (``AgentSession | None``) or the fork."""


@dataclass
class NotebookRewind(Generic[Branch]):
    """What a rewind or fork with ``notebook=True`` did: ``session`` — the branch a rewind
    kept (``None`` without a store), or the fork — and ``notebook``, the cells put back and
    those left alone (``conflicts``)."""

    session: Branch
    notebook: NotebookRestore


def start_restore(page: NotebookPage | None, dropped: Sequence[Message],
                  branch: Callable[[], Branch],
                  note: Callable[[Branch, NotebookRestore], None]
                  ) -> asyncio.Task[NotebookRewind[Branch]]:
    """Check, then do ``branch()`` (the rewind or fork) and restore the cells changed in
    ``dropped`` on ``page``, in a task: its result says what was done, which ``note``
    records (in the session the conversation goes on in)."""
    changes = applied_changes(dropped, unkept=True)
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
