"""AgentControls: what an outside agent offers beside the prompt — its ``/`` commands and
its session modes — as the chat input shows them.

The agent says its commands (``available_commands_update``), the modes it offers (in the
answer to ``session/new`` or ``session/load``) and the mode it is in
(``current_mode_update``, or the mode it was asked for); a view listens and shows them as
they change. :meth:`AgentControls.choose` asks the agent for another mode
(``session/set_mode``, through :class:`~.turns.AcpTurns`). The protocol lets a client set
the mode at any time, a prompt running or not, so nothing here waits for a turn's end.

This module needs no SDK: a view checks for it without importing the protocol's models.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import TypedDict

__all__ = ["AgentControls", "AgentMode"]


class AgentMode(TypedDict):
    """A session mode the agent offers (TS: ``AgentMode``, chat-view-traits.ts)."""

    id: str
    name: str
    description: str


class AgentControls:
    """The ``/`` commands and session modes of one session of an outside agent.

    ``choose(mode)`` asks the agent for ``mode``; it raises
    :class:`~neta_nb.providers.base.ProviderError` when the agent refuses (the mode shown
    is then unchanged)."""

    def __init__(self, mode: str | None, choose: Callable[[str], Awaitable[None]]) -> None:
        self.commands: dict[str, str] = {}
        """The agent's ``/`` commands (name → description), as it last said them."""
        self.modes: list[AgentMode] = []
        """The session modes the agent offered for its latest session."""
        self.mode = mode
        """The mode the session is in, as far as the agent said (or was asked); the one
        asked for again when the agent's process starts anew."""
        self._choose = choose
        self._listeners: list[Callable[[], None]] = []

    def listen(self, listener: Callable[[], None]) -> Callable[[], None]:
        """Call ``listener`` whenever the commands, the modes or the mode change; returns
        what stops it."""
        self._listeners.append(listener)

        def stop() -> None:
            if listener in self._listeners:
                self._listeners.remove(listener)

        return stop

    async def choose(self, mode: str) -> None:
        """Ask the agent for ``mode`` (one of :attr:`modes`); see the class."""
        await self._choose(mode)

    # --- what the agent said (AcpTurns) ---------------------------------------------------
    def commands_said(self, commands: Mapping[str, str]) -> None:
        self._set(commands=dict(commands))

    def modes_said(self, modes: Sequence[AgentMode], current: str | None) -> None:
        self._set(modes=list(modes), mode=current if current is not None else self.mode)

    def mode_said(self, mode: str) -> None:
        self._set(mode=mode)

    def _set(self, *, commands: dict[str, str] | None = None,
             modes: list[AgentMode] | None = None, mode: str | None = None) -> None:
        before = (self.commands, self.modes, self.mode)
        if commands is not None:
            self.commands = commands
        if modes is not None:
            self.modes = modes
        if mode is not None:
            self.mode = mode
        if (self.commands, self.modes, self.mode) != before:
            for listener in list(self._listeners):
                listener()
