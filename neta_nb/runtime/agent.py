"""Agent: an agent's definition — who it is, which model, which tools, and the limits of
its turns. A session runs one; the store keeps its definition (never a key) so that
``AgentSession.resume`` can rebuild it."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from ..providers.base import Provider
from ..providers.factory import create_provider, default_provider
from ..thinking import ThinkLevel
from ..tools import AgentToolConfig, ToolCatalog

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent"]

DEFAULT_SYSTEM_PROMPT = (
    "You are a capable assistant working inside a Jupyter notebook. For a task of three "
    "or more steps, first write a plan with the `todo` tool, keep exactly one item "
    "in_progress, and mark items completed as soon as they are done. Answer in Markdown."
)


@dataclass
class Agent:
    """An agent's definition: who it is, which model, which tools.

    ``model`` is ``"supplier:model"`` (``"anthropic:claude-sonnet-4-6"``, ``"openai:gpt-5"``,
    ``"deepseek:deepseek-reasoner"``, ``"scripted"``), a provider instance, or ``None`` to
    pick the first supplier whose key is in the environment (else the offline model).
    """

    name: str
    model: str | Provider | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tools: AgentToolConfig = field(default_factory=AgentToolConfig)
    default_think_level: ThinkLevel | None = None
    scene: str | None = None
    max_model_calls: int = 25
    """Model calls allowed in one turn before it ends with ``done(max_model_calls)``."""
    tool_timeout: float = 120.0
    """Seconds a tool may run (unless the tool sets its own) before it is stopped."""
    compact_at: float | None = 0.8
    """Share of the context window at which older turns are summarised before the next
    model call; ``None`` turns automatic compaction off (``session.compact()`` still works)."""
    keep_recent_turns: int = 2
    """Turns kept verbatim when compacting."""
    max_tool_result_chars: int = 100_000
    """Longest tool result the model reads (and a card shows); longer ones are cut, and
    the cut is stated in the result. A single result can otherwise fill the window."""
    description: str | None = None
    """What this agent is for, in a line: a parent's ``delegate`` tool lists it beside the
    name, so the parent's model knows whom to ask."""
    subagents: list[Agent] = field(default_factory=list)
    """Agents this one may hand tasks to with the ``delegate`` tool. Each runs as a session
    of its own: its own prompt, model (``None``: the parent's provider) and tools, resolved
    from its own ``tools`` config — never the parent's grants."""
    max_parallel_subagents: int = 4
    """Children of one session that run at the same time; further delegations wait."""
    max_subagent_depth: int = 2
    """Levels of delegation below the top-level agent: its children are level 1, theirs
    level 2; an agent at the limit is not offered ``delegate``. The top-level agent's
    setting holds for its whole tree."""
    provider_settings: dict[str, Any] | None = field(default=None, repr=False)
    """A stored provider's settings (``Provider.settings()``): a resumed agent rebuilds
    the same provider — same server, window and request options — with keys from the
    environment."""

    def __post_init__(self) -> None:
        if self.keep_recent_turns < 1:
            raise ValueError("keep_recent_turns must be at least 1")
        if self.compact_at is not None and not 0 < self.compact_at <= 1:
            raise ValueError("compact_at is a share of the context window: 0 < compact_at ≤ 1")
        if self.max_model_calls < 1:
            raise ValueError("max_model_calls must be at least 1")
        if self.max_tool_result_chars < 1_000:
            raise ValueError("max_tool_result_chars must be at least 1,000")
        if self.max_parallel_subagents < 1:
            raise ValueError("max_parallel_subagents must be at least 1")
        if self.max_subagent_depth < 0:
            raise ValueError("max_subagent_depth must be 0 or more")
        self.subagents = list(self.subagents)
        names = [child.name for child in self.subagents]
        for child in self.subagents:
            if not isinstance(child, Agent):
                raise TypeError(f"subagents must be Agent objects, got {type(child).__name__}")
            if not child.name.strip():
                raise ValueError("a sub-agent needs a name: the parent's model calls it by it")
        duplicates = sorted({name for name in names if names.count(name) > 1})
        if duplicates:
            raise ValueError(f"sub-agent names must be unique; repeated: {', '.join(duplicates)}")

    def subagent(self, name: str) -> Agent | None:
        """The sub-agent called ``name``, if this agent has one."""
        return next((child for child in self.subagents if child.name == name), None)
    def create_provider(self) -> Provider:
        if isinstance(self.model, Provider):
            return self.model
        settings = self.provider_settings or {}
        if self.model:
            return create_provider(self.model, base_url=settings.get("base_url"),
                                   context_window=settings.get("context_window"),
                                   request_options=settings.get("request_options"),
                                   tool_results_as_user=bool(
                                       settings.get("tool_results_as_user", False)))
        return default_provider()

    def to_record(self, provider: Provider) -> dict[str, Any]:
        """The definition as stored with a session (keys never included)."""
        return {
            "name": self.name,
            "model": provider.model_id,
            "provider": provider.settings(),
            "system_prompt": self.system_prompt,
            "tools": self.tools.dump(),
            "default_think_level": self.default_think_level,
            "scene": self.scene,
            "max_model_calls": self.max_model_calls,
            "tool_timeout": self.tool_timeout,
            "compact_at": self.compact_at,
            "keep_recent_turns": self.keep_recent_turns,
            "max_tool_result_chars": self.max_tool_result_chars,
            **self._crew_record(),
        }

    def _crew_record(self) -> dict[str, Any]:
        return {"description": self.description,
                "max_parallel_subagents": self.max_parallel_subagents,
                "max_subagent_depth": self.max_subagent_depth,
                "subagents": [child.definition_record() for child in self.subagents]}

    def definition_record(self) -> dict[str, Any]:
        """The definition as stored inside its parent's (keys never included): a model
        given as a provider instance is stored as its ``supplier:model`` and settings,
        ``None`` stays ``None`` (the parent's provider)."""
        model: str | None
        settings: dict[str, Any] | None = self.provider_settings
        if isinstance(self.model, Provider):
            model, settings = self.model.model_id, self.model.settings()
        else:
            model = self.model
        return {"name": self.name, "model": model, "provider": settings,
                "system_prompt": self.system_prompt, "tools": self.tools.dump(),
                "default_think_level": self.default_think_level, "scene": self.scene,
                "max_model_calls": self.max_model_calls, "tool_timeout": self.tool_timeout,
                "compact_at": self.compact_at, "keep_recent_turns": self.keep_recent_turns,
                "max_tool_result_chars": self.max_tool_result_chars, **self._crew_record()}

    @classmethod
    def from_record(cls, data: dict[str, Any], catalog: ToolCatalog) -> Agent:
        known = {k: data[k] for k in ("system_prompt", "default_think_level", "scene",
                                      "max_model_calls", "tool_timeout", "compact_at",
                                      "keep_recent_turns", "max_tool_result_chars",
                                      "description", "max_parallel_subagents",
                                      "max_subagent_depth")
                 if k in data}
        settings = data.get("provider")
        children = data.get("subagents")
        subagents = [cls.from_record(child, catalog) for child in children
                     if isinstance(child, dict)] if isinstance(children, list) else []
        return cls(name=str(data.get("name", "agent")), model=data.get("model") or None,
                   provider_settings=settings if isinstance(settings, dict) else None,
                   tools=AgentToolConfig.load(data.get("tools") or {}, catalog),
                   subagents=subagents, **known)
