"""``run_cell(wait=False)`` and ``cell_status`` with the fake page: a long cell does not
hold the turn. The run starts on the page when the turn that asked for it has ended (the
kernel runs one thing at a time: the cell's code would hold the turn), a Stop does not
stop it, and ``cell_status`` tells its state, count and output."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ToolCatalog, resolve_tools
from neta_nb.tools.base import ToolContext
from neta_nb.tools.notebook import NOTEBOOK_TOOL_NAMES, notebook_tools
from neta_nb.tools.notebook.reading_running import run_cell

from ..support.delegation import crew_catalog, delegations
from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import FakeProvider, answer, calls, make_session

TOOLS = AgentToolConfig(enabled=["read_notebook", "run_cell", "cell_status"])
CELLS: list[dict[str, Any]] = [
    {"id": "slow", "source": "import time; time.sleep(30); x = 1"},
    {"id": "m1", "cell_type": "markdown", "source": "# Notes"},
    {"id": "bad", "source": "1/0"},
]


def _session(responses: list[list[Any]], page: FakeNotebookPage,
             tools: AgentToolConfig = TOOLS) -> tuple[Any, Any]:
    session, rec, _ = make_session(responses, agent_options={"tools": tools})
    session.notebook_page = page
    session.approval_policy = "allow"
    return session, rec


def _result(session: Any, call_id: str) -> str:
    text: str = next(r.content for m in session.messages for r in m.tool_results
                     if r.tool_call_id == call_id)
    return text


def _runs(page: FakeNotebookPage) -> list[dict[str, Any]]:
    return [args for op, args in page.requests if op == "run"]


async def test_a_run_not_waited_for_starts_when_the_turn_ends() -> None:
    page = FakeNotebookPage(CELLS)
    session, _ = _session([calls(("r", "run_cell", {"cell_id": "slow", "wait": False})),
                           calls(("s", "cell_status", {"cell_id": "slow"})),
                           answer("It runs; I will look later."),
                           calls(("t", "cell_status", {"cell_id": "slow"})),
                           answer("running"),
                           calls(("u", "cell_status", {"cell_id": "slow"})),
                           answer("done")], page)
    await session.run("run the slow cell")
    # The turn ended without the run: it starts once the turn is over.
    assert "queued" in _result(session, "r") and "when this turn ends" in _result(session, "r")
    assert "Cell slow: queued" in _result(session, "s")
    for _ in range(5):  # the start follows the turn's end
        await asyncio.sleep(0)
    assert _runs(page) == [{"cell_id": "slow", "wait": False}]
    assert page.executing == ["slow"]
    await session.run("how is it going?")
    assert _result(session, "t").startswith("Cell slow: running. It has not ended yet.")
    page.run_outputs["slow"] = [{"output_type": "stream", "name": "stdout", "text": "x\n"}]
    page.end_run("slow")
    await session.run("and now?")
    status = _result(session, "u")
    assert status.startswith("Cell slow: done, execution count 1. It has ended and did not fail.")
    assert "x" in status


async def test_a_cell_queued_twice_in_a_turn_runs_once() -> None:
    page = FakeNotebookPage(CELLS)
    session, _ = _session([calls(("r", "run_cell", {"cell_id": "slow", "wait": False})),
                           calls(("r2", "run_cell", {"cell_id": "slow", "wait": False})),
                           answer("Queued.")], page)
    await session.run("run the slow cell")
    assert "already queued" in _result(session, "r2") and "Nothing more" in _result(session, "r2")
    for _ in range(5):
        await asyncio.sleep(0)
    assert _runs(page) == [{"cell_id": "slow", "wait": False}]


async def test_with_no_turn_running_the_run_starts_at_once() -> None:
    page = FakeNotebookPage(CELLS)
    session, _ = _session([], page)
    ctx = ToolContext(notebook=session.deps.workspace.notebook)
    result = await run_cell.invoke_rich({"cell_id": "slow", "wait": False}, ctx)
    assert result.text.startswith("Cell slow was started in the notebook (state now: "
                                  "running).")
    assert page.executing == ["slow"]


async def test_stop_ends_the_turn_and_the_queued_cell_still_runs() -> None:
    page = FakeNotebookPage(CELLS)
    session, rec = _session([calls(("r", "run_cell", {"cell_id": "slow", "wait": False})),
                             calls(("h", "guarded_op", {"x": 1})), answer("never")], page,
                            AgentToolConfig(enabled=[*TOOLS.enabled, "guarded_op"]))
    session.approval_policy = "ask"
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    assert session.approve("r", "allow_once")
    for _ in range(100):  # until the turn waits on its next call
        if len(rec.of("approval_request")) == 2:
            break
        await asyncio.sleep(0.01)
    assert _runs(page) == []
    assert session.cancel()
    await task
    for _ in range(5):  # the start follows the turn's end
        await asyncio.sleep(0)
    assert _runs(page) == [{"cell_id": "slow", "wait": False}]
    assert page.interrupts == 0


async def test_the_states_a_cell_can_be_in() -> None:
    page = FakeNotebookPage(CELLS)
    page.run_outputs["bad"] = [{"output_type": "error", "ename": "ZeroDivisionError",
                                "evalue": "division by zero", "traceback": []}]
    session, _ = _session([calls(("a", "cell_status", {"cell_id": "bad"}),
                                 ("b", "run_cell", {"cell_id": "bad"}),
                                 ("c", "cell_status", {"cell_id": "bad"}),
                                 ("d", "cell_status", {"cell_id": "m1"}),
                                 ("e", "cell_status", {"cell_id": "nope"}),
                                 ("f", "run_cell", {"cell_id": "m1", "wait": False})),
                           answer("ok")], page)
    await session.run("check")
    assert _result(session, "a").startswith("Cell bad: idle. It is not running and has not run.")
    assert _result(session, "c").startswith(
        "Cell bad: error, execution count 1. It has ended and failed")
    assert "ZeroDivisionError: division by zero" in _result(session, "c")
    assert "not a code cell" in _result(session, "d")
    assert "no cell 'nope'" in _result(session, "e")
    assert "only code cells run" in _result(session, "f")
    assert _runs(page) == [{"cell_id": "bad"}]


async def test_a_start_the_page_refuses_is_reported_by_cell_status() -> None:
    page = FakeNotebookPage(CELLS)
    session, _ = _session([calls(("r", "run_cell", {"cell_id": "slow", "wait": False})),
                           answer("queued"),
                           calls(("s", "cell_status", {"cell_id": "slow"})), answer("hm")],
                          page)
    await session.run("go")
    page.cells.remove(page.cell("slow"))  # the user deletes the cell as the turn ends
    for _ in range(5):  # the start follows the turn's end
        await asyncio.sleep(0)
    page.cells.insert(0, {**CELLS[0], "outputs": [], "execution_count": None,
                          "cell_type": "code"})
    await session.run("status?")
    assert "was queued to run but could not be started: no cell 'slow'" in _result(
        session, "s")


@pytest.mark.parametrize("wait", [True, False])
async def test_the_approval_shows_the_code_either_way(wait: bool) -> None:
    page = FakeNotebookPage(CELLS)
    session, rec = _session([calls(("r", "run_cell", {"cell_id": "slow", "wait": wait})),
                             answer("ok")], page)
    session.approval_policy = "ask"
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    assert rec.of("approval_request")[-1].preview.code == CELLS[0]["source"]
    assert session.approve("r", "reject")
    await task
    for _ in range(5):  # the start follows the turn's end
        await asyncio.sleep(0)
    assert _runs(page) == []


async def test_a_long_output_so_far_is_bounded_and_says_how_much_was_cut() -> None:
    page = FakeNotebookPage(CELLS)
    page.executing = ["slow"]
    page.cell("slow")["outputs"] = [{"output_type": "stream", "name": "stdout",
                                     "text": "".join(f"step {i}\n" for i in range(5000))}]
    session, _ = _session([calls(("s", "cell_status", {"cell_id": "slow"})), answer("ok")],
                          page)
    await session.run("how far is it?")
    status = _result(session, "s")
    assert status.startswith("Cell slow: running. It has not ended yet. Its outputs so far:")
    assert "step 0" in status and "step 4999" in status
    assert "characters left out" in status and len(status) < 5_000


def test_cell_status_is_a_read_only_notebook_tool_off_by_default_that_needs_a_page() -> None:
    tools = {item.name: item for item in notebook_tools()}
    status = tools["cell_status"]
    assert "cell_status" in NOTEBOOK_TOOL_NAMES and status.category == "notebook"
    assert not status.requires_approval and not status.core
    assert status.needs_notebook_page and status.sequence == "notebook"
    default = resolve_tools(ToolCatalog.default(), AgentToolConfig(), notebook_page=True)
    assert "cell_status" not in default.names
    without_page = resolve_tools(ToolCatalog.default(), TOOLS, notebook_page=False)
    assert str(without_page.reasons["cell_status"]) == "Needs a JupyterLab or Notebook 7 page"
    assert "cell_status" in resolve_tools(ToolCatalog.default(), TOOLS,
                                          notebook_page=True).names


async def test_a_subagents_run_starts_when_the_whole_turn_ends() -> None:
    """A sub-agent's turn ends inside its parent's: the cell it queued starts when the
    parent's turn has ended (started when the sub-agent's ended, its code would hold the
    parent's turn until it finished)."""
    page = FakeNotebookPage(CELLS)
    runner = Agent("runner", model=FakeProvider([
        calls(("r", "run_cell", {"cell_id": "slow", "wait": False})), answer("queued")]),
        description="runs cells", tools=TOOLS)
    planner = Agent("planner", model=FakeProvider([
        delegations(("d", "runner", "start the slow cell")), answer("it will run")]),
        subagents=[runner])
    session = AgentSession(planner, crew_catalog(), notebook_page=page,
                           approval_policy="allow")
    runs_when_done: list[int] = []
    session.subscribe(lambda event: runs_when_done.append(len(_runs(page)))
                      if event.type == "done" else None)
    await session.run("have the runner start the slow cell")
    assert "queued" in _result(session, "d")
    for _ in range(5):  # the start follows the turn's end
        await asyncio.sleep(0)
    assert runs_when_done == [0]
    assert _runs(page) == [{"cell_id": "slow", "wait": False}]
