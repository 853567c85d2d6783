"""Widget state stays small in a real notebook (issue 21): a chat view showing a 5 MB tool
result is saved with its widget state, as JupyterLab does with "Save widget state" on,
into an ``.ipynb`` under 512 KB that reopens rendering the chat — the result's preview with
a note, and, the kernel that held the rest being gone, a clear word instead of a wait. And
a session another process runs opens read-only from the session list."""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import nbformat
import pytest

from tests.support.owner_child import start_owner

from ..support.timing import poll_until
from . import chat_cells
from .harness import LAB_SETTINGS, JupyterLabServer, LabSession

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
WIDGET_STATE = "application/vnd.jupyter.widget-state+json"
SAVE_WIDGET_STATE = {"@jupyter-widgets/jupyterlab-manager/plugin.jupyterlab-settings":
                     {"saveState": True}}

FIVE_MB_CHAT = """
BIG = "".join(f"line {n:07d} of a very long tool output\\n" for n in range(140_000))

@tool(core=True, label="Dump table")
def dump_table() -> str:
    \"\"\"Returns the whole table.\"\"\"
    return BIG

usage = lambda i, o: UsageUpdate(Usage(input_tokens=i, output_tokens=o))
provider = FakeProvider([
    [TextDelta("Dumping the table."), ToolCallReady("c1", "dump_table", {}), usage(900, 40),
     StreamDone("tool_use")],
    [TextDelta("The table has **140,000 lines**; the card holds all of them."),
     usage(1200, 30), StreamDone("end_turn")]], context_window=200_000)
session = AgentSession(Agent("analyst", model=provider, max_tool_result_chars=10_000_000),
                       ToolCatalog([dump_table]))
await session.run("Dump the whole table")
chat = ChatView(session, height="520px")
chat
""".strip()

RESULT_NOTE = ".neta-tool-sections > .neta-cut-note:not([hidden])"


# A server of its own: "Save widget state" on is a user setting, read when the page loads,
# and the shared server keeps JupyterLab's default (off), which other files check.
@pytest.fixture(scope="module")
def saving_lab(lab_session: LabSession, tmp_path_factory: pytest.TempPathFactory
               ) -> Iterator[LabSession]:
    """A JupyterLab that saves widget state into notebooks, in a tab of the shared
    Chromium."""
    server = JupyterLabServer(tmp_path_factory.mktemp("jupyterlab-save-state"),
                              settings={**LAB_SETTINGS, **SAVE_WIDGET_STATE})
    server.start()
    session = LabSession(server, lab_session.page.context)
    try:
        yield session
    finally:
        session.close()
        server.stop()


@pytest.fixture
def lab_saving(saving_lab: LabSession) -> Iterator[LabSession]:
    saving_lab.console_errors.clear()
    yield saving_lab
    errors = list(saving_lab.console_errors)
    saving_lab.close_all()
    saving_lab.set_theme(dark=False)
    assert not errors, "console errors:\n" + "\n".join(f"{e.type}: {e.text}" for e in errors)


