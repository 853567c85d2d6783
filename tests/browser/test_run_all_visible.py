"""Run All shows the turn: JupyterLab scrolls to the last cell on Run All, so the
quickstart's turn used to stream above the viewport, over before the user scrolled up to
it. Now a turn that starts where no view of its chat shows brings one on screen
(js/src/chat/keep-in-view.ts): the inline view is scrolled into the notebook's view, or the
chat's side panel (js/labextension/src/side-panel.ts) is revealed, and the side panel's
view streams the same turn as the inline one.

These run with JupyterLab's default windowing (4.6: cells off screen are not rendered) —
not the harness's "none" — in the quickstart itself and in a long notebook (there also
with "full" windowing, which takes cells far from the viewport out of the page), and in
Notebook 7. A sampler in the page records, every 50 ms while the chat streams, how much of
the streaming thinking block or answer lies inside every box that clips it (the chat's
scroller, the notebook's, the window)."""

from __future__ import annotations

import json
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .harness import LAB_SETTINGS, JupyterLabServer, LabSession, notebook7_server
from .test_chat_view import OPEN_THINKING

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOKS = ROOT / "notebooks"
QUICKSTART = "01_quickstart.ipynb"
ARTIFACTS = Path(__file__).parent / "artifacts" / "screenshots"

# JupyterLab's own windowing mode (its default), pop-ups off.
DEFAULT_WINDOWING = {key: value for key, value in LAB_SETTINGS.items()
                     if not key.startswith("@jupyterlab/notebook-extension")}

INLINE = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea .neta-chat-view"
SIDE = ".neta-nb-side-panel .neta-chat-view"

# Starts sampling the chat matching `selector`: while it runs and has a streaming
# response, how many pixels of its thinking block or answer text are on screen.
SAMPLER_JS = """
([name, selector]) => {
  const shown = (node) => {
    const box = node.getBoundingClientRect();
    let top = Math.max(box.top, 0);
    let bottom = Math.min(box.bottom, window.innerHeight);
    for (let p = node.parentElement; p && p !== document.body; p = p.parentElement) {
      if (getComputedStyle(p).overflowY === 'visible') continue;
      const clip = p.getBoundingClientRect();
      top = Math.max(top, clip.top);
      bottom = Math.min(bottom, clip.bottom);
    }
    return Math.max(0, bottom - top);
  };
  const samples = [];
  window.__netaSamplers = window.__netaSamplers || {};
  window.__netaSamplers[name] = { samples, timer: setInterval(() => {
    const chat = document.querySelector(selector);
    const live = chat && chat.classList.contains('neta-is-running')
      ? chat.querySelector('.neta-is-live') : null;
    if (!live) return;
    const parts = Array.from(live.querySelectorAll('.neta-thinking-block, .neta-chat-text'))
      .filter((node) => node.getBoundingClientRect().height > 0);
    if (parts.length === 0) return;
    samples.push({ t: performance.now(), shown: Math.max(...parts.map(shown)),
                   chat: shown(chat.querySelector('.neta-chat-scroll')),
                   chars: live.textContent.length });
  }, 50) };
  return true;
}
"""

STOP_SAMPLER_JS = """
(name) => {
  const sampler = window.__netaSamplers[name];
  clearInterval(sampler.timer);
  return sampler.samples;
}
"""

# `count` turns of the offline demo have ended in the chat: that many answers, the chat idle.
ANSWERS_DONE = """([selector, count]) => {
  const chat = document.querySelector(selector);
  if (!chat || chat.classList.contains('neta-is-running')) return false;
  const answers = Array.from(chat.querySelectorAll('.neta-chat-assistant'))
    .filter((node) => node.textContent.includes('What the tools returned'));
  return answers.length === count && !chat.querySelector('.neta-is-live');
}"""

RUN_ALL_JS = """async () => {
  const widget = window.jupyterapp.shell.currentWidget;
  await widget.context.ready;
  await widget.sessionContext.ready;
  window.jupyterapp.commands.execute('notebook:run-all-cells');
  return true;
}"""

# Where the notebook is scrolled to and how tall it is.
SCROLL_JS = """() => {
  const outer = window.jupyterapp.shell.currentWidget.node
    .querySelector('.jp-WindowedPanel-outer');
  return { top: outer.scrollTop, height: outer.scrollHeight, view: outer.clientHeight };
}"""


# The user scrolls the notebook to its last cell.
TO_THE_END_JS = """() => {
  const notebook = window.jupyterapp.shell.currentWidget.node;
  const outer = notebook.querySelector('.jp-WindowedPanel-outer');
  outer.scrollTop = outer.scrollHeight;
  const cells = notebook.querySelectorAll('.jp-Cell');
  const last = cells[cells.length - 1].getBoundingClientRect();
  outer.scrollTop -= outer.getBoundingClientRect().bottom - last.bottom - 24;
}"""


