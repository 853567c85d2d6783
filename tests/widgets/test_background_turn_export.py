"""A turn run in the background (``session.start`` in one cell, ``await task`` in a later
one) reaches a notebook executed by nbclient — nbconvert ``--execute``, papermill — which
records only the messages of the cell it is running: the chat's static form and the saved
widget state hold the second turn, not only the first."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest
from nbclient import NotebookClient

CELLS = [
    """
from neta_nb import Agent, AgentSession
from neta_nb.providers.base import StreamDone, TextDelta
from neta_nb.widgets import ChatView, TodoCard
from tests.support.sessions import FakeProvider, calls

PLAN = {"todos": [{"id": "1", "content": "Count the rows", "status": "completed"},
                  {"id": "2", "content": "Write it up", "status": "in_progress"}]}
provider = FakeProvider([
    [TextDelta("The first answer."), StreamDone("end_turn")],
    calls(("c1", "todo", PLAN)),
    [TextDelta("The answer of the background turn."), StreamDone("end_turn")],
])
session = AgentSession(Agent("analyst", model=provider))
""",
    "chat = ChatView(session)\nchat",
    "TodoCard(session.todo)",
    "await session.run('First?')",
    "task = session.start('Second, in the background?')",
    "await task",
    "print(len(session.messages))",
]


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source.strip()) for source in CELLS]
    NotebookClient(notebook, kernel_name="python3", timeout=120, store_widget_state=True,
                   resources={"metadata": {"path": "."}}).execute()
    return notebook


def _form(cell: Any) -> str:
    (form,) = [output for output in cell.outputs if "text/html" in output.get("data", {})]
    return str(form.data["text/html"])


def test_the_static_forms_show_the_background_turn(executed: nbformat.NotebookNode) -> None:
    assert executed.cells[-1].outputs[0].text.strip() == "6"
    chat_form = _form(executed.cells[1])
    assert "The first answer." in chat_form
    assert "The answer of the background turn." in chat_form
    assert "Second, in the background?" in chat_form
    # The plan the background turn wrote, in the standalone card's form too.
    assert "Write it up" in _form(executed.cells[2])


def test_the_saved_widget_state_holds_the_background_turn(executed: nbformat.NotebookNode
                                                          ) -> None:
    state = executed.metadata["widgets"]["application/vnd.jupyter.widget-state+json"]["state"]
    texts = [item.get("text") for model in state.values()
             for item in model["state"].get("messages", [])]
    assert "The answer of the background turn." in texts
    plans = [model["state"]["todos"] for model in state.values()
             if model["state"].get("_component") == "todo-card"]
    assert plans and plans[0][1]["content"] == "Write it up"
    assert not any(model["state"].get("running") for model in state.values()), json.dumps(
        {key: model["state"].get("running") for key, model in state.items()})
