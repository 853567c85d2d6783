"""ToolConfigPanel: traits mirror ``resolve_tools``, requests change the config, globally
disabled tools stay read-only, live objects are followed, text forms are stable."""

from __future__ import annotations

from typing import Any

import pytest

from neta_nb.labels import Notice
from neta_nb.tools import AgentToolConfig, ToolCatalog, ToolState, resolve_tools, tool
from neta_nb.widgets import ToolConfigPanel

from .conftest import SentMessages

VISION_REASON = "Needs the 'vision' capability, which model openai:gpt-4o does not have"


@pytest.fixture
def catalog() -> ToolCatalog:
    return ToolCatalog.demo()


def _request(panel: ToolConfigPanel, sent: SentMessages, kind: str, **payload: Any
             ) -> dict[str, Any]:
    """Deliver a view's request to the panel; return the reply it sent back."""
    request_id = f"r{len(sent)}"
    panel._on_custom_message(panel, {"kind": kind, "id": request_id, **payload}, [])
    replies = [message for message in sent.of_kind("reply") if message["id"] == request_id]
    assert len(replies) == 1
    return replies[0]


def _expected_states(catalog: ToolCatalog, config: AgentToolConfig, lang: str = "en",
                     **options: Any) -> dict[str, dict[str, Any]]:
    resolution = resolve_tools(catalog, config, **options)
    final = set(resolution.names)

    def reason(name: str) -> dict[str, Any]:
        notice = resolution.reasons.get(name)
        if notice is None:
            return {"reason": None, "reason_code": None, "reason_params": None}
        return {"reason": notice.text(lang), "reason_code": notice.code,
                "reason_params": notice.to_json()["params"]}

    return {name: {"state": state.value,
                   "on": state in (ToolState.DEFAULT_ENABLED, ToolState.AGENT_ENABLED),
                   "available": name in final, **reason(name)}
            for name, state in resolution.states.items()}


def test_state_traits_match_the_resolver(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["describe_image", "ask_user"], disabled=["todo"])
    options: dict[str, Any] = {"model_capabilities": set(), "scene": "chat",
                               "model": "openai:gpt-4o"}
    panel = ToolConfigPanel(catalog, config, **options)
    resolution = resolve_tools(catalog, config, **options)

    assert panel.states == _expected_states(catalog, config, **options)
    assert panel.enabled_tools == resolution.names == [
        "list_files", "read_file", "profile_table", "ask_user"]
    assert [item["name"] for item in panel.tools] == [item.name for item in catalog.ordered()]
    assert panel.states["describe_image"] == {
        "state": "agent_enabled", "on": True, "available": False, "reason": VISION_REASON,
        "reason_code": "needs_capability",
        "reason_params": {"capabilities": ["vision"], "model": "openai:gpt-4o"}}
    assert panel.states["web_search"]["state"] == "globally_disabled"
    assert panel.states["web_search"]["reason"] == "Disabled globally in tool management"
    assert panel.states["delegate"]["state"] == "available"
    assert panel.summary == {"enabled": 4, "total": 13, "core": 4, "extra_enabled": 2,
                             "switched_off": 1, "globally_disabled": 1, "filtered_out": 1}
    assert panel.categories == [
        {"name": "base", "count": 4, "enabled": 2},
        {"name": "planning", "count": 1, "enabled": 0},
        {"name": "interaction", "count": 1, "enabled": 1},
        {"name": "memory", "count": 2, "enabled": 0},
        {"name": "skill", "count": 1, "enabled": 1},
        {"name": "crew", "count": 1, "enabled": 0},
        {"name": "vision", "count": 1, "enabled": 0},
        {"name": "document", "count": 1, "enabled": 0},
        {"name": "custom", "count": 1, "enabled": 0},
    ]
    describe = next(item for item in panel.tools if item["name"] == "describe_image")
    assert describe == {"name": "describe_image", "label": "Describe image",
                        "description": catalog["describe_image"].description,
                        "category": "vision", "capabilities": ["vision"], "scenes": None,
                        "core": False, "visibility": "tool", "requires_approval": False}

    # In Chinese the reasons are rendered from the same notices, not translated from English.
    panel.lang = "zh-CN"
    assert panel.states == _expected_states(catalog, config, "zh-CN", **options)
    assert panel.states["describe_image"]["reason"] == (
        "需要 'vision' 能力，模型 openai:gpt-4o 不具备")
    assert panel.states["web_search"]["reason"] == "已在工具管理中全局停用"


