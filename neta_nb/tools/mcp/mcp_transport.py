"""What an MCP connection wraps around the SDK's transport: the server's read stream
relayed, so its end is noticed when it happens (:func:`watched`); a message the SDK
cannot read because its JSON holds a lone surrogate escape, repaired (:func:`repaired`);
and our progress callback in the shape the SDK calls (:class:`ProgressRelay`)."""

from __future__ import annotations

import contextlib
import json
from collections.abc import AsyncIterator, Callable
from typing import Any

import anyio
import pydantic

from ...encodable import encodable_value

try:
    import mcp_types
    from mcp.shared.message import SessionMessage
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("MCP servers need the official MCP SDK: "
                      "pip install 'neta-nb[mcp]'") from error

__all__ = ["ProgressRelay", "repaired", "watched"]


class ProgressRelay:
    """The SDK's progress callback (a protocol with named parameters) around ours."""

    def __init__(self, callback: Callable[[float, float | None, str | None], None]) -> None:
        self._callback = callback

    async def __call__(self, progress: float, total: float | None, message: str | None
                       ) -> None:
        self._callback(progress, total, message)


@contextlib.asynccontextmanager
async def watched(transport: Any, on_end: Callable[[], None]) -> AsyncIterator[Any]:
    """``transport`` with its read stream relayed, so the end of the server's stream is
    noticed when it happens, not at the next call (the SDK keeps that to itself)."""
    async with transport as (read_stream, write_stream):
        relay_send, relay_receive = anyio.create_memory_object_stream[Any](0)

        async def pump() -> None:
            try:
                async with relay_send:
                    async for item in read_stream:
                        await relay_send.send(repaired(item))
            except (anyio.ClosedResourceError, anyio.BrokenResourceError):
                pass
            on_end()

        async with anyio.create_task_group() as group:
            group.start_soon(pump)
            try:
                yield relay_receive, write_stream
            finally:
                group.cancel_scope.cancel()


def repaired(item: Any) -> Any:
    """A message the SDK could not read because its JSON holds a lone surrogate escape
    (``"\\ud800"``, valid JSON that pydantic refuses), with such characters replaced: else
    the SDK drops it, and the call it answers waits until its timeout. Anything else
    unreadable is passed on as it is."""
    if not isinstance(item, pydantic.ValidationError):
        return item
    errors = item.errors(include_url=False)
    raw = errors[0].get("input") if errors and errors[0].get("type") == "json_invalid" \
        else None
    if not isinstance(raw, str) or "\\u" not in raw:
        return item
    try:
        message = mcp_types.jsonrpc_message_adapter.validate_python(
            encodable_value(json.loads(raw)), by_name=False)
    except (ValueError, RecursionError):
        return item
    return SessionMessage(message)
