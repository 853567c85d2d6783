"""What the tool configuration panel's browser tests share: reading kernel values,
waiting for the enabled chips, and screenshots (the whole panel in a tall window, and
its top at a glance)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from .harness import LabSession

PANEL = ".neta-tool-config"


def kernel_json(lab: LabSession, path: str, expression: str) -> Any:
    return json.loads(lab.execute(path, f"import json; print(json.dumps({expression}))"))


def wait_for_chips(lab: LabSession, expected: list[str]) -> None:
    lab.page.wait_for_function(
        f"""(expected) => JSON.stringify(Array.from(document.querySelectorAll(
        '{PANEL} .neta-tc-enabled .neta-tc-chip:not(.neta-tc-chip-unavailable)'))
        .map((n) => n.dataset.name)) === JSON.stringify(expected)""", arg=expected)


def scroll_to_top_of(lab: LabSession, selector: str) -> None:
    """Scroll the notebook so the element's top sits a little below the toolbar."""
    lab.page.evaluate("""(selector) => {
      const node = document.querySelector(selector);
      node.scrollIntoView({block: 'start'});
      let scroller = node.parentElement;
      while (scroller && scroller.scrollHeight <= scroller.clientHeight) {
        scroller = scroller.parentElement;
      }
      if (scroller) scroller.scrollTop -= 24;
    }""", selector)
    lab.wait_for_transitions()  # scrolled, laid out, and no hover transition left


def panel_pictures(lab: LabSession, whole: Path, top: Path, *, top_height: int) -> list[Path]:
    """Picture the panel whole (the panel is taller than the usual window: a tall one) and
    the first ``top_height`` pixels of it; returns both paths."""
    page = lab.page
    panel = page.locator(PANEL)
    viewport = page.viewport_size
    lab.set_viewport_size({"width": 1200, "height": 2600})
    try:
        paths = [lab.screenshot(panel, whole)]
    finally:
        lab.set_viewport_size(viewport)
    scroll_to_top_of(lab, PANEL)
    box = panel.bounding_box()
    assert box is not None
    top.parent.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(top), clip={"x": box["x"] - 12, "y": box["y"] - 12,
                                         "width": box["width"] + 24, "height": top_height},
                    animations="disabled")
    return [*paths, top]
