"""The demo notebooks in real JupyterLab: each runs top to bottom without an error and
renders its widgets; and the README's demo command (`neta-nb lab`) opens the quickstart,
whose offline turn plays in the chat view."""

from __future__ import annotations

import html
import re
import shutil
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from ..support.timing import poll_until
from .harness import JupyterLabServer, LabSession

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"

# What each notebook must show once it has run: the widget roots it renders.
RENDERS = {
    "01_quickstart.ipynb": [".neta-chat-view", ".neta-todo-card"],
    "02_tool_configuration.ipynb": [".neta-tool-config"],
    "03_thinking_levels.ipynb": [".neta-level-selector"],
    "04_sessions.ipynb": [".neta-chat-view", ".neta-sidebar"],
    "05_custom_tools.ipynb": [".neta-chat-view"],
    "06_real_providers.ipynb": [],
    "07_mcp_servers.ipynb": [".neta-tool-config", ".neta-chat-view"],
    "08_sub_agents.ipynb": [".neta-chat-view", ".neta-subagent-card"],
    "09_traces_and_replay.ipynb": [".neta-replay-report", ".neta-chat-view"],
    "10_batch_runs.ipynb": [".neta-batch-grid"],
    "12_agent_cells.ipynb": [".neta-chat-view", ".neta-nb-error-actions"],
}
# Notebooks whose last cell fails on purpose (to show what the page offers on an error).
FAILS_ON_PURPOSE = {"12_agent_cells.ipynb": "IntCastingNaNError"}
COVERED_ELSEWHERE = {
    # Its Run All asks for decisions on a page (accept the fix, allow the run).
    "11_notebook_agent.ipynb": "test_notebook_agent.py::test_demo_notebook_run_all",
    # Its chat runs the real Claude Code, found on the PATH of a JupyterLab of its own.
    "13_outside_agents.ipynb":
        "test_outside_demo.py::test_the_demo_notebook_runs_claude_code_with_an_approval",
}
# Notebooks whose Run All stops at an approval in the chat: the tool, and the button clicked.
APPROVALS = {"05_custom_tools.ipynb": ("delete_file", "allow_once")}

_START_RUN_ALL = """(path) => {
  const app = window.jupyterapp;
  const widget = Array.from(app.shell.widgets('main')).find((w) => w.context?.path === path);
  app.shell.activateById(widget.id);
  app.commands.execute('notebook:run-all-cells');  // not awaited: it waits for a click
}"""
_ALL_RAN = """(path) => {
  const widget = Array.from(window.jupyterapp.shell.widgets('main'))
    .find((w) => w.context?.path === path);
  const cells = Array.from(widget.content.model.cells).filter((c) => c.type === 'code');
  return widget.sessionContext.session?.kernel?.status === 'idle'
    && cells.every((c) => c.executionCount !== null);
}"""

_ERRORS = """(path) => {
  const widget = Array.from(window.jupyterapp.shell.widgets('main'))
    .find((w) => w.context?.path === path);
  const names = [];
  for (const cell of widget.content.model.cells) {
    if (cell.type !== 'code') continue;
    for (let i = 0; i < cell.outputs.length; i++) {
      const output = cell.outputs.get(i);
      if (output.type === 'error') names.push(output.toJSON().ename);
    }
  }
  return names;
}"""


ANSWER_DONE = """() => {
  const chat = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden) .neta-chat-view');
  return chat !== null && chat.textContent.includes('Sample data: first look')
    && chat.querySelector('.neta-skill-card-done') !== null
    && chat.querySelector('.neta-tool-card-done') !== null;
}"""


def test_the_demo_notebooks_are_all_listed() -> None:
    assert sorted(p.name for p in NOTEBOOKS.glob("*.ipynb")) == sorted(
        [*RENDERS, *COVERED_ELSEWHERE])


