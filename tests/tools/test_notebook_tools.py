"""The notebook tools on a session: read (bounded, kernel history without a page), edit
and insert as proposals the user decides, run with approval (and in the kernel when the
turn holds the shell), and the resolver leaving the page-bound tools out where no page
answers."""

from __future__ import annotations

import difflib
import json
import sys
from typing import Any

import pytest

from neta_nb import AgentToolConfig, ToolCatalog, resolve_tools
from neta_nb.tools.notebook.editing import cell_diff
from neta_nb.tools.notebook.reading import READ_CHARS, CellRange, render_notebook
from neta_nb.tools.rich import CELL_EDIT_TYPE

from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import answer, assert_valid_history, calls, make_session

NOTEBOOK_TOOLS = AgentToolConfig(enabled=["read_notebook", "edit_cell", "insert_cell",
                                          "run_cell"])
CELLS: list[dict[str, Any]] = [
    {"id": "c1", "source": "import pandas as pd\ndf = pd.read_csv('sales.csv')"},
    {"id": "c2", "source": "df['price'] / df['qty']", "execution_count": 2,
     "outputs": [{"output_type": "error", "ename": "ZeroDivisionError",
                  "evalue": "division by zero",
                  "traceback": ["\x1b[0;31mZeroDivisionError\x1b[0m: division by zero"]}]},
    {"id": "m1", "cell_type": "markdown", "source": "# Notes"},
]


def _session(responses: list[list[Any]], page: FakeNotebookPage | None, **agent: Any
             ) -> tuple[Any, Any, Any]:
    session, rec, provider = make_session(
        responses, agent_options={"tools": NOTEBOOK_TOOLS, **agent})
    session.notebook_page = page
    return session, rec, provider


def _result(session: Any, call_id: str) -> Any:
    return next(r for m in session.messages for r in m.tool_results
                if r.tool_call_id == call_id)


def _execution(session: Any, call_id: str) -> Any:
    return next(e for m in session.messages for e in m.metadata.tool_executions
                if e.id == call_id)


def _proposal_item(session: Any, call_id: str) -> dict[str, Any]:
    item = next(i for i in _execution(session, call_id).outputs
                if i.media_type == CELL_EDIT_TYPE)
    return dict(json.loads(item.text))


def test_without_a_page_the_edit_and_run_tools_are_left_out_with_the_reason() -> None:
    resolution = resolve_tools(ToolCatalog.default(), NOTEBOOK_TOOLS, notebook_page=False)
    assert "read_notebook" in resolution.names
    for name in ("edit_cell", "insert_cell", "run_cell"):
        assert name not in resolution.names
        assert str(resolution.reasons[name]) == "Needs a JupyterLab or Notebook 7 page"
        assert "JupyterLab or Notebook 7" in resolution.explain(name)
    with_page = resolve_tools(ToolCatalog.default(), NOTEBOOK_TOOLS, notebook_page=True)
    assert {"edit_cell", "insert_cell", "run_cell"} <= set(with_page.names)


async def test_a_session_offers_the_page_tools_only_while_a_page_answers() -> None:
    page = FakeNotebookPage(CELLS, available=False)
    session, _, provider = _session([answer("a"), answer("b")], page)
    await session.run("first")
    offered = {d.name for d in provider.requests[-1].tools}
    assert "read_notebook" in offered and "edit_cell" not in offered
    page.available = True
    await session.run("second")
    assert {"edit_cell", "insert_cell", "run_cell"} <= {d.name for d in provider.requests[-1].tools}


async def test_read_notebook_shows_ids_sources_unsaved_state_and_the_error() -> None:
    page = FakeNotebookPage(CELLS)
    page.dirty = True
    session, _, provider = _session([calls(("r", "read_notebook", {})), answer("ok")], page)
    await session.run("what failed?")
    text = _result(session, "r").content
    assert "analysis.ipynb (unsaved changes included): 3 cells" in text
    assert "id c2 · code · [2]" in text and "df['price'] / df['qty']" in text
    assert "error: ZeroDivisionError: division by zero" in text
    assert "\x1b" not in text  # ANSI colours removed
    assert "not instructions" in text  # the notebook's content is data
    assert_valid_history(provider.requests[-1].messages)
    # The range goes to the page, which spends its output budget on those cells first.
    assert page.requests == [("read", {"start": 1, "end": None, "cell_id": None})]


