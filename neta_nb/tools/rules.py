"""The seed's resolution rules (001 §6) as the resolver and its step trace both apply
them: rules 3–4 (the agent's grants, :func:`grants`), rule 5 (the capability/scene
filter, :func:`filter_by_model`) and the reasons a tool is left out that need no
parameters. Rules 1–2 are the catalog index's pool and core set. One statement of each,
imported by both, so the trace (:mod:`neta_nb.tools.resolution.resolution_steps`) and
:func:`~neta_nb.tools.resolve_tools` cannot decide differently."""

from __future__ import annotations

from collections.abc import Set
from dataclasses import dataclass
from enum import StrEnum

from ..labels import Notice
from .base import Tool

__all__ = ["REASON_AGENT_DISABLED", "REASON_CORE_NOT_INHERITED", "REASON_GLOBALLY_DISABLED",
           "REASON_NOT_ENABLED", "REASON_NO_NOTEBOOK_PAGE", "REASON_NO_SUBAGENTS", "Grants",
           "ToolState", "filter_by_model", "grants"]


class ToolState(StrEnum):
    """A tool's authorization state for one agent (seed 001 §4.2, plus ``available``)."""

    DEFAULT_ENABLED = "default_enabled"
    """A core tool the agent inherits and has not switched off."""
    AGENT_ENABLED = "agent_enabled"
    """Switched on explicitly for this agent."""
    AGENT_DISABLED = "agent_disabled"
    """Switched off explicitly for this agent."""
    GLOBALLY_DISABLED = "globally_disabled"
    """Disabled in tool management; read-only for agents."""
    AVAILABLE = "available"
    """Off for this agent, with no override: it can be switched on."""


@dataclass(frozen=True, slots=True)
class Grants:
    """What an agent's config changes in the pool once its core tools are in."""

    added: frozenset[str]
    """Rule 3: the enabled names the pool holds, beyond the inherited core tools."""
    removed: frozenset[str]
    """Rule 4: the names rule 2 or 3 turned on that the agent disabled (a disable wins)."""


def grants(pool: Set[str], core: Set[str], enabled: Set[str], disabled: Set[str]) -> Grants:
    """Rules 3 and 4 for a pool (rule 1: the globally enabled tools) whose inherited core
    tools (rule 2) are ``core`` — at the cost of the config's size, not the catalog's."""
    # Set algebra (each intersection walks the smaller side, in C): large configs stay
    # cheap, and nothing here walks the whole catalog.
    added = frozenset((enabled & pool) - core)
    removed = frozenset((disabled & core) | (disabled & added))
    return Grants(added, removed)

# Shared by every resolution: the reasons that need no parameters are made once.
REASON_GLOBALLY_DISABLED = Notice("globally_disabled")
REASON_AGENT_DISABLED = Notice("agent_disabled")
REASON_NOT_ENABLED = Notice("not_enabled")
REASON_CORE_NOT_INHERITED = Notice("core_not_inherited")
REASON_NO_SUBAGENTS = Notice("no_subagents")
REASON_NO_NOTEBOOK_PAGE = Notice("no_notebook_page")


def filter_by_model(tools: list[Tool], restricted: frozenset[str], reasons: dict[str, Notice],
            capabilities: frozenset[str] | None, scene: str | None,
            model: str | None, delegates: bool | None = None,
            notebook_page: bool | None = None) -> list[Tool]:
    """Rule 5: drop tools the model's capabilities or the scene rule out — or, for an
    agent that cannot delegate, the tools that need sub-agents, and where no notebook page
    answers, the tools that need one — with a reason."""
    kept: list[Tool] = []
    # One notice per distinct reason, shared by the tools it applies to.
    capability_reasons: dict[frozenset[str], Notice] = {}
    scene_reason: Notice | None = None
    for item in tools:
        if item.name in restricted:
            if capabilities is not None and not item.capabilities <= capabilities:
                missing = item.capabilities - capabilities
                reason = capability_reasons.get(missing)
                if reason is None:
                    reason = capability_reasons[missing] = Notice(
                        "needs_capability", capabilities=sorted(missing), model=model)
                reasons[item.name] = reason
                continue
            if scene is not None and item.scenes is not None and scene not in item.scenes:
                if scene_reason is None:
                    scene_reason = Notice("scene", scene=scene)
                reasons[item.name] = scene_reason
                continue
            if delegates is False and item.needs_subagents:
                reasons[item.name] = REASON_NO_SUBAGENTS
                continue
            if notebook_page is False and item.needs_notebook_page:
                reasons[item.name] = REASON_NO_NOTEBOOK_PAGE
                continue
        kept.append(item)
    return kept
