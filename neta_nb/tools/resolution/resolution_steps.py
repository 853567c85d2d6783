"""How a resolution came about, and how two resolutions differ: explanations as data.

:attr:`ToolResolution.steps <neta_nb.tools.resolution.resolver.ToolResolution.steps>` replays the
seed's fixed order (001 §6) one rule at a time, so "why does this agent have these tools"
has an answer a user can follow; :meth:`ToolResolution.diff
<neta_nb.tools.resolution.resolver.ToolResolution.diff>` answers "what if" (another model, another
scene, one tool toggled, a legacy config migrated) by comparing two resolutions; its
answer is a :class:`ResolutionDiff`.

Neither is on the runtime's path: ``resolve_tools`` keeps only its inputs, and a trace is
computed the first time someone asks for it. The trace records the rules one step at a
time; what each rule decides comes from the same functions the resolver uses
(:mod:`neta_nb.tools.rules`: the grants of rules 3–4, the filter of rule 5, the reasons).
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from enum import StrEnum
from types import MappingProxyType
from typing import overload

from ...labels import Notice
from ..catalog_index import CatalogIndex
from ..displayable import Displayable
from ..rules import REASON_AGENT_DISABLED, ToolState, filter_by_model, grants

__all__ = ["ChangeKind", "ResolutionDiff", "ResolutionStep", "ResolutionSteps", "StepRule",
           "ToolChange"]


class StepRule(StrEnum):
    """The five rules of seed 001 §6, in their fixed order."""

    GLOBALLY_ENABLED = "globally_enabled"
    """1. Start from the globally enabled tools: the only ones later steps may add."""
    CORE = "core"
    """2. Add the core tools, if the agent inherits them."""
    ENABLED = "enabled"
    """3. Add the agent's ``enabled``."""
    DISABLED = "disabled"
    """4. Remove the agent's ``disabled``."""
    FILTER = "filter"
    """5. Remove what the model's capabilities or the scene rule out."""


@dataclass(frozen=True)
class ResolutionStep:
    """One rule applied: what it added, what it removed, and the tools after it."""

    rule: StepRule
    added: tuple[str, ...] = ()
    removed: tuple[str, ...] = ()
    names: tuple[str, ...] = ()
    """The tools granted after this step, in the resolver's final order."""
    kept_out: tuple[str, ...] = ()
    """Names the rule keeps out without their ever being granted: the globally disabled
    tools (step 1) and enabled names the catalog does not have or disables globally
    (step 3)."""
    reasons: Mapping[str, Notice] = field(default_factory=lambda: MappingProxyType({}))
    """Why, for every name in ``removed`` and ``kept_out``."""
    applies: bool = True
    """False for step 2 when the agent does not inherit core tools."""


@dataclass(frozen=True)
class ResolutionSteps(Sequence[ResolutionStep], Displayable):
    """The steps of one resolution, in order; displayed as a compact trace."""

    steps: tuple[ResolutionStep, ...]

    @overload
    def __getitem__(self, index: int) -> ResolutionStep: ...

    @overload
    def __getitem__(self, index: slice) -> Sequence[ResolutionStep]: ...

    def __getitem__(self, index: int | slice) -> ResolutionStep | Sequence[ResolutionStep]:
        return self.steps[index]

    def __len__(self) -> int:
        return len(self.steps)

    def __iter__(self) -> Iterator[ResolutionStep]:
        return iter(self.steps)

    @property
    def names(self) -> list[str]:
        """The final tools (the last step's set)."""
        return list(self.steps[-1].names) if self.steps else []


    def __repr__(self) -> str:
        return "ResolutionSteps(" + " → ".join(
            f"{step.rule.value}{_counts(step)}" for step in self.steps) + ")"


def _counts(step: ResolutionStep) -> str:
    parts = ([f"+{len(step.added)}"] if step.added else []) + (
        [f"-{len(step.removed)}"] if step.removed else [])
    return f" {' '.join(parts)}" if parts else ""


