"""The todo tool: internal, planning, core; uses the session's TodoStore."""

from __future__ import annotations

import json

import pytest

from neta_nb.todo import TODO_TOOL_DESCRIPTION, TODO_TOOL_PARAMETERS, TodoError, TodoStore
from neta_nb.tools import ToolArgumentError, ToolContext
from neta_nb.tools.builtin import todo


def test_metadata_and_schema_are_the_seeds() -> None:
    assert todo.visibility == "internal"
    assert todo.category == "planning"
    assert todo.core
    assert todo.label == "Plan"
    assert todo.parameters == TODO_TOOL_PARAMETERS
    assert todo.description == TODO_TOOL_DESCRIPTION


async def test_writes_and_reads_the_sessions_store() -> None:
    store = TodoStore()
    ctx = ToolContext(todo=store)
    result = json.loads(await todo.invoke(
        {"todos": [{"id": "1", "content": "Load data", "status": "in_progress"},
                   {"id": "2", "content": "Plot"}]}, ctx))
    assert result["summary"] == {"total": 2, "pending": 1, "in_progress": 1, "completed": 0,
                                 "cancelled": 0}
    assert [i.id for i in store.read()] == ["1", "2"]
    await todo.invoke({"todos": [{"id": "1", "status": "completed"}], "merge": True}, ctx)
    read = json.loads(await todo.invoke({}, ctx))
    assert read["todos"][0] == {"id": "1", "content": "Load data", "status": "completed"}


async def test_refused_writes_raise_todo_error() -> None:
    with pytest.raises(TodoError, match="the limit is"):
        await todo.invoke({"todos": [{"id": str(i), "content": "x"} for i in range(51)]},
                          ToolContext())


async def test_bad_argument_types_are_argument_errors() -> None:
    with pytest.raises(ToolArgumentError, match="todos: Input should be a valid list"):
        await todo.invoke({"todos": "do it"}, ToolContext())
