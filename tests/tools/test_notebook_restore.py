"""Rewind and fork that put the cells back (``notebook=True``): every cell the agent
changed after the message gets its text of then again — inserted cells removed, deleted
ones back with their id, moved ones moved back — in one ``restore`` request (one undo
step on the page), while a cell the user changed since is left exactly as it is and
listed as a conflict; the changes are read from the stored cards, so a resumed session
restores as the live one would; a refusal changes nothing."""

from __future__ import annotations

import asyncio
import copy
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig
from neta_nb.store.session_store import SessionStore
from neta_nb.tools.notebook.changes import AppliedChange, applied_changes
from neta_nb.tools.notebook.changes.restore import CellConflict, RestoredCell, plan_restore

from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import FakeProvider, answer, calls, make_session

TOOLS = AgentToolConfig(enabled=["read_notebook", "edit_cell", "insert_cell", "delete_cell",
                                 "move_cell"])
CELLS: list[dict[str, Any]] = [
    {"id": "c1", "source": "rows = [3, 1, 2]"},
    {"id": "m1", "cell_type": "markdown", "source": "# Notes"},
    {"id": "c2", "source": "total = sum(rows)\nprint(total)"},
    {"id": "c3", "source": "mean = total / len(rows)"},
]
FIRST = [calls(("e0", "edit_cell", {"cell_id": "c1", "source": "rows = [1]"})),
         answer("First done.")]
SECOND = [calls(("e1", "edit_cell", {"cell_id": "c2", "source": "total = 0"}),
                ("e2", "edit_cell", {"cell_id": "c3", "source": "mean = 0"}),
                ("i1", "insert_cell", {"source": "print('new')", "after_cell_id": "c1"}),
                ("d1", "delete_cell", {"cell_id": "m1"}),
                ("e3", "edit_cell", {"cell_id": "c1", "source": "rows = [2]"})),
          answer("Second done.")]


def _session(page: FakeNotebookPage, store: SessionStore | None = None
             ) -> tuple[AgentSession, Any]:
    session, rec, _ = make_session([*FIRST, *SECOND], store=store,
                                   agent_options={"tools": TOOLS,
                                                  "accept_notebook_edits": True})
    session.notebook_page = page
    return session, rec


def _sources(page: FakeNotebookPage) -> list[tuple[str, str, str]]:
    return [(c["id"], c["cell_type"], c["source"]) for c in page.cells]


async def _two_turns(page: FakeNotebookPage, store: SessionStore | None = None
                     ) -> tuple[AgentSession, list[tuple[str, str, str]], str]:
    """Two turns of accepted changes; the notebook after the first, and the second
    prompt's id."""
    session, _ = _session(page, store)
    await session.run("one")
    snapshot = _sources(page)
    await session.run("two")
    second = [m for m in session.messages if m.role == "user"][1].id
    return session, snapshot, second


async def test_a_rewind_with_the_notebook_puts_every_cell_back_in_one_request() -> None:
    page = FakeNotebookPage(CELLS)
    session, snapshot, second = await _two_turns(page)
    assert _sources(page) != snapshot
    requests = len(page.requests)
    done = await session.rewind(second, notebook=True)
    assert _sources(page) == snapshot  # the texts, byte for byte, and the deleted cell's id
    assert [m.text for m in session.messages if m.role == "user"] == ["one"]
    assert page.restores == 1  # one request: one undo step on the page
    restore_ops = [op for op, _ in page.requests[requests:] if op not in ("read",)]
    assert restore_ops == ["restore"]
    assert done.notebook.conflicts == [] and done.notebook.error is None
    assert {(c.cell_id, c.kind) for c in done.notebook.restored} == {
        ("c1", "edit"), ("c2", "edit"), ("c3", "edit"), ("new-1", "insert"), ("m1", "delete")}
    assert done.session is None  # no store: no branch kept


async def test_a_cell_the_user_changed_since_is_left_alone_and_reported() -> None:
    page = FakeNotebookPage(CELLS)
    session, snapshot, second = await _two_turns(page)
    page.cell("c2")["source"] = "total = 0  # mine"  # the user's edit after the agent's
    done = await session.rewind(second, notebook=True)
    assert page.cell("c2")["source"] == "total = 0  # mine"
    assert done.notebook.conflicts == [CellConflict("c2", "edit", "edited")]
    others = [cell for cell in snapshot if cell[0] != "c2"]
    assert [cell for cell in _sources(page) if cell[0] != "c2"] == others
    assert "c2 (changed since)" in done.notebook.summary()


