"""resolve_tools: the state model, the seed's rule order, ordering, reasons, bad input."""

from __future__ import annotations

import pytest

from neta_nb.tools import AgentToolConfig, ToolCatalog, ToolResolution, ToolState, resolve_tools

from ...support.tools import make_tool

S = ToolState


def test_default_config(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig())
    assert result.names == ["read", "todo"]
    assert result.states == {
        "core_gone": S.GLOBALLY_DISABLED, "gone": S.GLOBALLY_DISABLED,
        "read": S.DEFAULT_ENABLED, "search": S.AVAILABLE, "todo": S.DEFAULT_ENABLED,
        "crew_only": S.AVAILABLE, "look": S.AVAILABLE,
    }
    assert result.reasons == {
        "core_gone": "Disabled globally in tool management",
        "gone": "Disabled globally in tool management",
        "search": "Not enabled for this agent",
        "crew_only": "Not enabled for this agent",
        "look": "Not enabled for this agent",
    }
    assert result.unknown == []
    assert result.warnings == []


def test_state_is_a_string_enum() -> None:
    state: str = S.AGENT_DISABLED  # as a plain str, so mypy allows comparing it to one
    assert state == "agent_disabled"
    assert [s.value for s in S] == ["default_enabled", "agent_enabled", "agent_disabled",
                                    "globally_disabled", "available"]


# Every row of the state model: (config, tool) → (state, in final set, reason).
@pytest.mark.parametrize(("config", "name", "state", "included", "reason"), [
    # core tool, inherited, untouched → default enabled
    (AgentToolConfig(), "todo", S.DEFAULT_ENABLED, True, None),
    # core tool switched off for this agent
    (AgentToolConfig(disabled=["todo"]), "todo", S.AGENT_DISABLED, False,
     "Switched off for this agent"),
    # core tool, not inherited → available
    (AgentToolConfig(inherit_core_tools=False), "todo", S.AVAILABLE, False,
     "Not enabled for this agent (it is a core tool, and this agent does not inherit core "
     "tools)"),
    # core tool, not inherited, enabled explicitly
    (AgentToolConfig(inherit_core_tools=False, enabled=["todo"]), "todo", S.AGENT_ENABLED,
     True, None),
    # core tool, inherited and also listed in enabled: still the default
    (AgentToolConfig(enabled=["todo"]), "todo", S.DEFAULT_ENABLED, True, None),
    # extra tool enabled for this agent
    (AgentToolConfig(enabled=["search"]), "search", S.AGENT_ENABLED, True, None),
    # extra tool with no override
    (AgentToolConfig(), "search", S.AVAILABLE, False, "Not enabled for this agent"),
    # extra tool switched off (e.g. a migrated legacy override)
    (AgentToolConfig(disabled=["search"]), "search", S.AGENT_DISABLED, False,
     "Switched off for this agent"),
    # extra tool both enabled and disabled: disabled wins (rule 4 after rule 3)
    (AgentToolConfig(enabled=["search"], disabled=["search"]), "search", S.AGENT_DISABLED,
     False, "Switched off for this agent"),
    # globally disabled: no config can grant it
    (AgentToolConfig(enabled=["gone"]), "gone", S.GLOBALLY_DISABLED, False,
     "Disabled globally in tool management"),
    (AgentToolConfig(), "core_gone", S.GLOBALLY_DISABLED, False,
     "Disabled globally in tool management"),
    (AgentToolConfig(disabled=["gone"]), "gone", S.GLOBALLY_DISABLED, False,
     "Disabled globally in tool management"),
])
def test_state_model(config: AgentToolConfig, name: str, state: ToolState, included: bool,
                     reason: str | None, catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, config)
    assert result.states[name] is state
    assert (name in result.names) is included
    assert (name in result) is included
    assert result.reasons.get(name) == reason
    assert (result.get(name) is catalog[name]) is included


def test_every_catalog_tool_has_a_state_and_every_left_out_tool_a_reason(
        catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig(enabled=["look"], disabled=["read"]),
                           model_capabilities=set(), scene="chat")
    assert set(result.states) == set(catalog.names)
    assert set(result.reasons) == set(catalog.names) - set(result.names)


# --- ordering ---------------------------------------------------------------------------

def test_order_is_core_then_explicit_each_by_category_then_name() -> None:
    catalog = ToolCatalog([
        make_tool("zz_core_doc", category="document", core=True),
        make_tool("b_extra"),
        make_tool("a_extra_custom", category="mine"),
        make_tool("m_core", core=True),
        make_tool("a_core", core=True),
        make_tool("plan_extra", category="planning"),
    ])
    config = AgentToolConfig(enabled=["a_extra_custom", "plan_extra", "b_extra"])
    assert resolve_tools(catalog, config).names == [
        "a_core", "m_core", "zz_core_doc", "b_extra", "plan_extra", "a_extra_custom"]


# --- capability and scene filters -----------------------------------------------------------

