"""The URL the demo command prints opens the quickstart: a user who copies it from the
terminal (a container, a remote machine: no browser was opened for them) lands on the
notebook, not on the Launcher, and the notebook opened for the first time shows the chat
as the committed run ended (its saved form, once: no line about it above it, no repr)."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlparse

import pytest

from neta_nb.cli import FIRST_NOTEBOOK, copy_notebooks, demo_notebooks_source

from ..support.demo_command import JupyterLabProcess, demo_dry_run, demo_environment
from ..support.ports import free_port
from .harness import LAB_SETTINGS, JupyterLabServer, LabSession

pytestmark = pytest.mark.browser

# The quickstart's cells, drawn; the first code cell's outputs are where the chat will be,
# and until it runs they show its saved form.
_QUICKSTART_SHOWN = """() => {
  const widget = window.jupyterapp.shell.currentWidget;
  if (!widget || !widget.context || widget.context.path !== '01_quickstart.ipynb') return false;
  const form = widget.node.querySelector('.jp-CodeCell .neta-static-form');
  return form !== null && form.textContent.trim() !== '';
}"""


# Both turns of the quickstart have ended in the chat: two answers, the chat idle.
_BOTH_ANSWERS_DONE = """() => {
  const chat = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .neta-chat-view');
  if (!chat || chat.classList.contains('neta-is-running')) return false;
  const answers = Array.from(chat.querySelectorAll('.neta-chat-assistant'))
    .filter((node) => node.textContent.includes('What the tools returned'));
  return answers.length === 2 && !chat.querySelector('.neta-is-live');
}"""
ARTIFACTS = Path(__file__).parent / "artifacts" / "screenshots"
"""Pictures to look at that do not go to docs/ (a whole page, a demo answer)."""


def _top_of(lab: LabSession, cell: Any, path: Path, height: int = 640) -> None:
    """A PNG of the top of ``cell`` (its code and the start of its outputs): the saved
    chat under the quickstart's first cell is taller than the window."""
    cell.evaluate("node => node.scrollIntoView({block: 'start'})")
    lab.wait_for_frames()
    box = cell.bounding_box()
    assert box is not None
    path.parent.mkdir(parents=True, exist_ok=True)
    lab.page.screenshot(path=str(path), animations="disabled", clip={
        "x": max(0, box["x"] - 12), "y": max(0, box["y"] - 12),
        "width": box["width"] + 24, "height": min(box["height"] + 24, height)})


# A server of its own: the test is that the command `scripts/demo.sh` prints starts it.
@pytest.fixture
def printed_url_lab(tmp_path: Path, lab_session: LabSession) -> Iterator[LabSession]:
    """JupyterLab started with the command `bash scripts/demo.sh --dry-run` prints, on a
    copy of the demo notebooks, and a tab opened at the URL that JupyterLab then prints."""
    root = tmp_path / "lab" / "root"
    copy_notebooks(demo_notebooks_source()[0], root)  # what the command would have copied
    settings, workspaces = tmp_path / "settings", tmp_path / "workspaces"
    for relative, values in LAB_SETTINGS.items():
        (settings / relative).parent.mkdir(parents=True, exist_ok=True)
        (settings / relative).write_text(json.dumps(values))
    port = free_port()
    env = demo_environment(tmp_path / "jupyter")
    # JupyterLab options go through the demo command unchanged; these keep the server
    # quiet and on 127.0.0.1. No token is given: the printed URL must carry the real one.
    command, _ = demo_dry_run([
        "--dir", str(root), "--port", str(port), "--no-browser", "--ip=127.0.0.1",
        "--port-retries=0", "--LabApp.expose_app_in_browser=True", "--LabApp.news_url=None",
        "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate",
        "--LabApp.extension_manager=readonly", f"--LabApp.workspaces_dir={workspaces}",
        f"--LabApp.user_settings_dir={settings}"], env)
    lab = JupyterLabProcess(command, env=env, port=port, log=tmp_path / "lab.log", cwd=root)
    try:
        url = lab.wait_for_printed_url()
        token = parse_qs(urlparse(url).query)["token"][0]
        server = JupyterLabServer(tmp_path / "lab", token=token, port=port)
        session = LabSession(server, lab_session.page.context, url=url)
        yield session
        session.close_all()
        session.close()
    finally:
        lab.stop()