def start_sampler(page: Any, name: str, selector: str) -> None:
    page.evaluate(SAMPLER_JS, [name, selector])


def stop_sampler(page: Any, name: str) -> list[dict[str, float]]:
    return list(page.evaluate(STOP_SAMPLER_JS, name))


def assert_streamed_on_screen(samples: list[dict[str, float]], what: str) -> None:
    """The turn streamed (its text grew over many samples) and was on screen: from half a
    second after its first streamed text — the time a view has to come on screen — the
    chat's conversation is on screen and its streaming thinking or answer in sight, but
    for a moment at most: a new response below the fold until the chat follows it, or the
    page scrolling itself away (Notebook 7's late scroll to the last cell on Run All) until
    the chat comes back, within a few frames."""
    assert len(samples) >= 10, f"{what}: only {len(samples)} samples while streaming"
    assert samples[-1]["chars"] > samples[0]["chars"], f"{what}: nothing streamed"
    start = samples[0]["t"]
    late = [s for s in samples if s["t"] - start >= 500]
    assert late, f"{what}: the turn streamed for less than half a second"
    for key, enough in (("chat", 200), ("shown", 8)):
        since = None
        for sample in late:
            if sample[key] >= enough:
                since = None
                continue
            since = sample["t"] if since is None else since
            assert sample["t"] - since <= 250, (
                f"{what}: the {'chat' if key == 'chat' else 'streaming text'} was out of "
                f"sight for over 250 ms: {json.dumps(sample)}; first samples "
                f"{json.dumps(samples[:6])}")
    off = [s for s in late if s["chat"] < 200]
    assert len(off) <= max(2, len(late) // 20), (
        f"{what}: {len(off)} of {len(late)} samples had the chat off screen")


def copy_quickstart(root: Path, name: str = QUICKSTART) -> str:
    shutil.copy(NOTEBOOKS / QUICKSTART, root / name)
    shutil.copytree(NOTEBOOKS / "data", root / "data", dirs_exist_ok=True)
    return name


def long_quickstart(root: Path, name: str) -> str:
    """The quickstart with 15 cells of output before the chat and 30 after it: Run All
    ends far below the chat, with cells between it and the viewport left unrendered."""
    notebook = nbformat.read(NOTEBOOKS / QUICKSTART, as_version=4)
    filler = [nbformat.v4.new_code_cell(f"print('\\n'.join(f'line {{i}} of cell {n}' "
                                        f"for i in range(12)))") for n in range(45)]
    notebook.cells = [notebook.cells[0], *filler[:15], *notebook.cells[1:4], *filler[15:]]
    for cell in notebook.cells:
        if cell.cell_type == "code":
            cell.outputs, cell.execution_count = [], None
    nbformat.write(notebook, root / name)
    shutil.copytree(NOTEBOOKS / "data", root / "data", dirs_exist_ok=True)
    return name


# A server of its own: default windowing (see `notebook7` below).
@pytest.fixture(scope="module")
def windowed_lab(lab_session: LabSession, tmp_path_factory: pytest.TempPathFactory
                 ) -> Iterator[LabSession]:
    """A JupyterLab with its default windowing, in a tab of the shared Chromium."""
    server = JupyterLabServer(tmp_path_factory.mktemp("jupyterlab-windowed"),
                              settings=DEFAULT_WINDOWING)
    server.start()
    try:
        session = LabSession(server, lab_session.page.context)
        yield session
        session.close()
    finally:
        server.stop()


@pytest.fixture
def wlab(windowed_lab: LabSession) -> Iterator[LabSession]:
    windowed_lab.console_errors.clear()
    yield windowed_lab
    errors = list(windowed_lab.console_errors)
    windowed_lab.page.evaluate("() => { for (const w of Array.from("
                               "window.jupyterapp.shell.widgets('right'))) "
                               "if (w.hasClass('neta-nb-side-panel')) w.dispose(); }")
    windowed_lab.close_all()
    windowed_lab.set_theme(dark=False)
    assert not errors, "console errors:\n" + "\n".join(f"{e.type}: {e.text}" for e in errors)


