"""The notebook tools where no page answers: a notebook executed by nbclient (as
nbconvert --execute and papermill run them). read_notebook reads the kernel's history and
says so; the edit and run tools are left out with the stated reason, and a model that
calls one anyway reads that reason; nothing hangs."""

from __future__ import annotations

from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    """
from neta_nb import Agent, AgentSession, AgentToolConfig
from neta_nb.widgets import ChatView
from tests.support.sessions import FakeProvider, answer, calls

provider = FakeProvider([
    calls(("r", "read_notebook", {}), ("e", "edit_cell", {"cell_id": "x", "source": "y"}),
          ("u", "run_cell", {"cell_id": "x"})),
    answer("done"),
])
agent = Agent("helper", model=provider, tools=AgentToolConfig(
    enabled=["read_notebook", "edit_cell", "insert_cell", "run_cell"]))
session = AgentSession(agent, approval_policy="allow")
chat = ChatView(session)
chat
""",
    "values = [1, 2, 3]\nsum(values)",
    "1 / 0",
    "await session.run('what failed?')",
    """
offered = [tool.name for tool in provider.requests[0].tools]
results = {part.tool_call_id: part for message in session.messages
           for part in message.tool_results}
print("OFFERED", offered)
for call_id in ("r", "e", "u"):
    print("RESULT", call_id, results[call_id].is_error, results[call_id].content[:4000])
""",
]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source.strip()) for source in CELLS]
    notebook.cells[2].metadata["tags"] = ["raises-exception"]
    NotebookClient(notebook, kernel_name="python3", timeout=120, allow_errors=True,
                   resources={"metadata": {"path": "."}}).execute()
    return notebook


def _printed(notebook: nbformat.NotebookNode) -> str:
    outputs: list[Any] = notebook.cells[-1].outputs
    return "".join(output.get("text", "") for output in outputs)


def test_the_edit_and_run_tools_are_left_out_with_the_reason(
        executed: nbformat.NotebookNode) -> None:
    printed = _printed(executed)
    offered = next(line for line in printed.splitlines() if line.startswith("OFFERED"))
    assert "read_notebook" in offered
    for name in ("edit_cell", "insert_cell", "run_cell"):
        assert name not in offered
    for call_id in ("e", "u"):
        line = next(line for line in printed.splitlines() if line.startswith(f"RESULT {call_id}"))
        assert " True " in line and "JupyterLab or Notebook 7 page" in line


def test_read_notebook_answers_from_the_kernel_history(executed: nbformat.NotebookNode) -> None:
    printed = _printed(executed)
    read = printed[printed.index("RESULT r"):printed.index("RESULT e")]
    assert "RESULT r False" in read
    assert "kernel's own history" in read and "not the notebook document" in read
    assert "id In[2]" in read and "values = [1, 2, 3]" in read
    assert "ZeroDivisionError" in read  # the last error, with its traceback
