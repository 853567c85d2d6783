"""The notebook's structure and kernel as tools: ``delete_cell`` and ``move_cell`` as
proposals the user decides (the card's data, the page's op, the model told the outcome),
``clear_outputs``, ``run_all``, ``interrupt_kernel`` and ``restart_kernel`` with approvals
that say what they do; refusals (unknown cell, position out of range, no page) clear and
before anyone is asked."""

from __future__ import annotations

import json
from typing import Any

import pytest

from neta_nb import AgentToolConfig, ToolCatalog, resolve_tools
from neta_nb.tools.base import ToolContext, ToolFailure
from neta_nb.tools.notebook import (
    NOTEBOOK_TOOL_NAMES,
    NotebookAccess,
    kernel,
    notebook_tools,
)
from neta_nb.tools.notebook.kernel_control import RESTART_DELAY_MS
from neta_nb.tools.rich import CELL_EDIT_TYPE

from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import answer, calls, make_session

NEW_TOOLS = ("delete_cell", "move_cell", "clear_outputs", "run_all", "interrupt_kernel",
             "restart_kernel")
TOOLS = AgentToolConfig(enabled=["read_notebook", *NEW_TOOLS])
CELLS: list[dict[str, Any]] = [
    {"id": "c1", "source": "import pandas as pd\ndf = pd.read_csv('sales.csv')",
     "execution_count": 1, "outputs": [{"output_type": "stream", "name": "stdout",
                                        "text": "read\n"}]},
    {"id": "m1", "cell_type": "markdown", "source": "# Notes"},
    {"id": "c2", "source": "df.describe()"},
    {"id": "c3", "source": "total = df.price.sum()\ntotal"},
]


def _session(responses: list[list[Any]], page: FakeNotebookPage | None, **agent: Any
             ) -> tuple[Any, Any, Any]:
    session, rec, provider = make_session(responses, agent_options={"tools": TOOLS, **agent})
    session.notebook_page = page
    return session, rec, provider


def _result(session: Any, call_id: str) -> Any:
    return next(r for m in session.messages for r in m.tool_results
                if r.tool_call_id == call_id)


def _card(session: Any, call_id: str) -> dict[str, Any]:
    execution = next(e for m in session.messages for e in m.metadata.tool_executions
                     if e.id == call_id)
    item = next(i for i in execution.outputs if i.media_type == CELL_EDIT_TYPE)
    return dict(json.loads(item.text))


async def _decide(session: Any, rec: Any, call: tuple[str, str, dict[str, Any]],
                  decision: str) -> Any:
    """Run a turn of one call, answering its approval with ``decision``; the request."""
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    request = rec.of("approval_request")[-1]
    assert session.approve(call[0], decision)
    await task
    return request


def test_the_new_tools_are_notebook_tools_off_by_default_and_need_a_page() -> None:
    assert set(NEW_TOOLS) <= set(NOTEBOOK_TOOL_NAMES)
    tools = {item.name: item for item in notebook_tools()}
    for name in NEW_TOOLS:
        assert tools[name].category == "notebook" and not tools[name].core
        assert tools[name].needs_notebook_page and tools[name].sequence == "notebook"
    # Destructive or running ones ask; deletes and moves are proposals (asked as edits).
    assert {n for n in NEW_TOOLS if tools[n].requires_approval} == {
        "clear_outputs", "run_all", "interrupt_kernel", "restart_kernel"}
    default = resolve_tools(ToolCatalog.default(), AgentToolConfig(), notebook_page=True)
    assert not set(NEW_TOOLS) & set(default.names)
    without_page = resolve_tools(ToolCatalog.default(), TOOLS, notebook_page=False)
    for name in NEW_TOOLS:
        assert name not in without_page.names
        assert str(without_page.reasons[name]) == "Needs a JupyterLab or Notebook 7 page"
    assert set(NEW_TOOLS) <= set(resolve_tools(ToolCatalog.default(), TOOLS,
                                               notebook_page=True).names)


@pytest.mark.parametrize(("name", "args"), [
    ("delete_cell", {"cell_id": "c1"}), ("move_cell", {"cell_id": "c1", "to_index": 2}),
    ("clear_outputs", {}), ("run_all", {}), ("interrupt_kernel", {}),
    ("restart_kernel", {})])
