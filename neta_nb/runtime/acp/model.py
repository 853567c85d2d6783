"""AcpModel: the "model" of an outside agent's session — the agent itself, as the session's
provider: its name, its command, its price, and what the agent said it takes. Its own
module, as both the agent's definition (:mod:`.agent`) and its turns (:mod:`.turns`)
use it."""

from __future__ import annotations

from collections.abc import AsyncIterator, Sequence
from dataclasses import replace
from typing import Any

from ...providers.base import ModelRequest, Provider, ProviderError, StreamEvent
from ...providers.models import ModelInfo

__all__ = ["ACP_SUPPLIER", "AcpModel"]

ACP_SUPPLIER = "acp"
"""The supplier an outside agent's session is stored under (its model is the agent's
name)."""


class AcpModel(Provider):
    """The "model" of an outside agent's session: the agent itself. The session never
    asks it for a response (the agent's turns run through :mod:`.turns`)."""

    supplier = ACP_SUPPLIER
    says_its_cost = True  # usage_update's cost: see AcpTurns._cost_reported

    def __init__(self, name: str, command: Sequence[str]) -> None:
        self.model = name
        self.command = list(command)
        self.takes_images = False
        """The agent said it takes images in a prompt (known once it started: an image
        attached before its first turn is refused with the model's words)."""
        self.not_resumable = (
            f"it is a session of the outside agent {name!r}, whose environment (its keys) "
            f"is never stored: give the agent again, "
            f"AgentSession.resume(id, store, agent=AcpAgent(...)), and the agent continues "
            f"its own session. It can be viewed (read-only).")

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        raise ProviderError(f"{self.model} is an outside agent: it answers its own turns, "
                            f"not the session's model calls (a summary, say).")
        yield  # pragma: no cover - makes this an async generator

    @property
    def info(self) -> ModelInfo:
        info = super().info
        if not self.takes_images:
            return info
        return replace(info, capabilities=info.capabilities | {"vision"})

    def settings(self) -> dict[str, Any]:
        return {**super().settings(), "command": list(self.command)}