def test_scene_filter_reason_and_changing_the_model(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["delegate", "describe_image"])
    panel = ToolConfigPanel(catalog, config, scene="chat")
    assert panel.states["delegate"]["reason"] == "Not offered in scene 'chat'"
    assert panel.states["delegate"]["reason_params"] == {"scene": "chat"}
    panel.lang = "zh-CN"
    assert panel.states["delegate"]["reason"] == "场景「chat」不提供此工具"
    panel.lang = "en"
    assert "describe_image" in panel.enabled_tools
    panel.model_capabilities = {"text"}
    assert "describe_image" not in panel.enabled_tools
    assert panel.states["describe_image"]["reason"] == (
        "Needs the 'vision' capability, which the current model does not have")
    panel.scene = "crew"
    panel.model_capabilities = None
    assert panel.enabled_tools[-2:] == ["delegate", "describe_image"]
    assert panel.states == _expected_states(catalog, config, scene="crew")


def test_set_tool_request_follows_the_toggle_semantics(catalog: ToolCatalog,
                                                       sent: SentMessages) -> None:
    config = AgentToolConfig()
    panel = ToolConfigPanel(catalog, config)

    reply = _request(panel, sent, "set_tool", name="ask_user", enabled=True)
    assert reply["ok"] is True
    assert reply["result"]["state"] == "agent_enabled"
    assert config.enabled == ["ask_user"]
    assert "ask_user" in panel.enabled_tools

    # A core tool switched off is an override; switched back on it is "default enabled"
    # again, not an explicit grant (seed 001 §4.3).
    assert _request(panel, sent, "set_tool", name="todo", enabled=False)["ok"] is True
    assert config.disabled == ["todo"]
    assert panel.states["todo"]["state"] == "agent_disabled"
    assert _request(panel, sent, "set_tool", name="todo", enabled=True)["ok"] is True
    assert (config.enabled, config.disabled) == (["ask_user"], [])
    assert panel.states["todo"]["state"] == "default_enabled"

    assert _request(panel, sent, "set_tool", name="ask_user", enabled=False)["ok"] is True
    assert config.dump() == {"inheritCoreTools": True, "enabled": [], "disabled": []}
    assert panel.states == _expected_states(catalog, config)


def test_crafted_enable_of_a_globally_disabled_tool_is_refused(catalog: ToolCatalog,
                                                                sent: SentMessages) -> None:
    config = AgentToolConfig(enabled=["ask_user"])
    panel = ToolConfigPanel(catalog, config)
    before = config.dump()
    reply = _request(panel, sent, "set_tool", name="web_search", enabled=True)
    assert reply == {"kind": "reply", "id": reply["id"], "ok": False,
                     "error": "'web_search' is disabled globally in tool management; it "
                              "cannot be switched on or off for this agent"}
    assert config.dump() == before
    assert panel.states["web_search"]["state"] == "globally_disabled"
    assert "web_search" not in panel.enabled_tools


@pytest.mark.parametrize(("payload", "error"), [
    ({"name": "no_such_tool", "enabled": True},
     "there is no tool named 'no_such_tool' in the catalog"),
    ({"name": "ask_user", "enabled": "yes"},
     "set_tool needs a tool name (string) and enabled (true/false)"),
    ({"enabled": True}, "set_tool needs a tool name (string) and enabled (true/false)"),
])
def test_malformed_set_tool_requests_change_nothing(catalog: ToolCatalog, sent: SentMessages,
                                                    payload: dict[str, Any], error: str) -> None:
    config = AgentToolConfig()
    panel = ToolConfigPanel(catalog, config)
    reply = _request(panel, sent, "set_tool", **payload)
    assert (reply["ok"], reply["error"]) == (False, error)
    assert config.dump() == AgentToolConfig().dump()