async def test_without_a_page_each_tool_refuses_clearly(name: str, args: dict[str, Any]
                                                        ) -> None:
    item = next(t for t in notebook_tools() if t.name == name)
    for access in (None, NotebookAccess(lambda: None, _never, lambda: False),
                   NotebookAccess(lambda: FakeNotebookPage(CELLS, available=False), _never,
                                  lambda: False)):
        with pytest.raises(ToolFailure, match="needs a JupyterLab or Notebook 7 page"):
            await item.invoke_rich(args, ToolContext(notebook=access))


async def _never(*_: Any) -> Any:
    raise AssertionError("no one is asked")


# --- delete_cell ---------------------------------------------------------------------

async def test_a_rejected_delete_shows_the_cell_and_leaves_the_notebook_as_it_was() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, provider = _session(
        [calls(("d", "delete_cell", {"cell_id": "c3"})), answer("ok")], page)
    request = await _decide(session, rec, ("d", "delete_cell", {}), "reject")
    proposal = request.proposal
    assert proposal["kind"] == "delete" and proposal["cell_id"] == "c3"
    assert proposal["before"] == CELLS[3]["source"] and proposal["after"] == ""
    assert "-total = df.price.sum()" in proposal["diff"] and "-total" in proposal["diff"]
    assert proposal["position"] == 4 and proposal["cell_type"] == "code"
    assert [c["id"] for c in page.cells] == ["c1", "m1", "c2", "c3"] and not page.dirty
    assert [op for op, _ in page.requests] == ["read"]
    result = _result(session, "d")
    assert result.is_error and "rejected the deletion of cell c3" in result.content
    assert "unchanged" in result.content
    assert _card(session, "d")["decision"] == "rejected"
    assert "rejected the deletion" in str(provider.requests[-1].messages[-1].model_dump())


async def test_an_accepted_delete_removes_the_cell_as_it_was_shown() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("d", "delete_cell", {"cell_id": "m1"})),
                                answer("ok")], page)
    await _decide(session, rec, ("d", "delete_cell", {}), "allow_once")
    assert [c["id"] for c in page.cells] == ["c1", "c2", "c3"]
    assert ("delete", {"cell_id": "m1", "expected": "# Notes"}) in page.requests
    text = _result(session, "d").content
    assert "accepted the deletion; cell m1 (markdown, position 2) was deleted" in text
    assert "Undo Cell Operation (Z in command mode) restores it" in text
    card = _card(session, "d")
    assert card["decision"] == "accepted" and card["kind"] == "delete"


async def test_a_cell_changed_while_the_user_decides_is_not_deleted() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("d", "delete_cell", {"cell_id": "c2"})),
                                answer("ok")], page)
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    page.cell("c2")["source"] = "df.describe(include='all')  # the user's"
    session.approve("d", "allow_once")
    await task
    result = _result(session, "d")
    assert result.is_error and "changed (or moved) while they were deciding" in result.content
    assert page.cell("c2")["source"].endswith("# the user's")


async def test_an_unknown_cell_is_refused_before_anyone_is_asked() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(
        [calls(("d", "delete_cell", {"cell_id": "nope"}),
               ("m", "move_cell", {"cell_id": "nope", "to_index": 1})), answer("ok")], page)
    session.attach_approver()
    await session.run("go")
    for call_id in ("d", "m"):
        result = _result(session, call_id)
        assert result.is_error and "No cell has the id 'nope'" in result.content
        assert "c1, m1, c2, c3" in result.content
    assert rec.of("approval_request") == []
    # clear_outputs asks first (as every call that needs approval): then it refuses.
    clear, _, _ = _session([calls(("c", "clear_outputs", {"cell_id": "nope"})),
                            answer("ok")], page)
    clear.approval_policy = "allow"
    await clear.run("go")
    assert "No cell has the id 'nope'" in _result(clear, "c").content
    assert "clear_outputs" not in [op for op, _ in page.requests]


# --- move_cell -----------------------------------------------------------------------

