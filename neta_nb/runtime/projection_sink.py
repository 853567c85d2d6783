"""Where a :class:`~neta_nb.runtime.projection.ConversationProjection` sends its changes:
view operations (stream text, upsert an item, a response starts or ends), each with the
``path`` of the sub-agent run it belongs to. A chat view's batcher is one; :class:`NullSink`
drops them (a projection followed for its state alone)."""

from __future__ import annotations

from typing import Any, Protocol

__all__ = ["NullSink", "ProjectionSink"]


class ProjectionSink(Protocol):
    """Where a projection sends its changes (a chat view's batcher)."""

    def text(self, op: str, delta: str, path: tuple[str, ...] = ()) -> None: ...

    def op(self, op: str, path: tuple[str, ...] = (), **fields: Any) -> None: ...

    def upsert(self, item_id: str, path: tuple[str, ...] = ()) -> None: ...

    def flush(self) -> None: ...


class NullSink:
    """A sink that drops every change: a projection followed for its state alone."""

    def text(self, op: str, delta: str, path: tuple[str, ...] = ()) -> None:
        pass

    def op(self, op: str, path: tuple[str, ...] = (), **fields: Any) -> None:
        pass

    def upsert(self, item_id: str, path: tuple[str, ...] = ()) -> None:
        pass

    def flush(self) -> None:
        pass
