""""Preview as" in the tool configuration panel, in real JupyterLab: picking another model
re-resolves in the kernel and shows why a tool drops out, the agent's config never
changes, a refused preview shows its error beside the control, reset restores; pictures in
light and dark with a preview active."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from .harness import LabSession
from .panel_pictures import kernel_json, panel_pictures, wait_for_chips

pytestmark = pytest.mark.browser

SETUP = """
from neta_nb.tools import AgentToolConfig, ToolCatalog
from neta_nb.widgets import ToolConfigPanel
catalog = ToolCatalog.demo()
config = AgentToolConfig(enabled=["ask_user", "describe_image"], disabled=["todo"])
panel = ToolConfigPanel(catalog, config, model_capabilities={"text", "vision"}, scene="chat",
                        model="openai:gpt-4o")
display(panel)
""".strip()

PANEL = ".neta-tool-config"
NOTICE = f"{PANEL} .neta-tc-previewing"
CAPABILITIES = f"{PANEL} select[data-preview=capabilities]"
SCENE = f"{PANEL} select[data-preview=scene]"
CONFIG = {"inheritCoreTools": True, "enabled": ["ask_user", "describe_image"],
          "disabled": ["todo"]}
VISION_REASON = "Needs the 'vision' capability, which the current model does not have"


def _card(lab: LabSession, name: str) -> Any:
    return lab.page.locator(f"{PANEL} .neta-tc-tool[data-name='{name}']")


def _open(lab: LabSession, name: str) -> str:
    path = lab.run_notebook(name, [SETUP])
    lab.page.locator(PANEL).wait_for()
    wait_for_chips(lab, ["list_files", "read_file", "profile_table", "ask_user",
                          "describe_image"])
    return path


def test_preview_without_vision_then_reset(lab: LabSession) -> None:
    path = _open(lab, "panel_preview.ipynb")
    page = lab.page
    assert page.locator(NOTICE).is_hidden()
    options = page.locator(f"{CAPABILITIES} option").all_text_contents()
    assert options == ["This agent's model (openai:gpt-4o)", "A model with vision",
                       "A model without vision"]
    assert page.locator(f"{SCENE} option").all_text_contents() == [
        "No scene", "This agent's scene (chat)", "Scene 'crew'"]

    page.locator(CAPABILITIES).select_option(label="A model without vision")
    page.locator(NOTICE).wait_for()
    assert page.locator(f"{NOTICE} .neta-tc-previewing-text").text_content() == (
        "Previewing as a model without vision · this agent's scene (chat)")
    wait_for_chips(lab, ["list_files", "read_file", "profile_table", "ask_user"])
    card = _card(lab, "describe_image")
    assert card.locator(".neta-tc-reason").text_content() == VISION_REASON
    assert "neta-tc-tool-previewed" in (card.get_attribute("class") or "")
    assert card.locator(".neta-tc-tag-previewed").text_content() == "changed by preview"
    assert page.locator(f"{PANEL} .neta-tc-chip-unavailable").text_content() == "Describe image"
    # The switch still says what the agent has: on.
    assert card.locator("input[role=switch]").is_checked()
    assert page.locator(f"{PANEL} .neta-tc-enabled .neta-tc-section-title > span").first \
        .text_content() == "Available in this preview"
    assert page.locator(f"{PANEL} .neta-tc-summary-text").text_content() == (
        "tools available in this preview")
    # The kernel: previewing, the agent's config and its own resolution untouched.
    assert lab.wait_for_kernel_value(path, "panel.previewing", "True") == "True"
    assert kernel_json(lab, path, "config.dump()") == CONFIG
    assert "describe_image" in kernel_json(lab, path, "panel.resolution.names")

    # A switch flipped during a preview edits the real config.
    _card(lab, "word_count").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.enabled",
                                     "['ask_user', 'describe_image', 'word_count']") == (
        "['ask_user', 'describe_image', 'word_count']")
    assert page.locator(NOTICE).is_visible()
    _card(lab, "word_count").locator(".neta-switch").click()
    assert lab.wait_for_kernel_value(path, "config.enabled", "['ask_user', 'describe_image']"
                                     ) == "['ask_user', 'describe_image']"

    # Reset: the agent's own resolution again.
    page.locator(f"{NOTICE} .neta-tc-previewing-reset").click()
    page.locator(NOTICE).wait_for(state="hidden")
    wait_for_chips(lab, ["list_files", "read_file", "profile_table", "ask_user",
                          "describe_image"])
    assert card.locator(".neta-tc-reason").is_hidden()
    assert page.locator(f"{PANEL} .neta-tc-summary-text").text_content() == "tools enabled"
    assert "neta-tc-tool-previewed" not in (card.get_attribute("class") or "")
    assert page.locator(CAPABILITIES).evaluate("(n) => n.selectedOptions[0].textContent") == (
        "This agent's model (openai:gpt-4o)")
    assert lab.wait_for_kernel_value(path, "panel.previewing", "False") == "False"
    assert kernel_json(lab, path, "config.dump()") == CONFIG


def test_a_refused_preview_shows_its_error_beside_the_control(lab: LabSession) -> None:
    path = _open(lab, "panel_preview_refused.ipynb")
    page = lab.page
    # A view that offers a scene the kernel does not know (a stale or crafted page).
    page.locator(SCENE).evaluate("(n) => { n.options[2].value = '=moon'; }")
    page.locator(SCENE).select_option(value="=moon")
    error = page.locator(f"{PANEL} .neta-tc-preview-as .neta-tc-preview-as-error")
    error.wait_for()
    assert "unknown scene 'moon'" in (error.text_content() or "")
    # Shown beside the selects, not in the panel's general error line.
    assert page.locator(f"{PANEL} > .neta-tc-error").is_hidden()
    assert page.locator(NOTICE).is_hidden()
    # The selects show what is really shown again: the agent's scene.
    page.wait_for_function(f"() => document.querySelector('{SCENE}').selectedOptions[0]"
                           ".textContent === \"This agent's scene (chat)\"")
    assert lab.execute(path, "print(panel.previewing)").strip() == "False"
    assert kernel_json(lab, path, "config.dump()") == CONFIG
    # The next good preview clears the error.
    page.locator(CAPABILITIES).select_option(label="A model without vision")
    page.locator(NOTICE).wait_for()
    error.wait_for(state="hidden")


def _pictures(lab: LabSession, directory: Path, name: str) -> list[Path]:
    return panel_pictures(lab, directory / f"{name}.png", directory / f"{name}-top.png",
                          top_height=420)


def test_screenshots_with_a_preview_active(lab: LabSession, screenshot_dir: Path) -> None:
    path = _open(lab, "panel_preview_gallery.ipynb")
    page = lab.page
    lab.set_left_area(collapsed=True)
    page.locator(CAPABILITIES).select_option(label="A model without vision")
    page.locator(SCENE).select_option(label="Scene 'crew'")
    page.wait_for_function(f"() => document.querySelector('{NOTICE} .neta-tc-previewing-text')"
                           ".textContent === \"Previewing as a model without vision · "
                           "scene 'crew'\"")
    overflowing = page.evaluate(f"""() => Array.from(document.querySelectorAll(
        '{PANEL}, {PANEL} .neta-tc-tool, {PANEL} .neta-tc-previewing'))
        .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.className)""")
    assert overflowing == []
    pictures = _pictures(lab, screenshot_dir, "tool-config-panel-preview-light")
    lab.set_theme(dark=True)
    pictures += _pictures(lab, screenshot_dir, "tool-config-panel-preview-dark")
    lab.execute(path, "panel.lang = 'zh-CN'")
    page.wait_for_function(f"() => document.querySelector('{NOTICE} .neta-tc-previewing-text')"
                           ".textContent === '正在预览：不具备 vision 能力的模型 · 场景「crew」'")
    assert page.locator(f"{NOTICE} .neta-tc-previewing-reset").text_content() == "退出预览"
    assert _card(lab, "describe_image").locator(".neta-tc-reason").text_content() == (
        "需要 'vision' 能力，当前模型不具备")
    pictures += _pictures(lab, screenshot_dir, "tool-config-panel-preview-zh-dark")[1:]
    lab.set_left_area(collapsed=False)
    assert all(picture.stat().st_size > 1000 for picture in pictures)
