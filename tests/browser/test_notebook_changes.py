"""One review for a turn's changes, on a real JupyterLab page (1 and 2 in Notebook 7
too): a response that proposes three edits, an insert and a delete shows them in one
Changes card.

1. Reject all leaves the live notebook and the saved file byte for byte as they were, and
   each call tells the model it was rejected.
2. Accept all gives exactly the notebook the changes describe; one Undo Cell Operation
   (Z in command mode) puts the whole set back: texts, the inserted cell gone, the
   deleted one restored. A turn whose two answers each propose a set is one undo too
   (the second set decided change by change: a decision is kept, and can be changed,
   until the last is taken; nothing is made before).
3. The set's decisions are stored: after a kernel restart the session resumed from its
   store has them (the first change's card lists each change and what became of it), and
   the saved notebook's static form shows them.

The kernel side is test_notebook_agent.py's (a scripted model the test sets before each
turn), with the change tools on and a store in the server's root. Pictures (Light and
Dark): the pending Changes card, and the decided set's summary.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ..support.timing import poll_until
from .harness import LabSession
from .test_notebook_agent import CHAT, ROOT, TOOLS
from .test_notebook_structure import CELL_IDS, DOOMED, LAST, NOTES, SETUP, Notebook, pictures

pytestmark = pytest.mark.browser

OWN_TOOLS = ["read_notebook", "edit_cell", "insert_cell", "delete_cell", "move_cell"]
STORE = "changes-store.db"
CHANGES_CHAT = CHAT.replace(repr(TOOLS), repr(OWN_TOOLS)).replace(
    "session = AgentSession(agent)\n",
    f"from neta_nb import SessionStore\nstore = SessionStore({STORE!r})\n"
    "session = AgentSession(agent, store=store)\n")
assert CHANGES_CHAT.count("SessionStore(") == 1 and repr(OWN_TOOLS) in CHANGES_CHAT

NEW_SETUP = "answer = 40 + 2\nprint(answer)"
KEPT = 'doomed = "this cell stays"\nprint(doomed)'
NEW_LAST = "print(answer * 3)"
INSERTED = "print('inserted', answer)"
CALLS = [
    {"id": "e1", "name": "edit_cell", "args": {"cell_id": "setup", "source": NEW_SETUP}},
    {"id": "e2", "name": "edit_cell", "args": {"cell_id": "doomed", "source": KEPT}},
    {"id": "e3", "name": "edit_cell", "args": {"cell_id": "last", "source": NEW_LAST}},
    {"id": "i1", "name": "insert_cell", "args": {"source": INSERTED,
                                                 "after_cell_id": "setup"}},
    {"id": "d1", "name": "delete_cell", "args": {"cell_id": "notes"}},
]
CARD = ".neta-chat-approval.neta-changes"
SUMMARY = ".neta-tool-card .neta-changes-summary"


def chat_pictures(lab: LabSession, card: Any, directory: Path) -> None:
    """The chat with the card's top at the top of its scroller, Light and Dark."""
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        card.evaluate("node => node.scrollIntoView({block: 'start'})")
        lab.wait_for_frames()
        lab.screenshot(lab.page.locator(".neta-chat-view"),
                       directory / f"notebook-changes-card-{theme}.png")
    lab.set_theme(dark=False)


