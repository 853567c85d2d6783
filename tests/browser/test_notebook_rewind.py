"""Rewind that puts the cells back, in real JupyterLab and Notebook 7, across a kernel
restart.

A turn of accepted changes (two edits, an insert, a delete) is stored; the kernel is
restarted and the chat resumed from the store; the user then changes one of the edited
cells in its editor. The chat's Rewind on the turn's prompt asks first, with a box to
undo the notebook changes made after it; with the box ticked, every cell the agent touched
is byte for byte as it was before the turn (the inserted cell gone, the deleted one back
with its id), the cell the user edited keeps the user's text and is listed as left as
they changed it, and the conversation is back to before the prompt. The saved
notebook's static form says what was put back and what was left; one Undo Cell Operation
(Z in command mode) takes the whole restore back; after another kernel restart the
resumed session still knows what the rewind did. Pictures (Light and Dark, JupyterLab's) of
the outcome with its conflict.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from ..support.timing import poll_until
from .harness import LabSession
from .test_notebook_agent import CHAT, TOOLS
from .test_notebook_bridge import _FIND_PANEL, type_at_end
from .test_notebook_structure import SETUP, Notebook, notebook_on

pytestmark = pytest.mark.browser

OWN_TOOLS = ["read_notebook", "edit_cell", "insert_cell", "delete_cell"]
# Stored, accepted as made, and resumed from the store when the chat cell runs again.
REWIND_CHAT = CHAT.replace(repr(TOOLS) + "))",
                           repr(OWN_TOOLS) + "), accept_notebook_edits=True)").replace(
    "session = AgentSession(agent)",
    "import os\n"
    "from neta_nb import SessionStore\n"
    "store = SessionStore('rewind.sqlite3')\n"
    "session = (AgentSession.resume(open('rewind.sid').read(), store, agent=agent)\n"
    "           if os.path.exists('rewind.sid') else AgentSession(agent, store=store))\n"
    "open('rewind.sid', 'w').write(session.id)")
assert REWIND_CHAT.count("accept_notebook_edits") == 1 and "rewind.sid" in REWIND_CHAT

TIDY = [
    {"name": "edit_cell", "args": {"cell_id": "setup", "source": "answer = 6 * 7\nprint(answer)"}},
    {"name": "edit_cell", "args": {"cell_id": "last", "source": "print(answer * 3)"}},
    {"name": "insert_cell", "args": {"source": "print('added by the agent')",
                                     "after_cell_id": "doomed"}},
    {"name": "delete_cell", "args": {"cell_id": "notes"}},
]
MINE = "  # mine"

_SOURCES_JS = f"""
(path) => Array.from({_FIND_PANEL}(path).content.model.cells).map((cell) => ({{
  id: cell.id, type: cell.type, source: cell.sharedModel.getSource() }}))
