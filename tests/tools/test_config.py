"""AgentToolConfig: shapes, legacy migration, toggles (seed 001 §4.3), bulk operations."""

from __future__ import annotations

from typing import Any

import pytest

from neta_nb.tools import AgentToolConfig, ToolCatalog, ToolConfigError, ToolState, resolve_tools

# --- reading and writing ----------------------------------------------------------------

def test_defaults() -> None:
    config = AgentToolConfig()
    assert config.dump() == {"inheritCoreTools": True, "enabled": [], "disabled": []}


@pytest.mark.parametrize("data", [
    {"inheritCoreTools": False, "enabled": ["search"], "disabled": ["todo"]},
    {"inherit_core_tools": False, "enabled": ["search"], "disabled": ["todo"]},
])
def test_reads_camel_and_snake_case(data: dict[str, Any], catalog: ToolCatalog) -> None:
    config = AgentToolConfig.load(data, catalog)
    assert config == AgentToolConfig(inherit_core_tools=False, enabled=["search"],
                                     disabled=["todo"])
    assert config.dump() == {"inheritCoreTools": False, "enabled": ["search"],
                             "disabled": ["todo"]}


def test_model_validate_and_dump_round_trip() -> None:
    config = AgentToolConfig.model_validate({"inheritCoreTools": False, "enabled": ["b", "a"]})
    assert AgentToolConfig.load(config.dump()) == AgentToolConfig(
        inherit_core_tools=False, enabled=["a", "b"])


def test_dump_normalises_order_and_duplicates() -> None:
    config = AgentToolConfig(enabled=["b", "a", "b"], disabled=["z", "z"])
    assert config.dump() == {"inheritCoreTools": True, "enabled": ["a", "b"],
                             "disabled": ["z"]}


def test_new_shape_wins_over_legacy_fields(catalog: ToolCatalog) -> None:
    data = {"enabled": ["search"], "toolsets": ["vision"], "tools": {"disabled": ["todo"]}}
    assert AgentToolConfig.load(data, catalog) == AgentToolConfig(enabled=["search"])


def test_unrecognised_keys_are_reported(catalog: ToolCatalog) -> None:
    config = AgentToolConfig.load({"enabeld": ["search"], "disabled": []}, catalog)
    assert config == AgentToolConfig()
    assert config.load_warnings == ["Unrecognised key 'enabeld' in the tool config was "
                                    "ignored."]
    assert resolve_tools(catalog, config).warnings == config.load_warnings
    assert AgentToolConfig.load({"enabled": [], "toolsets": ["x"]}).load_warnings == []


def test_load_none_and_existing_config() -> None:
    assert AgentToolConfig.load(None) == AgentToolConfig()
    original = AgentToolConfig(enabled=["x"])
    copy = AgentToolConfig.load(original)
    assert copy == original
    assert copy is not original
    copy.clear_extra_enabled()
    assert original.enabled == ["x"]


@pytest.mark.parametrize(("data", "message"), [
    ({"enabled": "search"}, "enabled: Input should be a valid list"),
    ({"enabled": [1]}, r"enabled\.0: Input should be a valid string"),
    ({"disabled": None}, "disabled: Input should be a valid list"),
    ({"inheritCoreTools": "perhaps"}, "inheritCoreTools: Input should be a valid boolean"),
    (["search"], "must be an object"),
    ("search", "must be an object"),
])
def test_bad_new_shape_raises_clear_errors(data: Any, message: str) -> None:
    with pytest.raises(ToolConfigError, match=message):
        AgentToolConfig.load(data)


def test_assignment_is_validated() -> None:
    config = AgentToolConfig()
    with pytest.raises(ValueError, match="valid list"):
        config.enabled = "todo"  # type: ignore[assignment]


# --- legacy migration (seed §5.3) -------------------------------------------------------

def test_legacy_migration(catalog: ToolCatalog) -> None:
    legacy = {"toolsets": ["base", "vision", "planning"], "tools": {"disabled": ["read"]}}
    config = AgentToolConfig.load(legacy, catalog)
    # Core tools → inherit; non-core tools of the toolsets → enabled (globally disabled
    # "gone" keeps its legacy grant but the resolver keeps it off); disabled kept.
    assert config == AgentToolConfig(inherit_core_tools=True,
                                     enabled=["gone", "look", "search"], disabled=["read"])
    assert config.load_warnings == []
    assert AgentToolConfig.load(config.dump(), catalog) == config


