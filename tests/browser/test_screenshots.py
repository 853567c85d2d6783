"""Pictures of every component in JupyterLab Light and Dark (docs/screenshots/ when
NETA_NB_UPDATE_SCREENSHOTS=1), and a check that nothing overflows its box."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import gallery
from .harness import LabSession

pytestmark = pytest.mark.browser

# name -> index of the notebook cell whose output is pictured (gallery.CELLS order).
OUTPUTS = {
    "todo-card": 1,
    "tool-card": 2,
    "skill-card-running": 3,
    "skill-card-done": 4,
    "thinking-block-streaming": 5,
    "thinking-block-done": 6,
}


def _picture_all(lab: LabSession, notebook: str, directory: Path, theme: str) -> list[Path]:
    page = lab.page
    pictures = []
    for name, index in OUTPUTS.items():
        output = page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-OutputArea")
        pictures.append(lab.screenshot(output, directory / f"{name}-{theme}.png"))
    # Small inline components: the component itself; token stats also with their details.
    stats_area = page.locator(".neta-token-stats").first.locator(
        "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-OutputArea ')][1]")
    stats_area.evaluate("node => node.scrollIntoView({block: 'center'})")
    box = stats_area.bounding_box()
    assert box is not None
    clip = {"x": box["x"] - 8, "y": box["y"] - 8, "width": 560, "height": box["height"] + 16}
    path = directory / f"token-stats-{theme}.png"
    page.screenshot(path=str(path), clip=clip, animations="disabled")
    pictures.append(path)
    page.locator(".neta-token-stats").last.hover()
    page.locator(".neta-token-details.neta-is-open").wait_for()
    lab.wait_for_transitions()  # the details have faded in
    details = page.locator(".neta-token-details").bounding_box()
    assert details is not None
    path = directory / f"token-stats-details-{theme}.png"
    page.screenshot(path=str(path), clip={**clip, "height": details["y"] + details["height"]
                                          - clip["y"] + 12}, animations="disabled")
    pictures.append(path)
    page.mouse.move(0, 0)
    area = page.locator(".neta-level-selector").locator(
        "xpath=ancestor::div[contains(concat(' ', @class, ' '), ' jp-OutputArea ')][1]")
    area.evaluate("node => node.scrollIntoView({block: 'center'})")
    box = area.bounding_box()
    assert box is not None
    path = directory / f"thinking-level-selector-{theme}.png"
    page.screenshot(path=str(path), clip={"x": box["x"] - 8, "y": box["y"] - 8, "width": 320,
                                          "height": box["height"] + 16}, animations="disabled")
    pictures.append(path)
    # Collapsed, in Chinese: the active item stays in view.
    lab.execute(notebook, "todo.lang = 'zh-CN'; todo.collapsed = True")
    page.locator(".neta-todo-card.neta-is-collapsed .neta-todo-title",
                 has_text="任务规划").wait_for()
    lab.wait_for_transitions()  # the other rows have folded away
    output = page.locator(".jp-Notebook .jp-Cell").nth(OUTPUTS["todo-card"]).locator(
        ".jp-OutputArea")
    pictures.append(lab.screenshot(output, directory / f"todo-card-collapsed-zh-CN-{theme}.png"))
    lab.execute(notebook, "todo.lang = 'en'; todo.collapsed = False")
    page.locator(".neta-todo-card:not(.neta-is-collapsed) .neta-todo-title",
                 has_text="Plan").wait_for()
    return pictures


def test_screenshots_light_and_dark(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("gallery.ipynb", gallery.CELLS)
    page = lab.page
    page.locator(".neta-thinking-block.neta-is-streaming .neta-thinking-cursor").wait_for()
    lab.set_left_area(collapsed=True)
    overflowing = page.evaluate("""() => Array.from(document.querySelectorAll('.neta-root'))
      .filter((el) => el.scrollWidth > el.clientWidth + 1).map((el) => el.className)""")
    assert overflowing == []
    pictures = _picture_all(lab, path, screenshot_dir, "light")
    lab.set_theme(dark=True)
    pictures += _picture_all(lab, path, screenshot_dir, "dark")
    lab.set_left_area(collapsed=False)
    assert len(pictures) == 20
    assert all(path.stat().st_size > 1000 for path in pictures)