def test_bulk_operations(catalog: ToolCatalog, sent: SentMessages) -> None:
    config = AgentToolConfig(inherit_core_tools=False, enabled=["ask_user", "recall"],
                             disabled=["list_files", "todo"])
    panel = ToolConfigPanel(catalog, config)
    assert panel.enabled_tools == ["ask_user", "recall"]

    reply = _request(panel, sent, "bulk", op="restore_core_defaults")
    assert reply["ok"] is True
    assert config.dump() == {"inheritCoreTools": True, "enabled": ["ask_user", "recall"],
                             "disabled": []}
    assert reply["result"] == {"enabled_tools": panel.enabled_tools}
    assert panel.enabled_tools == ["list_files", "read_file", "todo", "profile_table",
                                   "ask_user", "recall"]

    config.set_tool("todo", False, catalog)
    assert _request(panel, sent, "bulk", op="clear_extra_enabled")["ok"] is True
    assert config.dump() == {"inheritCoreTools": True, "enabled": [], "disabled": ["todo"]}
    assert _request(panel, sent, "bulk", op="clear_disabled_overrides")["ok"] is True
    assert config.dump() == {"inheritCoreTools": True, "enabled": [], "disabled": []}
    assert panel.states == _expected_states(catalog, config)

    reply = _request(panel, sent, "bulk", op="disable_everything")
    assert reply["ok"] is False
    assert reply["error"] == ("unknown bulk operation 'disable_everything'; expected one of "
                              "restore_core_defaults, clear_extra_enabled, "
                              "clear_disabled_overrides")


def test_unknown_names_and_warnings(catalog: ToolCatalog, sent: SentMessages) -> None:
    config = AgentToolConfig.load({"toolsets": ["memory", "gadgets"],
                                   "tools": {"disabled": ["ghost"]}}, catalog)
    panel = ToolConfigPanel(catalog, config)
    assert panel.unknown == ["ghost"]
    # The unknown name has its own notice; the warning list keeps the other notes.
    assert panel.warnings == ["Legacy toolset 'gadgets' matches no tool category; it was "
                              "skipped during migration."]

    refused = _request(panel, sent, "forget", name="read_file")
    assert (refused["ok"], config.disabled) == (False, ["ghost"])
    assert _request(panel, sent, "forget", name="ghost")["ok"] is True
    assert (config.disabled, panel.unknown) == ([], [])

    panel.lang = "zh-CN"
    assert panel.warnings == ["旧配置中的工具集「gadgets」没有对应的工具分类，迁移时已跳过。"]
    assert _request(panel, sent, "dismiss_warnings")["ok"] is True
    assert panel.warnings == []
    config.set_tool("ask_user", True, catalog)  # a later refresh keeps them dismissed
    assert panel.warnings == []
    panel.lang = "en"  # in every language
    assert panel.warnings == []


def test_preview_is_what_the_provider_receives(catalog: ToolCatalog, sent: SentMessages) -> None:
    config = AgentToolConfig(enabled=["calculate"], disabled=["profile_table"])
    panel = ToolConfigPanel(catalog, config, system_prompt="You are careful.")
    reply = _request(panel, sent, "preview")
    assert reply["ok"] is True
    assert reply["result"]["system_prompt"] == "You are careful."
    assert reply["result"]["tools"] == [
        {"name": item.name, "description": item.description, "parameters": item.parameters}
        for item in resolve_tools(catalog, config).tools]
    assert [entry["name"] for entry in reply["result"]["tools"]] == [
        "list_files", "read_file", "todo", "calculate"]


def test_follows_config_and_catalog_until_closed(catalog: ToolCatalog) -> None:
    config = AgentToolConfig()
    panel = ToolConfigPanel(catalog, config)
    config.set_tool("remember", True, catalog)
    assert panel.states["remember"]["state"] == "agent_enabled"
    assert panel.enabled_tools[-1] == "remember"

    catalog.disable("read_file")
    assert panel.states["read_file"]["state"] == "globally_disabled"
    assert "read_file" not in panel.enabled_tools
    catalog.enable("read_file")
    assert panel.states["read_file"]["state"] == "default_enabled"

    @tool(category="gadgets", label="Shiny")
    def shiny(text: str) -> str:
        """Make text shiny."""
        return text

    catalog.register(shiny)
    assert panel.tools[-1]["name"] == "shiny"
    assert panel.categories[-1] == {"name": "gadgets", "count": 1, "enabled": 0}
    assert panel.states == _expected_states(catalog, config)

    panel.close()
    config.set_tool("recall", True, catalog)
    catalog.disable("list_files")
    assert panel.states["recall"]["state"] == "available"
    assert panel.states["list_files"]["state"] == "default_enabled"


