"""The notebook's structure and kernel as tools, on a real JupyterLab page (the deletion in
Notebook 7 too): a deletion and a move as proposals with their cards, undone by the
notebook's own undo once accepted; the kernel's restart and Run All asked for with
approvals that say what they do.

1. A rejected ``delete_cell`` leaves the live cell and the saved file byte for byte as
   they were; an accepted one removes the cell, and one Undo Cell Operation (Z in command
   mode, JupyterLab's undo of cell operations: Ctrl+Z there undoes the active cell's
   text) brings it back, where it was, with its text and outputs.
2. An accepted ``move_cell`` puts the cell where the model said; one undo moves it back.
3. ``restart_kernel`` refused at its approval (which names the variables lost) leaves the
   kernel's id and a variable as they were.
4. ``run_all``'s approval lists the code cells it would run, in order, by the names the
   notebook shows (not the chat's own cell); refused, nothing runs.

The kernel side is test_notebook_agent.py's (a scripted model the test sets before each
turn), with the tools of this file switched on. Pictures (Light and Dark): the delete
card, the move card and the restart approval.
"""

from __future__ import annotations

import contextlib
import json
from collections.abc import Iterator, Sequence
from pathlib import Path
from typing import Any

import nbformat
import pytest

from neta_nb import SessionStore

from ..support.timing import poll_until
from .harness import JupyterLabServer, LabSession, write_notebook
from .test_agent_cell import OPENED_JS
from .test_notebook_agent import (
    APPROVAL,
    CHAT,
    DECIDED,
    PROPOSAL,
    TOOLS,
    ChatNotebook,
    diff_lines,
)
from .test_notebook_bridge import _FIND_PANEL, SHOWN_JS

pytestmark = pytest.mark.browser

OWN_TOOLS = ["read_notebook", "delete_cell", "move_cell", "clear_outputs", "run_all",
             "interrupt_kernel", "restart_kernel"]
STRUCTURE_CHAT = CHAT.replace(repr(TOOLS), repr(OWN_TOOLS))
assert STRUCTURE_CHAT != CHAT

SETUP = "answer = 41 + 1\nprint(answer)"
DOOMED = 'doomed = "this cell goes"\nprint(doomed)'
NOTES = "# Notes\nWhat the numbers mean."
LAST = "print(answer * 2)"
CELL_IDS = ["chat", "setup", "doomed", "notes", "last"]

_KERNEL_ID_JS = f"(path) => {_FIND_PANEL}(path).sessionContext.session?.kernel?.id ?? null"
_WATCH_RESTART_JS = f"""
(path) => {{
  const context = {_FIND_PANEL}(path).sessionContext;
  window.__netaRestarted = false;
  context.statusChanged.connect((_, status) => {{
    if (status === 'restarting') window.__netaRestarted = true;
  }});
}}
"""
_RESTARTED_JS = f"""
(path) => window.__netaRestarted
  && {_FIND_PANEL}(path).sessionContext.session?.kernel?.status === 'idle'
"""
_RUN_ALL_JS = f"""
async (path) => {{
  const app = window.jupyterapp;
  const panel = {_FIND_PANEL}(path);
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  await app.commands.execute('notebook:run-all-cells');
  return true;
}}
"""
_RAN_JS = f"""
(path) => {{
  const panel = {_FIND_PANEL}(path);
  return panel.sessionContext.session?.kernel?.status === 'idle'
    && Array.from(panel.content.model.cells).every(
      (c) => c.type !== 'code' || c.executionCount !== null);
}}
"""


def structure_notebook(chat: str = STRUCTURE_CHAT) -> Any:
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(chat, id="chat"),
                      nbformat.v4.new_code_cell(SETUP, id="setup"),
                      nbformat.v4.new_code_cell(DOOMED, id="doomed"),
                      nbformat.v4.new_markdown_cell(NOTES, id="notes"),
                      nbformat.v4.new_code_cell(LAST, id="last")]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    return notebook


