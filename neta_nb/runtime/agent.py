"""Agent: an agent's definition — who it is, which model, which tools, and the limits of
its turns. A session runs one; the store keeps its definition (never a key, nor what of a
server URL may be one) so that ``AgentSession.resume`` can rebuild it.

Sub-agents form a tree (an agent may appear under several parents); a chain that leads
back to an agent on it is refused with a ``ValueError`` naming the chain: by the
constructor, by ``AgentSession`` when it is created and before each turn (the list can
be changed after construction), and by every walk over the tree here, so none can
recurse forever.
"""

from __future__ import annotations

import math
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from pydantic import BaseModel, ConfigDict, Field, ValidationError, field_validator

from ..providers.base import Provider
from ..providers.factory import create_provider, default_provider
from ..providers.prices import ModelPrice
from ..stored_urls import storable_options, storable_url, withheld_names
from ..thinking import ThinkLevel
from ..tools import AgentToolConfig, ToolCatalog
from .stored_endpoint import StoredOrigin, check_stored_endpoint

if TYPE_CHECKING:
    from ..batch.run import BatchRun

__all__ = ["DEFAULT_SYSTEM_PROMPT", "Agent", "DamagedAgentRecordError", "check_budget_value",
           "subagent_cycle"]

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
    budget_usd: float | None = None
    """USD this session may spend (its sub-agents included): a warning at 80 %, then the
    turn stops (``done(stop_reason="budget")``) and further turns are refused until it is
    raised. Needs a price for the model (``create_provider(..., price=...)`` or the
    table's)."""
    turn_budget_usd: float | None = None
    """USD one turn may spend (sub-agents included): a warning at 80 %, then it stops."""
    accept_notebook_edits: bool = False
    """Apply the notebook edits this agent proposes (``edit_cell``, ``insert_cell``)
    without asking; their cards still show each diff, with Undo. Off: the user accepts
    or rejects each one."""
    provider_settings: dict[str, Any] | None = field(default=None, repr=False)
    """A stored provider's settings (``Provider.settings()``): a resumed agent rebuilds
    the same provider — same server, window and request options — with keys from the
    environment."""
    provider_settings_origin: StoredOrigin | None = field(default=None, repr=False,
                                                          compare=False)
    """Where :attr:`provider_settings` were read from (:meth:`from_record` sets it): the
    stored session or run, and who wrote it. A provider rebuilt from them uses their
    ``base_url`` only where the rule of :mod:`~neta_nb.runtime.stored_endpoint` allows —
    else :meth:`create_provider` raises ``StoredEndpointError``. ``None``: settings
    given in code, used as they are."""

    def __post_init__(self) -> None:
        self._check_limits()
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
        self.check_subagents()

    def _check_limits(self) -> None:
        if self.keep_recent_turns < 1:
            raise ValueError("keep_recent_turns must be at least 1")
        if self.compact_at is not None and not 0 < self.compact_at <= 1:
            raise ValueError("compact_at is a share of the context window: 0 < compact_at ≤ 1")
        if self.max_model_calls < 1:
            raise ValueError("max_model_calls must be at least 1")
        if not self.tool_timeout > 0:
            raise ValueError(f"tool_timeout must be a number of seconds > 0, not "
                             f"{self.tool_timeout!r}")
        if self.max_tool_result_chars < 1_000:
            raise ValueError("max_tool_result_chars must be at least 1,000")
        if self.max_parallel_subagents < 1:
            raise ValueError("max_parallel_subagents must be at least 1")
        if self.max_subagent_depth < 0:
            raise ValueError("max_subagent_depth must be 0 or more")
        check_budget_value("budget_usd", self.budget_usd)
        check_budget_value("turn_budget_usd", self.turn_budget_usd)

    def subagent(self, name: str) -> Agent | None:
        """The sub-agent called ``name``, if this agent has one."""
        return next((child for child in self.subagents if child.name == name), None)

    def check_subagents(self) -> None:
        """Raise ``ValueError`` naming the chain (``planner → coder → planner``) if this
        agent's sub-agents, at any depth, lead back to an agent on the way."""
        cycle = subagent_cycle(self)
        if cycle is not None:
            raise _cycle_error(cycle)

    def create_provider(self) -> Provider:
        if isinstance(self.model, Provider):
            return self.model
        settings = self.provider_settings or {}
        if self.model:
            price = settings.get("price")
            provider = create_provider(self.model, base_url=settings.get("base_url"),
                                       context_window=settings.get("context_window"),
                                       request_options=settings.get("request_options"),
                                       tool_results_as_user=bool(
                                           settings.get("tool_results_as_user", False)),
                                       price=ModelPrice(**price) if isinstance(price, dict)
                                       else None)
            # Built, never used yet: a server the reader did not configure gets nothing.
            check_stored_endpoint(provider, self.provider_settings_origin, self.name)
            return provider
        return default_provider()

    def map(self, inputs: Any, prompt: str | None = None, **options: Any) -> BatchRun:
        """Run this agent over many inputs — a pandas DataFrame (a row's columns fill
        ``prompt``'s ``{fields}``), a list of strings or a list of dicts — as one session
        per row; see :class:`~neta_nb.batch.run.BatchRun` for the options
        (``concurrency``, ``rate_limit``, ``max_attempts``, ``output``, ``store``,
        ``run_id``). In a notebook the run starts at once and shows its grid;
        ``await run`` gives the results as a DataFrame in input order."""
        from ..batch.run import BatchRun

        return BatchRun(self, inputs, prompt, **options)

    def to_record(self, provider: Provider) -> dict[str, Any]:
        """The definition as stored with a session (keys never included)."""
        return {
            "name": self.name,
            "model": provider.model_id,
            "provider": self._stored_settings(provider.settings()),
            **self._settings_record(),
            **self._crew_record((self,)),
        }

    def _settings_record(self) -> dict[str, Any]:
        """What an agent stores besides its name, model and crew."""
        return {"system_prompt": self.system_prompt, "tools": self.tools.dump(),
                "default_think_level": self.default_think_level, "scene": self.scene,
                "max_model_calls": self.max_model_calls, "tool_timeout": self.tool_timeout,
                "compact_at": self.compact_at, "keep_recent_turns": self.keep_recent_turns,
                "max_tool_result_chars": self.max_tool_result_chars,
                "budget_usd": self.budget_usd, "turn_budget_usd": self.turn_budget_usd,
                "accept_notebook_edits": self.accept_notebook_edits}

    def _crew_record(self, path: tuple[Agent, ...]) -> dict[str, Any]:
        """``path``: the agents from the top down to this one, to stop at a cycle."""
        children = []
        for child in self.subagents:
            if any(child is above for above in path):
                raise _cycle_error([*path[_index(path, child):], child])
            children.append(child._definition((*path, child)))
        return {"description": self.description,
                "max_parallel_subagents": self.max_parallel_subagents,
                "max_subagent_depth": self.max_subagent_depth, "subagents": children}

    def definition_record(self) -> dict[str, Any]:
        """The definition as stored inside its parent's (keys never included): a model
        given as a provider instance is stored as its ``supplier:model`` and settings,
        ``None`` stays ``None`` (the parent's provider)."""
        return self._definition((self,))

    def _definition(self, path: tuple[Agent, ...]) -> dict[str, Any]:
        model: str | None
        settings: dict[str, Any] | None
        if isinstance(self.model, Provider):
            model, settings = self.model.model_id, self.model.settings()
        else:
            model = self.model
            settings = (None if self.provider_settings is None
                        else self._stored_settings(self.provider_settings))
        return {"name": self.name, "model": model, "provider": settings,
                **self._settings_record(), **self._crew_record(path)}

    def _stored_settings(self, settings: dict[str, Any]) -> dict[str, Any]:
        """``settings`` as stored: ``base_url`` without what may be a secret. What this
        agent's own settings noted as withheld stays noted while the URL is the one they
        stored — a provider rebuilt from them lacks it still."""
        own = self.provider_settings or {}
        url = storable_url(_url(settings), withheld_names(settings.get("base_url_withheld")))
        if storable_url(_url(own)).url == url.url:
            url = storable_url(url.url, (*url.withheld,
                                         *withheld_names(own.get("base_url_withheld"))))
        stored = {**settings, "base_url": url.url}
        stored.pop("base_url_withheld", None)
        if url.withheld:
            stored["base_url_withheld"] = list(url.withheld)
        options = settings.get("request_options")
        if isinstance(options, Mapping):
            kept, dropped = storable_options(options)
            noted = (*withheld_names(settings.get("request_options_withheld")), *dropped)
            stored["request_options"] = kept
            stored.pop("request_options_withheld", None)
            if noted:
                stored["request_options_withheld"] = list(dict.fromkeys(noted))
        return stored

    def provider_origins(self) -> dict[tuple[str, ...], StoredOrigin]:
        """Where the stored provider settings of each agent of this tree were read from
        (:attr:`provider_settings_origin`), by the path of names below this agent (``()``
        is this one): a definition sent as a record elsewhere (a batch worker) keeps
        them with :meth:`set_provider_origins`, so its providers are checked there too."""
        found: dict[tuple[str, ...], StoredOrigin] = {}
        pending: list[tuple[tuple[str, ...], Agent]] = [((), self)]
        while pending:
            path, agent = pending.pop()
            if agent.provider_settings_origin is not None:
                found[path] = agent.provider_settings_origin
            if len(path) <= _MAX_PATH:  # a tree built in memory may loop
                pending.extend(((*path, child.name), child) for child in agent.subagents)
        return found

    def set_provider_origins(self, origins: Mapping[tuple[str, ...], StoredOrigin]) -> None:
        """Give back the origins :meth:`provider_origins` listed to the agents at their
        paths in this tree (an agent rebuilt from the same definition)."""
        for path, origin in origins.items():
            agent: Agent | None = self
            for name in path:
                agent = agent.subagent(name) if agent is not None else None
            if agent is not None:
                agent.provider_settings_origin = origin

    @classmethod
    def from_record(cls, data: dict[str, Any], catalog: ToolCatalog, *,
                    origin: StoredOrigin | None = None) -> Agent:
        """The agent a stored definition (:meth:`to_record`) describes. ``origin``: where
        it was read from (a session, a batch run, and who wrote it), for its providers'
        endpoint check (:attr:`provider_settings_origin`) and for the message of a damaged
        definition; ``None`` only for a definition this process itself made. A damaged one
        (a field of the wrong type or out of range, at any depth of its sub-agents) raises
        :class:`DamagedAgentRecordError` naming where it was stored (``session 'abc'``) and
        the field."""
        where = origin.what if origin is not None else "a stored agent definition"
        return cls._from_record(data, catalog, (data,), origin, where, "")

    @classmethod
    def _from_record(cls, data: dict[str, Any], catalog: ToolCatalog,
                     path: tuple[dict[str, Any], ...], origin: StoredOrigin | None,
                     where: str, at: str) -> Agent:
        try:
            stored = _StoredAgent.model_validate(data)
        except ValidationError as error:
            problem = error.errors()[0]
            field_name = at + "".join(f"[{part}]" if isinstance(part, int) else f".{part}"
                                      for part in problem["loc"]).lstrip(".")
            raise DamagedAgentRecordError(where, field_name, f"{field_name} is "
                                          f"{problem['input']!r} ({problem['msg'].lower()})"
                                          ) from None
        known = {name: getattr(stored, name) for name in _SETTINGS & stored.model_fields_set}
        subagents: list[Agent] = []
        # The stored dicts themselves (validation copies them): a loop is found by identity.
        for index, child in enumerate(data["subagents"] if stored.subagents else ()):
            # Stored JSON is a tree; a definition built in memory may loop.
            if any(child is above for above in path):
                chain = [*path[_index(path, child):], child]
                raise ValueError("sub-agent definitions form a cycle: " + " → ".join(
                    str(item.get("name", "agent")) for item in chain))
            subagents.append(cls._from_record(child, catalog, (*path, child), origin, where,
                                              f"{at}subagents[{index}]."))
        try:
            return cls(name=stored.name, model=stored.model or None,
                       # The stored dict itself (checked above), as it was written.
                       provider_settings=data["provider"] if stored.provider else None,
                       provider_settings_origin=origin,
                       tools=AgentToolConfig.load(stored.tools or {}, catalog),
                       subagents=subagents, **known)
        except ValueError as error:  # a value out of range: the check names the field
            inside = f" (in {at.rstrip('.')})" if at else ""
            named = str(error).split(" ", 1)[0]  # the checks start with the field's name
            field_name = at + named if named in _StoredAgent.model_fields else at.rstrip(".")
            raise DamagedAgentRecordError(where, field_name, f"{error}{inside}") from None


