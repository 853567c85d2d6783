"""ResolutionCache: the last resolution of an agent's tools, kept while what it depends on
is unchanged — the catalog (its version counts every change), the agent's config (its
contents: a user may assign ``config.enabled`` directly) and the scene.

A tool is re-authorised right before it runs (it may have been switched off while the
response streamed); with this cache that check costs a key comparison unless something
really changed.
"""

from __future__ import annotations

from ..catalog import ToolCatalog
from ..config import AgentToolConfig
from .resolver import ToolResolution

__all__ = ["ResolutionCache"]


class ResolutionCache:
    """One resolution and the state it was made from."""

    def __init__(self) -> None:
        self._key: tuple[object, ...] | None = None
        self._resolution: ToolResolution | None = None

    @staticmethod
    def key(catalog: ToolCatalog, config: AgentToolConfig,
            scene: str | None, delegates: bool | None = None,
            notebook_page: bool | None = None) -> tuple[object, ...]:
        return (id(catalog), catalog.version, id(config), config.inherit_core_tools,
                tuple(config.enabled), tuple(config.disabled), scene, delegates,
                notebook_page)

    def get(self, key: tuple[object, ...]) -> ToolResolution | None:
        return self._resolution if key == self._key else None

    def put(self, key: tuple[object, ...], resolution: ToolResolution) -> None:
        self._key, self._resolution = key, resolution
