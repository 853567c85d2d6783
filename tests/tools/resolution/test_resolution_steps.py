"""``ToolResolution.steps``, ``.explain`` and ``.diff``: the explanations agree with the
resolver itself."""

from __future__ import annotations

from hypothesis import given, settings

from neta_nb.tools import (
    AgentToolConfig,
    ChangeKind,
    StepRule,
    ToolCatalog,
    ToolState,
    resolve_tools,
)

from .test_resolver_properties import World, _resolve, configs, worlds


@settings(max_examples=60, deadline=None)
@given(worlds())
def test_steps_replay_to_the_resolvers_final_tools(world: World) -> None:
    resolution = _resolve(world)
    steps = resolution.steps
    assert [step.rule for step in steps] == list(StepRule)
    current: set[str] = set()
    for step in steps:
        assert not set(step.added) & current  # a step adds only what is not there yet
        assert set(step.removed) <= current | set(step.added)
        current = (current | set(step.added)) - set(step.removed)
        assert set(step.names) == current
    assert list(steps[-1].names) == resolution.names
    assert steps.names == resolution.names


@given(worlds())
def test_each_step_follows_its_own_rule(world: World) -> None:
    steps = _resolve(world).steps
    catalog, config = world.catalog, world.config
    pool = {item.name for item in catalog if catalog.is_globally_enabled(item.name)}
    globally, core, enabled, disabled, filtered = steps
    assert (globally.added, globally.removed, globally.names) == ((), (), ())
    assert set(globally.kept_out) == catalog.globally_disabled
    expected_core = ({item.name for item in catalog.core_tools()} & pool
                     if config.inherit_core_tools else set())
    assert set(core.added) == expected_core and core.applies == config.inherit_core_tools
    assert set(enabled.added) <= set(config.enabled) & pool
    assert set(enabled.kept_out) == set(config.enabled) - pool
    assert set(disabled.removed) == set(disabled.names).union(disabled.removed) & set(
        config.disabled)
    assert set(filtered.removed) == {name for name in filtered.removed
                                     if catalog[name].capabilities
                                     or catalog[name].scenes is not None}
    for step in (filtered, disabled):
        assert set(step.reasons) == set(step.removed)


@given(worlds(), configs())
def test_diff_is_the_set_differences_and_the_state_changes(world: World,
                                                           other: AgentToolConfig) -> None:
    a, b = _resolve(world), _resolve(world, other)
    diff = a.diff(b)
    assert set(diff.added) == set(b.names) - set(a.names)
    assert set(diff.removed) == set(a.names) - set(b.names)
    assert set(diff.state_changed) == {name for name in a.states.keys() | b.states.keys()
                                       if a.states.get(name) != b.states.get(name)}
    for change in diff:
        assert (change.before, change.after) == (a.states.get(change.name),
                                                 b.states.get(change.name))
        assert change.before_reason == a.reasons.get(change.name)
        assert change.after_reason == b.reasons.get(change.name)
    assert not a.diff(a) and not bool(_resolve(world).diff(a))


@given(worlds())
def test_explain_uses_the_resolvers_reason_for_every_tool(world: World) -> None:
    resolution = _resolve(world)
    for name, state in resolution.states.items():
        sentence = resolution.explain(name)
        reason = resolution.reasons.get(name)
        if reason is None:
            assert name in resolution.names
            assert ("core tool" in sentence) == (state is ToolState.DEFAULT_ENABLED)
            assert ("switched on" in sentence) == (state is ToolState.AGENT_ENABLED)
        else:
            assert reason[:1].lower() + reason[1:] in sentence
            # The same words the runtime sends a model that calls the tool anyway.
            assert reason[:1].lower() + reason[1:] in resolution.refusal(name)
            zh = resolution.explain(name, "zh-CN")
            assert reason.text("zh-CN") in zh


def test_explain_for_unknown_names_and_in_chinese() -> None:
    catalog = ToolCatalog.demo()
    config = AgentToolConfig(enabled=["python", "describe_image", "retired_tool"],
                             disabled=["read_file"])
    resolution = resolve_tools(catalog, config, model_capabilities={"tools"}, model="m1")
    assert resolution.explain("todo") == ("'todo' is available: it is a core tool, "
                                          "enabled by default.")
    assert resolution.explain("python") == ("'python' is available: it is switched on "
                                            "for this agent.")
    assert resolution.explain("read_file") == ("'read_file' is not available: switched off "
                                               "for this agent.")
    assert "needs the 'vision' capability, which model m1" in resolution.explain(
        "describe_image")
    assert "config" in resolution.explain("retired_tool")
    assert resolution.explain("nothing") == "There is no tool named 'nothing' in the catalog."
    assert resolution.explain("todo", "zh-CN") == "工具「todo」可用：它是核心工具，默认启用。"


def test_what_if_one_liners() -> None:
    catalog = ToolCatalog.demo()
    config = AgentToolConfig(enabled=["describe_image", "delegate"])
    base = resolve_tools(catalog, config, model_capabilities={"vision"}, scene="crew")
    no_vision = base.diff(resolve_tools(catalog, config, model_capabilities=set(),
                                        scene="crew"))
    assert no_vision.removed == ["describe_image"] and not no_vision.added
    toggled = config.model_copy(deep=True)
    toggled.set_tool("todo", False, catalog)
    change = base.diff(resolve_tools(catalog, toggled, model_capabilities={"vision"},
                                     scene="crew"))
    assert [(c.name, c.kind, c.before, c.after) for c in change] == [
        ("todo", ChangeKind.REMOVED, ToolState.DEFAULT_ENABLED, ToolState.AGENT_DISABLED)]
    other_scene = base.diff(resolve_tools(catalog, config, model_capabilities={"vision"},
                                          scene="chat"))
    assert other_scene.removed == ["delegate"]
    assert "scene" in str(other_scene.changes[0].after_reason)


def test_steps_are_computed_only_when_asked() -> None:
    resolution = resolve_tools(ToolCatalog.demo(), AgentToolConfig())
    assert "steps" not in vars(resolution)
    assert resolution.steps is resolution.steps
    assert repr(resolution.steps).startswith("ResolutionSteps(globally_enabled")
