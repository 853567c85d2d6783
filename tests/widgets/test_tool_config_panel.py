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
    assert panel.summary == {"enabled": 4, "total": 14, "core": 4, "extra_enabled": 2,
                             "switched_off": 1, "globally_disabled": 1, "filtered_out": 1}
    assert panel.categories == [
        {"name": "base", "count": 5, "enabled": 2},
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


async def test_the_static_form_after_a_catalog_change_is_the_whole_new_panel(
        catalog: ToolCatalog, monkeypatch: pytest.MonkeyPatch) -> None:
    # The last form sent is what a notebook saved right after keeps (the kernel may stop
    # before a throttled update): its heading counts the rows under it, not new rows under
    # the old count. (On a running loop, as in a kernel: later updates are throttled.)
    sent: list[dict[str, str]] = []
    monkeypatch.setattr("neta_nb.widgets.static_form.send_update",
                        lambda data, display_id: sent.append(data))
    panel = ToolConfigPanel(catalog, AgentToolConfig())
    panel._static_form.display_ids = ["d1"]  # as _ipython_display_ leaves it

    @tool(category="gadgets", label="Shiny")
    def shiny(text: str) -> str:
        """Make text shiny."""
        return text

    catalog.register(shiny)
    assert sent and sent[-1] == panel._static_form.bundle()
    assert sent[-1]["text/plain"].startswith(f"Tools — 4 of {len(catalog)} tools enabled")
    assert "shiny" in sent[-1]["text/html"]


def test_repr_and_fallbacks(catalog: ToolCatalog) -> None:
    config = AgentToolConfig(enabled=["ask_user"], disabled=["todo"])
    panel = ToolConfigPanel(catalog, config)
    assert repr(panel) == "ToolConfigPanel(4 of 14 tools enabled)"
    text = panel._fallback_text().splitlines()
    assert text[0] == "Tools — 4 of 14 tools enabled · 4 core (Only affects this agent)"
    assert "[x] list_files (core) [Base]: Enabled by default" in text
    assert "[ ] web_search [Base]: Disabled globally" in text
    assert "[ ] todo (core) [Planning]: Switched off for this agent" in text
    assert "[x] ask_user [Interaction]: Switched on for this agent" in text
    assert len(text) == 1 + 14

    panel.lang = "zh-CN"
    zh = panel._fallback_text().splitlines()
    assert zh[0] == "工具配置 — 已启用 4/14 个工具 · 核心工具 4 个 (仅影响当前 Agent)"
    assert "[ ] todo (核心) [规划]: 已为当前 Agent 关闭" in zh
    assert "[ ] web_search [基础]: 全局停用" in zh
    # The agent-level wording never says "disable" (seed 001 §7.4).
    assert "禁用" not in panel._fallback_text() + panel._fallback_html()

    data, _metadata = panel._repr_mimebundle_() or ({}, {})
    assert data["text/plain"] == repr(panel)
    assert "application/vnd.jupyter.widget-view+json" in data
    assert panel._static_form.bundle()["text/plain"] == panel._fallback_text()[:400].rstrip() + "…"


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


# --- preview as ------------------------------------------------------------------------

def _preview_panel(catalog: ToolCatalog) -> tuple[ToolConfigPanel, AgentToolConfig]:
    config = AgentToolConfig(enabled=["describe_image", "delegate"], disabled=["todo"])
    panel = ToolConfigPanel(catalog, config, model_capabilities={"text", "vision"},
                            scene="crew", model="openai:gpt-4o")
    return panel, config


def test_preview_choices_come_from_the_catalog(catalog: ToolCatalog) -> None:
    panel, _config = _preview_panel(catalog)
    assert panel.preview_options == {
        "choices": [
            {"id": "model", "capabilities": ["text", "vision"],
             "label": "This agent's model (openai:gpt-4o)"},
            {"id": "all", "capabilities": ["text", "vision"], "label": "A model with vision"},
            {"id": "without:vision", "capabilities": ["text"],
             "label": "A model without vision"}],
        "scenes": ["crew"], "agent_scene": "crew",
        "scene_labels": {"": "No scene", "crew": "This agent's scene (crew)"}}
    assert panel.previewing_as is None and not panel.previewing

    @tool(capabilities={"audio"})
    def listen(path: str) -> str:
        """Transcribe a recording."""
        return path

    catalog.register(listen)
    ids = [choice["id"] for choice in panel.preview_options["choices"]]
    # With two capabilities, "without any" is a choice of its own.
    assert ids == ["model", "all", "without:audio", "without:vision", "none"]
    assert panel.preview_options["choices"][-1]["capabilities"] == ["text"]


def test_previewing_changes_states_and_reasons_but_never_the_config(
        catalog: ToolCatalog, sent: SentMessages) -> None:
    panel, config = _preview_panel(catalog)
    before = config.dump()
    own_states = dict(panel.states)
    assert "describe_image" in panel.enabled_tools

    reply = _request(panel, sent, "preview_as", capabilities=["text"], scene="crew")
    assert reply["ok"] is True
    assert reply["result"]["preview_as"]["choice"] == "without:vision"
    assert "describe_image" not in panel.enabled_tools
    assert panel.states["describe_image"] == {
        "state": "agent_enabled", "on": True, "available": False,
        # The previewed model is not the agent's: the reason does not name it.
        "reason": "Needs the 'vision' capability, which the current model does not have",
        "reason_code": "needs_capability",
        "reason_params": {"capabilities": ["vision"], "model": None}}
    assert panel.previewing_as == {
        "capabilities": ["text"], "scene": "crew", "choice": "without:vision",
        "text": "Previewing as a model without vision · this agent's scene (crew)",
        "changed": ["describe_image"]}
    assert panel.summary["filtered_out"] == 1
    assert config.dump() == before
    # The agent's own resolution is still the runtime's.
    assert "describe_image" in panel.resolution.names
    assert panel.shown_resolution.states == panel.resolution.states

    # Scene and capabilities together; the prompt preview follows what is shown.
    _request(panel, sent, "preview_as", capabilities=["text"], scene=None)
    assert panel.previewing_as is not None
    assert panel.previewing_as["text"] == "Previewing as a model without vision · no scene"
    assert panel.states["delegate"]["available"] is True
    names = [tool["name"] for tool in _request(panel, sent, "preview")["result"]["tools"]]
    assert names == panel.enabled_tools

    # The switches keep editing the real config while a preview is active.
    _request(panel, sent, "set_tool", name="todo", enabled=True)
    assert config.disabled == []
    assert panel.previewing_as is not None
    assert panel.states["todo"]["state"] == "default_enabled"
    _request(panel, sent, "set_tool", name="todo", enabled=False)
    assert config.dump() == before

    panel.lang = "zh-CN"
    assert panel.previewing_as["text"] == "正在预览：不具备 vision 能力的模型 · 不限场景"
    assert panel.states["describe_image"]["reason"] == "需要 'vision' 能力，当前模型不具备"
    panel.lang = "en"

    reply = _request(panel, sent, "reset_preview")
    assert reply["ok"] is True and reply["result"]["preview_as"] is None
    assert panel.previewing_as is None
    assert panel.states == own_states
    assert config.dump() == before


def test_a_preview_equal_to_the_agents_own_is_no_preview(catalog: ToolCatalog,
                                                         sent: SentMessages) -> None:
    panel, _config = _preview_panel(catalog)
    _request(panel, sent, "preview_as", capabilities=["vision", "text"], scene="crew")
    assert panel.previewing_as is None
    panel.preview_as(scene=None)  # the model's own capabilities are kept
    assert panel.previewing_as is not None
    assert panel.previewing_as["choice"] == "model"
    assert panel.previewing_as["capabilities"] == ["text", "vision"]
    panel.reset_preview()
    assert panel.previewing_as is None


def test_a_preview_follows_config_changes(catalog: ToolCatalog) -> None:
    panel, config = _preview_panel(catalog)
    panel.preview_as(model_capabilities=["text"])
    config.set_tool("describe_image", False, catalog)
    assert panel.previewing_as is not None and panel.previewing_as["changed"] == []
    assert panel.states["describe_image"]["state"] == "available"


@pytest.mark.parametrize(("payload", "error"), [
    ({"capabilities": ["telepathy"], "scene": None}, "unknown capability 'telepathy'"),
    ({"capabilities": ["text"], "scene": "moon"}, "unknown scene 'moon'"),
    ({"capabilities": "vision", "scene": None}, "capabilities must be a list"),
    ({"capabilities": [1], "scene": None}, "capabilities must be a list"),
    ({"capabilities": None, "scene": 3}, "scene must be a name"),
    ({"capabilities": None}, "preview_as needs capabilities"),
])
def test_bad_preview_requests_are_refused_and_change_nothing(
        catalog: ToolCatalog, sent: SentMessages, payload: dict[str, Any], error: str) -> None:
    panel, config = _preview_panel(catalog)
    panel.preview_as(model_capabilities=["text"])
    shown = dict(panel.states)
    before = config.dump()
    reply = _request(panel, sent, "preview_as", **payload)
    assert reply["ok"] is False
    assert error in reply["error"]
    assert panel.states == shown and panel.previewing_as is not None
    assert config.dump() == before


def test_preview_as_from_python_validates_too(catalog: ToolCatalog) -> None:
    panel, _config = _preview_panel(catalog)
    with pytest.raises(ValueError, match="the catalog's tools need: vision"):
        panel.preview_as(model_capabilities={"sonar"})
    with pytest.raises(TypeError):
        panel.preview_as(model_capabilities="vision")
    with pytest.raises(ValueError, match="mention: crew"):
        panel.preview_as(scene="chat")
    assert panel.previewing_as is None


def test_fallbacks_say_when_a_preview_is_shown(catalog: ToolCatalog) -> None:
    panel, _config = _preview_panel(catalog)
    panel.preview_as(model_capabilities=["text"])
    note = "Previewing as a model without vision · this agent's scene (crew)"
    assert f"» {note}" in panel._fallback_text()
    assert note.replace("'", "&#x27;") in panel._fallback_html()
    panel.reset_preview()
    assert "Previewing" not in panel._fallback_text() + panel._fallback_html()