def test_repr_and_fallbacks(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["ask_user"], disabled=["todo"])
    panel = ToolConfigPanel(catalog, config)
    assert repr(panel) == "ToolConfigPanel(4 of 13 tools enabled)"
    text = panel._fallback_text().splitlines()
    assert text[0] == "Tools — 4 of 13 tools enabled · 4 core (Only affects this agent)"
    assert "[x] list_files (core) [base]: Enabled by default" in text
    assert "[ ] web_search [base]: Disabled globally" in text
    assert "[ ] todo (core) [planning]: Switched off for this agent" in text
    assert "[x] ask_user [interaction]: Switched on for this agent" in text
    assert len(text) == 1 + 13

    markdown = panel._fallback_markdown()
    assert "| ✓ | `ask_user` | interaction | Switched on for this agent |  |" in markdown
    assert "| – | `web_search` | base | Disabled globally |  |" in markdown

    panel.lang = "zh-CN"
    zh = panel._fallback_text().splitlines()
    assert zh[0] == "工具配置 — 已启用 4/13 个工具 · 核心工具 4 个 (仅影响当前 Agent)"
    assert "[ ] todo (核心) [planning]: 已为当前 Agent 关闭" in zh
    assert "[ ] web_search [base]: 全局停用" in zh
    # The agent-level wording never says "disable" (seed 001 §7.4).
    assert "禁用" not in panel._fallback_text() + panel._fallback_markdown()

    data, _metadata = panel._repr_mimebundle_() or ({}, {})
    assert data["text/plain"] == panel._fallback_text()
    assert "application/vnd.jupyter.widget-view+json" in data


def test_fallbacks_escape_hostile_descriptions_and_names() -> None:
    @tool(category="<b>cat</b>", label="<img src=x onerror=alert(1)>")
    def hostile(text: str) -> str:
        """<script>alert(1)</script> and <img src=x onerror=alert(2)>"""
        return text

    catalog = ToolCatalog([hostile])
    config = AgentToolConfig(enabled=["hostile"])
    panel = ToolConfigPanel(catalog, config)
    page = panel._fallback_html()
    assert "<script" not in page and "<img" not in page and "<b>" not in page
    assert "&lt;b&gt;cat&lt;/b&gt;" in page
    assert "<b>" not in panel._fallback_markdown()
    assert panel.tools[0]["description"] == (
        "<script>alert(1)</script> and <img src=x onerror=alert(2)>")


def test_the_panel_does_not_parse_reasons(catalog: ToolCatalog) -> None:
    # A reason whose English the panel could never have known still shows in Chinese:
    # the text comes from the notice's code and parameters.
    config = AgentToolConfig(enabled=["describe_image"])
    panel = ToolConfigPanel(catalog, config, model_capabilities={"text"},
                            model="a model 'with' (odd) characters", lang="zh-CN")
    assert panel.states["describe_image"]["reason"] == Notice(
        "needs_capability", capabilities=["vision"],
        model="a model 'with' (odd) characters").text("zh-CN")
    assert "模型 a model 'with' (odd) characters 不具备" in panel.states["describe_image"]["reason"]


def test_large_catalog_state_is_complete() -> None:
    tools = []
    for index in range(200):
        @tool(name=f"tool_{index:03d}", category=("base", "memory", "extra")[index % 3],
              core=index % 10 == 0)
        def handler(text: str) -> str:
            """A generated tool."""
            return text
        tools.append(handler)
    catalog = ToolCatalog(tools)
    catalog.disable("tool_005")
    config = AgentToolConfig(enabled=["tool_001", "tool_002"], disabled=["tool_010"])
    panel = ToolConfigPanel(catalog, config)
    assert len(panel.states) == len(panel.tools) == 200
    assert panel.summary["enabled"] == 19 + 2
    assert panel.states == _expected_states(catalog, config)
