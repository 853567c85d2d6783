"""Fix and Explain on a cell's error, in real JupyterLab: the error output of a notebook
that shows a live chat offers both buttons in its corner (a notebook open beside it with no
chat offers none); Fix, pressed from the keyboard, sends the chat a prompt naming the
failing cell and its error, and the agent's answer is the usual ``edit_cell`` diff card for
that cell; Reject leaves the cell and the saved file byte for byte as they were. A run of
the cell that succeeds takes its error output, and the buttons, away. In Notebook 7 the
same buttons are there, and Fix accepted changes the cell.

The model is a scripted one in the kernel (test_notebook_agent.py's): its answer to the
Fix is set before the press, and the prompt it got is read back from the session.

Pictures (Light and Dark): the error output with its buttons.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from .harness import JupyterLabServer, LabSession
from .test_agent_cell import OPENED_JS
from .test_notebook_agent import CHAT, IDLE, PROPOSAL, diff_lines, edit, unified
from .test_notebook_bridge import _FIND_PANEL, SAVE_JS, SHOWN_JS

pytestmark = pytest.mark.browser

DIVIDE = "ratings = [4, 5, 3]\nmean = sum(ratings) / 0"
FIXED = "ratings = [4, 5, 3]\nmean = sum(ratings) / len(ratings)"
BUTTONS = ".neta-nb-error-actions"
STDERR = ".jp-OutputArea-output[data-mime-type='application/vnd.jupyter.stderr']"


def _write(root: Path, name: str, cells: list[tuple[str, str]]) -> str:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id)
                      for cell_id, source in cells]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / name)
    return name


def _cell(page: Any, path: str, index: int) -> Any:
    """The cell at ``index`` of the notebook open at ``path``."""
    panel = page.locator(f"#{page.evaluate(f'(p) => {_FIND_PANEL}(p).id', path)}")
    return panel.locator(".jp-Notebook .jp-Cell").nth(index)


def _source(page: Any, path: str, index: int) -> str:
    return str(page.evaluate(SHOWN_JS, path)["cells"][index]["source"])


def test_fix_on_an_error_ends_in_a_diff_card_and_reject_changes_nothing(
        lab: LabSession, screenshot_dir: Path) -> None:
    root = lab.server.root_dir
    path = _write(root, "fix_error.ipynb", [("chat", CHAT), ("divide", DIVIDE)])
    lab.open_notebook(path)
    lab.run_all(path)
    page = lab.page
    page.locator(".neta-chat-view").wait_for()
    divide = _cell(page, path, 1)
    buttons = divide.locator(BUTTONS)
    buttons.wait_for()
    assert "ZeroDivisionError" in divide.locator(STDERR).text_content()

    # A notebook without a chat, open beside it, offers nothing on its error.
    plain = _write(root, "no_chat.ipynb", [("boom", "1 / 0")])
    lab.open_notebook(plain)
    lab.run_all(plain)
    _cell(page, plain, 0).locator(STDERR).wait_for()
    lab.wait_for_frames()
    page.wait_for_timeout(700)  # past a chat view's second look (error-actions.ts)
    assert _cell(page, plain, 0).locator(BUTTONS).count() == 0
    assert page.locator(BUTTONS).count() == 1  # the chat's notebook: its one error
    page.evaluate("(p) => window.jupyterapp.shell.activateById("
                  f"{_FIND_PANEL}(p).id)", path)

    fix = buttons.locator("button[data-action=fix]")
    explain = buttons.locator("button[data-action=explain]")
    assert fix.text_content() == "Fix" and explain.text_content() == "Explain"
    assert "corrected cell" in (fix.get_attribute("title") or "")
    assert "explain" in (explain.get_attribute("title") or "")
    # In the error output's top right corner.
    output = divide.locator(".neta-nb-has-error-actions").bounding_box()
    box = buttons.bounding_box()
    assert output is not None and box is not None
    assert box["y"] - output["y"] < 12
    assert output["x"] + output["width"] - (box["x"] + box["width"]) < 16
    lab.screenshot_themes(divide.locator(".neta-nb-has-error-actions"), screenshot_dir,
                          "error-actions")

    saved = page.evaluate(SAVE_JS, path)
    assert saved is False
    before = (root / path).read_bytes()
    script = [edit("divide", FIXED), [{"text": "Left as it was."}]]
    lab.execute(path, f"model.script = Script.coerce(json.loads({json.dumps(script)!r}))")

    fix.focus()
    page.keyboard.press("Enter")
    card = page.locator(PROPOSAL)
    card.wait_for(timeout=30_000)
    assert diff_lines(page, PROPOSAL) == unified(DIVIDE, FIXED, "divide")
    assert buttons.locator(".neta-nb-error-actions-note").text_content() == "Sent to the chat."

    # What the chat sent: the cell by its id and its run, the error by @error.
    sent = json.loads(lab.execute(path, "print(json.dumps([session.messages[0].text, "
                                  "[p.mention for p in session.messages[0].parts "
                                  "if p.type == 'mention']]))"))
    text, mentions = sent
    assert text.startswith("Cell `divide` (In[2]) of this notebook failed with "
                           "`ZeroDivisionError: division by zero`.\n@In[2] @error")
    assert "edit_cell on cell id `divide`" in text
    assert mentions == ["@In[2]", "@error"]

    card.locator("button[data-decision=reject]").click()
    page.locator(".neta-chat-view .neta-chat-text", has_text="Left as it was.").wait_for(
        timeout=30_000)
    page.wait_for_function(IDLE)
    assert _source(page, path, 1) == DIVIDE
    assert (root / path).read_bytes() == before

    # Fixed by hand and run again: no error output, no buttons.
    page.evaluate(f"""([p, s]) => {{
      const panel = {_FIND_PANEL}(p);
      panel.content.model.cells.get(1).sharedModel.setSource(s);
      panel.content.activeCellIndex = 1;
      return window.jupyterapp.commands.execute('notebook:run-cell');
    }}""", [path, FIXED])
    page.wait_for_function(f"""(p) => {{
      const cell = {_FIND_PANEL}(p).content.widgets[1];
      return cell.model.executionCount === 3 && cell.model.outputs.length === 0;
    }}""", arg=path, timeout=30_000)
    lab.wait_for_frames()
    assert page.locator(BUTTONS).count() == 0


# Holds every model call until `gate` is set: a turn that runs as long as the test wants.
GATE = """
import asyncio
gate = asyncio.Event()
_stream = Model.stream
async def _held(self, request):
    await gate.wait()
    async for event in _stream(self, request):
        yield event
