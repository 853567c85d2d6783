"""The model of a session whose calls come from an outside MCP client.

A client of the notebook's MCP server (:mod:`.mcp_server`) is an agent the user sees: its
calls run as the turns of an :class:`~neta_nb.runtime.session.AgentSession`, so they are
resolved against the agent's grants, asked for approval, shown as cards (a proposed edit
as its diff card), stored and traced exactly as a model's calls are. The "model" of that
session is :class:`RelayProvider`: asked for a response, it answers with the one tool call
the client made; asked again, with the call's result in the history, it hands that result
back to the client and ends the turn without a word of its own.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import NamedTuple

from ..messages import Message, ToolResultPart, Usage, new_id
from ..providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    ToolCallReady,
    UsageUpdate,
)

__all__ = ["RELAY_SUPPLIER", "RelayCall", "RelayProvider"]

RELAY_SUPPLIER = "mcp-client"
"""The supplier name a relayed session is stored under (its model is the client's name)."""

_NO_PROMPTS = ("This chat shows the calls of the outside client {name}; it answers no "
               "prompts. Ask the client itself.")


class RelayCall(NamedTuple):
    """One call of a client, waiting for its result."""

    id: str
    name: str
    args: dict[str, object]
    result: asyncio.Future[ToolResultPart]


class RelayProvider(Provider):
    """The client's calls as a model's responses, one call per turn (see the module)."""

    supplier = RELAY_SUPPLIER

    def __init__(self, client_name: str) -> None:
        self.model = client_name
        # The "model" was the client itself: another kernel has nothing to continue with.
        self.not_resumable = (
            f"it holds the calls of the outside MCP client {client_name!r}: its model was "
            f"that client, which is not connected to this kernel, so nothing can continue "
            f"it. It can be viewed (read-only); a client that connects again starts a new "
            f"session.")
        self._call: RelayCall | None = None
        self._asked = False

    def expect(self, name: str, args: dict[str, object]) -> RelayCall:
        """The call the next turn makes; its ``result`` resolves when the tool answered.
        One at a time: the caller runs one turn per call."""
        if self._call is not None and not self._call.result.done():
            raise RuntimeError("a relayed call is already in flight")
        call = RelayCall(new_id("mcp_"), name, dict(args),
                         asyncio.get_running_loop().create_future())
        self._call, self._asked = call, False
        return call

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        call = self._call
        yield UsageUpdate(Usage())
        if call is None or call.result.done():
            yield TextDelta(_NO_PROMPTS.format(name=self.model))
            yield StreamDone("end_turn")
            return
        if not self._asked:
            self._asked = True
            yield ToolCallReady(call.id, call.name, dict(call.args))
            yield StreamDone("tool_use")
            return
        call.result.set_result(_result_of(request.messages, call.id))
        yield StreamDone("end_turn")


def _result_of(messages: list[Message], call_id: str) -> ToolResultPart:
    for message in reversed(messages):
        for part in message.parts:
            if isinstance(part, ToolResultPart) and part.tool_call_id == call_id:
                return part
    return ToolResultPart(tool_call_id=call_id, name="", is_error=True,
                          content="The call ended without a result.")