def test_legacy_migration_is_idempotent(catalog: ToolCatalog) -> None:
    legacy = {"toolsets": ["base", "crew"], "tools": {"disabled": ["search", "todo"]}}
    once = AgentToolConfig.load(legacy, catalog)
    assert once == AgentToolConfig(enabled=["crew_only", "gone"], disabled=["search", "todo"])
    assert AgentToolConfig.load(legacy, catalog) == once
    assert AgentToolConfig.load(once.dump(), catalog) == once
    assert AgentToolConfig.load(AgentToolConfig.load(once.dump()).dump()) == once


def test_legacy_unknown_toolset_is_reported_not_fatal(catalog: ToolCatalog) -> None:
    config = AgentToolConfig.load({"toolsets": ["browser", "base"]}, catalog)
    assert config.enabled == ["gone", "search"]
    assert config.load_warnings == ["Legacy toolset 'browser' matches no tool category; it "
                                    "was skipped during migration."]


def test_legacy_without_tools_or_toolsets(catalog: ToolCatalog) -> None:
    assert AgentToolConfig.load({"toolsets": []}, catalog) == AgentToolConfig()
    assert AgentToolConfig.load({"tools": {}}, catalog) == AgentToolConfig()
    assert AgentToolConfig.load({"tools": {"disabled": ["x"]}}, catalog) == AgentToolConfig(
        disabled=["x"])


@pytest.mark.parametrize(("data", "message"), [
    ({"toolsets": "base"}, "'toolsets' must be a list of names, got str"),
    ({"toolsets": [1]}, "'toolsets' must hold names"),
    ({"tools": ["read"]}, "'tools' must be an object"),
    ({"tools": {"disabled": "read"}}, "'tools.disabled' must be a list of names"),
    ({"tools": {"disabled": [None]}}, "'tools.disabled' must hold names"),
])
def test_invalid_legacy_data_raises_clear_errors(data: dict[str, Any], message: str,
                                                  catalog: ToolCatalog) -> None:
    with pytest.raises(ToolConfigError, match=message):
        AgentToolConfig.load(data, catalog)


def test_legacy_needs_the_catalog() -> None:
    with pytest.raises(ToolConfigError, match="needs the tool catalog"):
        AgentToolConfig.load({"toolsets": ["base"]})


# --- toggles (seed §4.3) ----------------------------------------------------------------