def test_the_printed_url_opens_the_quickstart(printed_url_lab: LabSession,
                                              screenshot_dir: Path) -> None:
    lab = printed_url_lab
    page = lab.page
    # (JupyterLab drops the token from the address bar once it has logged in.)
    assert urlparse(page.url).path == f"/lab/tree/{FIRST_NOTEBOOK}", page.url
    page.wait_for_function(_QUICKSTART_SHOWN, timeout=60_000)
    # The quickstart is the one document open, and no Launcher came up beside it.
    main = page.evaluate("""() => Array.from(window.jupyterapp.shell.widgets('main'))
                              .map((w) => w.context ? w.context.path : w.node.className)""")
    assert main == [FIRST_NOTEBOOK], main
    assert page.locator(".jp-Launcher").count() == 0
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    first_cell = panel.locator(".jp-CodeCell").first
    # Where the chat will be: the view's own output says nothing (there is no view to draw
    # yet), and the saved form after it shows the chat as the committed run ended, once.
    view, form = first_cell.locator(".jp-OutputArea-output").all()
    assert view.inner_text().strip() == "", view.inner_text()
    shown = form.inner_text()
    assert "ChatView(" not in shown and "messages shown" not in shown, shown
    assert "Run this cell to open the chat" not in shown
    assert "Plan · 3/3 done" in shown
    assert shown.count("What stands out in the profile:") == 2  # the chat's two answers
    # The demo answers its question: what stands out is the missing ratings.
    assert "customer_rating is empty in 13 of 40 rows (33 %)" in shown
    outputs = "\n".join(panel.locator(".jp-OutputArea-output").all_inner_texts())
    assert "ChatView(" not in outputs and "Message(assistant" not in outputs
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        _top_of(lab, first_cell, screenshot_dir / f"quickstart-first-open-{theme}.png")
        page.screenshot(path=str(ARTIFACTS / f"quickstart-first-open-page-{theme}.png"),
                        animations="disabled")
    lab.set_theme(dark=False)

    # Run All, as a newcomer would: the chat replaces the hint, and its offline answers say
    # what the tools returned; the notebook's second prompt is not the demo's, so that
    # answer also says it comes from the offline demo model.
    page.evaluate("""async () => {
      const widget = window.jupyterapp.shell.currentWidget;
      await widget.sessionContext.ready;
      window.jupyterapp.commands.execute('notebook:run-all-cells');
    }""")
    page.wait_for_function(_BOTH_ANSWERS_DONE, timeout=240_000)
    assert "Run this cell to open the chat" not in panel.locator(
        ".jp-CodeCell .jp-OutputArea-output").first.inner_text()
    answers = panel.locator(".neta-chat-view .neta-chat-assistant",
                            has_text="What the tools returned")
    first, last = answers.first.inner_text(), answers.last.inner_text()
    assert "sales.csv" in first and "sample_sales" not in first
    assert "customer_rating is empty in 13 of 40 rows" in first
    assert "This is the offline demo model." not in first
    assert "This is the offline demo model." in last and "ANTHROPIC_API_KEY" in last
    lab.wait_for_transitions()
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        lab.screenshot(answers.last, ARTIFACTS / f"quickstart-offline-answer-{theme}.png")
    # The README's first picture is what the demo shows after Run All: the chat with its
    # first turn (the prompt at the top of the pane: skill and tool cards, answer, plan),
    # the chat taller than the notebook's 640 px in a taller window to hold it whole.
    chat = panel.locator(".neta-chat-view").first
    window = page.viewport_size
    assert window is not None
    page.set_viewport_size({"width": window["width"], "height": 1500})
    lab.execute(FIRST_NOTEBOOK, "chat.height = '1240px'")
    chat.evaluate("(view) => new Promise((done) => { const check = () => "
                  "view.getBoundingClientRect().height > 1200 ? done(true) "
                  ": requestAnimationFrame(check); check(); })")
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        lab.wait_for_transitions(chat)
        offset = chat.evaluate("""(view) => {
          const pane = view.querySelector('.neta-chat-scroll');
          const prompt = view.querySelector('.neta-chat-user');
          pane.scrollTop += prompt.getBoundingClientRect().top
            - pane.getBoundingClientRect().top - 8;
          return prompt.getBoundingClientRect().top - pane.getBoundingClientRect().top;
        }""")
        lab.wait_for_frames()
        assert 0 <= offset < 40, offset  # the first prompt at the top of the pane
        lab.screenshot(chat, screenshot_dir / f"demo-after-run-all-{theme}.png")
    lab.set_theme(dark=False)
    page.set_viewport_size(window)
    assert not lab.console_errors, lab.console_errors