async def test_an_accepted_move_puts_the_cell_where_the_model_said() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("m", "move_cell", {"cell_id": "c3", "to_index": 1})),
                                answer("ok")], page)
    request = await _decide(session, rec, ("m", "move_cell", {}), "allow_once")
    proposal = request.proposal
    assert proposal["kind"] == "move"
    assert (proposal["from_index"], proposal["to_index"]) == (4, 1)
    assert proposal["diff"] == [" total = df.price.sum()", " total"]  # the cell, unchanged
    assert [c["id"] for c in page.cells] == ["c3", "c1", "m1", "c2"]
    assert ("move", {"cell_id": "c3", "expected": CELLS[3]["source"], "from_index": 3,
                     "to_index": 0}) in page.requests
    text = _result(session, "m").content
    assert "cell c3 moved from position 4 to position 1" in text
    assert "Undo Cell Operation (Z in command mode) moves it back" in text


async def test_a_rejected_move_changes_nothing_and_the_model_is_told() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("m", "move_cell", {"cell_id": "c1", "to_index": 3})),
                                answer("ok")], page)
    await _decide(session, rec, ("m", "move_cell", {}), "reject")
    assert [c["id"] for c in page.cells] == ["c1", "m1", "c2", "c3"]
    assert "rejected moving cell c1 from position 1 to position 3" in _result(
        session, "m").content


async def test_a_position_out_of_range_is_refused_and_no_move_is_a_no_op() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session(
        [calls(("a", "move_cell", {"cell_id": "c1", "to_index": 0}),
               ("b", "move_cell", {"cell_id": "c1", "to_index": 5}),
               ("c", "move_cell", {"cell_id": "c2", "to_index": 3})), answer("ok")], page)
    session.attach_approver()
    await session.run("go")
    for call_id, wrong in (("a", 0), ("b", 5)):
        result = _result(session, call_id)
        assert result.is_error
        assert f"to_index {wrong} is out of range" in result.content
        assert "the notebook has 4 cells, so a position is 1 to 4" in result.content
    assert "at position 3 already" in _result(session, "c").content
    assert rec.of("approval_request") == []
    # Three moves of one response are reviewed together: one read planned them all.
    assert [op for op, _ in page.requests] == ["read"]


async def test_a_move_made_stale_by_the_user_is_not_made() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("m", "move_cell", {"cell_id": "c3", "to_index": 1})),
                                answer("ok")], page)
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    del page.cells[1]  # the user deleted m1 meanwhile: c3 is not where it was shown
    session.approve("m", "allow_once")
    await task
    assert "changed (or moved)" in _result(session, "m").content
    assert [c["id"] for c in page.cells] == ["c1", "c2", "c3"]


# --- clear_outputs -------------------------------------------------------------------

async def test_clear_outputs_asks_naming_the_cells_and_clears_them() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("c", "clear_outputs", {})), answer("ok")], page)
    request = await _decide(session, rec, ("c", "clear_outputs", {}), "allow_once")
    preview = request.preview
    assert [(c.cell_id, c.cell_label, c.first_line) for c in preview.cells] == [
        ("c1", "[1]", "import pandas as pd")]
    assert "1 cell" in preview.summary and "undo does not bring" in preview.summary
    assert page.cell("c1")["outputs"] == [] and page.cell("c1")["execution_count"] is None
    assert "all code cells were cleared (3 cells)" in _result(session, "c").content


async def test_a_rejected_clear_leaves_the_outputs_and_a_markdown_cell_is_refused() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("c", "clear_outputs", {"cell_id": "c1"})),
                                answer("ok")], page)
    await _decide(session, rec, ("c", "clear_outputs", {}), "reject")
    assert page.cell("c1")["outputs"] == CELLS[0]["outputs"]
    assert "clear_outputs" not in [op for op, _ in page.requests]
    markdown, _, _ = _session([calls(("c", "clear_outputs", {"cell_id": "m1"})),
                               answer("ok")], page)
    markdown.approval_policy = "allow"
    await markdown.run("go")
    assert "only code cells have outputs" in _result(markdown, "c").content


# --- run_all -------------------------------------------------------------------------