def test_core_tool_off_then_on_returns_to_default(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    config.set_tool("todo", False, catalog)
    assert config == AgentToolConfig(disabled=["todo"])
    config.set_tool("todo", True, catalog)
    # Back to "default enabled": not written to `enabled`.
    assert config == AgentToolConfig()


def test_extra_tool_on_then_off(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    config.set_tool("search", True, catalog)
    assert config == AgentToolConfig(enabled=["search"])
    config.set_tool("search", False, catalog)
    assert config == AgentToolConfig()


def test_core_tool_without_inheritance_is_an_explicit_grant(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(inherit_core_tools=False)
    config.set_tool("todo", True, catalog)
    assert config.enabled == ["todo"]
    config.set_tool("todo", False, catalog)
    assert config == AgentToolConfig(inherit_core_tools=False)


@pytest.mark.parametrize("name", ["todo", "read", "search", "look", "crew_only"])
@pytest.mark.parametrize("inherit", [True, False])
@pytest.mark.parametrize("start", [
    {}, {"enabled": ["look", "search"]}, {"disabled": ["read"]},
    {"enabled": ["crew_only"], "disabled": ["todo"]},
])
def test_toggle_round_trips_restore_the_original(name: str, inherit: bool,
                                                 start: dict[str, list[str]],
                                                 catalog: ToolCatalog) -> None:
    original = AgentToolConfig(inherit_core_tools=inherit, **start)
    config = original.model_copy(deep=True)
    before = resolve_tools(catalog, original)
    currently_on = name in before.names
    config.set_tool(name, not currently_on, catalog)
    assert (name in resolve_tools(catalog, config).names) is not currently_on
    config.set_tool(name, currently_on, catalog)
    if currently_on or not _stale_override(original, name, catalog):
        assert config == original
    else:
        # A `disabled` entry for a tool that is off anyway (a core tool the agent no
        # longer inherits) is not recreated; what the agent gets is unchanged.
        assert resolve_tools(catalog, config).states == before.states | {
            name: ToolState.AVAILABLE}
        assert resolve_tools(catalog, config).names == before.names


def _stale_override(config: AgentToolConfig, name: str, catalog: ToolCatalog) -> bool:
    return name in config.disabled and not (catalog[name].core and config.inherit_core_tools)


def test_globally_disabled_tools_are_read_only(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    with pytest.raises(ValueError, match="'gone' is disabled globally"):
        config.set_tool("gone", True, catalog)
    with pytest.raises(ValueError, match="disabled globally"):
        config.set_tool("core_gone", False, catalog)
    assert config == AgentToolConfig()


def test_unknown_tool_cannot_be_toggled_but_can_be_forgotten(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["ghost", "search"], disabled=["ghost"])
    with pytest.raises(KeyError, match="no tool named 'ghost'"):
        config.set_tool("ghost", True, catalog)
    config.forget("ghost")
    assert config == AgentToolConfig(enabled=["search"])


def test_switching_off_removes_every_duplicate(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["search", "search"])
    config.set_tool("search", False, catalog)
    assert config.enabled == []


# --- bulk operations --------------------------------------------------------------------

def test_restore_core_defaults(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(inherit_core_tools=False, enabled=["todo", "search"],
                             disabled=["read", "look"])
    config.restore_core_defaults(catalog)
    assert config == AgentToolConfig(enabled=["search"], disabled=["look"])
    bare = AgentToolConfig(inherit_core_tools=False, enabled=["search"], disabled=["read"])
    bare.restore_core_defaults()
    assert bare == AgentToolConfig(enabled=["search"])


def test_clear_extra_enabled_and_disabled_overrides() -> None:
    config = AgentToolConfig(enabled=["a", "b"], disabled=["c"])
    config.clear_extra_enabled()
    assert config == AgentToolConfig(disabled=["c"])
    config.clear_disabled_overrides()
    assert config == AgentToolConfig()


def test_set_inherit_core_tools() -> None:
    config = AgentToolConfig()
    config.set_inherit_core_tools(False)
    assert config.inherit_core_tools is False


# --- notification and value semantics ------------------------------------------------------

def test_subscribers_hear_mutations_only(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    heard: list[dict[str, Any]] = []
    unsubscribe = config.subscribe(lambda c: heard.append(c.dump()))
    config.set_tool("search", True, catalog)
    config.set_tool("search", True, catalog)  # no change, no call
    config.set_tool("todo", False, catalog)
    config.clear_extra_enabled()
    config.clear_disabled_overrides()
    config.restore_core_defaults(catalog)  # already default: no call
    assert heard == [
        {"inheritCoreTools": True, "enabled": ["search"], "disabled": []},
        {"inheritCoreTools": True, "enabled": ["search"], "disabled": ["todo"]},
        {"inheritCoreTools": True, "enabled": [], "disabled": ["todo"]},
        {"inheritCoreTools": True, "enabled": [], "disabled": []},
    ]
    unsubscribe()
    config.set_tool("search", True, catalog)
    assert len(heard) == 4


def test_copies_do_not_share_subscribers(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    heard: list[AgentToolConfig] = []
    config.subscribe(heard.append)
    for copy in (config.model_copy(), config.model_copy(deep=True)):
        copy.set_tool("search", True, catalog)
    assert heard == []
    assert config == AgentToolConfig()


def test_equality_ignores_subscribers() -> None:
    config = AgentToolConfig(enabled=["a"])
    config.subscribe(lambda c: None)
    assert config == AgentToolConfig(enabled=["a"])
    assert config != AgentToolConfig(enabled=["b"])
    assert config != {"enabled": ["a"]}
