"""``%%agent`` cells run headless by nbclient (what nbconvert ``--execute`` and papermill
do) in a real kernel: the exported notebook shows the turn — its plan and its answer —
``-o`` holds the answer, a second run of a cell leaves one session with one branch, a
call that needs approval is refused with a plain line and the turn goes on, ``--budget``
ends the cell with the budget's reason, and a failed turn is a cell error only with
``--raise``."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient
from nbclient.exceptions import CellExecutionError
from nbconvert import HTMLExporter

from neta_nb.providers.scripted.demo_script import DEMO_PROMPT

ROOT = Path(__file__).resolve().parents[2]

SETUP = """
import json
import neta_nb
from neta_nb import Agent, AgentToolConfig, ScriptedProvider, SessionStore
from neta_nb.providers.prices import ModelPrice

print(neta_nb.__file__)
gated = Agent("gated", model=ScriptedProvider([
    [{"tool_call": {"name": "python", "args": {"code": "open('ran.txt', 'w')"}}}],
    [{"text": "The turn went on."}]]), tools=AgentToolConfig(enabled=["python"]))
priced_model = ScriptedProvider([
    [{"usage": {"input_tokens": 1_000_000, "output_tokens": 0}},
     {"tool_call": {"name": "list_files", "args": {}}}],
    [{"text": "This answer is never reached."}]])
priced_model.price = ModelPrice(input=1.0, output=1.0)
priced = Agent("priced", model=priced_model)

def _echo_mentions(messages):
    mentions = [part.text for part in messages[-1].parts if part.type == "mention"]
    return [{"text": "I read: " + " | ".join(mentions)}]


echo = Agent("echo", model=ScriptedProvider({"responses": [_echo_mentions],
                                             "on_exhausted": "cycle"}))
failing = Agent("failing", model=ScriptedProvider([[{"error": {
    "message": "The server said no.", "retryable": False}}]]))
"""

AGENT_CELL = f"%%agent -o result\n{DEMO_PROMPT}"

STORED = """
store = SessionStore()
records = store.list_sessions()
answers = {r.id: [m.text for m in store.load_messages(r.id) if m.role == "assistant"]
           for r in records}
prompts = {r.id: [m.text for m in store.load_messages(r.id) if m.role == "user"]
           for r in records}
print(json.dumps({"sessions": [[r.id, r.branch_of] for r in records],
                  "answers": answers, "prompts": prompts, "result": result}))