def test_capability_filter(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["look"])
    assert "look" in resolve_tools(catalog, config).names  # None: no filtering
    assert "look" in resolve_tools(catalog, config, model_capabilities={"vision"}).names
    result = resolve_tools(catalog, config, model_capabilities={"tools"}, model="gpt-3.5")
    assert "look" not in result.names
    assert result.states["look"] is S.AGENT_ENABLED
    assert result.reasons["look"] == ("Needs the 'vision' capability, which model gpt-3.5 "
                                      "does not have")
    assert result.filtered_out == ["look"]
    anonymous = resolve_tools(catalog, config, model_capabilities=[])
    assert anonymous.reasons["look"] == ("Needs the 'vision' capability, which the current "
                                         "model does not have")


def test_several_missing_capabilities_are_named() -> None:
    catalog = ToolCatalog([make_tool("watch", core=True,
                                     capabilities=frozenset({"vision", "audio"}))])
    result = resolve_tools(catalog, AgentToolConfig(), model_capabilities={"vision"})
    assert result.reasons["watch"] == ("Needs the 'audio' capability, which the current "
                                       "model does not have")
    result = resolve_tools(catalog, AgentToolConfig(), model_capabilities=(), model="m")
    assert result.reasons["watch"] == ("Needs the 'audio' and 'vision' capabilities, which "
                                       "model m does not have")


def test_scene_filter(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["crew_only", "search"])
    assert resolve_tools(catalog, config).names == ["read", "todo", "search", "crew_only"]
    assert resolve_tools(catalog, config, scene="crew").names == [
        "read", "todo", "search", "crew_only"]
    result = resolve_tools(catalog, config, scene="chat")
    assert result.names == ["read", "todo", "search"]
    assert result.reasons["crew_only"] == "Not offered in scene 'chat'"
    assert result.states["crew_only"] is S.AGENT_ENABLED


def test_filters_do_not_override_earlier_reasons(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig(), model_capabilities=set(), scene="x")
    assert result.reasons["look"] == "Not enabled for this agent"
    assert result.reasons["gone"] == "Disabled globally in tool management"
    assert result.filtered_out == []


# --- bad input ------------------------------------------------------------------------------

def test_unknown_names_are_reported_and_never_granted(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["ghost", "search", "ghost"], disabled=["phantom",
                                                                             "ghost"])
    result = resolve_tools(catalog, config)
    assert result.unknown == ["ghost", "phantom"]
    assert "ghost" not in result.names
    assert "ghost" not in result.states
    assert result.warnings == [
        "'ghost' is in enabled but no tool by that name exists; it is ignored.",
        "'ghost' appears more than once in enabled; it counts once.",
        "'phantom' is in disabled but no tool by that name exists; it is ignored.",
        "'ghost' is in disabled but no tool by that name exists; it is ignored.",
        "'ghost' is both enabled and disabled for this agent; disabled wins.",
    ]


def test_grant_of_a_globally_disabled_tool_is_warned_about(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig(enabled=["gone"]))
    assert "gone" not in result.names
    assert result.warnings == ["'gone' is enabled for this agent but disabled globally in "
                               "tool management; it stays off."]


def test_duplicates_count_once(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig(enabled=["search", "search"]))
    assert result.names == ["read", "todo", "search"]
    assert result.warnings == ["'search' appears more than once in enabled; it counts once."]


def test_migration_warnings_are_reported_by_the_resolver(catalog: ToolCatalog) -> None:
    config = AgentToolConfig.load({"toolsets": ["browser"]}, catalog)
    assert resolve_tools(catalog, config).warnings == [
        "Legacy toolset 'browser' matches no tool category; it was skipped during "
        "migration."]


def test_empty_catalog() -> None:
    result = resolve_tools(ToolCatalog(), AgentToolConfig(enabled=["x"]))
    assert result.tools == []
    assert result.states == {}
    assert result.unknown == ["x"]


def test_resolution_follows_catalog_changes(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["search"])
    catalog.disable("search")
    assert "search" not in resolve_tools(catalog, config).names
    catalog.enable("search")
    catalog.register(make_tool("aaa", core=True))
    assert resolve_tools(catalog, config).names == ["aaa", "read", "todo", "search"]
    catalog.unregister("search")
    assert resolve_tools(catalog, config).unknown == ["search"]


# --- helpers for the runtime -----------------------------------------------------------------

def test_refusal_messages_for_the_model(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig())
    assert result.refusal("gone") == ("Tool 'gone' is not available to this agent: disabled "
                                      "globally in tool management. Available tools: read, "
                                      "todo.")
    assert result.refusal("made_up") == ("There is no tool named 'made_up'. Available "
                                         "tools: read, todo.")
    empty = ToolResolution(tools=[], states={}, reasons={})
    assert empty.refusal("x") == "There is no tool named 'x'. Available tools: none."


def test_definitions_follow_the_final_order(catalog: ToolCatalog) -> None:
    result = resolve_tools(catalog, AgentToolConfig(enabled=["search"]))
    assert [d.name for d in result.definitions()] == result.names == ["read", "todo",
                                                                      "search"]
