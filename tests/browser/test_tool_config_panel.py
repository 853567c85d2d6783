"""ToolConfigPanel in real JupyterLab: it renders the kernel's resolution, a switch changes
the kernel's config, bulk operations, search and filters, language, theme, hostile text."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from .harness import LabSession
from .panel_pictures import kernel_json, panel_pictures, scroll_to_top_of, wait_for_chips

pytestmark = pytest.mark.browser

SETUP = """
from neta_nb.tools import AgentToolConfig, ToolCatalog
from neta_nb.widgets import ToolConfigPanel
catalog = ToolCatalog.demo()
config = AgentToolConfig(enabled=["ask_user", "describe_image"], disabled=["todo"])
panel = ToolConfigPanel(catalog, config, model_capabilities={"text"}, scene="chat",
                        model="openai:gpt-4o", system_prompt="You are a careful analyst.")
display(panel)
""".strip()

PANEL = ".neta-tool-config"


def _card(lab: LabSession, name: str) -> Any:
    return lab.page.locator(f"{PANEL} .neta-tc-tool[data-name='{name}']")


def _visible_cards(lab: LabSession) -> list[str]:
    return list(lab.page.evaluate(f"""() => Array.from(document.querySelectorAll(
        '{PANEL} .neta-tc-tool')).filter((n) => n.offsetParent !== null)
        .map((n) => n.dataset.name)"""))


def _chips(lab: LabSession) -> list[str]:
    return list(lab.page.evaluate(f"""() => Array.from(document.querySelectorAll(
        '{PANEL} .neta-tc-enabled .neta-tc-chip:not(.neta-tc-chip-unavailable)'))
        .map((n) => n.dataset.name)"""))


def test_panel_renders_the_kernels_resolution(lab: LabSession) -> None:
    path = lab.run_notebook("tool_config.ipynb", [SETUP])
    page = lab.page
    page.locator(PANEL).wait_for()
    expected = kernel_json(lab, path, "panel.enabled_tools")
    assert expected == ["list_files", "read_file", "profile_table", "ask_user"]
    wait_for_chips(lab, expected)
    assert page.locator(f"{PANEL} .neta-tc-summary-count").text_content() == "4"
    assert page.locator(f"{PANEL} .neta-tc-scope").text_content() == "Only affects this agent"
    # Seed category order, custom categories after; counts as the kernel computed them.
    categories = page.evaluate(f"""() => Array.from(document.querySelectorAll(
        '{PANEL} .neta-tc-category')).map((n) => [n.dataset.category,
        n.querySelector('.neta-tc-category-counts').textContent])""")
    assert categories == [
        ["base", "5 tools · 2 enabled"], ["planning", "1 tool · 0 enabled"],
        ["interaction", "1 tool · 1 enabled"], ["memory", "2 tools · 0 enabled"],
        ["skill", "1 tool · 1 enabled"], ["crew", "1 tool · 0 enabled"],
        ["vision", "1 tool · 0 enabled"], ["document", "1 tool · 0 enabled"],
        ["custom", "1 tool · 0 enabled"]]
    # States in words and the resolver's reasons.
    states = {name: _card(lab, name).locator(".neta-tc-state-text").text_content()
              for name in ("read_file", "ask_user", "todo", "web_search", "recall")}
    assert states == {"read_file": "Enabled by default", "ask_user": "Switched on for this agent",
                      "todo": "Switched off for this agent",
                      "web_search": "Disabled globally in tool management",
                      "recall": "Off for this agent"}
    assert _card(lab, "describe_image").locator(".neta-tc-reason").text_content() == (
        "Needs the 'vision' capability, which model openai:gpt-4o does not have")
    assert page.locator(f"{PANEL} .neta-tc-chip-unavailable").text_content() == "Describe image"
    assert _card(lab, "web_search").locator("input[role=switch]").is_disabled()
    assert _card(lab, "delegate").locator(".neta-tc-tag-scene").text_content() == "scene: crew"
    assert _card(lab, "read_file").locator(".neta-tc-tag-core").text_content() == "Core"
    # The agent-level wording never says "disable".
    for name in ("todo", "ask_user", "recall"):
        switch_title = _card(lab, name).locator(".neta-switch").get_attribute("title") or ""
        assert "disable" not in switch_title.lower()
    text = page.locator(PANEL).text_content() or ""
    assert "Disable " not in text and "disable " not in text

    # A change made in Python shows at once.
    lab.execute(path, "config.set_tool('recall', True, catalog)\ncatalog.disable('read_file')")
    wait_for_chips(lab, ["list_files", "profile_table", "ask_user", "recall"])
    assert _card(lab, "read_file").locator(".neta-tc-state-text").text_content() == (
        "Disabled globally in tool management")
    assert lab.execute(path, "print(repr(panel))").strip() == (
        "ToolConfigPanel(4 of 14 tools enabled)")


def test_switches_and_bulk_operations_change_the_kernels_config(lab: LabSession) -> None:
    path = lab.run_notebook("tool_config_toggle.ipynb", [SETUP])
    page = lab.page
    page.locator(PANEL).wait_for()

    # Switch on a non-core tool: it becomes an explicit grant.
    _card(lab, "word_count").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.enabled",
                                     "['ask_user', 'describe_image', 'word_count']") == (
        "['ask_user', 'describe_image', 'word_count']")
    wait_for_chips(lab, ["list_files", "read_file", "profile_table", "ask_user", "word_count"])
    assert _card(lab, "word_count").locator(".neta-tc-state-text").text_content() == (
        "Switched on for this agent")

    # Switch a switched-off core tool back on: it returns to "enabled by default".
    _card(lab, "todo").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.disabled", "[]") == "[]"
    assert lab.execute(path, "print(panel.states['todo']['state'])").strip() == (
        "default_enabled")
    card = _card(lab, "todo")
    page.wait_for_function("(n) => n.querySelector('.neta-tc-state-text').textContent"
                           " === 'Enabled by default'", arg=card.element_handle())
    assert card.locator("input[role=switch]").is_checked()

    # Switch a core tool off from its switch.
    _card(lab, "list_files").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.disabled", "['list_files']") == (
        "['list_files']")

    # A crafted message from the page cannot switch on a globally disabled tool.
    model_id = lab.execute(path, "print(panel.model_id)").strip()
    reply = page.evaluate("""async (modelId) => {
      // The widget manager, from the output's widget renderer (it holds a promise of it).
      const find = (widget) => {
        if (widget._manager?.promise) return widget._manager.promise;
        for (const child of widget.widgets ?? []) {
          const found = find(child);
          if (found) return found;
        }
        return null;
      };
      const notebook = window.jupyterapp.shell.currentWidget.content;
      let manager = null;
      for (const cell of notebook.widgets) {
        manager = manager ?? (cell.outputArea ? find(cell.outputArea) : null);
      }
      const model = await (await manager).get_model(modelId);
      return await new Promise((resolve) => {
        const onMessage = (message) => {
          if (message.kind === 'reply' && message.id === 'crafted') {
            model.off('msg:custom', onMessage);
            resolve(message);
          }
        };
        model.on('msg:custom', onMessage);
        model.send({ kind: 'set_tool', id: 'crafted', name: 'web_search', enabled: true });
      });
    }""", model_id)
    assert reply["ok"] is False
    assert "disabled globally" in reply["error"]
    assert kernel_json(lab, path, "config.dump()") == {
        "inheritCoreTools": True, "enabled": ["ask_user", "describe_image", "word_count"],
        "disabled": ["list_files"]}

    # Bulk operations, by their seed wording.
    page.get_by_role("button", name="Remove the tools added for this agent").click()
    assert lab.wait_for_kernel_value(path, "config.enabled", "[]") == "[]"
    page.get_by_role("button", name="Restore core defaults").click()
    assert lab.wait_for_kernel_value(path, "config.disabled", "[]") == "[]"
    wait_for_chips(lab, ["list_files", "read_file", "todo", "profile_table"])
    lab.execute(path, "config.set_tool('todo', False, catalog)")
    wait_for_chips(lab, ["list_files", "read_file", "profile_table"])
    page.get_by_role("button", name="Turn back on the core tools switched off").click()
    assert lab.wait_for_kernel_value(path, "config.disabled", "[]") == "[]"
    wait_for_chips(lab, ["list_files", "read_file", "todo", "profile_table"])
    assert page.locator(f"{PANEL} .neta-tc-error").is_hidden()


def test_search_filters_and_language(lab: LabSession) -> None:
    path = lab.run_notebook("tool_config_filters.ipynb", [SETUP])
    page = lab.page
    page.locator(PANEL).wait_for()
    assert len(_visible_cards(lab)) == 14

    page.locator(f"{PANEL} .neta-tc-search-input").fill("file")
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 5")
    # Name, label and description are searched ("Profile" contains "file").
    assert sorted(_visible_cards(lab)) == ["describe_image", "list_files", "profile_table",
                                           "read_file", "word_count"]
    assert lab.wait_for_kernel_value(path, "panel.search", "file") == "file"
    page.locator(f"{PANEL} .neta-tc-check input").check()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 3")
    assert _visible_cards(lab) == ["list_files", "read_file", "profile_table"]
    assert lab.wait_for_kernel_value(path, "panel.core_only", "True") == "True"

    page.locator(f"{PANEL} .neta-tc-no-match .neta-tc-link-button").wait_for(state="hidden")
    page.locator(f"{PANEL} .neta-tc-search-input").fill("nothing-like-this")
    page.locator(f"{PANEL} .neta-tc-no-match").wait_for()
    page.locator(f"{PANEL} .neta-tc-no-match .neta-tc-link-button").click()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 14")
    assert lab.wait_for_kernel_value(path, "(panel.search, panel.core_only)", "('', False)") == (
        "('', False)")

    segments = {filter_name: page.locator(f"{PANEL} .neta-tc-segment[data-filter='{filter_name}']")
                for filter_name in ("all", "enabled", "off", "globally_disabled")}
    segments["globally_disabled"].click()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 1")
    assert _visible_cards(lab) == ["web_search"]
    segments["enabled"].click()
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 4")
    # "Enabled" is what the summary counts: describe_image is switched on but the model
    # cannot use it (it is listed apart as unavailable), so it is not among them.
    assert _visible_cards(lab) == ["list_files", "read_file", "ask_user", "profile_table"]
    enabled_count = segments["enabled"].locator(".neta-tc-segment-count").text_content()
    assert enabled_count == page.locator(f"{PANEL} .neta-tc-summary-count").text_content() == "4"
    segments["off"].click()
    assert lab.wait_for_kernel_value(path, "panel.state_filter", "off") == "off"
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool:not([hidden])')"
                           ".length === 8")
    assert sorted(_visible_cards(lab)) == ["calculate", "delegate", "list_variables", "python",
                                           "recall", "remember", "todo", "word_count"]
    # Filters set from Python show in the view.
    lab.execute(path, "panel.state_filter = 'all'\npanel.collapsed = ['base']")
    page.wait_for_function(f"() => document.querySelector('{PANEL} .neta-tc-category"
                           "[data-category=base]').classList.contains('neta-is-collapsed')")
    page.locator(f"{PANEL} .neta-tc-category[data-category=base] .neta-tc-category-header").click()
    assert lab.wait_for_kernel_value(path, "panel.collapsed", "[]") == "[]"

    # Language: the seed's Chinese wording, in place.
    lab.execute(path, "panel.lang = 'zh-CN'")
    page.wait_for_function(f"() => document.querySelector('{PANEL} .neta-tc-scope')"
                           ".textContent === '仅影响当前 Agent'")
    labels = page.evaluate(f"""() => ({{
      filters: Array.from(document.querySelectorAll('{PANEL} .neta-tc-segment > span:first-child'))
        .map((n) => n.textContent),
      bulk: Array.from(document.querySelectorAll('{PANEL} .neta-tc-button'))
        .map((n) => n.textContent),
      todo: document.querySelector('{PANEL} [data-name=todo] .neta-tc-state-text').textContent,
      ask: document.querySelector('{PANEL} [data-name=ask_user] .neta-tc-state-text').textContent,
      web: document.querySelector('{PANEL} [data-name=web_search] .neta-tc-state-text')
        .textContent,
      read: document.querySelector('{PANEL} [data-name=read_file] .neta-tc-state-text')
        .textContent,
      vision: document.querySelector('{PANEL} [data-name=describe_image] .neta-tc-reason')
        .textContent,
      base: document.querySelector('{PANEL} [data-category=base] .neta-tc-category-title')
        .textContent,
      core: document.querySelector('{PANEL} .neta-tc-check span').textContent,
      text: document.querySelector('{PANEL}').textContent,
    }})""")
    assert labels["filters"] == ["全部", "已启用", "已关闭", "全局停用"]
    assert labels["bulk"] == ["恢复核心默认", "移除为此智能体添加的工具",
                              "重新启用被关闭的核心工具"]
    assert (labels["todo"], labels["ask"], labels["web"], labels["read"]) == (
        "已为当前 Agent 关闭", "已为当前 Agent 启用", "已在工具管理中全局停用", "默认启用")
    assert labels["vision"] == "需要 'vision' 能力，模型 openai:gpt-4o 不具备"
    assert (labels["base"], labels["core"]) == ("基础", "仅看核心工具")
    assert "禁用" not in labels["text"]
    switch_title = _card(lab, "ask_user").locator(".neta-switch").get_attribute("title")
    assert switch_title == "对当前 Agent 关闭"


def test_unknown_names_warnings_and_preview(lab: LabSession) -> None:
    path = lab.run_notebook("tool_config_notices.ipynb", [
        "from neta_nb.tools import AgentToolConfig, ToolCatalog\n"
        "from neta_nb.widgets import ToolConfigPanel\n"
        "catalog = ToolCatalog.demo()\n"
        "config = AgentToolConfig.load({'toolsets': ['memory', 'gadgets'],"
        " 'tools': {'disabled': ['ghost']}}, catalog)\n"
        "panel = ToolConfigPanel(catalog, config, system_prompt='Be brief.')\n"
        "panel",
    ])
    page = lab.page
    page.locator(f"{PANEL} .neta-tc-unknown code", has_text="ghost").wait_for()
    assert page.locator(f"{PANEL} .neta-tc-warning-list li").all_text_contents() == [
        "Legacy toolset 'gadgets' matches no tool category; it was skipped during migration."]
    page.locator(f"{PANEL} [data-forget=ghost]").click()
    assert lab.wait_for_kernel_value(path, "config.disabled", "[]") == "[]"
    page.locator(f"{PANEL} .neta-tc-unknown").wait_for(state="hidden")
    page.locator(f"{PANEL} .neta-tc-warnings .neta-tc-link-button").click()
    page.locator(f"{PANEL} .neta-tc-warnings").wait_for(state="hidden")
    assert lab.execute(path, "print(panel.warnings)").strip() == "[]"

    page.locator(f"{PANEL} .neta-tc-preview-summary").click()
    code = page.locator(f"{PANEL} .neta-tc-preview-body pre").nth(1)
    code.wait_for()
    assert page.locator(f"{PANEL} .neta-tc-preview-body pre").first.text_content() == "Be brief."
    definitions = json.loads(code.text_content() or "")
    assert [entry["name"] for entry in definitions] == kernel_json(lab, path,
                                                                    "panel.enabled_tools")
    # The open preview follows the config.
    lab.execute(path, "config.set_tool('calculate', True, catalog)")
    page.wait_for_function(f"""() => JSON.parse(document.querySelectorAll(
        '{PANEL} .neta-tc-preview-body pre')[1].textContent).some((t) => t.name === 'calculate')""")


HOSTILE = """
from neta_nb.tools import AgentToolConfig, ToolCatalog, tool
from neta_nb.widgets import ToolConfigPanel