async def test_run_all_lists_the_code_cells_in_order_and_stops_at_an_error() -> None:
    page = FakeNotebookPage(CELLS)
    page.run_outputs["c2"] = [{"output_type": "error", "ename": "NameError",
                               "evalue": "name 'df' is not defined", "traceback": []}]
    session, rec, _ = _session([calls(("r", "run_all", {})), answer("ok")], page)
    request = await _decide(session, rec, ("r", "run_all", {}), "allow_once")
    preview = request.preview
    assert [(c.cell_id, c.cell_label) for c in preview.cells] == [
        ("c1", "[1]"), ("c2", "3"), ("c3", "4")]
    assert "3 code cells, in this order" in preview.summary
    assert [a["cell_ids"] for op, a in page.requests if op == "run_all"] == [
        ["c1", "c2", "c3"]]
    text = _result(session, "r").content
    assert "Ran 2 of 3 code cells" in text and "cell c2 raised an error" in text
    assert "Not run (the run stopped at the error): c3" in text
    assert "NameError: name 'df' is not defined" in text
    assert page.cell("c3")["execution_count"] is None


async def test_run_all_refused_at_approval_runs_nothing_and_in_a_cell_refuses(
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("r", "run_all", {})), answer("ok")], page)
    await _decide(session, rec, ("r", "run_all", {}), "reject")
    assert "run_all" not in [op for op, _ in page.requests]
    busy, _, _ = _session([calls(("r", "run_all", {})), answer("ok")], page)
    busy.approval_policy = "allow"
    monkeypatch.setattr(busy.deps.workspace.notebook, "in_cell", lambda: True)
    await busy.run("go")
    assert "busy with the cell this turn runs in" in _result(busy, "r").content


# --- interrupt_kernel ----------------------------------------------------------------