def open_page(lab: LabSession, name: str, notebook7: JupyterLabServer | None) -> LabSession:
    """The page showing the notebook ``name`` (written in its server's root), its document
    and kernel session ready: ``lab`` itself, which opens it in JupyterLab's main area, or
    a tab of its own on ``notebook7`` (Notebook 7's page of that notebook); close that one
    with :func:`close_page`."""
    if notebook7 is None:
        lab.open_notebook(name)
        return lab
    url = f"{notebook7.url}/notebooks/{name}?token={notebook7.token}"
    tab = LabSession(notebook7, lab.page.context, url=url)
    tab.page.wait_for_function(f"(path) => Boolean({_FIND_PANEL}(path))", arg=name,
                               timeout=60_000)
    tab.page.evaluate(OPENED_JS, name)
    assert tab.page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
    return tab


def close_page(tab: LabSession) -> None:
    """Notebook 7: shut the tab's kernel down and close it (JupyterLab's notebooks are
    closed by the ``lab`` fixture); no error on the page but Notebook 7's own."""
    tab.page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                      " p.context.model.dirty = false;"
                      " await p.sessionContext.shutdown(); }")
    errors = [e.text for e in tab.console_errors if e.type == "error"]
    tab.close()
    assert not errors, "errors on the page:\n" + "\n".join(errors)


class Notebook(ChatNotebook):
    """The test notebook, open and run in JupyterLab or Notebook 7, its chat bound to the
    page."""

    def __init__(self, lab: LabSession, name: str, *, chat: str = STRUCTURE_CHAT,
                 notebook7: JupyterLabServer | None = None) -> None:
        """In JupyterLab (``lab``'s page), or in a tab of its own on ``notebook7``."""
        self.server = notebook7 or lab.server
        self.in_notebook7 = notebook7 is not None
        self.path = name
        nbformat.write(structure_notebook(chat), self.root / name)
        self.lab = open_page(lab, name, notebook7)
        self.page.evaluate(_RUN_ALL_JS, name)
        self.page.wait_for_function(_RAN_JS, arg=name, timeout=60_000, polling=100)
        self.page.locator(".neta-chat-view").wait_for()
        poll_until(lambda: self.execute("print(session.notebook_page.available)") == "True",
                   within=20, what="the chat view found the notebook bridge")

    @property
    def page(self) -> Any:
        return self.lab.page

    @property
    def root(self) -> Path:
        return self.server.root_dir

    def execute(self, code: str) -> str:
        return self.lab.execute(self.path, code).strip()

    def close_tab(self) -> None:
        """Notebook 7: see :func:`close_page`."""
        close_page(self.lab)

    def pictures(self, locator: Any, directory: Path, name: str) -> None:
        """:func:`pictures` of ``locator``, in JupyterLab only (none of Notebook 7)."""
        if not self.in_notebook7:
            pictures(self.lab, locator, directory, name)

    def play(self, prompt: str, calls: list[dict[str, Any]], done: str) -> None:
        script = [[{"tool_call": call} for call in calls], [{"text": done}]]
        self.execute(f"play({prompt!r}, json.loads({json.dumps(script)!r}))")

    def ids(self) -> list[str]:
        return [str(cell["id"]) for cell in self.shown()["cells"]]

    def wait_for_ids(self, ids: list[str]) -> None:
        self.page.wait_for_function(
            f"([path, ids]) => JSON.stringify(({SHOWN_JS})(path).cells.map((c) => c.id))"
            " === JSON.stringify(ids)", arg=[self.path, ids])

    def undo_in_the_notebook(self) -> None:
        """The user presses Z with the notebook in command mode (not in a cell's editor):
        Edit ▸ Undo Cell Operation, the notebook's own undo of inserts, deletes and
        moves. (Ctrl+Z there is Edit ▸ Undo, which undoes the active cell's text.)"""
        self.page.locator(".jp-Notebook .jp-Cell").nth(1).locator(".jp-InputPrompt").click()
        self.page.keyboard.press("Escape")
        self.page.wait_for_function("() => document.querySelector('.jp-Notebook')"
                                    ".classList.contains('jp-mod-commandMode')")
        self.page.keyboard.press("z")


def pictures(lab: LabSession, locator: Any, directory: Path, name: str) -> None:
    directory.mkdir(parents=True, exist_ok=True)
    lab.screenshot_themes(locator, directory, f"notebook-{name}")


@contextlib.contextmanager
def notebook_on(front: str, lab: LabSession, request: pytest.FixtureRequest, name: str,
                chat: str = STRUCTURE_CHAT) -> Iterator[Notebook]:
    """The test notebook on ``front``: ``"lab"`` (JupyterLab, on ``lab``'s page) or
    ``"notebook7"`` (a tab of its own on the ``notebook7`` server, closed after)."""
    if front == "lab":
        yield Notebook(lab, name, chat=chat)
        return
    notebook = Notebook(lab, name, chat=chat, notebook7=request.getfixturevalue("notebook7"))
    try:
        yield notebook
    finally:
        notebook.close_tab()


