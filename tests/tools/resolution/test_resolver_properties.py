"""Property-based tests of the resolver's and the config's invariants (hypothesis)."""

from __future__ import annotations

import random
from dataclasses import dataclass

from hypothesis import given, settings
from hypothesis import strategies as st

from neta_nb.tools import (
    SEED_CATEGORIES,
    AgentToolConfig,
    ToolCatalog,
    ToolResolution,
    ToolState,
    resolve_tools,
)

from ...support.tools import make_tool

NAMES = [f"t{i}" for i in range(12)]
UNKNOWN = ["ghost", "phantom"]
CAPABILITIES = ["vision", "audio", "thinking"]
SCENES = ["chat", "crew"]


@dataclass
class World:
    catalog: ToolCatalog
    config: AgentToolConfig
    capabilities: frozenset[str] | None
    scene: str | None


@st.composite
def catalogs(draw: st.DrawFn) -> ToolCatalog:
    names = draw(st.lists(st.sampled_from(NAMES), unique=True, max_size=len(NAMES)))
    catalog = ToolCatalog()
    for name in names:
        catalog.register(make_tool(
            name,
            category=draw(st.sampled_from([*SEED_CATEGORIES, "mine", "other"])),
            core=draw(st.booleans()),
            capabilities=frozenset(draw(st.sets(st.sampled_from(CAPABILITIES), max_size=2))),
            scenes=draw(st.none() | st.frozensets(st.sampled_from(SCENES), max_size=2)),
        ))
        if draw(st.booleans()) and draw(st.booleans()):
            catalog.disable(name)
    return catalog


config_names = st.lists(st.sampled_from(NAMES + UNKNOWN), max_size=10)


@st.composite
def configs(draw: st.DrawFn) -> AgentToolConfig:
    return AgentToolConfig(inherit_core_tools=draw(st.booleans()), enabled=draw(config_names),
                           disabled=draw(config_names))


@st.composite
def worlds(draw: st.DrawFn) -> World:
    return World(catalog=draw(catalogs()), config=draw(configs()),
                 capabilities=draw(st.none() | st.frozensets(st.sampled_from(CAPABILITIES))),
                 scene=draw(st.none() | st.sampled_from(SCENES)))


def _resolve(world: World, config: AgentToolConfig | None = None) -> ToolResolution:
    return resolve_tools(world.catalog, config or world.config,
                         model_capabilities=world.capabilities, scene=world.scene)


@given(worlds())
def test_globally_or_agent_disabled_tools_are_never_granted(world: World) -> None:
    names = set(_resolve(world).names)
    assert not names & world.catalog.globally_disabled
    assert not names & set(world.config.disabled)


@given(worlds(), st.randoms(use_true_random=False))
def test_final_set_does_not_depend_on_list_order_or_duplicates(world: World,
                                                               rng: random.Random) -> None:
    enabled = list(world.config.enabled) * 2
    disabled = list(world.config.disabled)
    rng.shuffle(enabled)
    rng.shuffle(disabled)
    shuffled = AgentToolConfig(inherit_core_tools=world.config.inherit_core_tools,
                               enabled=enabled, disabled=disabled)
    original, permuted = _resolve(world), _resolve(world, shuffled)
    assert permuted.names == original.names
    assert permuted.states == original.states
    assert permuted.reasons == original.reasons
    assert set(permuted.unknown) == set(original.unknown)


@given(worlds())
def test_every_granted_tool_is_allowed_by_every_rule(world: World) -> None:
    result = _resolve(world)
    config = world.config
    for item in result.tools:
        assert world.catalog.is_globally_enabled(item.name)
        assert item.name not in config.disabled
        assert item.name in config.enabled or (item.core and config.inherit_core_tools)
        assert world.capabilities is None or item.capabilities <= world.capabilities
        assert world.scene is None or item.scenes is None or world.scene in item.scenes


@given(worlds())
def test_states_reasons_and_unknown_are_complete(world: World) -> None:
    result = _resolve(world)
    assert list(result.states) == [t.name for t in world.catalog.ordered()]
    assert set(result.reasons) == set(world.catalog.names) - set(result.names)
    assert all(reason for reason in result.reasons.values())
    mentioned = dict.fromkeys(world.config.enabled + world.config.disabled)
    assert result.unknown == [n for n in mentioned if n not in world.catalog]
    assert len(result.names) == len(set(result.names))


@given(worlds())
def test_default_tools_come_before_explicit_ones_each_in_catalog_order(world: World) -> None:
    result = _resolve(world)
    groups = [result.states[name] for name in result.names]
    defaults = groups.count(ToolState.DEFAULT_ENABLED)
    assert groups == ([ToolState.DEFAULT_ENABLED] * defaults
                      + [ToolState.AGENT_ENABLED] * (len(groups) - defaults))
    order = {t.name: i for i, t in enumerate(world.catalog.ordered())}
    for part in (result.names[:defaults], result.names[defaults:]):
        assert part == sorted(part, key=order.__getitem__)


@given(worlds(), st.data())
def test_toggle_round_trip_restores_a_normalised_config(world: World, data: st.DataObject
                                                        ) -> None:
    allowed = [t.name for t in world.catalog if world.catalog.is_globally_enabled(t.name)]
    if not allowed:
        return
    name = data.draw(st.sampled_from(allowed))
    original = AgentToolConfig.load(world.config.dump())
    config = original.model_copy(deep=True)
    on = name in resolve_tools(world.catalog, original).names
    config.set_tool(name, not on, world.catalog)
    assert (name in resolve_tools(world.catalog, config).names) is not on
    config.set_tool(name, on, world.catalog)
    before, after = (resolve_tools(world.catalog, c) for c in (original, config))
    assert after.names == before.names
    assert after.states == before.states or not _canonical(original, world.catalog)
    if _canonical(original, world.catalog):
        assert config == original


def _canonical(config: AgentToolConfig, catalog: ToolCatalog) -> bool:
    """A config with no redundant entries, as the toggles produce: nothing in ``enabled``
    that is on by default anyway, ``disabled`` only for tools on by default, no name in
    both lists."""
    def on_by_default(name: str) -> bool:
        return name in catalog and catalog[name].core and config.inherit_core_tools

    return (not any(on_by_default(n) for n in config.enabled)
            and all(on_by_default(n) for n in config.disabled if n in catalog)
            and not set(config.enabled) & set(config.disabled))


@given(catalogs(), st.lists(st.sampled_from([*SEED_CATEGORIES, "mine", "browser"])),
       config_names)
@settings(max_examples=60)
def test_legacy_migration_is_idempotent(catalog: ToolCatalog, toolsets: list[str],
                                        disabled: list[str]) -> None:
    legacy = {"toolsets": toolsets, "tools": {"disabled": disabled}}
    once = AgentToolConfig.load(legacy, catalog)
    assert AgentToolConfig.load(legacy, catalog) == once
    again = AgentToolConfig.load(once.dump(), catalog)
    assert again == once
    assert AgentToolConfig.load(again.dump(), catalog).dump() == once.dump()
    assert once.inherit_core_tools
    assert not set(once.enabled) & set(once.disabled)
    assert all(not catalog[n].core for n in once.enabled)