_MAX_PATH = 64
"""Deepest path :meth:`Agent.provider_origins` walks: a cycle built in memory stops there."""


class DamagedAgentRecordError(ValueError):
    """A stored agent definition that cannot be rebuilt: says where it was stored (the
    session) and which field is wrong. Nothing stored is changed; an agent given to
    ``AgentSession.resume(..., agent=...)`` resumes the session all the same."""

    def __init__(self, where: str, field_name: str, problem: str) -> None:
        self.where = where
        self.field_name = field_name
        """The field: ``max_model_calls``, ``subagents[0].tool_timeout``."""
        super().__init__(f"{where}: its stored agent definition is damaged: {problem}")


class _StoredProvider(BaseModel):
    """The provider settings a stored definition gives (:meth:`Provider.settings`), each
    of the type :meth:`Agent.create_provider` needs; other keys are kept as they are."""

    model_config = ConfigDict(strict=True, extra="allow")

    supplier: str | None = None
    model: str | None = None
    base_url: str | None = None
    base_url_withheld: list[str] | None = None
    context_window: int | None = Field(default=None, gt=0)
    request_options: dict[str, Any] | None = None
    request_options_withheld: list[str] | None = None
    tool_results_as_user: bool = False
    price: dict[str, Any] | None = None

    @field_validator("price")
    @classmethod
    def _a_price(cls, price: dict[str, Any] | None) -> dict[str, Any] | None:
        if price is not None:
            try:
                ModelPrice(**price)
            except TypeError:  # a field missing or unknown
                raise ValueError("not a price (input and output in USD per million "
                                 "tokens, optionally cache_read, cache_write, "
                                 "thinking)") from None
        return price