@tool(category="<b onmouseover=\\"window.__netaPwned='cat'\\">x</b>",
      label="<img src=x onerror=\\"window.__netaPwned='label'\\">")
def hostile(text: str) -> str:
    \"\"\"<img src=x onerror="window.__netaPwned='img'">
    <script>window.__netaPwned='script'</script>\"\"\"
    return text

catalog = ToolCatalog([hostile])
config = AgentToolConfig(enabled=["hostile", "<script>x</script>"])
ToolConfigPanel(catalog, config)
""".strip()


def test_hostile_tool_text_renders_inert(lab: LabSession) -> None:
    lab.run_notebook("tool_config_hostile.ipynb", [HOSTILE])
    page = lab.page
    card = page.locator(f"{PANEL} .neta-tc-tool[data-name=hostile]")
    card.wait_for()
    # Structurally inert: nothing that could run is left in the panel's DOM.
    active = lab.active_content(PANEL)
    assert active == {"roots": 1, "scripts": 0, "frames": 0, "handlers": 0, "js_urls": 0}
    # And nothing ran: any image has loaded or failed and two frames have passed.
    lab.wait_for_handlers_to_have_run(PANEL)
    assert page.evaluate("() => window.__netaPwned === undefined")
    found = page.evaluate(f"""() => {{
      const root = document.querySelector('{PANEL}');
      const all = Array.from(root.querySelectorAll('*'));
      return {{
        scripts: root.querySelectorAll('script').length,
        images: root.querySelectorAll('img').length,
        bold: root.querySelectorAll('b').length,
        handlers: all.filter((el) => Array.from(el.attributes)
          .some((a) => a.name.startsWith('on'))).length,
        description: root.querySelector('.neta-tc-tool-desc').textContent,
        unknown: root.querySelector('.neta-tc-unknown code').textContent,
      }};
    }}""")
    assert (found["scripts"], found["images"], found["bold"], found["handlers"]) == (0, 0, 0, 0)
    assert found["description"].startswith("<img src=x onerror=")
    assert found["unknown"] == "<script>x</script>"


LARGE = """
from neta_nb.tools import AgentToolConfig, ToolCatalog, tool
from neta_nb.widgets import ToolConfigPanel
tools = []
for index in range(200):
    @tool(name=f"tool_{index:03d}", category=("base", "memory", "document", "extra")[index % 4],
          core=index % 20 == 0)
    def handler(text: str) -> str:
        \"\"\"A generated tool that echoes its text.\"\"\"
        return text
    tools.append(handler)
