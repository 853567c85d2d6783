"""An ``%%agent`` cell on a real JupyterLab page, its agent an offline scripted one (the
built-in demo) given by ``-a``, its sessions in a store file of the test's own:

1. Run, the cell's output is its session's chat view, with the turn's cards (plan, tool,
   skill) and answer; ``-o result`` holds the answer once the turn has ended; the saved
   ``.ipynb`` names the session in the cell's metadata (``neta_nb.agent_cell``).
2. Run again, the cell asks again: one session in the store, the first turn kept as its
   one branch, and one chat view in the cell. So after Run All too, which defines the
   cell's agent anew.
3. After a kernel restart, the cell's first run resumes that session (same id, the branch
   kept).
4. Saved and reopened with no kernel, the cell shows the turn's static form.
In Notebook 7 too: 1 and 2.

5. A call that needs approval waits for the card's buttons (the cell has returned, its
   turn going on): Allow runs it, and ``-o`` gets the answer after.
6. Run again while its turn streams, the cell stops that turn and asks again; stopped
   with the chat's Stop, the turn leaves ``-o`` None (what streamed is no answer).

Pictures (Light and Dark) of the cell's output — its chat view at the end of the turn
(``agent-cell-*.png``), waiting for an approval (``agent-cell-approval-*.png``) and the
saved notebook's static form (``agent-cell-saved-*.png``) — in ``artifacts/screenshots``
(or ``docs/screenshots``: see ``conftest.py``).
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from neta_nb.providers.scripted.demo_script import DEMO_PROMPT

from .harness import JupyterLabServer, LabSession
from .test_notebook_bridge import _FIND_PANEL, SAVE_JS

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
ANSWER = "Sample data: first look"
CELL = "agent-cell"
KERNEL_LESS_WIDGET_MANAGER = "Cannot read properties of null (reading 'kernel')"


def _setup(store: Path) -> str:
    return f"""