class _StoredAgent(BaseModel):
    """The fields of a stored definition, each of the type :class:`Agent` needs (a
    field left out takes the agent's default; one of another type is damage)."""

    model_config = ConfigDict(strict=True, extra="ignore")

    name: str = "agent"
    model: str | None = None
    provider: _StoredProvider | None = None
    tools: dict[str, Any] | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    default_think_level: ThinkLevel | None = None
    scene: str | None = None
    max_model_calls: int = 25
    tool_timeout: float = 120.0
    compact_at: float | None = 0.8
    keep_recent_turns: int = 2
    max_tool_result_chars: int = 100_000
    description: str | None = None
    max_parallel_subagents: int = 4
    max_subagent_depth: int = 2
    budget_usd: float | None = None
    turn_budget_usd: float | None = None
    accept_notebook_edits: bool = False
    subagents: list[dict[str, Any]] | None = None


_SETTINGS = frozenset({"system_prompt", "default_think_level", "scene", "max_model_calls",
                       "tool_timeout", "compact_at", "keep_recent_turns",
                       "max_tool_result_chars", "description", "max_parallel_subagents",
                       "max_subagent_depth", "budget_usd", "turn_budget_usd",
                       "accept_notebook_edits"})
"""The stored fields that are :class:`Agent`'s own arguments, as they are."""