def test_run_all_shows_the_quickstart_turn_and_the_side_panel_streams_the_next(
        wlab: LabSession, screenshot_dir: Path) -> None:
    lab, page = wlab, wlab.page
    name = copy_quickstart(lab.server.root_dir)
    lab.open_notebook(name)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content"
                         ".notebookConfig.windowingMode") == "contentVisibility"

    # Run All, as a newcomer does: the notebook scrolls to its last cell, and the turn
    # comes on screen while it streams.
    start_sampler(page, "inline", INLINE)
    page.evaluate(RUN_ALL_JS)
    page.locator(f"{INLINE}.neta-is-running .neta-is-live .neta-chat-text"
                 ":not(.neta-is-empty)").first.wait_for(timeout=120_000)
    lab.wait_for_frames()
    page.screenshot(path=str(screenshot_dir / "run-all-streaming-light.png"),
                    animations="disabled")
    page.wait_for_function(ANSWERS_DONE, arg=[INLINE, 2], timeout=240_000)
    assert_streamed_on_screen(stop_sampler(page, "inline"), "Run All, inline view")
    # The notebook did scroll for Run All (the chat is not at its top), and stayed on the
    # chat rather than on the last cell.
    scroll = page.evaluate(SCROLL_JS)
    assert scroll["top"] > 0 and scroll["top"] + scroll["view"] < scroll["height"] - 100

    # The side panel: another view of the same chat, the whole conversation in it.
    inline = page.locator(INLINE)
    inline.locator(".neta-chat-header-side").click()
    side = page.locator(SIDE)
    side.locator(".neta-chat-assistant").nth(1).wait_for(timeout=30_000)
    assert side.locator(".neta-chat-header-side").is_hidden()
    # Folded thinking is rendered when first opened in a view drawn from the saved state
    # (the inline view has it from streaming): opened in both, as a user does to read it.
    page.evaluate(OPEN_THINKING)
    assert (side.locator(".neta-chat-assistant").all_inner_texts()
            == inline.locator(".neta-chat-assistant").all_inner_texts())
    # The user scrolls the notebook to its end and types in the side panel: the turn
    # streams there, and in the inline view at the same time.
    page.evaluate(TO_THE_END_JS)
    top_before = page.evaluate(SCROLL_JS)["top"]
    start_sampler(page, "side", SIDE)
    textarea = side.locator(".neta-chat-textarea")
    textarea.fill("Once more for the side panel, please.")
    textarea.press("Enter")
    side.locator(".neta-is-live .neta-chat-text:not(.neta-is-empty)").wait_for(timeout=60_000)
    # Mid-stream, both views show the streaming answer (the inline view applies the same
    # batches on its own frame: it is waited for, not read at the side panel's moment).
    inline.locator(".neta-is-live .neta-chat-text:not(.neta-is-empty)").wait_for(timeout=30_000)
    assert inline.locator(".neta-is-live").count() == 1
    page.screenshot(path=str(screenshot_dir / "side-panel-streaming-light.png"),
                    animations="disabled")
    page.wait_for_function(ANSWERS_DONE, arg=[SIDE, 3], timeout=120_000)
    assert_streamed_on_screen(stop_sampler(page, "side"), "side panel view")
    last_side = side.locator(".neta-chat-assistant").last.inner_text()
    assert "Once more for the side panel" in last_side
    page.wait_for_function(ANSWERS_DONE, arg=[INLINE, 3])
    assert inline.locator(".neta-chat-assistant").last.inner_text() == last_side
    # The side panel was on screen: the notebook was left at its end, where the user
    # scrolled it.
    scroll = page.evaluate(SCROLL_JS)
    assert scroll["top"] >= top_before - 50, (top_before, scroll)
    for theme in ("dark", "light"):
        lab.set_theme(dark=theme == "dark")
        lab.wait_for_transitions()
        page.screenshot(path=str(screenshot_dir / f"side-panel-{theme}.png"),
                        animations="disabled")


def test_a_turn_reveals_a_collapsed_side_panel_but_not_under_a_typing_user(
        wlab: LabSession) -> None:
    lab, page = wlab, wlab.page
    name = copy_quickstart(lab.server.root_dir, "reveal.ipynb")
    lab.open_notebook(name)
    page.evaluate(RUN_ALL_JS)
    page.wait_for_function(ANSWERS_DONE, arg=[INLINE, 2], timeout=240_000)
    page.locator(INLINE).locator(".neta-chat-header-side").click()
    page.locator(SIDE).wait_for()

    # The right area collapsed, the notebook at its end: the next turn opens the panel.
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    page.evaluate(TO_THE_END_JS)
    assert page.locator(SIDE).is_hidden()
    top = page.evaluate(SCROLL_JS)["top"]
    lab.execute(name, 'task = session.start("A third time.")')
    page.wait_for_function("() => !window.jupyterapp.shell.rightCollapsed", timeout=30_000)
    page.locator(SIDE).wait_for(state="visible")
    assert abs(page.evaluate(SCROLL_JS)["top"] - top) < 50  # the notebook did not move
    lab.execute(name, "await task")

    # Collapsed again, and the user is typing in a cell as the turn starts: nothing moves
    # under their hands.
    page.evaluate("() => window.jupyterapp.shell.collapseRight()")
    editor = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Cell").last.locator(
        ".cm-content")
    editor.click()
    page.keyboard.type("# typing")
    top = page.evaluate(SCROLL_JS)["top"]
    lab.execute(name, 'task = session.start("A fourth time.")')
    page.locator(f"{SIDE}.neta-is-running").wait_for(state="attached", timeout=30_000)
    page.wait_for_timeout(1500)
    assert page.evaluate("() => window.jupyterapp.shell.rightCollapsed")
    assert abs(page.evaluate(SCROLL_JS)["top"] - top) < 50
    lab.execute(name, "await task")