"""
_RUN_CHAT_CELL_JS = f"""
async (path) => {{
  const app = window.jupyterapp;
  const panel = {_FIND_PANEL}(path);
  app.shell.activateById(panel.id);
  panel.content.activeCellIndex = 0;
  await app.commands.execute('notebook:run-cell');
  return true;
}}
"""


def _sources(notebook: Notebook) -> list[dict[str, str]]:
    return list(notebook.page.evaluate(_SOURCES_JS, notebook.path))


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_rewind_puts_the_cells_back_leaves_the_users_edit_and_is_one_undo_step(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    root = (lab.server if front == "lab" else request.getfixturevalue("notebook7")).root_dir
    for name in ("rewind.sid", "rewind.sqlite3"):  # a new session, not one resumed
        (root / name).unlink(missing_ok=True)
    with notebook_on(front, lab, request, "rewind_cells.ipynb", chat=REWIND_CHAT) as notebook:
        _rewind(notebook, screenshot_dir)


def _rewind(notebook: Notebook, screenshot_dir: Path) -> None:
    before = _sources(notebook)
    session_id = notebook.execute("print(session.id)")
    notebook.play("Tidy the notebook up", TIDY, "Tidied.")
    notebook.wait_for_text("Tidied.")
    after = _sources(notebook)
    assert [c["id"] for c in after][:3] == ["chat", "setup", "doomed"]
    assert "notes" not in [c["id"] for c in after] and len(after) == len(before)
    added = after[3]["id"]

    # Stored and resumed: a new kernel has only the store to go by.
    notebook.execute("session.flush()")
    notebook.lab.restart_kernel()
    notebook.page.wait_for_function(
        f"(path) => {_FIND_PANEL}(path).sessionContext.session?.kernel?.status === 'idle'",
        arg=notebook.path, timeout=60_000)
    notebook.page.evaluate(_RUN_CHAT_CELL_JS, notebook.path)
    poll_until(lambda: notebook.execute("print(session.notebook_page.available)") == "True",
               within=30, what="the resumed chat found the notebook bridge")
    assert notebook.execute("print(session.id, len(session.messages) > 0)") == (
        f"{session_id} True")

    # The user changes one of the cells the agent edited, in its editor.
    type_at_end(notebook.page, 4, MINE)
    poll_until(lambda: _sources(notebook)[4]["source"].endswith(MINE), within=10,
               what="the user's typing reached the model")
    mine = _sources(notebook)[4]["source"]
    assert mine == "print(answer * 3)" + MINE

    view = notebook.page.locator(".neta-chat-view")
    prompt = view.locator(".neta-chat-user", has_text="Tidy the notebook up")
    prompt.hover()
    prompt.locator(".neta-msg-action-rewind").click()
    confirm = prompt.locator(".neta-msg-confirm")
    confirm.wait_for()
    also = confirm.locator(".neta-msg-confirm-notebook")
    assert (also.text_content() or "") == (
        "Also undo the notebook changes made after this point (4)")
    also.locator("input").check()
    notebook.pictures(prompt, screenshot_dir, "rewind-confirm")
    confirm.locator(".neta-msg-confirm-go").click()

    notice = view.locator(".neta-notebook-restore")
    notice.wait_for()
    assert (notice.locator(".neta-notebook-restore-text").text_content() or "") == (
        "Notebook put back; changes undone: 3.")
    conflicts = notice.locator(".neta-notebook-restore-conflict")
    assert conflicts.count() == 1
    assert conflicts.first.get_attribute("data-cell-id") == "last"
    assert (conflicts.first.text_content() or "").endswith(" · changed since")

    # Every cell the agent touched is as before the turn, byte for byte — the deleted
    # one back with its id and type — but the one the user edited since, which keeps
    # the user's text; the inserted cell is gone.
    restored = _sources(notebook)
    expected = [dict(cell, source=mine) if cell["id"] == "last" else cell for cell in before]
    assert restored == expected
    assert added not in [c["id"] for c in restored]
    assert notebook.execute("print(len(session.messages))") == "0"
    assert view.locator(".neta-chat-user").count() == 0
    # The rewound prompt is back in the input, as a rewind leaves it.
    assert view.locator("textarea.neta-chat-textarea").input_value() == "Tidy the notebook up"

    notebook.pictures(view, screenshot_dir, "rewind-conflict")

    # The saved notebook's static form says what was put back and what was left.
    note = "Notebook put back; changes undone: 3. Left as you changed them: last (changed since)"

    def saved_says_so() -> bool:
        notebook.save()
        return note in (notebook.root / notebook.path).read_text()

    poll_until(saved_says_so, within=20, what="the saved chat says what the rewind did")

    # One step of the notebook's undo history: Z once takes the whole restore back.
    notebook.undo_in_the_notebook()
    poll_until(lambda: _sources(notebook) == [dict(c, source=mine) if c["id"] == "last"
                                             else c for c in after],
               within=10, what="one undo took the restore back")
    assert SETUP not in [c["source"] for c in _sources(notebook)]

    # Stored: after another restart, the resumed session still knows what the rewind did.
    notebook.lab.restart_kernel()
    notebook.page.wait_for_function(
        f"(path) => {_FIND_PANEL}(path).sessionContext.session?.kernel?.status === 'idle'",
        arg=notebook.path, timeout=60_000)
    notebook.page.evaluate(_RUN_CHAT_CELL_JS, notebook.path)
    notebook.page.locator(".neta-chat-view").wait_for()
    assert notebook.execute("print(session.notebook_restore.summary())") == (
        "3 cells put back; left as they are: last (changed since).")
    # ...and its chat, drawn anew, says it again.
    left = notebook.page.locator(".neta-chat-view .neta-notebook-restore-conflict")
    left.wait_for()
    assert left.get_attribute("data-cell-id") == "last"