async def test_read_notebook_sends_the_range_it_reads_to_the_page() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session([calls(("r", "read_notebook", {"start": 2, "end": 3}),
                                    ("o", "read_notebook", {"cell_id": "c3"})),
                              answer("ok")], page)
    await session.run("the last two?")
    assert page.requests == [("read", {"start": 2, "end": 3, "cell_id": None}),
                             ("read", {"start": 1, "end": None, "cell_id": "c3"})]


def test_a_huge_notebook_reads_bounded_and_says_what_it_left_out() -> None:
    cells = [{"id": f"c{n}", "cell_type": "code", "source": f"x = {n}\n" * 50,
              "outputs": [{"output_type": "stream", "name": "stdout",
                           "text": "y" * 200_000}]} for n in range(500)]
    text = render_notebook({"cells": cells}, CellRange())
    assert len(text) <= READ_CHARS
    assert "Left out to stay short: cells " in text and "read_notebook(start=" in text
    one = render_notebook({"cells": cells}, CellRange(cell_id="c499"))
    assert "--- cell 500 · id c499" in one and len(one) > READ_CHARS  # one cell in full
    middle = render_notebook({"cells": cells}, CellRange(start=200, end=201))
    assert "id c199" in middle and "id c200" in middle and "id c201" not in middle
    assert "cells 1–199" in middle


async def test_read_notebook_without_a_page_reads_the_kernel_history(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session, _, _ = _session([calls(("r", "read_notebook", {})), answer("ok")], None)
    session.namespace.update({"In": ["", "x = 1", "1 / 0"], "Out": {}})
    try:
        1 / 0  # noqa: B018 - the last error, as IPython records it
    except ZeroDivisionError as error:
        monkeypatch.setattr(sys, "last_exc", error, raising=False)
        monkeypatch.setattr(sys, "last_value", error, raising=False)
    await session.run("what failed?")
    text = _result(session, "r").content
    assert "kernel's own history" in text and "not the notebook document" in text
    assert "id In[2]" in text and "ZeroDivisionError" in text


async def test_edit_cell_waits_for_the_user_and_a_rejection_changes_nothing() -> None:
    page = FakeNotebookPage(CELLS)
    fixed = "df['price'] / df['qty'].replace(0, float('nan'))"
    session, rec, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c2", "source": fixed})), answer("ok")], page)
    session.attach_approver()
    task = session.start("fix it")
    await rec.wait_for("approval_request")
    request = rec.of("approval_request")[0]
    proposal = request.proposal
    assert proposal["before"] == CELLS[1]["source"] and proposal["after"] == fixed
    expected = list(difflib.unified_diff(
        (CELLS[1]["source"]).splitlines(), fixed.splitlines(),
        fromfile="cell c2", tofile="cell c2", lineterm=""))
    assert proposal["diff"] == expected
    assert session.approve("e", "reject")
    await task
    assert page.cell("c2")["source"] == CELLS[1]["source"] and not page.dirty
    assert [op for op, _ in page.requests] == ["read"]
    rejected = _result(session, "e")
    assert "rejected" in rejected.content and rejected.is_error  # as a call not allowed
    assert _execution(session, "e").status == "rejected"  # the card says so, not "Done"
    assert _proposal_item(session, "e")["decision"] == "rejected"


async def test_an_accepted_edit_lands_and_an_edited_one_lands_as_the_user_wrote_it() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": "import pandas as pd"}),),
         calls(("f", "edit_cell", {"cell_id": "c2", "source": "df.price"})),
         answer("done")], page)
    session.attach_approver()

    def decide(event: Any) -> None:
        if event.type == "approval_request":
            if event.id == "e":
                session.approve("e", "allow_once")
            else:
                session.approve("f", "allow_once", text="df.price.sum()")
    session.subscribe(decide)
    await session.run("tidy")
    assert page.cell("c1")["source"] == "import pandas as pd"
    assert page.cell("c2")["source"] == "df.price.sum()"
    # The model reads what was decided; the card is the user's, not described to it.
    assert _result(session, "e").content == (
        "The user accepted the edit; cell c1 now holds the proposed text.")
    changed = _result(session, "f").content
    assert "changed the proposal" in changed and "df.price.sum()" in changed
    item = _proposal_item(session, "f")
    assert item["decision"] == "accepted" and item["after"] == "df.price.sum()"
    assert item["changed_by_user"] and "+df.price.sum()" in item["diff"]
    assert rec.of("done")[-1].stop_reason == "end_turn"