async def test_a_cell_changed_in_two_turns_then_by_the_user_keeps_the_users_text() -> None:
    # c1 was changed in both turns; the user changed it after: a rewind to the first
    # prompt leaves it as the user has it, not at the first turn's text.
    page = FakeNotebookPage(CELLS)
    session, _, _ = await _two_turns(page)
    page.cell("c1")["source"] = "rows = [2, 9]"
    first = session.messages[0].id
    done = await session.rewind(first, notebook=True)
    assert page.cell("c1")["source"] == "rows = [2, 9]"
    assert done.notebook.conflicts == [CellConflict("c1", "edit", "edited")]
    assert [(c["id"], c["source"]) for c in page.cells if c["id"] != "c1"] == [
        (c["id"], c["source"]) for c in CELLS if c["id"] != "c1"]


async def test_a_fork_with_the_notebook_restores_for_the_new_branch() -> None:
    page = FakeNotebookPage(CELLS)
    session, snapshot, _ = await _two_turns(page)
    first_answer = next(m for m in session.messages if m.role == "assistant"
                        and m.text == "First done.")
    before = [m.id for m in session.messages]
    done = await session.fork(first_answer.id, notebook=True)
    assert _sources(page) == snapshot
    assert done.session is not None and done.session is not session
    assert [m.text for m in done.session.messages if m.role == "user"] == ["one"]
    assert [m.id for m in session.messages] == before  # the original is left as it was


async def test_refused_without_a_page_and_nothing_changes() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, second = await _two_turns(page)
    after = copy.deepcopy(page.cells)
    messages = [m.id for m in session.messages]
    page.available = False
    with pytest.raises(RuntimeError, match="needs a JupyterLab or Notebook 7 page"):
        session.rewind(second, notebook=True)
    with pytest.raises(RuntimeError, match="needs a JupyterLab or Notebook 7 page"):
        session.fork(session.messages[0].id, notebook=True)
    assert [m.id for m in session.messages] == messages
    page.available = True
    assert page.cells == after


def test_refused_without_an_event_loop_before_anything_changes() -> None:
    async def setup() -> tuple[AgentSession, str, FakeNotebookPage]:
        page = FakeNotebookPage(CELLS)
        session, _, second = await _two_turns(page)
        return session, second, page

    session, second, _ = asyncio.run(setup())
    messages = [m.id for m in session.messages]
    with pytest.raises(RuntimeError, match="no running event loop"):
        session.rewind(second, notebook=True)
    assert [m.id for m in session.messages] == messages


async def test_a_user_edit_between_the_read_and_the_apply_is_never_overwritten() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, second = await _two_turns(page)
    real = page._op_restore
    typed = {"done": False}

    async def user_types_first(args: dict[str, Any]) -> dict[str, Any]:
        if not typed["done"]:  # the user's keystroke lands just before the first apply
            typed["done"] = True
            page.cell("c3")["source"] = "mean = 0  # typed"
        return await real(args)

    page._op_restore = user_types_first  # type: ignore[method-assign]
    done = await session.rewind(second, notebook=True)
    assert page.cell("c3")["source"] == "mean = 0  # typed"
    assert done.notebook.conflicts == [CellConflict("c3", "edit", "edited")]
    assert page.restores == 1  # the first apply was refused whole, the second made


async def test_the_changes_come_from_the_store_so_a_resumed_session_restores(
        tmp_path: Path) -> None:
    page = FakeNotebookPage(CELLS)
    store = SessionStore(tmp_path / "sessions.db")
    session, snapshot, second = await _two_turns(page, store)
    session.flush()
    resumed = AgentSession.resume(session.id, SessionStore(tmp_path / "sessions.db"),
                                  agent=session.agent)
    resumed.notebook_page = page
    page.cell("c3")["source"] = "mean = 0  # mine"
    done = await resumed.rewind(second, notebook=True)
    assert done.notebook.conflicts == [CellConflict("c3", "edit", "edited")]
    assert [c for c in _sources(page) if c[0] != "c3"] == [
        c for c in snapshot if c[0] != "c3"]
    assert done.session is not None  # the replaced history kept as a branch
    # What it did is kept too: a session resumed again says so, until the next message.
    assert resumed.notebook_restore == done.notebook
    resumed.flush()
    again = AgentSession.resume(session.id, SessionStore(tmp_path / "sessions.db"),
                                agent=session.agent)
    assert again.notebook_restore == done.notebook
    again.notebook_page = page
    await again.run("three")
    assert again.notebook_restore is None