def sources(notebook: Notebook) -> list[tuple[str, str]]:
    """The live notebook's cells but the chat's: id and text."""
    return [(str(c["id"]), str(c["source"])) for c in notebook.shown()["cells"][1:]]


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_accept_all_reject_all_one_undo_and_the_stored_set(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    if front == "lab":
        notebook = Notebook(lab, "changes.ipynb", chat=CHANGES_CHAT)
        inserted = _review_the_set(notebook, lab, screenshot_dir)
        _two_sets_of_one_turn_are_one_undo(notebook)
        _stored_and_resumed(notebook, lab, inserted)
        return
    notebook = Notebook(lab, "changes7.ipynb", chat=CHANGES_CHAT.replace(
        STORE, "changes7-store.db"), notebook7=request.getfixturevalue("notebook7"))
    try:
        _review_the_set(notebook, None, screenshot_dir)
    finally:
        notebook.close_tab()


def _review_the_set(notebook: Notebook, lab: LabSession | None, screenshot_dir: Path) -> str:
    """Reject all, Accept all and one undo (pictures when ``lab``); the inserted cell's id."""
    page = notebook.page
    original = [("setup", SETUP), ("doomed", DOOMED), ("notes", NOTES), ("last", LAST)]
    assert sources(notebook) == original
    saved = notebook.save()

    # The set, asked at once: one card, every change with its diff.
    notebook.play("Tidy the notebook", CALLS, "Left it.")
    card = page.locator(CARD)
    card.wait_for()
    items = card.locator(".neta-changes-item")
    poll_until(lambda: items.count() == 5, within=10, what="the five changes in one card")
    assert page.locator(".neta-chat-approval").count() == 1  # no other card asks
    assert [c.strip() for c in card.locator(".neta-changes-count").all_text_contents()] == [
        "1 added", "3 changed", "1 deleted"]
    assert card.locator(".neta-changes-progress").text_content() == "0 of 5 decided"
    assert "+answer = 40 + 2" in items.nth(0).locator(".neta-cell-edit-diff").inner_text()
    assert "-# Notes" in items.nth(4).locator(".neta-cell-edit-diff").inner_text()
    assert notebook.shown()["dirty"] is False  # asking changed nothing
    if lab is not None:
        chat_pictures(lab, card, screenshot_dir)

    # 1. Reject all: nothing changes, live or saved; each call is told.
    card.locator("button[data-decision=reject-all]").click()
    notebook.wait_for_text("Left it.")
    assert sources(notebook) == original
    assert (notebook.root / notebook.path).read_bytes() == saved
    assert notebook.live_cells() == notebook.saved_cells()
    for name, start in (("edit_cell", "The user rejected the edit of cell"),
                        ("insert_cell", "The user rejected the new code cell after cell"),
                        ("delete_cell", "The user rejected the deletion of cell notes")):
        assert all(text.startswith(start) for text in notebook.results(name))

    # 2. Accept all: exactly the notebook described; one undo puts the set back.
    notebook.play("Tidy it after all", CALLS, "Tidied.")
    page.locator(f"{CARD} button[data-decision=accept-all]").click()
    notebook.wait_for_text("Tidied.")
    [inserted] = [cell for cell, _ in sources(notebook) if cell not in CELL_IDS]
    assert sources(notebook) == [("setup", NEW_SETUP), (inserted, INSERTED),
                                 ("doomed", KEPT), ("last", NEW_LAST)]
    results = notebook.results("edit_cell")[-3:] + notebook.results("insert_cell")[-1:]
    assert all("one of 5 changes proposed together" in text for text in results)
    assert f"with the id {inserted}" in notebook.results("insert_cell")[-1]
    summary = page.locator(SUMMARY).last
    summary.wait_for()
    assert summary.locator(".neta-changes-line[data-decision=accepted]").count() == 5
    if lab is not None:
        pictures(lab, summary, screenshot_dir, "changes-summary")

    notebook.undo_in_the_notebook()
    notebook.wait_for_ids(CELL_IDS)
    assert sources(notebook) == original
    return inserted


def _two_sets_of_one_turn_are_one_undo(notebook: Notebook) -> None:
    """A turn whose two answers each propose a set: both accepted, one undo takes back
    the turn's changes."""
    original = sources(notebook)
    script = [[{"tool_call": call} for call in CALLS[:2]],
              [{"tool_call": call} for call in (CALLS[4], CALLS[2])], [{"text": "Both."}]]
    notebook.execute(f"play('Two steps', json.loads({json.dumps(script)!r}))")
    page = notebook.page
    page.locator(f"{CARD} button[data-decision=accept-all]").click()  # the first set
    page.locator(CARD).wait_for(state="detached")
    # The second, one change at a time: a decision is kept in the card (and can be
    # changed) until the last one is taken; then both go.
    card = page.locator(CARD)
    pending = card.locator(".neta-changes-item[data-decision=pending]")
    pending.first.locator("button[data-decision=reject]").click()
    assert card.locator(".neta-changes-progress").text_content() == "1 of 2 decided"
    card.locator(".neta-changes-item[data-decision=rejected] .neta-changes-redecide").click()
    assert card.locator(".neta-changes-progress").text_content() == "0 of 2 decided"
    assert sources(notebook)[1:] == [("doomed", KEPT), ("notes", NOTES), ("last", LAST)]
    for _ in range(2):
        pending.first.locator("button[data-decision=accept]").click()
    card.wait_for(state="detached")
    notebook.wait_for_text("Both.")
    assert sources(notebook) == [("setup", NEW_SETUP), ("doomed", KEPT), ("last", NEW_LAST)]
    notebook.undo_in_the_notebook()
    notebook.wait_for_ids(CELL_IDS)
    assert sources(notebook) == original


def _stored_and_resumed(notebook: Notebook, lab: LabSession, inserted: str) -> None:
    """The saved file's static form, and the session resumed after a kernel restart."""
    notebook.save()
    saved_nb = nbformat.read(notebook.root / notebook.path, as_version=4)
    form = "".join(str(output.get("data", {}).get("text/html", ""))
                   for output in saved_nb.cells[0].outputs)
    assert form.count('data-neta-changes="5"') == 2  # the rejected set and the accepted one
    assert form.count('data-neta-changes="2"') == 2  # the turn of two sets
    assert form.count("· Rejected</li>") == 5 and form.count("· Accepted</li>") == 9
    session_id = notebook.execute("print(session.id)")
    lab.restart_kernel()
    poll_until(lambda: _restarted(notebook), within=60, what="the kernel restarted")
    resumed = json.loads(notebook.execute(RESUME.replace("SESSION_ID", repr(session_id))))
    assert resumed["sets"] == [["rejected"] * 5, ["accepted"] * 5, ["accepted"] * 2,
                               ["accepted"] * 2]
    assert [(c["kind"], c["cell_id"]) for c in resumed["applied"]] == [
        ("edit", "setup"), ("edit", "doomed"), ("edit", "last"), ("insert", inserted),
        ("delete", "notes"), ("edit", "setup"), ("edit", "doomed"), ("delete", "notes"),
        ("edit", "last")]
    assert resumed["form_sets"] == 4


RESUME = f"""
import json, sys
sys.path.insert(0, {str(ROOT)!r})
from neta_nb import AgentSession, SessionStore
from neta_nb.tools.notebook.changes import applied_changes
from neta_nb.tools.rich import CELL_EDIT_TYPE
from neta_nb.widgets import ChatView
resumed = AgentSession.resume(SESSION_ID, store=SessionStore({STORE!r}))
sets = []
for message in resumed.messages:
    for record in message.metadata.tool_executions:
        for item in record.outputs:
            data = json.loads(item.text) if item.media_type == CELL_EDIT_TYPE else {{}}
            lines = (data.get("group") or {{}}).get("changes")
            if lines:
                sets.append([line["decision"] for line in lines])
print(json.dumps({{"sets": sets,
                  "applied": [{{"kind": c.kind, "cell_id": c.cell_id}}
                              for c in applied_changes(resumed.messages)],
                  "form_sets": ChatView(resumed)._fallback_html().count("data-neta-changes")}}))
""".strip()


def _restarted(notebook: Notebook) -> bool:
    try:
        return notebook.execute("print('session' in globals())") == "False"
    except Exception:  # the kernel is not back yet
        return False