import json, os, sys
sys.path.insert(0, {str(ROOT)!r})
os.environ["NETA_NB_STORE_URL"] = {str(store)!r}
from neta_nb import Agent, ScriptedProvider, SessionStore
%load_ext neta_nb
analyst = Agent("analyst", model=ScriptedProvider(chars_per_second=3000))
""".strip()


# The store as the kernel reads it: each session's id and what it is a branch of.
STORED = """print(json.dumps([[r.id, r.branch_of] for r in SessionStore().list_sessions()]))"""

# Runs one cell of the notebook at `path` (by its id) and resolves once the kernel has
# run it (its execution count changed).
RUN_CELL_JS = """
async ([path, cellId]) => {
  const app = window.jupyterapp;
  const panel = FIND_PANEL(path);
  app.shell.activateById(panel.id);
  const notebook = panel.content;
  const index = notebook.widgets.findIndex((cell) => cell.model.id === cellId);
  const before = notebook.widgets[index].model.executionCount;
  notebook.activeCellIndex = index;
  notebook.deselectAll();
  await app.commands.execute('notebook:run-cell');
  return before;
}
""".replace("FIND_PANEL", _FIND_PANEL)

# The cell's metadata entry of neta_nb as the page's model has it (null: none).
METADATA_JS = """
([path, cellId]) => {
  const panel = FIND_PANEL(path);
  const cell = panel.content.widgets.find((c) => c.model.id === cellId);
  return cell.model.getMetadata('neta_nb') ?? null;
}
""".replace("FIND_PANEL", _FIND_PANEL)

# Saves the notebook, shuts its kernel down and closes it.
SAVE_AND_CLOSE_JS = """async (path) => {
  const panel = FIND_PANEL(path);
  await panel.context.save();
  await panel.sessionContext.shutdown();
  panel.dispose();
  return true;
}""".replace("FIND_PANEL", _FIND_PANEL)

# Opens the notebook without starting a kernel.
OPEN_WITHOUT_KERNEL_JS = """async (path) => {
  const app = window.jupyterapp;
  const widget = await app.commands.execute('docmanager:open', {
    path, factory: 'Notebook', kernelPreference: { shouldStart: false, canStart: false }});
  await widget.context.ready;
  await widget.revealed;
  return widget.sessionContext.session?.kernel?.id ?? null;
}"""


def _write(root: Path, name: str, store: Path, *, agents: str = "",
           cell: str = f"%%agent -a analyst -o result\n{DEMO_PROMPT}") -> str:
    """The test notebook: a cell that sets up (with ``agents`` defined after the demo's),
    then the ``%%agent`` cell."""
    notebook = nbformat.v4.new_notebook()
    setup = _setup(store) + (f"\n{agents}" if agents else "")
    notebook.cells = [nbformat.v4.new_code_cell(setup, id="setup"),
                      nbformat.v4.new_code_cell(cell, id=CELL)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, root / name)
    return name


def _cell(lab: LabSession) -> Any:
    return lab.page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(1)


def _stored(lab: LabSession, path: str) -> list[list[str | None]]:
    return list(json.loads(lab.execute(path, STORED)))


def _wait_for_answer(lab: LabSession, path: str) -> None:
    """The turn has ended: the answer is in the cell's chat view and in ``result``."""
    view = _cell(lab).locator(".neta-chat-view")
    view.get_by_text(ANSWER).first.wait_for(timeout=60_000)
    assert lab.wait_for_kernel_value(
        path, "str(globals().get('result')).startswith('## " + ANSWER + "')", "True",
        timeout=60) == "True"


def _one_view_one_prompt(lab: LabSession, prompt: str = DEMO_PROMPT) -> None:
    """The cell shows one chat view, with its prompt once (an earlier turn was rewound)."""
    view = _cell(lab).locator(".neta-chat-view")
    assert view.count() == 1
    assert view.locator(".neta-chat-user").count() == 1
    assert view.locator(".neta-chat-user .neta-chat-bubble").inner_text().strip() == prompt


def _kept(lab: LabSession, path: str) -> dict[str, Any]:
    """The cell's session as the page's model keeps it, once written."""
    lab.page.wait_for_function(f"(args) => ({METADATA_JS})(args)?.agent_cell?.session_id",
                               arg=[path, CELL], timeout=30_000)
    return dict(lab.page.evaluate(METADATA_JS, [path, CELL])["agent_cell"])


def _run_cell(lab: LabSession, path: str) -> None:
    before = lab.page.evaluate(RUN_CELL_JS, [path, CELL])
    lab.page.wait_for_function(
        f"([path, id, before]) => {{ const p = ({_FIND_PANEL})(path);"
        " const c = p.content.widgets.find((w) => w.model.id === id);"
        " return c.model.executionCount !== null && c.model.executionCount !== before; }",
        arg=[path, CELL, before], timeout=60_000)


def test_an_agent_cell_on_a_page(lab: LabSession, tmp_path: Path, screenshot_dir: Path) -> None:
    store = tmp_path / "sessions.db"
    path = _write(lab.server.root_dir, "agent_cell.ipynb", store)
    lab.open_notebook(path)
    lab.run_all(path)

    # 1. The chat view is the cell's output, with the turn's cards and answer.
    cell = _cell(lab)
    _wait_for_answer(lab, path)
    view = cell.locator(".neta-chat-view")
    _one_view_one_prompt(lab)
    assert view.locator(".neta-todo-card").count() >= 1
    assert view.locator(".neta-tool-card").count() >= 1
    assert view.locator(".neta-skill-card").count() >= 1
    # Its static form follows, hidden while the view is drawn.
    assert cell.locator(".neta-static-form").count() == 1
    assert not cell.locator(".neta-static-form").is_visible()

    (session,) = _stored(lab, path)
    session_id = session[0]
    assert session[1] is None
    kept = _kept(lab, path)
    assert kept["session_id"] == session_id
    assert lab.page.evaluate(SAVE_JS, path) is False
    saved = nbformat.read(lab.server.root_dir / path, as_version=4)
    assert saved.cells[1].metadata["neta_nb"]["agent_cell"] == kept

    lab.screenshot_themes(view, screenshot_dir, "agent-cell")

    # 2. Run again: a retry in the same session, the first turn its one branch; one view.
    lab.execute(path, "del result")
    _run_cell(lab, path)
    _wait_for_answer(lab, path)
    stored = _stored(lab, path)
    assert len(stored) == 2, stored
    assert [s[0] for s in stored if s[1] is None] == [session_id]
    assert [s[1] for s in stored].count(session_id) == 1
    _one_view_one_prompt(lab)
    assert cell.locator(".jp-OutputArea-output").count() == 2  # the view and its form
    assert _kept(lab, path)["session_id"] == session_id

    # Run All: the agent is defined anew, and the cell still asks again in its session.
    lab.execute(path, "del result")
    lab.run_all(path)
    _wait_for_answer(lab, path)
    stored = _stored(lab, path)
    assert [s[0] for s in stored if s[1] is None] == [session_id]
    assert [s[1] for s in stored].count(session_id) == 2
    _one_view_one_prompt(lab)

    # 3. A new kernel: the cell's first run resumes its session, the branches kept.
    lab.restart_kernel()
    lab.run_all(path)
    _wait_for_answer(lab, path)
    stored = _stored(lab, path)
    assert [s[0] for s in stored if s[1] is None] == [session_id]
    assert [s[1] for s in stored].count(session_id) == 3  # each earlier run's turn
    _one_view_one_prompt(lab)
    assert _kept(lab, path)["session_id"] == session_id

    # 4. Saved and reopened without a kernel: the turn's static form.
    lab.page.evaluate(SAVE_AND_CLOSE_JS, path)
    saved = nbformat.read(lab.server.root_dir / path, as_version=4)
    forms = [o.data["text/html"] for o in saved.cells[1].outputs
             if "text/html" in o.get("data", {})]
    assert len(forms) == 1 and ANSWER in forms[0]
    assert saved.cells[1].metadata["neta_nb"]["agent_cell"]["session_id"] == session_id
    before = len(lab.console_errors)
    assert lab.page.evaluate(OPEN_WITHOUT_KERNEL_JS, path) is None
    form = _cell(lab).locator(".neta-static-form")
    form.get_by_text(ANSWER).first.wait_for(timeout=30_000)
    assert form.is_visible()
    lab.set_viewport_size({"width": 1200, "height": 2000})  # the whole form in the picture
    try:
        for theme in ("light", "dark"):
            lab.set_theme(dark=theme == "dark")
            lab.screenshot(form, screenshot_dir / f"agent-cell-saved-{theme}.png", padding=4)
        lab.set_theme(dark=False)
    finally:
        lab.set_viewport_size({"width": 1200, "height": 1100})
    # JupyterLab's widget manager, not neta_nb, on a notebook opened without a kernel:
    # it logs each widget model it cannot find, and fails reading the kernel it has not.
    lab.console_errors[before:] = [e for e in lab.console_errors[before:]
                                   if not e.text.startswith("Error: widget model not found")
                                   and e.text != KERNEL_LESS_WIDGET_MANAGER]


GATED = """
from neta_nb import AgentToolConfig
gated = Agent("gated", model=ScriptedProvider([
    [{"tool_call": {"name": "python", "args": {"code": "open('ran.txt', 'w').close()"}}}],
    [{"text": "The code ran."}]]), tools=AgentToolConfig(enabled=["python"]))
""".strip()


def test_a_call_that_needs_approval_waits_for_the_pages_answer(
        lab: LabSession, tmp_path: Path, screenshot_dir: Path) -> None:
    # On a page the cell has returned while its turn goes on, so the approval card's
    # buttons answer (no policy decides, no refusal line is printed).
    path = _write(lab.server.root_dir, "agent_cell_approval.ipynb", tmp_path / "sessions.db",
                  agents=GATED, cell="%%agent -a gated -o said\nRun some code.")
    ran = lab.server.root_dir / "ran.txt"
    ran.unlink(missing_ok=True)
    lab.open_notebook(path)
    lab.run_all(path)
    cell = _cell(lab)
    allow = cell.locator(".neta-chat-approval button[data-decision='allow_once']")
    allow.wait_for(timeout=60_000)
    assert not ran.exists()
    lab.screenshot_themes(cell.locator(".neta-chat-view"), screenshot_dir,
                          "agent-cell-approval")
    allow.click()
    assert lab.wait_for_kernel_value(path, "globals().get('said')", "The code ran.",
                                     timeout=60) == "The code ran."
    assert ran.exists()
    assert "Refused" not in cell.locator(".jp-OutputArea").inner_text()
    ran.unlink()


SLOW = """
long_text = " ".join(f"word{i}" for i in range(400))
slow = Agent("slow", model=ScriptedProvider({"responses": [[{"text": long_text}]],
                                             "on_exhausted": "cycle"}, chars_per_second=60))
""".strip()


def test_a_turn_rerun_or_stopped_on_the_page(lab: LabSession, tmp_path: Path) -> None:
    # Run again while its turn streams, the cell stops that turn and asks again; stopped
    # with the chat's Stop, its turn ends without an answer: -o is None.
    path = _write(lab.server.root_dir, "agent_cell_stop.ipynb", tmp_path / "sessions.db",
                  agents=SLOW, cell="%%agent -a slow -o said\nWrite at length.")
    lab.open_notebook(path)
    lab.run_all(path)
    view = _cell(lab).locator(".neta-chat-view")
    streaming = view.locator(".neta-chat-assistant", has_text="word3 ")
    streaming.first.wait_for(timeout=60_000)

    _run_cell(lab, path)
    view.locator(".neta-chat-assistant", has_text="word3 ").first.wait_for(timeout=60_000)
    _one_view_one_prompt(lab, "Write at length.")
    assert view.locator(".neta-chat-stopped").count() == 0
    stored = _stored(lab, path)
    assert len(stored) == 2 and [s[1] for s in stored].count(None) == 1, stored

    view.locator(".neta-chat-send.neta-is-stop").click()
    view.locator(".neta-chat-stopped").wait_for(timeout=30_000)
    assert lab.wait_for_kernel_value(path, "repr(globals().get('said', 'unset'))", "None",
                                     timeout=30) == "None"


OPENED_JS = """async (path) => {
  const panel = FIND_PANEL(path);
  await panel.context.ready;
  await panel.sessionContext.ready;
  return true;
}""".replace("FIND_PANEL", _FIND_PANEL)


def test_in_notebook_7(notebook7: JupyterLabServer, lab_session: LabSession,
                       tmp_path: Path) -> None:
    path = "agent_cell_nb7.ipynb"
    url = f"{notebook7.url}/notebooks/{path}?token={notebook7.token}"
    _write(notebook7.root_dir, path, tmp_path / "sessions.db")
    tab = LabSession(notebook7, lab_session.page.context, url=url)
    try:
        tab.page.wait_for_function(f"(path) => Boolean({_FIND_PANEL}(path))", arg=path,
                                   timeout=60_000)
        tab.page.evaluate(OPENED_JS, path)
        assert tab.page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        tab.run_all(path)
        _wait_for_answer(tab, path)
        _one_view_one_prompt(tab)
        (session,) = _stored(tab, path)
        kept = _kept(tab, path)
        assert kept["session_id"] == session[0]
        assert tab.page.evaluate(SAVE_JS, path) is False
        saved = nbformat.read(notebook7.root_dir / path, as_version=4)
        assert saved.cells[1].metadata["neta_nb"]["agent_cell"] == kept

        tab.execute(path, "del result")
        _run_cell(tab, path)
        _wait_for_answer(tab, path)
        _one_view_one_prompt(tab)
        stored = _stored(tab, path)
        assert [s[0] for s in stored if s[1] is None] == [session[0]]
        assert [s[1] for s in stored].count(session[0]) == 1
        errors = [e.text for e in tab.console_errors if e.type == "error"]
        assert not errors, errors
    finally:
        tab.page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                          " p.context.model.dirty = false;"
                          " await p.sessionContext.shutdown(); }")
        tab.close()