def test_plan_from_cards_an_undone_card_and_a_moved_cell() -> None:
    moved = AppliedChange("m", "move", "c3", "x", "x", from_index=1, to_index=3)
    cells = [{"id": "a", "source": ""}, {"id": "b", "source": ""},
             {"id": "c3", "source": "x"}]
    operations, outcome = plan_restore(cells, [moved])
    assert operations == [{"op": "move", "cell_id": "c3", "from_index": 2, "to_index": 0}]
    assert outcome.restored == [RestoredCell("c3", "move")]
    # Moved since (the user dragged it): left.
    operations, outcome = plan_restore([cells[0], cells[2], cells[1]], [moved])
    assert operations == [] and outcome.conflicts == [CellConflict("c3", "move", "moved")]
    # An edit the card's Undo put back already: nothing to do, no conflict.
    edit = AppliedChange("e", "edit", "a", "old", "new")
    assert plan_restore([{"id": "a", "source": "old"}], [edit]) == ([], plan_restore([], [])[1])
    # A card too large to keep its texts: reported, never guessed.
    big = AppliedChange("e", "edit", "a", "", "", kept=False)
    assert plan_restore([{"id": "a", "source": "new"}], [big])[1].conflicts == [
        CellConflict("a", "edit", "not_kept")]


async def test_rejected_proposals_are_not_changes() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = make_session(FIRST, agent_options={"tools": TOOLS})
    session.notebook_page = page
    await session.run("one")  # no one to ask: the policy rejects
    assert applied_changes(session.messages) == []


async def test_a_set_reviewed_together_and_accepted_is_put_back_by_a_rewind() -> None:
    # The Changes card's set (one response: edits, an insert, a delete) is recorded change
    # by change, so a rewind puts it back as it would single changes.
    page = FakeNotebookPage(CELLS)
    before = _sources(page)
    session, rec, _ = make_session([*SECOND, answer("Later.")],
                                   agent_options={"tools": TOOLS})
    session.notebook_page = page
    session.attach_approver()
    task = session.start("tidy")
    ids = ["e1", "e2", "i1", "d1", "e3"]
    for _ in range(200):
        if len(rec.of("approval_request")) >= len(ids):
            break
        await asyncio.sleep(0.01)
    for call_id in ids:
        assert session.approve(call_id, "allow_once")
    await task
    assert _sources(page) != before
    assert {c.group for c in applied_changes(session.messages)} == {"e1"}  # one set
    prompt = next(m.id for m in session.messages if m.role == "user")
    done = await session.rewind(prompt, notebook=True)
    assert _sources(page) == before
    assert done.notebook.conflicts == []


def _crew_with_an_editor(page: FakeNotebookPage, store: SessionStore | None) -> AgentSession:
    """A planner that edits a cell, then delegates to an editor that edits another and
    inserts one (its own changes, in its own history), then edits a third itself."""
    editor = Agent("editor", description="edits cells", tools=TOOLS,
                   accept_notebook_edits=True, model=FakeProvider([
                       calls(("ce", "edit_cell", {"cell_id": "c2", "source": "total = 99"}),
                             ("ci", "insert_cell", {"source": "print('child')",
                                                    "after_cell_id": "c2"})),
                       answer("Edited.")]))
    planner = Agent("planner", subagents=[editor], accept_notebook_edits=True,
                    tools=AgentToolConfig(enabled=[*TOOLS.enabled, "delegate"]),
                    model=FakeProvider([
                        calls(("pe", "edit_cell", {"cell_id": "c1", "source": "rows = [9]"})),
                        calls(("d1", "delegate", {"agent": "editor", "task": "tidy c2"})),
                        calls(("pm", "edit_cell", {"cell_id": "c3", "source": "mean = 9"})),
                        answer("All done.")]))
    session = AgentSession(planner, store=store)
    session.notebook_page = page
    return session


@pytest.mark.parametrize("resumed", [False, True])
async def test_a_sub_agents_changes_are_put_back_by_the_parents_rewind(
        resumed: bool, tmp_path: Path) -> None:
    page = FakeNotebookPage(CELLS)
    store = SessionStore(tmp_path / "sessions.db")
    session = _crew_with_an_editor(page, store)
    await session.run("go")
    assert page.cell("c2")["source"] == "total = 99" and len(page.cells) == len(CELLS) + 1
    if resumed:  # a new kernel: the sub-agent's history is in the store alone
        session.flush()
        session = AgentSession.resume(session.id, SessionStore(tmp_path / "sessions.db"),
                                      agent=session.agent)
        session.notebook_page = page
        assert session.subagents == {}
    prompt = session.messages[0].id
    done = await session.rewind(prompt, notebook=True)
    assert done.notebook.error is None and done.notebook.conflicts == []
    assert _sources(page) == [(c["id"], c.get("cell_type", "code"), c["source"])
                              for c in CELLS]
    assert {c.cell_id for c in done.notebook.restored} >= {"c1", "c2", "c3"}