"""


def _run(cells: list[str], tmp_path: Path, *, order: list[int] | None = None
         ) -> nbformat.NotebookNode:
    """Execute ``cells`` in a real kernel (store: a file in ``tmp_path``) in ``order``
    (indices; ``None``: each once, top to bottom)."""
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in cells]
    client = NotebookClient(notebook, kernel_name="python3", timeout=180,
                            resources={"metadata": {"path": str(tmp_path)}})
    env = {"NETA_NB_STORE_URL": str(tmp_path / "sessions.db"), "PYTHONPATH": str(ROOT)}
    with client.setup_kernel(env=env):
        for index in range(len(cells)) if order is None else order:
            client.execute_cell(notebook.cells[index], index)
    return notebook


def _text(cell: Any) -> str:
    return "".join(output.get("text", "") for output in cell.outputs
                   if output.output_type == "stream")


def _html(cell: Any) -> str:
    return "".join(output.data.get("text/html", "") for output in cell.outputs
                   if "data" in output)


@pytest.fixture(scope="module")
def demo(tmp_path_factory: pytest.TempPathFactory) -> nbformat.NotebookNode:
    tmp_path = tmp_path_factory.mktemp("agent_cell")
    return _run(["%load_ext neta_nb", SETUP, AGENT_CELL, STORED], tmp_path,
                order=[0, 1, 2, 2, 3])


def test_the_kernel_runs_this_tree(demo: nbformat.NotebookNode) -> None:
    assert _text(demo.cells[1]).strip() == str(ROOT / "neta_nb" / "__init__.py")


def test_the_exported_notebook_shows_the_plan_and_the_answer(demo: nbformat.NotebookNode
                                                             ) -> None:
    cell = demo.cells[2]
    # The output is the turn's static form itself (no widget: nbclient has no page).
    assert [output.output_type for output in cell.outputs] == ["display_data"]
    assert "application/vnd.jupyter.widget-view+json" not in cell.outputs[0].data
    html, _ = HTMLExporter().from_notebook_node(demo)
    assert "Look at the files in the working directory" in html  # the plan
    assert "Profile a table column by column" in html
    assert "Sample data: first look" in html  # the answer
    assert "customer_rating" in html


def test_result_is_the_answer_and_a_second_run_is_one_session_with_a_branch(
        demo: nbformat.NotebookNode) -> None:
    stored = json.loads(_text(demo.cells[3]))
    sessions = stored["sessions"]
    assert len(sessions) == 2, sessions
    (main,) = [s for s in sessions if s[1] is None]
    (branch,) = [s for s in sessions if s[1] is not None]
    assert branch[1] == main[0]  # the first run, kept as a branch of the cell's session
    answers = stored["answers"][main[0]]
    assert stored["result"] == answers[-1]
    assert stored["result"].startswith("## Sample data: first look")
    # The session holds the second run's turn alone; the branch, the first run's.
    assert stored["prompts"][main[0]] == [DEMO_PROMPT]
    assert stored["prompts"][branch[0]] == [DEMO_PROMPT]
    assert stored["answers"][branch[0]][-1].startswith("## Sample data: first look")


def test_an_approval_is_refused_headless_with_a_line_and_the_turn_goes_on(
        tmp_path: Path) -> None:
    notebook = _run(["%load_ext neta_nb", SETUP,
                     "%%agent -a gated -o result\nRun some code.", "print(result)"],
                    tmp_path)
    printed = _text(notebook.cells[2])
    assert ("Refused 'python': it needs approval and there is no page here to ask on; "
            "the turn goes on without it") in printed
    assert _text(notebook.cells[3]).strip() == "The turn went on."
    assert "The turn went on." in _html(notebook.cells[2])
    assert not (tmp_path / "ran.txt").exists()


def test_an_approval_policy_allows_and_agent_takes_one_line(tmp_path: Path) -> None:
    notebook = _run(["%load_ext neta_nb", SETUP,
                     "%agent -a gated --approve allow -o said Run some code.",
                     "print(said)"], tmp_path)
    assert _text(notebook.cells[3]).strip() == "The turn went on."
    assert "Allowed 'python' without asking (--approve allow)." in _text(notebook.cells[2])
    assert (tmp_path / "ran.txt").exists()


def test_a_budget_ends_the_cell_with_its_reason(tmp_path: Path) -> None:
    notebook = _run(["%load_ext neta_nb", SETUP,
                     "%%agent -a priced --budget 0.5 -o result\nList the files.",
                     "print(repr(result))"], tmp_path)
    printed = _text(notebook.cells[2])
    assert "Stopped: this turn reached its budget ($1.00 of $0.500)" in printed, printed
    assert _text(notebook.cells[3]).strip() == "None"  # no answer, and the cell ended cleanly


def test_a_failed_turn_is_a_line_and_with_raise_a_cell_error(tmp_path: Path) -> None:
    # After a %reset too: the cells' runner is not one of the notebook's variables.
    notebook = _run(["%load_ext neta_nb", "%reset -f", SETUP, "%%agent -a failing\nHello?"],
                    tmp_path)
    assert "The turn failed: " in _text(notebook.cells[3])
    assert "The server said no." in _text(notebook.cells[3])
    with pytest.raises(CellExecutionError, match=r"AgentCellError.*The server said no"):
        _run(["%load_ext neta_nb", SETUP, "%%agent -a failing --raise\nHello?"], tmp_path)


def test_a_bad_option_is_a_cell_error_and_runs_nothing(tmp_path: Path) -> None:
    with pytest.raises(CellExecutionError, match="there is no variable 'nobody'"):
        _run(["%load_ext neta_nb", SETUP, "%%agent -a nobody\nHello?"], tmp_path)
    assert not (tmp_path / "sessions.db").exists() or "s_" not in (
        tmp_path / "sessions.db").read_bytes().decode("latin-1")



def test_mentions_in_the_body_send_what_they_name_at_each_run(tmp_path: Path) -> None:
    cells = ["%load_ext neta_nb", SETUP, "numbers = [3, 1, 4]",
             "%%agent -a echo -o seen\nWhat is the sum of @numbers?", "print(seen)",
             "numbers.append(1_592)", "print(seen)"]
    notebook = _run(cells, tmp_path, order=[0, 1, 2, 3, 4, 5, 3, 6])
    assert _text(notebook.cells[4]).strip() == "I read: numbers: list, len 3 = [3, 1, 4]"
    # Run again after the variable changed, the mention sends its value now.
    assert _text(notebook.cells[6]).strip() == "I read: numbers: list, len 4 = [3, 1, 4, 1592]"
