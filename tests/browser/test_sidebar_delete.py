"""Deleting a session from the list, in real JupyterLab: a row's delete button asks in the
row (Cancel has the focus), Delete takes the row off the list and offers Undo, Undo brings
it back, and the kernel's store deletes it only once the undo is no longer offered; the
Delete key on a focused row asks too, and Escape cancels."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession
from .test_sidebar_search import THREE_SESSIONS

pytestmark = pytest.mark.browser

ROWS = ".neta-sidebar-item"


def _shoot(lab: LabSession, locator: object, directory: Path, name: str) -> None:
    lab.wait_for_transitions()
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(locator, directory / f"{name}-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


def test_delete_a_session_and_undo_it(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("sidebar_delete.ipynb", [chat_cells.IMPORTS, THREE_SESSIONS])
    page = lab.page
    lab.set_left_area(collapsed=True)
    sidebar = page.locator(".neta-sidebar")
    page.wait_for_function("(n) => document.querySelectorAll('.neta-sidebar-item').length"
                           " === n", arg=3)
    box = page.locator(".widget-hbox").first
    row = sidebar.locator(ROWS, has_text="Plan the team offsite")
    button = row.locator(".neta-sidebar-delete")

    # The button shows on hover; it asks in the row, the safe answer under the keyboard.
    row.hover()
    page.wait_for_function("() => [...document.querySelectorAll('.neta-sidebar-delete')]"
                           ".some(b => getComputedStyle(b).opacity === '1')")
    assert button.get_attribute("aria-label") == "Delete"
    button.click()
    confirm = row.locator(".neta-sidebar-confirm")
    confirm.wait_for()
    assert confirm.locator(".neta-sidebar-confirm-text").inner_text() == (
        "Delete this chat and its sub-agent runs?")
    assert confirm.locator(".neta-sidebar-confirm-cancel").evaluate(
        "n => n === document.activeElement")
    assert row.locator(".neta-sidebar-subtitle").is_hidden()
    _shoot(lab, box, screenshot_dir, "sidebar-delete-confirm")

    # Delete: off the list at once, Undo offered; the store still has it.
    confirm.locator(".neta-sidebar-confirm-delete").click()
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-item').length"
                           " === 2")
    undo = sidebar.locator(".neta-sidebar-undo")
    undo.wait_for()
    assert undo.locator(".neta-sidebar-undo-text").inner_text() == (
        "Deleted “Plan the team offsite”.")
    offsite = "ids['Plan the team offsite']"
    assert lab.execute(path, f"print(store.get_session({offsite}) is not None)").strip() == (
        "True")
    page.mouse.move(0, 0)
    _shoot(lab, box, screenshot_dir, "sidebar-delete-undo")

    # Undo: back in the list, and nothing offered any more.
    undo.locator(".neta-sidebar-undo-button").click()
    row.wait_for()
    assert undo.is_hidden()
    assert lab.wait_for_kernel_value(path, "sidebar.deleted", "{}") == "{}"

    # The keyboard: Delete on a focused row asks; Escape cancels, the row keeps the focus.
    row.focus()
    page.keyboard.press("Delete")
    confirm.wait_for()
    page.keyboard.press("Escape")
    assert confirm.is_hidden() and row.evaluate("n => n === document.activeElement")

    # Deleted for good once the undo is no longer offered (the list closing, here).
    row.focus()
    page.keyboard.press("Delete")
    confirm.locator(".neta-sidebar-confirm-delete").click()
    undo.wait_for()
    lab.execute(path, "sidebar.close()")
    assert lab.execute(path, f"print(store.get_session({offsite}))").strip() == "None"
    lab.set_left_area(collapsed=False)


def test_the_list_speaks_chinese_when_deleting(lab: LabSession, screenshot_dir: Path) -> None:
    cell = THREE_SESSIONS.replace("import ipywidgets", "sidebar.lang = 'zh-CN'\nimport ipywidgets")
    path = lab.run_notebook("sidebar_delete_zh.ipynb", [chat_cells.IMPORTS, cell])
    page = lab.page
    lab.set_left_area(collapsed=True)
    sidebar = page.locator(".neta-sidebar")
    row = sidebar.locator(ROWS, has_text="Draft the quarterly report")
    row.wait_for()
    row.hover()
    row.locator(".neta-sidebar-delete").click()
    confirm = row.locator(".neta-sidebar-confirm")
    confirm.wait_for()
    assert confirm.locator(".neta-sidebar-confirm-delete").inner_text() == "删除"
    confirm.locator(".neta-sidebar-confirm-delete").click()
    undo = sidebar.locator(".neta-sidebar-undo")
    undo.wait_for()
    assert undo.inner_text().startswith("已删除“Draft the quarterly report”。")
    page.mouse.move(0, 0)
    lab.wait_for_transitions()
    lab.screenshot(page.locator(".widget-hbox").first,
                   screenshot_dir / "sidebar-delete-undo-zh.png")
    lab.execute(path, "sidebar.undo_delete()")
    row.wait_for()
    # A session with no prompt yet is "New chat" in the list's language, not the store's
    # (the one the chat moved to when its session was deleted, and one more).
    lab.execute(path, "chat.new_chat(); chat.session.flush(); sidebar.refresh()")
    page.wait_for_function(
        "() => [...document.querySelectorAll('.neta-sidebar-item .neta-sidebar-title')]"
        ".filter((title) => title.textContent === '新建对话').length === 2")
    assert sidebar.locator(ROWS, has_text="New chat").count() == 0
    lab.set_left_area(collapsed=False)
