"""``resolve_tools``: the one place that decides which tools an agent gets (seed 001 §6).

The runtime, the prompt preview and the config panel all call it, so what the panel shows,
what the preview lists and what the model receives cannot drift apart. Order of the rules:

1. start from the globally enabled tools;
2. add the core tools if the agent inherits them;
3. add the agent's ``enabled``;
4. remove the agent's ``disabled``;
5. filter by the model's capabilities and the scene.

Every catalog tool gets a :class:`ToolState` (what the config panel shows) and every tool
left out gets one reason. Names the config holds that the catalog does not know are
reported in ``unknown``, never granted and never a crash.

Reasons and warnings are :class:`~neta_nb.labels.Notice` values: a code and parameters
(``needs_capability{capabilities, model}``, ``duplicate{name, field}``, …) that are also
their English text, so they read as before while the config panel renders them in the
user's language from the one label table instead of parsing English.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import cached_property, partial
from typing import NamedTuple

from ...labels import Notice, t
from ...messages import ToolDefinition
from ..base import Tool
from ..catalog import ToolCatalog
from ..catalog_index import CatalogIndex, index_of
from ..config import AgentToolConfig
from ..displayable import Displayable
from ..rules import (
    REASON_AGENT_DISABLED,
    ToolState,
    filter_by_model,
    grants,
)
from .resolution_steps import ChangeKind, ResolutionDiff, ResolutionSteps, ToolChange, trace

__all__ = ["ToolResolution", "ToolState", "resolve_tools"]


_ON_STATES = (ToolState.DEFAULT_ENABLED, ToolState.AGENT_ENABLED)


class _Inputs(NamedTuple):
    """What a resolution was computed from, kept so that the explanations (steps,
    displays) can be derived later, on demand, instead of on the runtime's path."""

    catalog_index: CatalogIndex
    inherit: bool
    enabled: set[str]
    disabled: set[str]
    capabilities: frozenset[str] | None
    scene: str | None
    model: str | None
    delegates: bool | None
    notebook_page: bool | None


def continuing(text: str) -> str:
    """A reason that continues a sentence ("… is not available: disabled globally"),
    so it starts in lower case."""
    return text[:1].lower() + text[1:]