def check_budget_value(name: str, budget: object) -> None:
    """A budget is a positive, finite number of USD (``None``: none)."""
    if budget is None:
        return
    if (isinstance(budget, bool) or not isinstance(budget, (int, float))
            or not math.isfinite(budget) or budget <= 0):
        raise ValueError(f"{name} is USD and must be a number more than 0, got {budget!r}")


def subagent_cycle(agent: Agent) -> list[Agent] | None:
    """A chain of sub-agents below ``agent`` (itself included) that leads back to an agent
    on it — ``[planner, coder, planner]`` — or ``None``. Walked without recursion; an agent
    reached along two paths (a helper shared by two parents) is no cycle."""
    finished: set[int] = set()
    path: list[Agent] = [agent]
    pending: list[Iterator[Agent]] = [iter(list(agent.subagents))]
    while pending:
        child = next(pending[-1], None)
        if child is None:
            pending.pop()
            finished.add(id(path.pop()))
        elif any(child is above for above in path):
            return [*path[_index(path, child):], child]
        elif id(child) not in finished:
            path.append(child)
            pending.append(iter(list(child.subagents)))
    return None


def _url(settings: dict[str, Any]) -> str | None:
    url = settings.get("base_url")
    return url if isinstance(url, str) else None


def _index(path: Sequence[object], item: object) -> int:
    """Where ``item`` itself (not an equal object) is on ``path``."""
    return next(index for index, above in enumerate(path) if above is item)


def _cycle_error(chain: Sequence[Agent]) -> ValueError:
    return ValueError(
        f"sub-agents form a cycle: {' → '.join(agent.name for agent in chain)}. An agent "
        "cannot be its own sub-agent, directly or through others; give the inner one an "
        "Agent(...) of its own (max_subagent_depth limits how deep delegation goes)")
