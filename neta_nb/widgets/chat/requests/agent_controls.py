"""AgentControlTraits: an outside agent's ``/`` commands and session modes in a chat view.

When the shown session's agent is an outside agent (:class:`~neta_nb.runtime.acp.AcpAgent`)
the view's ``agent_commands``, ``agent_modes`` and ``agent_mode`` traits follow what the
agent says (:class:`~neta_nb.runtime.acp.controls.AgentControls`): the input bar shows a
``/`` menu and a mode selector from them. A mode chosen in the selector is asked of the
agent (``session/set_mode``) on the kernel's loop; a refusal is shown as ``mode_error``
and the selector goes back to the mode the agent is in. Any other agent: empty traits.
"""

from __future__ import annotations

import asyncio
from typing import Any, Protocol, TypedDict

from ....runtime.acp.controls import AgentControls, AgentMode
from ...base import RequestError, Requests, handles

__all__ = ["AgentCommand", "AgentControlTraits", "SetModeReply", "SetModeRequest"]


class AgentCommand(TypedDict):
    """One of an outside agent's ``/`` commands (TS: ``AgentCommand``,
    chat-view-traits.ts)."""

    name: str
    description: str


class SetModeRequest(TypedDict):
    """``set_mode``: the session mode chosen in the selector (TS: ``SetModeRequest``,
    agent-mode-select.ts)."""

    mode: str


class SetModeReply(TypedDict):
    """The ``set_mode`` reply: the request was taken (the agent's answer comes as the
    ``agent_mode`` or ``mode_error`` trait) (TS: ``SetModeReply``, agent-mode-select.ts)."""

    mode: str


class _Chat(Protocol):
    agent_commands: list[dict[str, Any]]
    agent_modes: list[dict[str, Any]]
    agent_mode: str
    mode_error: str

    def hold_sync(self) -> Any: ...


class AgentControlTraits(Requests):
    """Keeps a chat view's agent-control traits those of its shown session (see the
    module)."""

    def __init__(self, chat: _Chat) -> None:
        self._chat = chat
        self._controls: AgentControls | None = None
        self._stop: Any = None
        self._asked: set[asyncio.Task[None]] = set()

    def follow(self, outside: object | None) -> None:
        """Show the controls of ``outside`` — the shown session's outside turns
        (``session.deps.outside``) — from now on; ``None`` or a native agent's: none (a
        stored session shown read-only has none either)."""
        if self._stop is not None:
            self._stop()
            self._stop = None
        controls = getattr(outside, "controls", None)
        self._controls = controls if isinstance(controls, AgentControls) else None
        self._chat.mode_error = ""
        self._show()
        if self._controls is not None:
            self._stop = self._controls.listen(self._show)

    def _show(self) -> None:
        controls, chat = self._controls, self._chat
        with chat.hold_sync():
            if controls is None:
                chat.agent_commands, chat.agent_modes, chat.agent_mode = [], [], ""
                return
            chat.agent_commands = [{"name": name, "description": description}
                                   for name, description in controls.commands.items()]
            chat.agent_modes = [dict(mode) for mode in controls.modes]
            chat.agent_mode = controls.mode or ""

    @handles("set_mode")
    def choose(self, request: SetModeRequest) -> SetModeReply:
        """The selector's ``set_mode``: asked of the agent on the kernel's loop."""
        mode = request.get("mode")
        controls = self._controls
        if controls is None:
            raise RequestError("this chat's agent offers no session modes")
        modes: list[AgentMode] = controls.modes
        if not isinstance(mode, str) or mode not in [m["id"] for m in modes]:
            raise RequestError(f"unknown mode {mode!r}; the agent offers: "
                               f"{', '.join(m['id'] for m in modes) or 'none'}")
        self._chat.mode_error = ""
        task = asyncio.ensure_future(controls.choose(mode))
        self._asked.add(task)
        task.add_done_callback(lambda done: self._answered(controls, mode, done))
        return {"mode": mode}

    def _answered(self, controls: AgentControls, mode: str, done: asyncio.Task[None]) -> None:
        self._asked.discard(done)
        if done.cancelled() or controls is not self._controls:
            return
        error = done.exception()
        if error is not None:
            self._chat.mode_error = f"The mode was not changed to {mode!r}: {error}"
        self._show()  # the mode the agent is in (unchanged after a refusal)

    def close(self) -> None:
        self.follow(None)