@contextlib.contextmanager
def page_on(front: str, lab: LabSession, request: pytest.FixtureRequest, name: str,
            cells: Sequence[str]) -> Iterator[LabSession]:
    """A notebook of code ``cells`` written at ``name``, open and run on ``front``: the
    page that shows it, ``lab`` (``"lab"``, JupyterLab) or a tab of its own on the
    ``notebook7`` server (``"notebook7"``), closed after."""
    notebook7 = request.getfixturevalue("notebook7") if front == "notebook7" else None
    write_notebook((notebook7 or lab.server).root_dir, name, cells)
    tab = open_page(lab, name, notebook7)
    try:
        tab.run_all(name)
        yield tab
    finally:
        if notebook7 is not None:
            close_page(tab)


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_a_rejected_delete_changes_nothing_and_an_accepted_one_is_undone_in_the_notebook(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    if front == "lab":
        notebook = Notebook(lab, "structure_delete.ipynb")
        _delete_and_undo(notebook, lab, screenshot_dir)
        return
    notebook = Notebook(lab, "structure_delete7.ipynb",
                        notebook7=request.getfixturevalue("notebook7"))
    try:
        _delete_and_undo(notebook, None, screenshot_dir)
    finally:
        notebook.close_tab()


def _delete_and_undo(notebook: Notebook, lab: LabSession | None, screenshot_dir: Path) -> None:
    saved = notebook.save()
    delete = {"name": "delete_cell", "args": {"cell_id": "doomed"}}
    notebook.play("Remove the doomed cell", [delete], "Left it.")
    card = notebook.page.locator(PROPOSAL)
    card.wait_for()
    title = card.locator(".neta-cell-edit-title")
    assert (title.text_content() or "").startswith("Delete cell")
    assert diff_lines(notebook.page, PROPOSAL) == [
        "--- cell doomed", "+++ cell doomed", "@@ -1,2 +0,0 @@",
        '-doomed = "this cell goes"', "-print(doomed)"]
    assert card.locator("button[data-decision=accept]").is_visible()
    assert card.locator("button[data-decision=reject]").is_visible()
    assert card.locator("button[data-decision=edit]").is_hidden()  # no text to change
    assert notebook.shown()["dirty"] is False  # asking changed nothing
    if lab is not None:
        pictures(lab, card, screenshot_dir, "delete-card")

    card.locator("button[data-decision=reject]").click()
    notebook.wait_for_text("Left it.")
    assert notebook.ids() == CELL_IDS
    assert notebook.shown()["cells"][2]["source"] == DOOMED
    assert (notebook.root / notebook.path).read_bytes() == saved
    assert notebook.live_cells() == notebook.saved_cells()
    [rejected] = notebook.results("delete_cell")
    assert rejected.startswith("The user rejected the deletion of cell doomed")

    notebook.play("Remove it after all", [delete], "Removed it.")
    notebook.page.locator(f"{PROPOSAL} button[data-decision=accept]").click()
    notebook.wait_for_text("Removed it.")
    notebook.wait_for_ids(["chat", "setup", "notes", "last"])
    accepted = notebook.page.locator(f"{DECIDED}[data-decision=accepted]")
    assert accepted.locator(".neta-cell-edit-undo-hint").text_content() == (
        "Undo Cell Operation (Z) in the notebook restores it")
    assert notebook.results("delete_cell")[-1].startswith(
        "The user accepted the deletion; cell doomed (code, position 3) was deleted.")

    notebook.undo_in_the_notebook()
    notebook.wait_for_ids(CELL_IDS)
    restored = notebook.shown()["cells"][2]
    assert restored["source"] == DOOMED and "this cell goes" in restored["output"]


def test_an_accepted_move_goes_where_the_model_said_and_one_undo_moves_it_back(
        lab: LabSession, screenshot_dir: Path) -> None:
    notebook = Notebook(lab, "structure_move.ipynb")
    notebook.play("Put the last cell second",
                  [{"name": "move_cell", "args": {"cell_id": "last", "to_index": 2}}],
                  "Moved it.")
    card = notebook.page.locator(PROPOSAL)
    card.wait_for()
    title = card.locator(".neta-cell-edit-title")
    notebook.page.wait_for_function("(el) => el.textContent.includes('[')",
                                    arg=title.element_handle())
    last_prompt = notebook.shown()["cells"][4]["prompt"].rstrip(":")
    assert title.text_content() == f"Move cell {last_prompt} from position 5 to 2"
    assert diff_lines(notebook.page, PROPOSAL) == [f" {LAST}"]
    pictures(lab, card, screenshot_dir, "move-card")

    card.locator("button[data-decision=accept]").click()
    notebook.wait_for_text("Moved it.")
    notebook.wait_for_ids(["chat", "last", "setup", "doomed", "notes"])
    assert "cell last moved from position 5 to position 2" in notebook.results(
        "move_cell")[-1]
    notebook.undo_in_the_notebook()
    notebook.wait_for_ids(CELL_IDS)


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_a_restart_refused_at_approval_keeps_the_kernel_and_its_variables(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    with notebook_on(front, lab, request, "structure_restart.ipynb") as notebook:
        _refuse_the_restart(notebook, screenshot_dir)


def _refuse_the_restart(notebook: Notebook, screenshot_dir: Path) -> None:
    kernel_id = notebook.page.evaluate(_KERNEL_ID_JS, notebook.path)
    assert kernel_id
    notebook.play("Restart the kernel", [{"name": "restart_kernel", "args": {}}],
                  "Did not restart.")
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for()
    what = approval.locator(".neta-chat-approval-what").text_content() or ""
    assert "Restarting the kernel loses everything it holds in memory" in what
    assert "answer" in what and "doomed" in what
    assert "This chat's turn ends with it" in what
    notebook.pictures(approval, screenshot_dir, "restart-approval")

    approval.locator("button[data-decision=reject]").click()
    notebook.wait_for_text("Did not restart.")
    assert notebook.results("restart_kernel") == [
        "The user did not allow 'restart_kernel' to run."]
    assert notebook.page.evaluate(_KERNEL_ID_JS, notebook.path) == kernel_id
    assert notebook.execute("print(answer)") == "42"


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_the_run_all_approval_lists_the_cells_in_order(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    with notebook_on(front, lab, request, "structure_run_all.ipynb") as notebook:
        _refuse_run_all(notebook, screenshot_dir)


def _refuse_run_all(notebook: Notebook, screenshot_dir: Path) -> None:
    counts = [cell["prompt"] for cell in notebook.shown()["cells"]]
    notebook.play("Run everything", [{"name": "run_all", "args": {}}], "Ran nothing.")
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for()
    what = approval.locator(".neta-chat-approval-what").text_content() or ""
    # The chat's own cell is left out: run again, it would make a new chat mid-turn.
    chat_name = counts[0].rstrip(":")
    assert what.startswith(f"It runs 3 code cells (not cell {chat_name}, which shows this "
                           "chat), in this order")
    rows = approval.locator(".neta-chat-approval-cell")
    names = [name.strip() for name in rows.locator(".neta-cell-name").all_text_contents()]
    lines = rows.locator(".neta-chat-approval-cell-line").all_text_contents()
    code = [CELL_IDS.index(cell_id) for cell_id in ("setup", "doomed", "last")]
    assert names == [counts[i].rstrip(":") for i in code]
    assert lines == ["answer = 41 + 1", 'doomed = "this cell goes"', "print(answer * 2)"]
    notebook.pictures(approval, screenshot_dir, "run-all-approval")

    approval.locator("button[data-decision=reject]").click()
    notebook.wait_for_text("Ran nothing.")
    assert [cell["prompt"] for cell in notebook.shown()["cells"]] == counts


def test_an_allowed_restart_restarts_the_kernel_once_its_result_is_stored(
        lab: LabSession) -> None:
    # A store of its own, in the server's root, read here after the kernel has gone.
    stored = STRUCTURE_CHAT.replace(
        "session = AgentSession(agent)",
        "from neta_nb import SessionStore\n"
        "session = AgentSession(agent, store=SessionStore('restart.sqlite3'))")
    assert stored != STRUCTURE_CHAT
    notebook = Notebook(lab, "structure_restart_allowed.ipynb", chat=stored)
    session_id = notebook.execute("print(session.id)")
    assert notebook.execute("print(answer)") == "42"
    notebook.play("Restart the kernel", [{"name": "restart_kernel", "args": {}}],
                  "Restarting now.")
    notebook.page.evaluate(_WATCH_RESTART_JS, notebook.path)
    notebook.page.locator(f"{APPROVAL} button[data-decision=allow_once]").click()
    # Waited for on the page: a snippet run meanwhile would be cut by the restart.
    notebook.page.wait_for_function(_RESTARTED_JS, arg=notebook.path, timeout=60_000)
    assert notebook.execute("print('answer' in dir())") == "False"
    store = SessionStore(notebook.root / "restart.sqlite3")
    try:
        messages = [*store.load_messages(session_id)]
        draft = store.load_draft(session_id)
        if draft is not None:
            messages.append(draft)
    finally:
        store.close()
    results = [part.content for message in messages for part in message.parts
               if part.type == "tool_result" and part.name == "restart_kernel"]
    assert len(results) == 1 and "restarts in 1.5 s" in results[0], messages


def test_clear_outputs_clears_every_code_cell_but_the_chat(lab: LabSession) -> None:
    notebook = Notebook(lab, "structure_clear.ipynb")
    notebook.play("Clear the outputs", [{"name": "clear_outputs", "args": {}}], "Cleared.")
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for()
    names = approval.locator(".neta-chat-approval-cell .neta-cell-name").all_text_contents()
    assert len(names) == 3  # setup, doomed, last: not the chat's cell
    approval.locator("button[data-decision=allow_once]").click()
    notebook.wait_for_text("Cleared.")
    cells = notebook.shown()["cells"]
    for index in (1, 2, 4):
        assert cells[index]["output"] == "" and cells[index]["prompt"] in ("[ ]:", "[]:")
    assert notebook.page.locator(".neta-chat-view").is_visible()
    assert "(not the cell that shows this chat) were cleared (3 cells)" in notebook.results(
        "clear_outputs")[0]


_RUN_CELL_JS = f"""
([path, index, source]) => {{
  const panel = {_FIND_PANEL}(path);
  panel.content.model.cells.get(index).sharedModel.setSource(source);
  panel.content.activeCellIndex = index;
  void window.jupyterapp.commands.execute('notebook:run-cell');
  return true;
}}
"""


def test_interrupt_kernel_stops_the_running_cell_and_not_the_turn(lab: LabSession) -> None:
    notebook = Notebook(lab, "structure_interrupt.ipynb")
    script = [[{"tool_call": {"name": "interrupt_kernel", "args": {}}}],
              [{"text": "Interrupted it."}]]
    notebook.execute(f"model.script = Script.coerce(json.loads({json.dumps(script)!r}))")
    # A long cell runs on the page; the turn starts from the chat's Send meanwhile.
    notebook.page.evaluate(_RUN_CELL_JS, [notebook.path, 4,
                                          "import asyncio\nawait asyncio.sleep(60)\n"
                                          "print('sl' + 'ept')"])
    notebook.page.wait_for_function(
        f"(path) => ({SHOWN_JS})(path).cells[4].prompt === '[*]:'", arg=notebook.path)
    notebook.page.locator(".neta-chat-textarea").fill("Stop the running cell")
    notebook.page.locator(".neta-chat-send").click()
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for(timeout=30_000)
    assert approval.locator(".neta-chat-approval-cell-line").all_text_contents() == [
        "import asyncio"]
    approval.locator("button[data-decision=allow_once]").click()
    notebook.wait_for_text("Interrupted it.")  # the turn went on after the interrupt
    assert notebook.results("interrupt_kernel") == [
        "The kernel was interrupted. Cells executing then: last. read_notebook shows where "
        "the cell stopped."]
    stopped = notebook.shown()["cells"][4]
    assert "slept" not in stopped["output"]  # stopped in the sleep, never printed
    assert "CancelledError" in stopped["output"] or "KeyboardInterrupt" in stopped["output"]

    # Nothing executes now: refused, before anyone is asked, and the turn goes on.
    notebook.play("Interrupt again", [{"name": "interrupt_kernel", "args": {}}],
                  "Nothing to stop.")
    approval.wait_for()
    approval.locator("button[data-decision=allow_once]").click()
    notebook.wait_for_text("Nothing to stop.")
    assert notebook.results("interrupt_kernel")[-1].startswith(
        "No cell is executing: there is nothing to interrupt")