catalog = ToolCatalog(tools)
config = AgentToolConfig()
panel = ToolConfigPanel(catalog, config)
panel
""".strip()


def test_two_hundred_tools_update_in_place(lab: LabSession) -> None:
    path = lab.run_notebook("tool_config_large.ipynb", [LARGE])
    page = lab.page
    page.wait_for_function(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool').length"
                           " === 200")
    # Mark every card node; after a change the same nodes must still be there.
    page.evaluate(f"() => document.querySelectorAll('{PANEL} .neta-tc-tool')"
                  ".forEach((n) => {{ n.__netaMark = true; }})")
    _card(lab, "tool_007").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.enabled", "['tool_007']") == "['tool_007']"
    page.wait_for_function(f"() => document.querySelector('{PANEL} .neta-tc-summary-count')"
                           ".textContent === '11'")
    assert page.evaluate(f"() => Array.from(document.querySelectorAll('{PANEL} .neta-tc-tool'))"
                         ".every((n) => n.__netaMark === true)")


def _picture(lab: LabSession, directory: Path, theme: str) -> list[Path]:
    return panel_pictures(lab, directory / f"tool-config-panel-{theme}.png",
                          directory / f"tool-config-panel-top-{theme}.png", top_height=560)


def test_screenshots_light_and_dark(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("tool_config_gallery.ipynb", [SETUP])
    page = lab.page
    page.locator(PANEL).wait_for()
    lab.set_left_area(collapsed=True)
    overflowing = page.evaluate(f"""() => Array.from(document.querySelectorAll(
        '{PANEL}, {PANEL} .neta-tc-tool')).filter((el) => el.scrollWidth > el.clientWidth + 1)
        .map((el) => el.className)""")
    assert overflowing == []
    pictures = _picture(lab, screenshot_dir, "light")
    lab.set_theme(dark=True)
    pictures += _picture(lab, screenshot_dir, "dark")
    lab.execute(path, "panel.lang = 'zh-CN'")
    page.wait_for_function(f"() => document.querySelector('{PANEL} .neta-tc-scope')"
                           ".textContent === '仅影响当前 Agent'")
    scroll_to_top_of(lab, PANEL)
    box = page.locator(PANEL).bounding_box()
    assert box is not None
    zh = screenshot_dir / "tool-config-panel-zh-dark.png"
    page.screenshot(path=str(zh), clip={"x": box["x"] - 12, "y": box["y"] - 12,
                                        "width": box["width"] + 24, "height": 560},
                    animations="disabled")
    pictures.append(zh)
    lab.set_left_area(collapsed=False)
    assert all(picture.stat().st_size > 1000 for picture in pictures)
