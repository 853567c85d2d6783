"""Prompt preview: exactly what a provider will receive for an agent (seed 001 §8).

:func:`preview_prompt` is also what the runtime calls to build each request's system
prompt and tool list, so a preview can never disagree with a real run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from ..messages import ToolDefinition
from .catalog import ToolCatalog
from .config import AgentToolConfig
from .resolution.resolver import ToolResolution, resolve_tools

__all__ = ["PromptPreview", "preview_prompt"]


@dataclass(frozen=True)
class PromptPreview:
    """What a provider would be sent for an agent: its system prompt and tool definitions,
    and the resolution that chose the tools."""

    system_prompt: str
    """The system prompt, exactly as the provider gets it."""
    tools: list[ToolDefinition]
    """The tool definitions, exactly as (and in the order) the provider gets them."""
    resolution: ToolResolution
    """Why these tools: states, reasons, unknown names, warnings."""

    @property
    def tool_names(self) -> list[str]:
        return [definition.name for definition in self.tools]

    def _repr_markdown_(self) -> str:
        lines = ["**System prompt**", "", "```text", self.system_prompt, "```", "",
                 f"**Tools ({len(self.tools)})**", ""]
        for definition in self.tools:
            lines += [f"- `{definition.name}` — {definition.description.splitlines()[0]}"
                      if definition.description else f"- `{definition.name}`"]
        left_out = self.resolution.reasons
        if left_out:
            lines += ["", f"**Left out ({len(left_out)})**", ""]
            lines += [f"- `{name}` — {reason}" for name, reason in left_out.items()]
        if self.resolution.warnings:
            lines += ["", "**Warnings**", ""]
            lines += [f"- {warning}" for warning in self.resolution.warnings]
        return "\n".join(lines)

    def to_json(self) -> str:
        """The system prompt and tool definitions as JSON (for copying into a bug report
        or comparing two agents)."""
        return json.dumps({"system_prompt": self.system_prompt,
                           "tools": [d.model_dump() for d in self.tools]},
                          indent=2, ensure_ascii=False)


def preview_prompt(*, system_prompt: str, catalog: ToolCatalog, config: AgentToolConfig,
                   model_capabilities: Iterable[str] | None = None,
                   scene: str | None = None, model: str | None = None,
                   delegates: bool | None = None,
                   notebook_page: bool | None = None) -> PromptPreview:
    """The system prompt and tool definitions a provider receives for this agent, with
    the resolution that produced them."""
    resolution = resolve_tools(catalog, config, model_capabilities=model_capabilities,
                               scene=scene, model=model, delegates=delegates,
                               notebook_page=notebook_page)
    return PromptPreview(system_prompt=system_prompt, tools=resolution.definitions(),
                         resolution=resolution)