def test_a_line_added_after_the_last_one_is_the_only_line_in_the_diff() -> None:
    # A cell's last line has no newline: it is not shown removed and added again.
    assert cell_diff("a = 1\nb = 2", "a = 1\nb = 2\nprint(b)", "c") == [
        "--- cell c", "+++ cell c", "@@ -1,2 +1,3 @@", " a = 1", " b = 2", "+print(b)"]
    # Where only the newline at the end changes, that is the difference shown.
    assert cell_diff("b = 2", "b = 2\n", "c") == [
        "--- cell c", "+++ cell c", "@@ -1 +1 @@", "-b = 2", "+b = 2"]


async def test_a_cell_changed_while_the_user_decides_is_not_overwritten() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 2"})), answer("ok")], page)
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    page.cell("c1")["source"] = "the user typed this meanwhile"
    session.approve("e", "allow_once")
    await task
    result = _result(session, "e")
    assert result.is_error and "changed while they were deciding" in result.content
    assert page.cell("c1")["source"] == "the user typed this meanwhile"


async def test_with_no_one_to_ask_the_policy_rejects_and_the_agent_option_accepts() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 2"})), answer("ok")], page)
    await session.run("go")  # no view attached: the default policy rejects
    assert page.cell("c1")["source"] == CELLS[0]["source"]
    auto, rec, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 2"})), answer("ok")], page,
        accept_notebook_edits=True)
    auto.attach_approver()
    await auto.run("go")
    assert page.cell("c1")["source"] == "x = 2"
    assert rec.of("approval_request") == []  # not asked; the card shows the diff
    assert _proposal_item(auto, "e")["decision"] == "accepted"


async def test_insert_cell_adds_after_the_named_cell_once_accepted() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session(
        [calls(("i", "insert_cell", {"source": "df.describe()", "after_cell_id": "c1"}),
               ("j", "insert_cell", {"source": "x", "after_cell_id": "nope"})),
         answer("ok")], page, accept_notebook_edits=True)
    await session.run("add")
    assert [c["id"] for c in page.cells] == ["c1", "new-1", "c2", "m1"]
    assert "with the id new-1" in _result(session, "i").content
    missing = _result(session, "j")
    assert missing.is_error and "No cell has the id 'nope'" in missing.content


async def test_run_cell_needs_approval_and_returns_the_outputs() -> None:
    page = FakeNotebookPage(CELLS)
    page.run_outputs["c1"] = [{"output_type": "stream", "name": "stdout", "text": "loaded\n"}]
    session, _, provider = _session(
        [calls(("r", "run_cell", {"cell_id": "c1"})), answer("ok"),
         calls(("s", "run_cell", {"cell_id": "c1"})), answer("ok")], page)
    await session.run("run it")  # nobody to approve: it does not run
    assert ("run", {"cell_id": "c1"}) not in page.requests
    assert _result(session, "r").is_error
    session.approval_policy = "allow"
    await session.run("run it")
    assert ("run", {"cell_id": "c1"}) in page.requests
    text = _result(session, "s").content
    assert "execution count 1" in text and "loaded" in text
    assert "loaded" in str(provider.requests[-1].messages[-1].model_dump())


