"""Tools: what an agent may call, and the single rule that decides which it gets.

* :class:`Tool` / :func:`tool` — a typed function with a schema, a visibility class
  (``internal`` / ``tool`` / ``skill``), a category, capability tags and a core flag.
* :class:`ToolCatalog` — the global set, with global enable/disable.
* :class:`AgentToolConfig` — one agent's overrides (inherit core, enabled, disabled).
* :func:`resolve_tools` — the only place that combines them.
* :class:`RichResult` — what a tool returns to show figures, tables and images besides
  its text (bounded by :class:`RichLimits`).
* :func:`preview_prompt` — what a provider receives, computed the way the runtime does.
* Explanations: :attr:`ToolResolution.steps` (:class:`ResolutionSteps`), ``.explain(name)``,
  ``.diff(other)`` (:class:`ResolutionDiff`), :meth:`AgentToolConfig.load_report`
  (:class:`LoadReport`); each, and the resolution, config and catalog themselves, shows as
  a table in a notebook (``.display(lang)`` returns a :class:`Display`).
"""

from .base import Tool, ToolArgumentError, ToolContext, ToolVisibility, tool
from .catalog import SEED_CATEGORIES, ToolCatalog, demo_catalog
from .config import AgentToolConfig, LoadReport, ToolConfigError
from .display import Display
from .preview import PromptPreview, preview_prompt
from .resolution.resolution_steps import (
    ChangeKind,
    ResolutionDiff,
    ResolutionStep,
    ResolutionSteps,
    StepRule,
    ToolChange,
)
from .resolution.resolver import ToolResolution, ToolState, resolve_tools
from .rich import RichLimits, RichResult

__all__ = [
    "SEED_CATEGORIES",
    "AgentToolConfig",
    "ChangeKind",
    "Display",
    "LoadReport",
    "PromptPreview",
    "ResolutionDiff",
    "ResolutionStep",
    "ResolutionSteps",
    "RichLimits",
    "RichResult",
    "StepRule",
    "Tool",
    "ToolArgumentError",
    "ToolCatalog",
    "ToolChange",
    "ToolConfigError",
    "ToolContext",
    "ToolResolution",
    "ToolState",
    "ToolVisibility",
    "demo_catalog",
    "preview_prompt",
    "resolve_tools",
    "tool",
]