@dataclass(frozen=True)
class ToolResolution(Displayable):
    """The outcome of :func:`resolve_tools`."""

    tools: list[Tool]
    """The final tools, ordered: default (core) tools first, then explicitly enabled
    ones, each group by category (seed order) and name."""
    states: dict[str, ToolState]
    """The state of every catalog tool, in display order."""
    reasons: dict[str, Notice]
    """For every catalog tool not in ``tools``, why: a :class:`Notice` (code and
    parameters) whose string value is the English sentence."""
    _diagnose: Callable[[], tuple[list[str], list[Notice]]] | None = field(
        default=None, repr=False, compare=False)
    """Computes ``unknown`` and ``warnings`` on first access: the runtime, which only
    needs the tools, never pays for diagnostics meant for the config panel."""
    _inputs: _Inputs | None = field(default=None, repr=False, compare=False)
    """The catalog index and config snapshot the result came from: ``steps``, ``explain``,
    ``diff`` and the displays derive from it on first use."""

    @cached_property
    def _diagnostics(self) -> tuple[list[str], list[Notice]]:
        return self._diagnose() if self._diagnose is not None else ([], [])

    @property
    def unknown(self) -> list[str]:
        """Names in the config that the catalog does not have, in order of first
        mention."""
        return self._diagnostics[0]

    @property
    def warnings(self) -> list[Notice]:
        """Problems found in the config, as notices: migration and load notes first
        (``unrecognised_key``, ``legacy_toolset_unmatched``), then ``unknown_tool``,
        ``enabled_but_globally_disabled``, ``duplicate`` and ``enabled_and_disabled``."""
        return self._diagnostics[1]

    @cached_property
    def _by_name(self) -> dict[str, Tool]:
        return {item.name: item for item in self.tools}

    @property
    def names(self) -> list[str]:
        return [item.name for item in self.tools]

    @property
    def filtered_out(self) -> list[str]:
        """Tools the config switches on that the model or scene rules out."""
        return [name for name, state in self.states.items()
                if state in _ON_STATES and name in self.reasons]

    def get(self, name: str) -> Tool | None:
        """The tool, if the agent may call it."""
        return self._by_name.get(name)

    def __contains__(self, name: object) -> bool:
        return name in self._by_name

    def definitions(self) -> list[ToolDefinition]:
        """The tool definitions a provider receives, in order."""
        return [item.definition() for item in self.tools]

    def refusal(self, name: str, lang: str = "en") -> str:
        """The error text for a model that calls a tool outside this set (the one text
        for it: the runtime sends it as the tool result)."""
        tools = ", ".join(self.names) or t("refusal_no_tools", lang)
        reason = self.reasons.get(name)
        if reason is None:
            return t("refusal_no_such_tool", lang, name=name, tools=tools)
        return t("refusal_not_available", lang, name=name, tools=tools,
                 reason=continuing(reason.text(lang)))

    # --- explanations (computed on demand; the runtime never asks) -------------------------
    @cached_property
    def steps(self) -> ResolutionSteps:
        """The seed's fixed order (§6) as data: globally enabled → + core (if inherited) →
        + enabled → − disabled → capability/scene filter, each step with the names it
        added and removed and the set after it. Computed on first access."""
        if self._inputs is None:
            return ResolutionSteps(())
        inputs = self._inputs
        return trace(inputs.catalog_index, inputs.inherit, inputs.enabled, inputs.disabled,
                     inputs.capabilities, inputs.scene, inputs.model, inputs.delegates,
                     inputs.notebook_page)

    def explain(self, name: str, lang: str = "en") -> str:
        """One sentence: why ``name`` is (or is not) available to this agent, in the words
        of the config panel and of :meth:`refusal`."""
        reason = self.reasons.get(name)
        if reason is not None:
            return t("explain_not_available", lang, name=name,
                     reason=continuing(reason.text(lang)))
        state = self.states.get(name)
        if state is ToolState.DEFAULT_ENABLED:
            return t("explain_default_enabled", lang, name=name)
        if state is ToolState.AGENT_ENABLED:
            return t("explain_agent_enabled", lang, name=name)
        if name in self.unknown:
            return t("explain_unknown_in_config", lang, name=name)
        return t("explain_no_such_tool", lang, name=name)

    def diff(self, other: ToolResolution) -> ResolutionDiff:
        """What changes from this resolution to ``other``: tools added, removed, and every
        tool whose state changed (old → new, with reasons)."""
        return _diff(self, other)

    @property
    def catalog_tools(self) -> dict[str, Tool]:
        """Every catalog tool the states name, in display order (for explanations)."""
        if self._inputs is not None:
            return self._inputs.catalog_index.tools
        return {item.name: item for item in self.tools}


    def __repr__(self) -> str:
        return (f"ToolResolution({len(self.tools)} of {len(self.states)} tools: "
                f"{', '.join(self.names) or 'none'})")


