"""The pieces of the seed's resolution rules (001 §6) that the resolver and its step trace
both apply: the reasons a tool is left out that need no parameters, and rule 5, the
capability/scene filter. One statement of each, imported by both, so the trace
(:mod:`neta_nb.tools.resolution_steps`) and :func:`~neta_nb.tools.resolve_tools` cannot
filter differently."""

from __future__ import annotations

from ..labels import Notice
from .base import Tool

__all__ = ["REASON_AGENT_DISABLED", "REASON_CORE_NOT_INHERITED", "REASON_GLOBALLY_DISABLED",
           "REASON_NOT_ENABLED", "REASON_NO_SUBAGENTS", "filter_by_model"]

# Shared by every resolution: the reasons that need no parameters are made once.
REASON_GLOBALLY_DISABLED = Notice("globally_disabled")
REASON_AGENT_DISABLED = Notice("agent_disabled")
REASON_NOT_ENABLED = Notice("not_enabled")
REASON_CORE_NOT_INHERITED = Notice("core_not_inherited")
REASON_NO_SUBAGENTS = Notice("no_subagents")


def filter_by_model(tools: list[Tool], restricted: frozenset[str], reasons: dict[str, Notice],
            capabilities: frozenset[str] | None, scene: str | None,
            model: str | None, delegates: bool | None = None) -> list[Tool]:
    """Rule 5: drop tools the model's capabilities or the scene rule out — or, for an
    agent that cannot delegate, the tools that need sub-agents — with a reason."""
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
        kept.append(item)
    return kept