Model.stream = _held
""".strip()

# Records where each press was dispatched from: a side panel's chat view, or not.
SPY_JS = """() => {
  window.__netaPressedIn = [];
  document.addEventListener('neta-nb-error-action', (event) => {
    window.__netaPressedIn.push(Boolean(event.target.closest('.neta-nb-side-panel')));
  }, true);
}"""


def test_explain_goes_to_the_side_panel_and_a_busy_chat_refuses(lab: LabSession) -> None:
    root = lab.server.root_dir
    path = _write(root, "explain_error.ipynb", [("chat", CHAT), ("divide", DIVIDE)])
    lab.open_notebook(path)
    lab.run_all(path)
    page = lab.page
    inline = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea "
                          ".neta-chat-view")
    inline.wait_for()
    inline.locator(".neta-chat-header-side").click()
    side = page.locator(".neta-nb-side-panel .neta-chat-view")
    side.wait_for()
    buttons = _cell(page, path, 1).locator(BUTTONS)
    buttons.wait_for()
    explain = buttons.locator("button[data-action=explain]")
    note = buttons.locator(".neta-nb-error-actions-note")
    page.evaluate(SPY_JS)

    # A turn is running: the press is refused, and says why; nothing is sent.
    lab.execute(path, GATE)
    lab.execute(path, "play('Hold on', [[{'text': 'Held.'}]])")
    page.wait_for_function("() => document.querySelector('.neta-chat-view')"
                           ".classList.contains('neta-is-running')")
    explain.click()
    page.wait_for_function("(el) => el.textContent.startsWith('The chat is answering')",
                           arg=note.element_handle())
    assert "neta-nb-error-actions-refused" in (note.get_attribute("class") or "")
    assert explain.is_enabled()
    lab.execute(path, "gate.set()")
    side.locator(".neta-chat-text", has_text="Held.").wait_for(timeout=30_000)
    page.wait_for_function(IDLE)

    lab.execute(path, "model.script = Script.coerce([[{'text': 'It divides by zero.'}]])")
    explain.click()
    side.locator(".neta-chat-text", has_text="It divides by zero.").wait_for(timeout=30_000)
    page.wait_for_function(IDLE)
    assert note.text_content() == "Sent to the chat."
    assert page.evaluate("() => window.__netaPressedIn") == [True, True]
    sent = json.loads(lab.execute(path, "print(json.dumps([m.text for m in session.messages"
                                  " if m.role == 'user']))"))
    assert sent[0] == "Hold on" and len(sent) == 2
    assert sent[1].startswith("Cell `divide` (In[2]) of this notebook failed with "
                              "`ZeroDivisionError: division by zero`.\n@In[2] @error")
    assert "Explain what this error means" in sent[1] and "edit_cell" not in sent[1]
    assert page.locator(PROPOSAL).count() == 0


def test_fix_in_notebook_7(notebook7: JupyterLabServer, lab_session: LabSession) -> None:
    path = _write(notebook7.root_dir, "fix_error_nb7.ipynb", [("chat", CHAT), ("divide", DIVIDE)])
    url = f"{notebook7.url}/notebooks/{path}?token={notebook7.token}"
    tab = LabSession(notebook7, lab_session.page.context, url=url)
    page = tab.page
    try:
        page.wait_for_function(f"(path) => Boolean({_FIND_PANEL}(path))", arg=path,
                               timeout=60_000)
        page.evaluate(OPENED_JS, path)
        assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        tab.run_all(path)
        page.locator(".neta-chat-view").wait_for()
        buttons = _cell(page, path, 1).locator(BUTTONS)
        buttons.wait_for()
        script = [edit("divide", FIXED), [{"text": "Fixed it."}]]
        tab.execute(path, f"model.script = Script.coerce(json.loads({json.dumps(script)!r}))")

        buttons.locator("button[data-action=fix]").click()
        card = page.locator(PROPOSAL)
        card.wait_for(timeout=30_000)
        assert diff_lines(page, PROPOSAL) == unified(DIVIDE, FIXED, "divide")
        card.locator("button[data-decision=accept]").click()
        page.locator(".neta-chat-view .neta-chat-text", has_text="Fixed it.").wait_for(
            timeout=30_000)
        page.wait_for_function(IDLE)
        assert _source(page, path, 1) == FIXED
        errors = [e.text for e in tab.console_errors if e.type == "error"]
        # Notebook 7 on a fresh profile reports one error of its own (a settings schema it
        # looks up); only errors from elsewhere are the project's.
        assert [e for e in errors if "/static/notebook/" not in e] == [], errors
    finally:
        page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                      " p.context.model.dirty = false;"
                      " await p.sessionContext.shutdown(); }")
        tab.close()
