"""The session list's search box and in-place rename, in real JupyterLab: typing a word
only one session's answer holds leaves that row, Escape brings every row back, a query
with no match says so; a double-click on a title renames the session in the kernel's
store, and a blank title restores the automatic one (the first prompt)."""

from __future__ import annotations

from pathlib import Path

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

THREE_SESSIONS = """
store = SessionStore(":memory:")
answers = {
    "Summarise last week's sales": "Sales rose 12% on strong pelican orders.",
    "Plan the team offsite": "Book the lakeside venue for Thursday.",
    "Draft the quarterly report": "The report opens with revenue and churn.",
}
ids = {}
for prompt, answer in answers.items():
    s = AgentSession(Agent("analyst", model=ScriptedProvider([[{"text": answer}]])),
                     store=store)
    await s.run(prompt)
    ids[prompt] = s.id
chat = ChatView(s, height="420px")
sidebar = SessionSidebar(store, chat=chat, height="420px")
import ipywidgets
ipywidgets.HBox([sidebar, chat])
""".strip()

ROWS = ".neta-sidebar-item"


def _both_themes(lab: LabSession, locator: object, directory: Path, name: str) -> None:
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(locator, directory / f"{name}-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


def _titles(lab: LabSession) -> list[str]:
    return [text.strip() for text in lab.page.locator(f"{ROWS} .neta-sidebar-title")
            .all_text_contents()]


def test_search_and_rename_sessions(lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("sidebar_search.ipynb", [chat_cells.IMPORTS, THREE_SESSIONS])
    page = lab.page
    lab.set_left_area(collapsed=True)
    sidebar = page.locator(".neta-sidebar")
    rows = sidebar.locator(ROWS)
    search = sidebar.locator("input.neta-sidebar-search-input")
    search.wait_for()
    assert search.get_attribute("type") == "search"
    assert search.get_attribute("placeholder") == "Search sessions"
    page.wait_for_function("(n) => document.querySelectorAll('.neta-sidebar-item').length"
                           " === n", arg=3)
    box = lab.page.locator(".widget-hbox").first

    # A word only one session's answer holds: that row alone.
    search.click()
    search.press_sequentially("pelican")
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-item').length"
                           " === 1")
    assert rows.first.locator(".neta-sidebar-title").text_content() == (
        "Summarise last week's sales")
    assert lab.wait_for_kernel_value(path, "sidebar.query", "pelican") == "pelican"
    lab.wait_for_transitions()
    _both_themes(lab, box, screenshot_dir, "sidebar-search-results")

    # Escape clears it: every row again.
    search.press("Escape")
    assert search.input_value() == ""
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-item').length"
                           " === 3")
    assert lab.wait_for_kernel_value(path, "repr(sidebar.query)", "''") == "''"

    # No match: the line says so.
    search.press_sequentially("zeppelin")
    empty = sidebar.locator(".neta-sidebar-empty")
    empty.filter(has_text="No session matches “zeppelin”").wait_for()
    assert rows.count() == 0
    lab.wait_for_transitions()
    _both_themes(lab, box, screenshot_dir, "sidebar-search-no-match")
    search.press("Escape")
    page.wait_for_function("() => document.querySelectorAll('.neta-sidebar-item').length"
                           " === 3")
    assert empty.is_hidden()

    # Rename: double-click the title, type, Enter.
    # Rows are found by id: while renaming, the title is an input's value, not text.
    session_id = lab.execute(path, "print(ids['Plan the team offsite'])").strip()
    row = sidebar.locator(f'{ROWS}[data-id="{session_id}"]')
    assert row.locator(".neta-sidebar-title").text_content() == "Plan the team offsite"
    row.locator(".neta-sidebar-title").dblclick()
    editor = row.locator("input.neta-sidebar-rename")
    editor.wait_for()
    assert editor.input_value() == "Plan the team offsite"
    # The double-click's first click opened the session, which moved its row to the top
    # of the list: the rename input stays open and focused through that.
    assert lab.wait_for_kernel_value(path, f"chat.session_id == {session_id!r}", "True"
                                     ) == "True"
    row.and_(page.locator(".neta-is-active")).wait_for()
    lab.wait_for_frames()
    assert editor.evaluate("node => node === document.activeElement")
    # Clicking inside the input neither opens anything nor closes the input.
    editor.click()
    assert editor.evaluate("node => node === document.activeElement")
    assert editor.is_visible()
    editor.fill("Offsite in spring")
    lab.wait_for_transitions()
    _both_themes(lab, box, screenshot_dir, "sidebar-rename-input")
    editor.press("Enter")
    row.locator(".neta-sidebar-title", has_text="Offsite in spring").wait_for()
    assert editor.count() == 0
    assert lab.wait_for_kernel_value(
        path, f"store.get_session({session_id!r}).title", "Offsite in spring"
    ) == "Offsite in spring"
    assert "Offsite in spring" in _titles(lab)

    # A blank title restores the automatic one; F2 on the focused row opens the input.
    row.focus()
    row.press("F2")
    editor = row.locator("input.neta-sidebar-rename")
    editor.wait_for()
    editor.fill("")
    editor.press("Enter")
    row.locator(".neta-sidebar-title", has_text="Plan the team offsite").wait_for()
    assert lab.wait_for_kernel_value(
        path, f"store.get_session({session_id!r}).title", "Plan the team offsite"
    ) == "Plan the team offsite"

    # Escape cancels a rename: nothing is sent.
    draft_id = lab.execute(path, "print(ids['Draft the quarterly report'])").strip()
    row = sidebar.locator(f'{ROWS}[data-id="{draft_id}"]')
    row.locator(".neta-sidebar-title").dblclick()
    editor = row.locator("input.neta-sidebar-rename")
    editor.fill("Should not stick")
    editor.press("Escape")
    assert editor.count() == 0
    assert row.locator(".neta-sidebar-title").text_content() == "Draft the quarterly report"
    assert lab.execute(path, "print(store.get_session(ids['Draft the quarterly report'])"
                             ".title)").strip() == "Draft the quarterly report"

    # The pencil that shows on hover renames too, without opening the session (the
    # double-click above opened the draft; the offsite's row is not the open one now).
    row = sidebar.locator(f'{ROWS}[data-id="{session_id}"]')
    row.hover()
    pencil = row.locator(".neta-sidebar-rename-button")
    page.wait_for_function("(node) => getComputedStyle(node).opacity === '1'",
                           arg=pencil.element_handle())
    assert pencil.get_attribute("aria-label") == "Rename session"
    assert "double-click" in (pencil.get_attribute("title") or "")
    _both_themes(lab, box, screenshot_dir, "sidebar-rename-hover")
    pencil.click()
    editor = row.locator("input.neta-sidebar-rename")
    editor.wait_for()
    assert editor.evaluate("node => node === document.activeElement")
    assert lab.execute(path, f"print(chat.session_id == {session_id!r})").strip() == "False"
    editor.press("Escape")
    assert editor.count() == 0

    # Clicking a row (one not open) still opens its session.
    row.click()
    assert lab.wait_for_kernel_value(
        path, f"chat.session_id == {session_id!r}", "True") == "True"
    assert sidebar.locator(".neta-inline-error:not([hidden])").count() == 0
