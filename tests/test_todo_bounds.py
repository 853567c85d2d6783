"""The todo tool's bounds on ids, and ``merge: null`` from a model, through
``Tool.invoke`` as the runtime calls it."""

from __future__ import annotations

import json

import pytest

from neta_nb.todo import MAX_ID_LENGTH, TODO_TOOL_PARAMETERS, TodoError, TodoStore
from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import todo

PLAN = [{"id": "1", "content": "Load data", "status": "in_progress"},
        {"id": "2", "content": "Plot", "status": "pending"}]


@pytest.fixture
def store() -> TodoStore:
    planned = TodoStore()
    planned.write(PLAN)
    return planned


@pytest.mark.parametrize("merge", [False, True])
async def test_a_huge_id_is_refused_and_changes_nothing(store: TodoStore, merge: bool) -> None:
    before = store.read()
    with pytest.raises(TodoError, match=rf"todos\[1\]: id is 10000 characters .*the limit "
                                        rf"is {MAX_ID_LENGTH}\. Use a short id"):
        await todo.invoke({"todos": [{"id": "3", "content": "Report"},
                                     {"id": "x" * 10_000, "content": "Write up"}],
                           "merge": merge}, ToolContext(todo=store))
    assert store.read() == before


def test_an_id_at_the_limit_is_kept() -> None:
    store = TodoStore()
    store.write([{"id": "a" * MAX_ID_LENGTH, "content": "Fine"}])
    assert store.read()[0].id == "a" * MAX_ID_LENGTH
    with pytest.raises(TodoError, match=f"id is {MAX_ID_LENGTH + 1} characters"):
        store.write([{"id": "a" * (MAX_ID_LENGTH + 1), "content": "Too long"}])


async def test_merge_null_means_replace(store: TodoStore) -> None:
    result = json.loads(await todo.invoke(
        {"todos": [{"id": "9", "content": "Start over", "status": "pending"}],
         "merge": None}, ToolContext(todo=store)))
    assert [item["id"] for item in result["todos"]] == ["9"]
    assert [item.id for item in store.read()] == ["9"]


async def test_merge_null_without_todos_reads(store: TodoStore) -> None:
    result = json.loads(await todo.invoke({"merge": None}, ToolContext(todo=store)))
    assert [item["id"] for item in result["todos"]] == ["1", "2"]


def test_the_schema_stays_the_seeds() -> None:
    assert TODO_TOOL_PARAMETERS["properties"]["merge"]["type"] == "boolean"
    assert todo.parameters == TODO_TOOL_PARAMETERS
