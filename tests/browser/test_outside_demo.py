"""The outside-agent demo notebook (notebooks/13_outside_agents.ipynb) in real JupyterLab,
with the real Claude Code (``claude-agent-acp``, locked in tests/fixtures/acp_agents) on
the kernel's ``PATH`` and its model the demo's local scripted server: Run All opens the
chat and starts the turn, the plan and the thinking appear, the write asks in the chat;
the approval shows the file's diff; allowed, the file is written, its card shows the diff
and links the file (a click opens it in JupyterLab's editor), the plan is ticked off and the
answer says so. Pictures of the plan under way and the approval, then of the thinking and
the diff card, light and dark."""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb.providers.scripted.demo_outside_script import PLAN

from ..support.outside_agents import BIN, require_locked
from .harness import JupyterLabServer, LabSession, chromium_missing_reason
from .test_demo_notebooks import _ERRORS, NOTEBOOKS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
NAME = "13_outside_agents.ipynb"


@pytest.fixture(scope="module")
def outside_lab(tmp_path_factory: pytest.TempPathFactory,
                lab_session: LabSession) -> Iterator[LabSession]:
    """A JupyterLab of this file whose kernels find the locked Claude Code on ``PATH``
    (and this checkout's code), in a tab of the test session's Chromium."""
    require_locked(BIN / "claude-agent-acp", "the locked Claude Code agent")
    reason = chromium_missing_reason()
    if reason:
        pytest.skip(reason)
    server = JupyterLabServer(tmp_path_factory.mktemp("outside-lab"))
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("PATH", f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
        patch.setenv("PYTHONPATH", str(ROOT))
        server.start()
    try:
        session = LabSession(server, lab_session.page.context)
        yield session
        session.close_all()
        session.close()
    finally:
        server.stop()


def test_the_demo_notebook_runs_claude_code_with_an_approval(
        outside_lab: LabSession, screenshot_dir: Path) -> None:
    lab = outside_lab
    # The folder the agent works in starts empty (a second run finds the first's note).
    shutil.rmtree(lab.server.root_dir / "outside-demo", ignore_errors=True)
    shutil.copy(NOTEBOOKS / NAME, lab.server.root_dir / NAME)
    lab.open_notebook(NAME)
    # Run All ends at once: the turn runs in the background and waits in the chat.
    lab.run_all(NAME, timeout=180)
    page = lab.page
    assert page.evaluate(_ERRORS, NAME) == []
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    outputs = "\n".join(panel.locator(".jp-OutputArea-output").all_inner_texts())
    assert "not installed" not in outputs and "The demo's model is serving: True" in outputs
    chat = panel.locator(".neta-chat-view")

    # The plan (three items, the first under way), the thinking, then the write asks.
    approval = chat.locator(".neta-chat-approval")
    approval.wait_for(timeout=120_000)
    assert "Write" in (approval.locator(".neta-chat-approval-title").text_content() or "")
    todo = chat.locator(".neta-todo-card")
    assert todo.locator(".neta-todo-row").count() == 3
    assert todo.locator(".neta-todo-count").inner_text() == "0/3 done"
    assert todo.locator(".neta-todo-row-in_progress .neta-todo-content").inner_text() == (
        PLAN[0])
    assert not (lab.server.root_dir / "outside-demo" / "notes.md").exists()
    # What the write will do: the file's lines as a diff, not the call's JSON.
    assert approval.locator(".neta-chat-approval-what").inner_text() == "It makes this change:"
    asked = approval.locator(".neta-chat-approval-code .neta-diff-line")
    assert "+# Notes" in asked.all_inner_texts()
    assert "file_path" not in approval.inner_text()
    lab.screenshot_themes(approval, screenshot_dir, "outside-demo-approval")
    lab.screenshot_themes(todo, screenshot_dir, "outside-demo-plan")

    approval.locator("button[data-decision='allow_once']").click()
    chat.locator(".neta-chat-assistant", has_text="Done: notes.md is in my working").wait_for(
        timeout=120_000)
    page.wait_for_function("""() => document.querySelector(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .neta-todo-count')?.textContent === '3/3 done'""",
                           timeout=30_000)
    note = lab.server.root_dir / "outside-demo" / "notes.md"
    assert note.read_text().startswith("# Notes\n")
    assert chat.locator(".neta-chat-approval").count() == 0

    # The turn's thinking shows in one block (the two steps' thoughts merged), folded when
    # done; opened, it holds what the model thought before the plan and before the write.
    thinking = chat.locator(".neta-thinking-block:visible")
    assert thinking.count() == 1
    assert "neta-is-collapsed" in (thinking.get_attribute("class") or "")
    thinking.locator(".neta-thinking-header").click()
    content = thinking.locator(".neta-thinking-content")
    content.wait_for()
    assert "plan the three steps" in content.inner_text()
    assert "needs the user's permission" in content.inner_text()
    lab.wait_for_transitions(thinking)
    # The write's card: done, its diff the file's lines added.
    card = chat.locator(".neta-tool-card", has_text="Write")
    assert "neta-tool-card-done" in (card.get_attribute("class") or "")
    card.locator(".neta-tool-header").click()
    result = card.locator(".neta-tool-result")
    result.wait_for()
    assert "+# Notes" in result.inner_text()
    assert "+This folder is where the outside agent" in result.inner_text()
    # Drawn as the notebook agent's diff view: a line per row, coloured by what it does.
    kinds = result.locator(".neta-diff-block .neta-diff-line").evaluate_all(
        "(rows) => rows.map((row) => row.className.split(' ').pop())")
    assert kinds == ["neta-diff-meta", "neta-diff-meta", "neta-diff-hunk",
                     *["neta-diff-add"] * 4], kinds

    lab.screenshot_themes(thinking, screenshot_dir, "outside-demo-thinking")
    lab.screenshot_themes(card, screenshot_dir, "outside-demo-diff")
    # The kernel's turn ended with the answer the chat shows.
    assert lab.wait_for_kernel_value(
        NAME, "task.done() and task.result().text.startswith('Done: `notes.md`')", "True",
        timeout=30) == "True"
    # The file the write names is a link under the card's header: it opens in
    # JupyterLab's editor, with what the agent wrote.
    link = card.locator(".neta-tool-files .neta-file-link")
    assert link.all_inner_texts() == ["notes.md"]
    link.click()
    # (The editor shows before the file's text is loaded into it.)
    page.locator(".jp-FileEditor:visible .cm-content", has_text="# Notes").wait_for(
        timeout=30_000)
    assert page.locator(".lm-TabBar-tab.jp-mod-current .lm-TabBar-tabLabel").first.inner_text(
        ) == "notes.md"
    assert not lab.console_errors, lab.console_errors