def _both_themes(lab: LabSession, locator: object, directory: Path, name: str) -> None:
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.screenshot(locator, directory / f"{name}-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)


def test_a_saved_chat_with_a_five_megabyte_result_stays_small_and_reopens(
        lab_saving: LabSession, screenshot_dir: Path) -> None:
    lab = lab_saving
    path = lab.run_notebook("big_result.ipynb", [chat_cells.IMPORTS, FIVE_MB_CHAT])
    # The kernel runs this tree's package (its bundle is what the page shows).
    assert lab.execute(path, "import neta_nb; print(neta_nb.__file__)").strip().startswith(
        str(ROOT))
    page = lab.page
    card = page.locator(".neta-chat-view .neta-tool-card")
    card.locator(".neta-tool-header").click()
    note = card.locator(RESULT_NOTE)
    note.wait_for()
    big = int(lab.execute(path, "print(len(BIG))"))
    assert note.locator(".neta-cut-note-text").text_content() == (
        f"Showing 2,000 of {big:,} characters")
    assert card.locator(".neta-tool-result-plain").count() == 1  # a preview is plain text
    chat_view = page.locator(".neta-chat-view")
    note.scroll_into_view_if_needed()  # the note under the preview, in the picture
    lab.wait_for_transitions()
    lab.screenshot(chat_view, screenshot_dir / "chat-result-cut-light.png")
    lab.set_theme(dark=True)
    lab.screenshot(chat_view, screenshot_dir / "chat-result-cut-dark.png")

    # "Show all" fetches the whole result from the kernel, into the page only. (Pictures
    # dark first: restyling 5 MB of text for a theme change is slow on a loaded machine.)
    note.locator("button", has_text="Show all").click()
    card.locator(RESULT_NOTE).wait_for(state="detached", timeout=60_000)  # the whole is in
    assert card.locator(".neta-tool-result-plain").evaluate("n => n.textContent.length") == big
    lab.wait_for_transitions()
    lab.screenshot(page.locator(".neta-chat-view"), screenshot_dir / "chat-result-whole-dark.png")
    lab.set_theme(dark=False)
    lab.screenshot(page.locator(".neta-chat-view"),
                   screenshot_dir / "chat-result-whole-light.png")

    # Saved as JupyterLab saves, with the widget state in the notebook's metadata.
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    file = lab.server.root_dir / path
    poll_until(lambda: WIDGET_STATE in nbformat.read(file, as_version=4).metadata.get(
        "widgets", {}), 20, "the notebook saved with its widget state")
    size = file.stat().st_size
    assert size < 512 * 1024, f"{size:,} bytes"
    state = nbformat.read(file, as_version=4).metadata["widgets"][WIDGET_STATE]["state"]
    (chat_model,) = [m for m in state.values() if m["state"].get("_component") == "chat-view"]
    (saved_card,) = [c for item in chat_model["state"]["messages"] for c in item.get("cards", [])]
    # What "Show all" fetched stayed in the page: the saved state holds the preview.
    assert saved_card["result_chars"] == big and len(saved_card["result"]) == 2_000

    # Reopened, its kernel gone: the chat renders from the saved state.
    lab.close_all()
    lab.open_notebook(path)
    reopened = page.locator(".neta-chat-view")
    reopened.locator(".neta-chat-text", has_text="140,000 lines").wait_for(timeout=30_000)
    card = reopened.locator(".neta-tool-card")
    card.locator(".neta-tool-header").click()
    note = card.locator(RESULT_NOTE)
    note.wait_for()
    # The card opens with a transition, and the view follows its growth to the bottom:
    # the button is clicked where it comes to rest.
    lab.wait_for_transitions(card)
    note.locator("button", has_text="Show all").click()
    error = note.locator(".neta-cut-note-error")
    error.filter(has_text="it is gone").wait_for(timeout=5_000)  # at once, not a timeout
    error.scroll_into_view_if_needed()
    lab.wait_for_transitions()
    _both_themes(lab, reopened, screenshot_dir, "chat-reopened-kernel-gone")


def _has_draft(db: Path) -> bool:
    from neta_nb import SessionStore

    return SessionStore(db).load_draft("s_shared") is not None


READ_ONLY = """
from neta_nb import SessionStore
store = SessionStore({db!r})
local = AgentSession(Agent("analyst", model=ScriptedProvider()), store=store)
await local.run("Summarise last week's sales")
chat = ChatView(local, height="420px")
sidebar = SessionSidebar(store, chat=chat, height="420px")
import ipywidgets
ipywidgets.HBox([sidebar, chat])
"""


def test_another_kernels_session_opens_read_only(lab: LabSession, tmp_path: Path,
                                                 screenshot_dir: Path) -> None:
    db, marker = tmp_path / "sessions.sqlite3", tmp_path / "streaming"
    child = start_owner(db, "s_shared", marker)
    try:
        poll_until(marker.exists, 30, "the owner's turn to stream")
        poll_until(lambda: _has_draft(db), 10, "the owner's draft checkpoint")
        path = lab.run_notebook("read_only.ipynb", [chat_cells.IMPORTS,
                                                    READ_ONLY.format(db=str(db))])
        page = lab.page
        page.evaluate("() => window.jupyterapp.shell.collapseLeft()")
        row = page.locator(".neta-sidebar-item", has_text="a long question")
        row.locator(".neta-sidebar-running", has_text="another kernel").wait_for()
        row.click()
        bar = page.locator(".neta-chat-read-only")
        bar.wait_for()
        assert f"process {child.pid}" in (bar.text_content() or "")
        view = page.locator(".neta-chat-view")
        view.locator(".neta-chat-text", has_text="A partial answer").wait_for()
        assert page.locator(".neta-chat-input").is_hidden()
        assert bar.locator(".neta-chat-take-over").is_hidden()
        assert lab.execute(path, "print(chat.session is None, chat.read_only['busy'])"
                           ).strip() == "True True"
        lab.wait_for_transitions()
        _both_themes(lab, page.locator(".widget-hbox").first, screenshot_dir,
                     "chat-read-only")

        # The owner dies: Refresh shows the turn is over, and it continues here.
        os.kill(child.pid, signal.SIGKILL)
        child.wait(10)
        bar.locator(".neta-chat-refresh").click()
        bar.locator(".neta-chat-take-over").wait_for()
        row.locator(".neta-sidebar-running").wait_for(state="detached")  # the list follows
        lab.wait_for_transitions()
        lab.screenshot(page.locator(".widget-hbox").first,
                       screenshot_dir / "chat-read-only-ended-light.png")
        bar.locator(".neta-chat-take-over").click()
        page.locator(".neta-chat-input").wait_for()
        assert bar.is_hidden()
        assert lab.wait_for_kernel_value(path, "chat.session is not None", "True") == "True"
        view.locator(".neta-chat-status", has_text="kernel stopped").wait_for()
        assert view.locator(".neta-chat-text", has_text="A partial answer").count() == 1
        page.evaluate("() => window.jupyterapp.shell.expandLeft()")
    finally:
        if child.poll() is None:
            child.kill()
            child.wait(10)


LONG_ANSWER = """
WORDS = " ".join(f"word{i}" for i in range(5_000))  # some 44,000 characters
provider = FakeProvider([[TextDelta(WORDS[:20_000]), TextDelta(WORDS[20_000:]),
                          UsageUpdate(Usage(input_tokens=10, output_tokens=9_000)),
                          StreamDone("end_turn")]], context_window=200_000)
session = AgentSession(Agent("writer", model=provider))
chat = ChatView(session, height="360px")
chat
""".strip()


def test_a_long_answer_streamed_here_stays_whole_and_a_reload_fetches_it(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("long_answer.ipynb", [chat_cells.IMPORTS, LONG_ANSWER])
    page = lab.page
    lab.send_in_chat("Write a lot")
    view = page.locator(".neta-chat-view")
    view.locator(".neta-chat-text", has_text="word4999").wait_for()
    page.wait_for_function("() => !document.querySelector('.neta-chat-view')"
                           ".classList.contains('neta-is-running')")
    # This view streamed the answer: it shows all of it, and no note.
    assert view.locator(".neta-cut-note:not([hidden])").count() == 0
    # A reload draws from the kernel's state, which holds a preview. (Saved first, so the
    # notebook reopens with its output; the model comes from the live kernel.)
    page.evaluate("async () => { await window.jupyterapp.commands.execute('docmanager:save'); }")
    lab.reload()
    note = view.locator(".neta-cut-note:not([hidden])")
    note.wait_for(timeout=60_000)
    total = int(lab.execute(path, "print(len(WORDS))"))
    assert note.locator(".neta-cut-note-text").text_content() == (
        f"Showing 20,000 of {total:,} characters")
    assert view.locator(".neta-chat-text", has_text="word4999").count() == 0
    note.scroll_into_view_if_needed()
    lab.wait_for_transitions()
    _both_themes(lab, view, screenshot_dir, "chat-long-answer-cut")
    note.locator("button", has_text="Show all").click()
    view.locator(".neta-chat-text", has_text="word4999").wait_for()
    assert view.locator(".neta-cut-note:not([hidden])").count() == 0
