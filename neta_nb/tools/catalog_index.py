"""What the resolver derives from a catalog alone — rules 1 and 2 of seed 001 §6 (the
globally enabled pool, the core set) and every tool's state and reason for a config with no
overrides — cached per catalog version, so a resolution costs what its config holds, not
what the catalog holds. The resolver (:func:`~neta_nb.tools.resolve_tools`) and its step
trace (:mod:`neta_nb.tools.resolution.resolution_steps`) both read it."""

from __future__ import annotations

import weakref
from dataclasses import dataclass

from ..labels import Notice
from .base import Tool
from .catalog import ToolCatalog
from .rules import (
    REASON_CORE_NOT_INHERITED,
    REASON_GLOBALLY_DISABLED,
    REASON_NOT_ENABLED,
    ToolState,
)

__all__ = ["CatalogIndex", "index_of"]


@dataclass(frozen=True)
class CatalogIndex:
    """What the resolver derives from a catalog alone, cached per catalog version."""

    version: int
    tools: dict[str, Tool]
    position: dict[str, int]
    base_states: dict[bool, dict[str, ToolState]]
    """Per ``inherit_core_tools``: every tool's state for a config with no overrides."""
    base_reasons: dict[bool, dict[str, Notice]]
    default_group: dict[bool, list[Tool]]
    globally_disabled: frozenset[str]
    switchable: frozenset[str]
    """Registered tools that are not disabled globally: rule 1's pool."""
    core_names: frozenset[str]
    """The core tools of the pool: rule 2's, for an agent that inherits them."""
    restricted: frozenset[str]
    """Tools with capability or scene limits: the only ones rule 5 can remove."""


_indexes: weakref.WeakKeyDictionary[ToolCatalog, CatalogIndex] = weakref.WeakKeyDictionary()


def index_of(catalog: ToolCatalog) -> CatalogIndex:
    """``catalog``'s index, made again only when the catalog changed since."""
    index = _indexes.get(catalog)
    if index is not None and index.version == catalog.version:
        return index
    ordered = catalog.ordered()
    globally_disabled = catalog.globally_disabled
    # Suspended MCP tools are off globally too, with their own reason (one per server).
    suspended = catalog.suspended
    suspension_reasons = {server: Notice("mcp_changed", server=server)
                          for server in set(suspended.values())}
    base_states: dict[bool, dict[str, ToolState]] = {True: {}, False: {}}
    base_reasons: dict[bool, dict[str, Notice]] = {True: {}, False: {}}
    default_group: dict[bool, list[Tool]] = {True: [], False: []}
    for item in ordered:
        for inherit in (True, False):
            if item.name in globally_disabled:
                base_states[inherit][item.name] = ToolState.GLOBALLY_DISABLED
                server = suspended.get(item.name)
                base_reasons[inherit][item.name] = (
                    REASON_GLOBALLY_DISABLED if server is None
                    else suspension_reasons[server])
            elif item.core and inherit:
                base_states[inherit][item.name] = ToolState.DEFAULT_ENABLED
                default_group[inherit].append(item)
            else:
                base_states[inherit][item.name] = ToolState.AVAILABLE
                base_reasons[inherit][item.name] = (REASON_CORE_NOT_INHERITED if item.core
                                                    else REASON_NOT_ENABLED)
    index = CatalogIndex(
        version=catalog.version, tools={item.name: item for item in ordered},
        position={item.name: n for n, item in enumerate(ordered)},
        base_states=base_states, base_reasons=base_reasons, default_group=default_group,
        globally_disabled=globally_disabled,
        switchable=frozenset(item.name for item in ordered
                             if item.name not in globally_disabled),
        core_names=frozenset(item.name for item in default_group[True]),
        restricted=frozenset(item.name for item in ordered
                             if item.capabilities or item.scenes is not None
                             or item.needs_subagents or item.needs_notebook_page))
    _indexes[catalog] = index
    return index