# A server of its own: windowing mode "full" (see `notebook7` below).
@pytest.fixture(scope="module")
def full_windowing_lab(lab_session: LabSession, tmp_path_factory: pytest.TempPathFactory
                       ) -> Iterator[LabSession]:
    """A JupyterLab whose notebooks take the cells far from the viewport out of the page
    (windowing mode "full"), in a tab of the shared Chromium."""
    server = JupyterLabServer(tmp_path_factory.mktemp("jupyterlab-full-windowing"), settings={
        **DEFAULT_WINDOWING,
        "@jupyterlab/notebook-extension/tracker.jupyterlab-settings": {"windowingMode": "full"}})
    server.start()
    try:
        session = LabSession(server, lab_session.page.context)
        yield session
        session.close_all()
        session.close()
    finally:
        server.stop()


@pytest.mark.parametrize("windowing", ["contentVisibility", "full"])
def test_run_all_in_a_long_notebook_scrolls_the_chat_back_into_view(
        request: pytest.FixtureRequest, windowing: str) -> None:
    lab = request.getfixturevalue("wlab" if windowing == "contentVisibility"
                                  else "full_windowing_lab")
    page = lab.page
    name = long_quickstart(lab.server.root_dir, "long.ipynb")
    lab.open_notebook(name)
    assert page.evaluate("() => window.jupyterapp.shell.currentWidget.content"
                         ".notebookConfig.windowingMode") == windowing
    start_sampler(page, "long", INLINE)
    page.evaluate(RUN_ALL_JS)
    page.wait_for_function(ANSWERS_DONE, arg=[INLINE, 1], timeout=240_000)
    assert_streamed_on_screen(stop_sampler(page, "long"), f"Run All, long notebook, {windowing}")
    assert not lab.console_errors, lab.console_errors


# Its own servers, not the session's: these tests need Lab's and Notebook 7's default
# windowing, which the shared servers' user settings files turn off (LAB_SETTINGS), and a
# page reads those files when it loads.
@pytest.fixture(scope="module")
def notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    server = notebook7_server(tmp_path_factory.mktemp("notebook7-run-all"))
    server.settings = DEFAULT_WINDOWING
    server.start()
    try:
        yield server
    finally:
        server.stop()


def test_run_all_in_notebook_7_shows_the_turn_and_the_side_panel(
        notebook7: JupyterLabServer, lab_session: LabSession, screenshot_dir: Path) -> None:
    name = long_quickstart(notebook7.root_dir, "nb7_long.ipynb")
    page = lab_session.page.context.new_page()
    errors: list[str] = []
    page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
    try:
        page.goto(f"{notebook7.url}/notebooks/{name}?token={notebook7.token}",
                  wait_until="domcontentloaded")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        page.evaluate("async () => { await window.jupyterapp.started; "
                      "await window.jupyterapp.restored; }")
        chat = ".jp-NotebookPanel .jp-OutputArea .neta-chat-view"
        start_sampler(page, "nb7", chat)
        page.evaluate(RUN_ALL_JS)
        page.wait_for_function(ANSWERS_DONE, arg=[chat, 1], timeout=240_000)
        assert_streamed_on_screen(stop_sampler(page, "nb7"), "Run All, Notebook 7")

        page.locator(chat).locator(".neta-chat-header-side").click()
        side = page.locator(SIDE)
        side.locator(".neta-chat-assistant").first.wait_for(timeout=30_000)
        start_sampler(page, "nb7-side", SIDE)
        textarea = side.locator(".neta-chat-textarea")
        textarea.fill("And in Notebook 7?")
        textarea.press("Enter")
        page.wait_for_function(ANSWERS_DONE, arg=[SIDE, 2], timeout=120_000)
        assert_streamed_on_screen(stop_sampler(page, "nb7-side"), "Notebook 7 side panel")
        page.wait_for_timeout(300)
        page.screenshot(path=str(screenshot_dir / "side-panel-notebook7-light.png"),
                        animations="disabled")
        # Notebook 7 on a fresh profile reports one error of its own (a settings schema it
        # looks up); only errors from elsewhere are ours.
        assert [e for e in errors if "/static/notebook/" not in e] == []
    finally:
        page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                      " p.context.model.dirty = false; await p.sessionContext.shutdown(); }")
        page.close()