async def test_interrupt_refuses_with_nothing_running_and_interrupts_a_running_cell(
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session([calls(("i", "interrupt_kernel", {})), answer("ok"),
                              calls(("j", "interrupt_kernel", {})), answer("ok")], page)
    session.approval_policy = "allow"
    await session.run("stop it")
    assert "No cell is executing" in _result(session, "i").content and page.interrupts == 0
    page.executing = ["c2"]
    monkeypatch.setattr(session.deps.workspace.notebook, "in_cell", lambda: True)
    await session.run("stop it")
    assert page.interrupts == 1
    assert "interrupted. Cells executing then: c2" in _result(session, "j").content


async def test_interrupt_refuses_to_stop_the_cell_this_turn_runs_in(
        monkeypatch: pytest.MonkeyPatch) -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session([calls(("i", "interrupt_kernel", {})), answer("ok")], page)
    session.approval_policy = "allow"
    monkeypatch.setattr(session.deps.workspace.notebook, "in_cell", lambda: True)
    monkeypatch.setattr(kernel, "started_in_running_cell", lambda: True)
    await session.run("stop it")
    assert "would stop this turn itself" in _result(session, "i").content
    assert page.interrupts == 0


async def test_the_interrupt_approval_names_the_executing_cell() -> None:
    page = FakeNotebookPage(CELLS)
    page.executing = ["c3"]
    session, rec, _ = _session([calls(("i", "interrupt_kernel", {})), answer("ok")], page)
    request = await _decide(session, rec, ("i", "interrupt_kernel", {}), "reject")
    assert [c.cell_id for c in request.preview.cells] == ["c3"]
    assert "KeyboardInterrupt" in request.preview.summary and page.interrupts == 0


def test_a_turn_started_in_the_running_cell_is_told_from_one_started_elsewhere() -> None:
    import contextvars

    saved = dict(kernel._state)
    try:
        kernel._state["watched"] = object()
        cell = contextvars.copy_context()
        cell.run(kernel._pre_run)  # the cell begins, in its own context
        assert cell.run(kernel.started_in_running_cell)
        assert not kernel.started_in_running_cell()  # the chat's Send: another context
        kernel._post_run()
        assert not cell.run(kernel.started_in_running_cell)  # that cell ended
        other = contextvars.copy_context()
        other.run(kernel._pre_run)  # the next cell: the first one's tasks are not in it
        assert not cell.run(kernel.started_in_running_cell)
        assert other.run(kernel.started_in_running_cell)
    finally:
        kernel._state.update(saved)


# --- restart_kernel ------------------------------------------------------------------

async def test_a_restart_refused_at_approval_restarts_nothing() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec, _ = _session([calls(("k", "restart_kernel", {})), answer("ok")], page)
    session.namespace.update({"df": [1, 2], "model": object(), "_hidden": 1})
    request = await _decide(session, rec, ("k", "restart_kernel", {}), "reject")
    summary = request.preview.summary
    assert "loses everything it holds in memory: 2 variables (df, model)" in summary
    assert "turn ends with it" in summary and "cells keep their text" in summary
    assert page.restarts == [] and "restart" not in [op for op, _ in page.requests]
    assert _result(session, "k").is_error


async def test_an_allowed_restart_is_asked_of_the_page_after_the_result_is_out() -> None:
    page = FakeNotebookPage(CELLS)
    session, _, _ = _session([calls(("k", "restart_kernel", {})), answer("ok")], page)
    session.approval_policy = "allow"
    await session.run("restart")
    assert page.restarts == [RESTART_DELAY_MS]
    text = _result(session, "k").content
    assert "The kernel (id k-1) restarts in 1.5 s" in text and "no variables" in text


async def test_a_saved_chat_shows_the_delete_and_move_cards_with_their_decisions() -> None:
    from neta_nb.widgets import ChatView

    page = FakeNotebookPage(CELLS)
    session, _, _ = _session(
        [calls(("d", "delete_cell", {"cell_id": "m1"})),
         calls(("m", "move_cell", {"cell_id": "c3", "to_index": 1})), answer("ok")],
        page, accept_notebook_edits=True)
    await session.run("tidy")
    form = ChatView(session)._fallback_html()
    assert "Delete cell m1 · Accepted" in form and "-# Notes" in form
    assert "Move cell c3 from position 3 to 1 · Accepted" in form
    assert "[Delete cell m1 · Accepted]" in ChatView(session)._fallback_text()


async def test_run_all_leaves_out_the_cell_that_shows_the_chat() -> None:
    page = FakeNotebookPage([{"id": "chat", "source": "ChatView(session)"}, *CELLS])
    page.chat_cell_id = "chat"  # running it again would make a new chat mid-turn
    session, rec, _ = _session([calls(("r", "run_all", {})), answer("ok")], page)
    request = await _decide(session, rec, ("r", "run_all", {}), "allow_once")
    assert [c.cell_id for c in request.preview.cells] == ["c1", "c2", "c3"]
    assert "3 code cells (not cell 1, which shows this chat)" in request.preview.summary
    assert [a["cell_ids"] for op, a in page.requests if op == "run_all"] == [
        ["c1", "c2", "c3"]]
    assert page.cell("chat")["execution_count"] is None
    assert "Ran 3 of 3 code cells in order (not cell 1, which" in _result(session, "r").content


async def test_clear_outputs_leaves_the_chat_alone() -> None:
    chat = {"id": "chat", "source": "ChatView(session)", "execution_count": 3,
            "outputs": [{"output_type": "display_data", "data": {"text/plain": "chat"}}]}
    page = FakeNotebookPage([chat, *CELLS])
    page.chat_cell_id = "chat"  # its output is the chat: cleared, the chat would close
    session, rec, _ = _session([calls(("c", "clear_outputs", {})), answer("ok")], page)
    request = await _decide(session, rec, ("c", "clear_outputs", {}), "allow_once")
    assert [c.cell_id for c in request.preview.cells] == ["c1"]
    assert page.cell("chat")["outputs"] and page.cell("c1")["outputs"] == []
    assert "(not the cell that shows this chat)" in _result(session, "c").content
    named, _, _ = _session([calls(("c", "clear_outputs", {"cell_id": "chat"})),
                            answer("ok")], page)
    named.approval_policy = "allow"
    await named.run("go")
    assert "Cell chat's output is this chat" in _result(named, "c").content
    assert page.cell("chat")["outputs"]
