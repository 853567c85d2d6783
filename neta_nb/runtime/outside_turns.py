"""OutsideTurns: the turns of an agent that runs its own loop in another process (an
outside agent, such as Claude Code over the Agent Client Protocol: see :mod:`.acp`).

Such an agent calls its own model and runs its own tools; the session only follows what
it reports. The session's turn runner hands a turn to the agent's :class:`OutsideTurns`
instead of calling a model itself, and keeps everything around it — the turn's start and
``done``, Stop, the store's claim and record, a failure's ``error`` and the partial
answer kept — so an outside agent's turn is closed exactly as a native one is. The
driver writes what the agent reports into the session's own state (history, cards,
plan, approvals, figures) through the same calls the native turn uses, so the views,
the projection, the static form and the store need no case of their own.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Protocol

if TYPE_CHECKING:
    from ..messages import Message, Usage
    from .session.turn import Turn

__all__ = ["CountUsage", "OutsideTurns"]

CountUsage = Callable[["Turn", "Usage | None"], None]
"""What counts a model's usage into the turn's figures (and says ``token_update``)."""


class OutsideTurns(Protocol):
    """The turns of one session's outside agent (see the module)."""

    async def run(self, turn: Turn, prompt: Message, count_usage: CountUsage) -> Message | None:
        """Run ``turn`` of the ``prompt`` (already in the history) to its end and return
        its last assistant message. Raises :class:`~neta_nb.providers.base.ProviderError`
        when the agent failed (the runner closes the turn with an ``error``); a Stop
        cancels the awaiting task, and the driver stops the agent before it re-raises."""
        ...

    def close(self) -> None:
        """End the agent's process (its whole process group); a next turn starts it
        again."""
        ...