def trace(index: CatalogIndex, inherit: bool, enabled: set[str], disabled: set[str],
          capabilities: frozenset[str] | None, scene: str | None,
          model: str | None, delegates: bool | None = None,
          notebook_page: bool | None = None) -> ResolutionSteps:
    """Apply the five rules one after the other, recording each step."""
    position = index.position
    ordered = list(index.tools)
    pool = index.switchable
    core_added: set[str] = set()

    def in_final_order(names: set[str]) -> tuple[str, ...]:
        # The resolver's order: inherited core tools first, then the rest, each group in
        # display order.
        return tuple(sorted(names, key=lambda name: (name not in core_added, position[name])))

    steps: list[ResolutionStep] = []
    # 1. The pool: globally enabled tools. Nothing is granted yet.
    kept_out = tuple(name for name in ordered if name not in pool)
    steps.append(ResolutionStep(
        StepRule.GLOBALLY_ENABLED, kept_out=kept_out,
        # The index's reason: a suspended MCP tool says why, not just "disabled".
        reasons=MappingProxyType({name: index.base_reasons[True][name]
                                  for name in kept_out})))
    current: set[str] = set()

    # 2. Core tools, if inherited.
    if inherit:
        core_added = set(index.core_names)
        current |= core_added
    steps.append(ResolutionStep(StepRule.CORE, added=in_final_order(core_added),
                                names=in_final_order(current), applies=inherit))
    # Rules 3-4 as the resolver applies them (rules.grants); the steps only record them.
    granted = grants(pool, core_added, enabled, disabled)

    # 3. The agent's enabled names that the pool holds.
    added = set(granted.added)
    current |= added
    refused = [name for name in enabled if name not in pool]
    refused_reasons = {name: index.base_reasons[True][name] if name in index.tools
                       else Notice("unknown_tool", name=name, field="enabled")
                       for name in refused}
    steps.append(ResolutionStep(
        StepRule.ENABLED, added=in_final_order(added), names=in_final_order(current),
        kept_out=tuple(sorted(refused, key=lambda name: (name not in position,
                                                         position.get(name, 0), name))),
        reasons=MappingProxyType(refused_reasons)))

    # 4. The agent's disabled names: a disable wins over an enable.
    removed = set(granted.removed)
    current -= removed
    steps.append(ResolutionStep(
        StepRule.DISABLED, removed=in_final_order(removed), names=in_final_order(current),
        reasons=MappingProxyType(dict.fromkeys(removed, REASON_AGENT_DISABLED))))

    # 5. Capability and scene filter: the resolver's own rule, so the reasons are its words.
    reasons: dict[str, Notice] = {}
    before = in_final_order(current)
    filtering = (capabilities is not None or scene is not None or delegates is False
                 or notebook_page is False)
    if index.restricted and filtering:
        kept = filter_by_model([index.tools[name] for name in before], index.restricted,
                               reasons, capabilities, scene, model, delegates, notebook_page)
        after = tuple(item.name for item in kept)
    else:
        after = before
    steps.append(ResolutionStep(
        StepRule.FILTER, removed=tuple(name for name in before if name in reasons),
        names=after, reasons=MappingProxyType(reasons),
        applies=filtering))
    return ResolutionSteps(tuple(steps))


# --- what-if diffs -------------------------------------------------------------------------

class ChangeKind(StrEnum):
    ADDED = "added"
    """Available in the other resolution, not in this one."""
    REMOVED = "removed"
    """Available in this resolution, not in the other."""
    STATE_CHANGED = "state_changed"
    """Available in both or in neither, but in another state."""


@dataclass(frozen=True)
class ToolChange:
    """One tool that differs between two resolutions."""

    name: str
    kind: ChangeKind
    before: ToolState | None
    """The state in the first resolution (``None``: not in its catalog)."""
    after: ToolState | None
    before_reason: Notice | None = None
    """Why it was not available before (``None`` when it was)."""
    after_reason: Notice | None = None


@dataclass(frozen=True)
class ResolutionDiff(Displayable):
    """What changes from one resolution to another, per tool, in display order."""

    changes: tuple[ToolChange, ...]
    catalog_tools: Mapping[str, object] = field(default_factory=dict, repr=False,
                                                compare=False)
    """The tools both catalogs know, for labels and categories in the display."""

    @property
    def added(self) -> list[str]:
        return [change.name for change in self.changes if change.kind is ChangeKind.ADDED]

    @property
    def removed(self) -> list[str]:
        return [change.name for change in self.changes if change.kind is ChangeKind.REMOVED]

    @property
    def state_changed(self) -> list[str]:
        """Every tool whose state differs (added and removed ones included when their
        state changed too)."""
        return [change.name for change in self.changes if change.before != change.after]

    def __bool__(self) -> bool:
        return bool(self.changes)

    def __len__(self) -> int:
        return len(self.changes)

    def __iter__(self) -> Iterator[ToolChange]:
        return iter(self.changes)


    def __repr__(self) -> str:
        changed = sum(1 for change in self.changes if change.kind is ChangeKind.STATE_CHANGED)
        return (f"ResolutionDiff(+{len(self.added)} {self.added}, -{len(self.removed)} "
                f"{self.removed}, {changed} changed state)")