@pytest.mark.parametrize("name", sorted(RENDERS))
def test_demo_notebook_runs_and_renders_its_widgets(lab: LabSession, name: str,
                                                    screenshot_dir: Path) -> None:
    shutil.copy(NOTEBOOKS / name, lab.server.root_dir / name)
    shutil.copytree(NOTEBOOKS / "data", lab.server.root_dir / "data", dirs_exist_ok=True)
    lab.open_notebook(name)
    page = lab.page
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    if name in APPROVALS:
        # The chat is on the page, so the gated call asks there (not the notebook's policy).
        tool, decision = APPROVALS[name]
        page.evaluate(_START_RUN_ALL, name)
        card = panel.locator(".neta-chat-view .neta-chat-approval")
        card.wait_for(timeout=120_000)
        assert tool in (card.locator(".neta-chat-approval-title").text_content() or "")
        card.locator(f"button[data-decision='{decision}']").click()
        page.wait_for_function(_ALL_RAN, arg=name, timeout=180_000, polling=100)
    else:
        lab.run_all(name, timeout=180)
    # Read from the notebook's model: JupyterLab draws an error as stderr text.
    errors = page.evaluate(_ERRORS, name)
    assert errors == ([FAILS_ON_PURPOSE[name]] if name in FAILS_ON_PURPOSE else []), (
        panel.locator(".jp-OutputArea-output").all_inner_texts())
    for selector in RENDERS[name]:
        panel.locator(selector).first.wait_for(timeout=30_000)
    if name == "01_quickstart.ipynb":
        page.wait_for_function(ANSWER_DONE, timeout=30_000)
    if name == "03_thinking_levels.ipynb":
        # The demo ends back on a thinking model with the level it had: not greyed on Off.
        page.wait_for_function("""() => {
          const select = document.querySelector(
            '.jp-NotebookPanel:not(.lm-mod-hidden) .neta-level-selector .neta-level-select');
          return select !== null && select.value === 'high' && !select.disabled;
        }""", timeout=30_000)
    if name == "09_traces_and_replay.ipynb":
        # The notebook says: expand a card in the chat and copy its ids. They are there.
        card = panel.locator(".neta-chat-view .neta-tool-card", has_text="List files").first
        card.locator(".neta-tool-header").click()
        line = card.locator(".neta-trace-line")
        line.locator("button.neta-trace-copy", has_text="Copy trace ID").wait_for(timeout=30_000)
        assert len(line.locator(".neta-trace-ids").inner_text().split(" · ")[0]) == 32
        # The replay report draws the answers, not their markdown source.
        report = panel.locator(".neta-replay-report")
        assert report.locator("strong", has_text="Sample data").count() >= 1
        assert "**" not in report.inner_text()
        report.screenshot(path=screenshot_dir / "replay-report.png")
        card.screenshot(path=screenshot_dir / "replay-trace-ids.png")
    if name == "12_agent_cells.ipynb":
        # The %%agent cell's turn is its output, `-o` kept the answer, and the failing
        # cell's error offers Fix and Explain to the notebook's chat.
        panel.locator(".neta-chat-view").first.get_by_text(
            "Sample data: first look").first.wait_for(timeout=30_000)
        assert lab.wait_for_kernel_value(
            name, "globals().get('summary', '').splitlines()[:1]",
            "['## Sample data: first look']", timeout=60) == "['## Sample data: first look']"
        actions = panel.locator(".neta-nb-has-error-actions .neta-nb-error-actions-button")
        assert actions.all_inner_texts() == ["Fix", "Explain"]
        holder = panel.locator(".neta-nb-has-error-actions")
        holder.evaluate("(node) => node.scrollIntoView({block: 'start'})")
        lab.wait_for_frames()
        box = holder.bounding_box()
        assert box is not None
        page.screenshot(path=screenshot_dir / "agent-cells-notebook-fix.png",
                        clip={"x": box["x"], "y": box["y"], "width": box["width"],
                              "height": min(box["height"], 260)})
        # Fix: the demo's agent reads the notebook and proposes the failing cell's fix.
        actions.first.click()
        proposal = panel.locator(".neta-chat-view").last.locator(".neta-cell-edit")
        proposal.wait_for(timeout=60_000)
        assert ".dropna()" in proposal.inner_text()
    if name == "05_custom_tools.ipynb":
        # Allowed in the chat: it ran, the answer says so, and the policy was never asked.
        panel.locator(".neta-chat-view .neta-chat-assistant",
                      has_text="old.csv is deleted").wait_for(timeout=30_000)
        outputs = "\n".join(panel.locator(".jp-OutputArea-output").all_inner_texts())
        assert "approval asked" not in outputs
        assert "tool_result      delete_file\n" in outputs


# A server of its own: the test is that `neta-nb lab` itself starts JupyterLab right.
@pytest.fixture
def demo_command_lab(tmp_path: Path, lab_session: LabSession) -> Iterator[LabSession]:
    """A tab on a JupyterLab started by the README's demo command, opened at the URL that
    command hands to the user's browser (recorded by a stand-in browser), in the test
    session's Chromium (one Playwright per process)."""
    neta_nb = Path(sys.executable).with_name("neta-nb")
    opened = tmp_path / "opened-url.txt"
    browser = tmp_path / "browser.sh"
    browser.write_text(f'#!/bin/sh\nprintf %s "$1" > {opened}\n')
    browser.chmod(0o755)
    server = JupyterLabServer(tmp_path / "lab")
    server.launcher = [str(neta_nb), "lab", "--dir", str(server.root_dir), "--port",
                       str(server.port), "--", f"--ServerApp.browser={browser} %s"]
    server.start()
    try:
        poll_until(opened.exists, within=30, what="neta-nb lab never opened a browser")
        # What a user's browser gets: a local file that redirects to the notebook.
        redirect = Path(opened.read_text().removeprefix("file://")).read_text()
        target = re.search(r'href="(http://127\.0\.0\.1:\d+/[^"]+)"', redirect)
        assert target is not None, redirect
        session = LabSession(server, lab_session.page.context)
        session.page.goto(html.unescape(target.group(1)), wait_until="domcontentloaded")
        session.page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        session.page.evaluate("async () => { await window.jupyterapp.started; "
                              "await window.jupyterapp.restored; }")
        yield session
        session.close_all()
        session.close()
    finally:
        server.stop()


def test_demo_command_opens_the_quickstart_and_the_offline_turn_plays(
        demo_command_lab: LabSession) -> None:
    lab = demo_command_lab
    # `neta-nb lab --dir` copied every demo notebook and the data they use, and pointed
    # the browser at the quickstart.
    assert sorted(p.name for p in lab.server.root_dir.glob("*.ipynb")) == sorted(
        [*RENDERS, *COVERED_ELSEWHERE])
    assert (lab.server.root_dir / "data" / "sales.csv").is_file()
    assert "/lab/tree/01_quickstart.ipynb" in lab.page.url
    lab.page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.context?.path === '01_quickstart.ipynb'",
        timeout=60_000)
    page = lab.page
    # Run All as a user would, once the notebook's kernel is up.
    page.evaluate("""async () => {
      const widget = window.jupyterapp.shell.currentWidget;
      await widget.context.ready;
      await widget.sessionContext.ready;
      window.jupyterapp.commands.execute('notebook:run-all-cells');
    }""")
    # The saved outputs show no live widget: wait for this run's cards and answer.
    page.locator(".neta-chat-view .neta-skill-card-done").first.wait_for(timeout=180_000)
    page.wait_for_function(ANSWER_DONE, timeout=180_000)
    assert not lab.console_errors, lab.console_errors