def resolve_tools(catalog: ToolCatalog, config: AgentToolConfig, *,
                  model_capabilities: Iterable[str] | None = None,
                  scene: str | None = None, model: str | None = None,
                  delegates: bool | None = None,
                  notebook_page: bool | None = None) -> ToolResolution:
    """Decide the agent's tools.

    ``model_capabilities=None`` means "do not filter by capability"; otherwise a tool
    needing a capability outside the set is left out. ``scene=None`` means "no scene
    filter". ``model`` only names the model in reasons. ``delegates`` says whether the
    agent may hand work to sub-agents (it has some, within the depth limit); ``False``
    leaves out the tools that need sub-agents (``delegate``), ``None`` does not filter.
    ``notebook_page`` says whether a notebook page answers the session (a chat view on a
    JupyterLab or Notebook 7 page); ``False`` leaves out the notebook edit and run tools.
    """
    index = index_of(catalog)
    inherit = config.inherit_core_tools
    # Rules 1-2 (globally enabled, core if inherited) depend on the catalog alone and are
    # precomputed; only the config's overrides (rules 3-4) are applied per call, so the
    # cost follows the config's size, not the catalog's.
    states = index.base_states[inherit].copy()
    reasons = index.base_reasons[inherit].copy()
    enabled = set(config.enabled)
    disabled = set(config.disabled)

    granted = grants(index.switchable, index.core_names if inherit else frozenset(),
                     enabled, disabled)
    # A disabled tool the pool holds reads "switched off" whether or not it was on (a
    # global disable cannot be overridden, so those keep their own state).
    switched_off = disabled & index.switchable
    if switched_off:
        states.update(dict.fromkeys(switched_off, ToolState.AGENT_DISABLED))
        reasons.update(dict.fromkeys(switched_off, REASON_AGENT_DISABLED))
    switched_on = granted.added - granted.removed
    if switched_on:
        states.update(dict.fromkeys(switched_on, ToolState.AGENT_ENABLED))
        for name in switched_on:
            del reasons[name]
    explicit_names = sorted(switched_on, key=index.position.__getitem__)
    explicit = [index.tools[name] for name in explicit_names]
    defaults = index.default_group[inherit]
    if granted.removed:
        defaults = [item for item in defaults if item.name not in granted.removed]

    final = defaults + explicit
    capabilities = None if model_capabilities is None else frozenset(model_capabilities)
    if index.restricted and (capabilities is not None or scene is not None
                             or delegates is False or notebook_page is False):
        final = filter_by_model(final, index.restricted, reasons, capabilities, scene,
                                model or None, delegates, notebook_page)

    # A snapshot of the config, so later edits cannot change this resolution's report.
    diagnose = partial(_check_config, index, list(config.enabled), list(config.disabled),
                       config.load_warnings, enabled, disabled)
    inputs = _Inputs(index, inherit, enabled, disabled, capabilities, scene, model or None,
                     delegates, notebook_page)
    return ToolResolution(tools=final, states=states, reasons=reasons, _diagnose=diagnose,
                          _inputs=inputs)


def _check_config(index: CatalogIndex, enabled_names: list[str], disabled_names: list[str],
                  load_warnings: list[Notice], enabled: set[str], disabled: set[str]
                  ) -> tuple[list[str], list[Notice]]:
    """Unknown names and warnings about the config itself. Set operations first, so a
    clean config costs almost nothing however large it is."""
    warnings = list(load_warnings)
    known = index.tools.keys()
    unknown_names = (enabled | disabled) - known
    unknown = ([name for name in dict.fromkeys([*enabled_names, *disabled_names])
                if name in unknown_names] if unknown_names else [])
    for field_name, names, unique in (("enabled", enabled_names, enabled),
                                      ("disabled", disabled_names, disabled)):
        if not unknown_names.isdisjoint(unique):
            warnings += [Notice("unknown_tool", name=name, field=field_name)
                         for name in dict.fromkeys(names) if name in unknown_names]
        if field_name == "enabled" and not index.globally_disabled.isdisjoint(unique):
            warnings += [Notice("enabled_but_globally_disabled", name=name)
                         for name in sorted(index.globally_disabled & unique,
                                            key=index.position.__getitem__)]
        if len(names) != len(unique):
            warnings += [Notice("duplicate", name=name, field=field_name)
                         for name, count in Counter(names).items() if count > 1]
    if not enabled.isdisjoint(disabled):
        warnings += [Notice("enabled_and_disabled", name=name)
                     for name in sorted(enabled & disabled)]
    return unknown, warnings


def _diff(before: ToolResolution, after: ToolResolution) -> ResolutionDiff:
    """Per tool: added, removed, or state changed, from ``before`` to ``after``."""
    was = set(before.names)
    now = set(after.names)
    changes: list[ToolChange] = []
    for name in dict.fromkeys([*before.states, *after.states, *before.names, *after.names]):
        old, new = before.states.get(name), after.states.get(name)
        if name in now and name not in was:
            kind = ChangeKind.ADDED
        elif name in was and name not in now:
            kind = ChangeKind.REMOVED
        elif old != new:
            kind = ChangeKind.STATE_CHANGED
        else:
            continue
        changes.append(ToolChange(name, kind, old, new, before.reasons.get(name),
                                  after.reasons.get(name)))
    tools = {**after.catalog_tools, **before.catalog_tools}
    return ResolutionDiff(tuple(changes), tools)