async def test_run_cell_inside_a_busy_cell_runs_in_the_kernel_and_writes_the_outputs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = FakeNotebookPage([{"id": "c1", "source": "print('hi'); z = 41 + 1\nz"}])
    session, _, _ = _session([calls(("r", "run_cell", {"cell_id": "c1"})), answer("ok")],
                             page)
    session.approval_policy = "allow"
    notebook = session.deps.workspace.notebook
    monkeypatch.setattr(notebook, "in_cell", lambda: True)  # a turn in a cell
    await session.run("run it")
    assert ("run", {"cell_id": "c1"}) not in page.requests  # never asked of the page
    assert session.namespace["z"] == 42
    outputs = page.cell("c1")["outputs"]
    assert outputs and "hi" in outputs[0]["text"]
    assert "ran in the kernel directly" in _result(session, "r").content


async def test_a_saved_chat_shows_each_diff_card_with_its_decision() -> None:
    from neta_nb.widgets import ChatView

    page = FakeNotebookPage(CELLS)
    hostile = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    session, _, _ = _session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": hostile})), answer("ok")],
        page, accept_notebook_edits=True)
    await session.run("go")
    view = ChatView(session)
    form = view._fallback_html()
    assert "Edit of cell c1 · Accepted" in form
    assert "+&lt;img src=x onerror=alert(1)&gt;&lt;script&gt;" in form  # text, never markup
    assert "<script>" not in form and "<img src=x" not in form
    assert "[Edit of cell c1 · Accepted]" in view._fallback_text()


def test_a_malformed_page_answer_reads_as_no_cells_not_a_crash() -> None:
    for answer_ in ({"cells": "not a list"}, {"cells": [1, None, {"id": "a", "outputs": 3}]},
                    {}):
        text = render_notebook(answer_, CellRange())
        assert text.startswith("Notebook the notebook")


async def test_a_resumed_session_shows_each_diff_card_with_its_decision_and_undo_data(
        tmp_path: Any) -> None:
    from neta_nb import AgentSession, SessionStore

    page = FakeNotebookPage(CELLS)
    store = SessionStore(tmp_path / "sessions.sqlite3")
    session, _, _ = make_session(
        [calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 2"}),
               ("f", "insert_cell", {"source": "y = 3", "after_cell_id": "c1"})),
         answer("ok")], store=store,
        agent_options={"tools": NOTEBOOK_TOOLS, "accept_notebook_edits": True})
    session.notebook_page = page
    await session.run("go")
    assert session.flush(10)
    resumed = AgentSession.resume(session.id, store=SessionStore(tmp_path / "sessions.sqlite3"),
                                  agent=session.agent, catalog=session.catalog)
    edit, insert = _proposal_item(resumed, "e"), _proposal_item(resumed, "f")
    assert edit["decision"] == "accepted" and edit["before"] == CELLS[0]["source"]
    assert edit["after"] == "x = 2" and edit["cell_id"] == "c1"  # what Undo puts back where
    assert insert["decision"] == "accepted" and insert["cell_id"] == "new-1"
    assert insert["after"] == "y = 3"


async def test_run_cell_approval_shows_the_cells_code_and_its_name_on_the_page() -> None:
    """The user decides on the code that will run, not on a cell id: the request carries
    the cell's source as the page has it now and its name as the notebook shows it."""
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("r", "run_cell", {"cell_id": "c2"}),
                                      ("s", "run_cell", {"cell_id": "c1"})),
                                answer("ok")], page)
    session.attach_approver()
    session.subscribe(lambda event: session.approve(event.id, "reject")
                      if event.type == "approval_request" else None)
    await session.run("run them")
    asked = {event.id: event.preview for event in rec.of("approval_request")}
    assert asked["r"] is not None and asked["s"] is not None
    assert asked["r"].code == "df['price'] / df['qty']"
    assert (asked["r"].cell_id, asked["r"].cell_label) == ("c2", "[2]")  # it ran: [2]
    assert asked["s"].cell_label == "1"  # never ran: its position
    assert "pd.read_csv" in asked["s"].code
