"""Tests for neta_nb.todo: the seed's TodoStore semantics, our bounds and duplicate/partial
rules, listeners, history hydration and the ``todo`` tool."""

from __future__ import annotations

import json
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from neta_nb.messages import Message, TextPart, ToolCallPart, ToolResultPart
from neta_nb.todo import (
    INJECTION_HEADER,
    MAX_CONTENT_LENGTH,
    MAX_TODO_ITEMS,
    MISSING_CONTENT,
    MISSING_ID,
    TODO_TOOL_DESCRIPTION,
    TODO_TOOL_PARAMETERS,
    TodoError,
    TodoItem,
    TodoStore,
    TodoSummary,
    run_todo_tool,
)


def item(id: str, content: str, status: str = "pending") -> dict[str, Any]:
    return {"id": id, "content": content, "status": status}


def as_tuples(items: list[TodoItem]) -> list[tuple[str, str, str]]:
    return [(i.id, i.content, i.status) for i in items]


@pytest.fixture
def plan() -> TodoStore:
    store = TodoStore()
    store.write([
        item("1", "Read the spec", "completed"),
        item("2", "Write the code", "in_progress"),
        item("3", "Write tests"),
        item("4", "Old idea", "cancelled"),
    ])
    return store


# --- write: replace ------------------------------------------------------------------


def test_replace_sets_the_whole_list_in_order_and_returns_it() -> None:
    store = TodoStore()
    result = store.write([item("b", "B"), item("a", "A", "in_progress")])
    assert as_tuples(result) == [("b", "B", "pending"), ("a", "A", "in_progress")]
    assert as_tuples(store.read()) == as_tuples(result)


def test_replace_is_the_default_and_drops_what_was_there(plan: TodoStore) -> None:
    plan.write([item("9", "Fresh start")])
    assert as_tuples(plan.read()) == [("9", "Fresh start", "pending")]


def test_replace_with_an_empty_list_clears(plan: TodoStore) -> None:
    assert plan.write([]) == []
    assert not plan.has_items()


def test_write_accepts_todo_items_and_tuples() -> None:
    store = TodoStore()
    store.write((TodoItem(id="1", content="x", status="completed"), item("2", "y")))
    assert as_tuples(store.read()) == [("1", "x", "completed"), ("2", "y", "pending")]


# --- write: merge --------------------------------------------------------------------


def test_merge_updates_in_place_and_appends_new_ids(plan: TodoStore) -> None:
    result = plan.write([item("3", "Write more tests", "in_progress"), item("5", "Ship")],
                        merge=True)
    assert as_tuples(result) == [
        ("1", "Read the spec", "completed"),
        ("2", "Write the code", "in_progress"),
        ("3", "Write more tests", "in_progress"),
        ("4", "Old idea", "cancelled"),
        ("5", "Ship", "pending"),
    ]


def test_merge_with_only_a_status_keeps_the_content(plan: TodoStore) -> None:
    plan.write([{"id": "2", "status": "completed"}], merge=True)
    assert as_tuples(plan.read())[1] == ("2", "Write the code", "completed")


def test_merge_with_only_content_keeps_the_status(plan: TodoStore) -> None:
    plan.write([{"id": "1", "content": "Read the spec twice"}], merge=True)
    assert as_tuples(plan.read())[0] == ("1", "Read the spec twice", "completed")


def test_merge_new_item_without_fields_gets_seed_defaults(plan: TodoStore) -> None:
    plan.write([{"id": "7"}], merge=True)
    assert as_tuples(plan.read())[-1] == ("7", MISSING_CONTENT, "pending")


def test_merge_with_an_unknown_status_falls_back_to_pending(plan: TodoStore) -> None:
    plan.write([{"id": "1", "status": "done"}], merge=True)
    assert as_tuples(plan.read())[0] == ("1", "Read the spec", "pending")


def test_merge_on_an_empty_store_is_a_write() -> None:
    store = TodoStore()
    store.write([item("1", "a")], merge=True)
    assert as_tuples(store.read()) == [("1", "a", "pending")]


def test_merge_matches_ids_after_coercion(plan: TodoStore) -> None:
    plan.write([{"id": 3, "status": "completed"}, {"id": " 2 ", "status": "completed"}],
               merge=True)
    assert [(i.id, i.status) for i in plan.read()][1:3] == [("2", "completed"),
                                                           ("3", "completed")]
    assert len(plan.read()) == 4


# --- duplicate ids -------------------------------------------------------------------


def test_duplicate_ids_in_a_replace_last_fields_win_at_first_position() -> None:
    store = TodoStore()
    store.write([item("1", "first"), item("2", "two"),
                 item("1", "last", "completed")])
    assert as_tuples(store.read()) == [("1", "last", "completed"), ("2", "two", "pending")]


def test_duplicate_ids_in_a_merge_last_fields_win_at_first_position(plan: TodoStore) -> None:
    plan.write([item("9", "new", "pending"), {"id": "9", "status": "in_progress"},
                {"id": "1", "content": "A"}, {"id": "1", "content": "B"}], merge=True)
    items = as_tuples(plan.read())
    assert items[0] == ("1", "B", "completed")
    assert items[-1] == ("9", "new", "in_progress")
    assert len(items) == 5


# --- lenient validation ----------------------------------------------------------------


@pytest.mark.parametrize(("raw", "expected"), [
    ({"content": "no id"}, (MISSING_ID, "no id", "pending")),
    ({"id": "", "content": "empty id"}, (MISSING_ID, "empty id", "pending")),
    ({"id": None, "content": "null id"}, (MISSING_ID, "null id", "pending")),
    ({"id": "1"}, ("1", MISSING_CONTENT, "pending")),
    ({"id": "1", "content": "   "}, ("1", MISSING_CONTENT, "pending")),
    ({"id": "1", "content": "x", "status": "blocked"}, ("1", "x", "pending")),
    ({"id": "1", "content": "x", "status": None}, ("1", "x", "pending")),
    ({"id": "1", "content": "x", "status": ["completed"]}, ("1", "x", "pending")),
    ({"id": 42, "content": 7, "status": "cancelled"}, ("42", "7", "cancelled")),
    ({"id": " a ", "content": "  padded  "}, ("a", "padded", "pending")),
    ({"id": "1", "content": "x", "status": "completed", "extra": True},
     ("1", "x", "completed")),
])
def test_lenient_validation(raw: dict[str, Any], expected: tuple[str, str, str]) -> None:
    store = TodoStore()
    assert as_tuples(store.write([raw])) == [expected]


def test_every_seed_status_is_kept() -> None:
    store = TodoStore()
    statuses = ["pending", "in_progress", "completed", "cancelled"]
    store.write([item(str(n), "x", status) for n, status in enumerate(statuses)])
    assert [i.status for i in store.read()] == statuses


def test_missing_ids_share_the_placeholder_id() -> None:
    # Two items without id are "the same task" by the duplicate rule.
    store = TodoStore()
    store.write([{"content": "a"}, {"content": "b"}])
    assert as_tuples(store.read()) == [(MISSING_ID, "b", "pending")]


# --- bounds and malformed input ---------------------------------------------------------


def test_too_many_items_is_refused_and_nothing_changes(plan: TodoStore) -> None:
    before = as_tuples(plan.read())
    with pytest.raises(TodoError, match=f"limit is {MAX_TODO_ITEMS}"):
        plan.write([item(str(n), "x") for n in range(MAX_TODO_ITEMS + 1)])
    assert as_tuples(plan.read()) == before


def test_exactly_the_item_limit_is_accepted() -> None:
    store = TodoStore()
    store.write([item(str(n), "x") for n in range(MAX_TODO_ITEMS)])
    assert store.summary().total == MAX_TODO_ITEMS


def test_merge_that_would_pass_the_item_limit_is_refused(plan: TodoStore) -> None:
    new = [item(f"n{n}", "x") for n in range(MAX_TODO_ITEMS - 4 + 1)]
    with pytest.raises(TodoError, match=f"would have {MAX_TODO_ITEMS + 1} items"):
        plan.write(new, merge=True)
    assert plan.summary().total == 4


def test_content_at_the_limit_is_accepted_and_over_it_refused(plan: TodoStore) -> None:
    store = TodoStore()
    store.write([item("1", "x" * MAX_CONTENT_LENGTH)])
    before = as_tuples(plan.read())
    with pytest.raises(TodoError, match=r"todos\[1\] \(id '9'\).*501 characters.*limit is 500"):
        plan.write([item("8", "fine"), item("9", "x" * (MAX_CONTENT_LENGTH + 1))])
    assert as_tuples(plan.read()) == before
    with pytest.raises(TodoError, match="Shorten it"):
        plan.write([{"id": "1", "content": "y" * 501}], merge=True)
    assert as_tuples(plan.read()) == before


@pytest.mark.parametrize("bad", ["not a list", b"bytes", {"id": "1"}, None, 5])
def test_todos_must_be_an_array(bad: Any) -> None:
    with pytest.raises(TodoError, match="todos must be an array"):
        TodoStore().write(bad)


@pytest.mark.parametrize("bad", ["a string", 3, None, ["nested"]])
def test_each_todo_must_be_an_object(bad: Any) -> None:
    store = TodoStore()
    store.write([item("1", "keep")])
    with pytest.raises(TodoError, match=r"todos\[1\] must be an object"):
        store.write([item("2", "ok"), bad])
    assert as_tuples(store.read()) == [("1", "keep", "pending")]


def test_todo_error_is_a_value_error() -> None:
    assert issubclass(TodoError, ValueError)


# --- read, has_items, summary ------------------------------------------------------------


def test_read_returns_copies(plan: TodoStore) -> None:
    items = plan.read()
    items[0].content = "changed"
    items[1].status = "cancelled"
    items.append(TodoItem(id="x", content="x"))
    items.pop(0)
    assert as_tuples(plan.read())[:2] == [("1", "Read the spec", "completed"),
                                          ("2", "Write the code", "in_progress")]
    assert len(plan.read()) == 4


def test_write_returns_copies(plan: TodoStore) -> None:
    result = plan.write([item("1", "a")])
    result[0].content = "changed"
    assert plan.read()[0].content == "a"


def test_writing_items_does_not_alias_them() -> None:
    source = TodoItem(id="1", content="a")
    store = TodoStore()
    store.write([source])
    source.content = "changed"
    assert store.read()[0].content == "a"
    initial = TodoItem(id="2", content="b")
    seeded = TodoStore([initial])
    initial.content = "changed"
    assert seeded.read()[0].content == "b"


def test_has_items() -> None:
    store = TodoStore()
    assert store.has_items() is False
    store.write([item("1", "a", "completed")])
    assert store.has_items() is True


def test_summary_counts_every_status(plan: TodoStore) -> None:
    plan.write([item("5", "x"), item("6", "y", "completed")], merge=True)
    assert plan.summary() == TodoSummary(total=6, pending=2, in_progress=1, completed=2,
                                         cancelled=1)
    assert TodoStore().summary() == TodoSummary()
    assert TodoStore().summary().model_dump() == {
        "total": 0, "pending": 0, "in_progress": 0, "completed": 0, "cancelled": 0}


def test_repr(plan: TodoStore) -> None:
    assert repr(plan) == "TodoStore(1/4 done)"


# --- format_for_injection ------------------------------------------------------------------


def test_format_for_injection_exact_text(plan: TodoStore) -> None:
    plan.write([item("5", "Update the docs")], merge=True)
    assert plan.format_for_injection() == (
        "[Your active task list was preserved across context compression]\n"
        "- [>] 2. Write the code (in_progress)\n"
        "- [ ] 3. Write tests (pending)\n"
        "- [ ] 5. Update the docs (pending)"
    )
    assert INJECTION_HEADER == "[Your active task list was preserved across context compression]"


def test_format_for_injection_is_none_without_active_items() -> None:
    store = TodoStore()
    assert store.format_for_injection() is None
    store.write([item("1", "a", "completed"), item("2", "b", "cancelled")])
    assert store.format_for_injection() is None


# --- listeners -------------------------------------------------------------------------------


def test_listeners_are_called_after_each_successful_write() -> None:
    store = TodoStore()
    seen: list[list[tuple[str, str, str]]] = []
    store.subscribe(lambda s: seen.append(as_tuples(s.read())))
    store.write([item("1", "a")])
    store.write([{"id": "1", "status": "completed"}], merge=True)
    assert seen == [[("1", "a", "pending")], [("1", "a", "completed")]]


def test_listeners_are_not_called_for_a_refused_write() -> None:
    store = TodoStore()
    calls: list[TodoStore] = []
    store.subscribe(calls.append)
    with pytest.raises(TodoError):
        store.write("nope")  # type: ignore[arg-type]
    with pytest.raises(TodoError):
        store.write([item("1", "x" * 501)])
    assert calls == []


def test_listener_receives_the_store_and_can_unsubscribe() -> None:
    store = TodoStore()
    first: list[TodoStore] = []
    second: list[TodoStore] = []
    unsubscribe = store.subscribe(first.append)
    store.subscribe(second.append)
    store.write([item("1", "a")])
    unsubscribe()
    unsubscribe()  # a second call is harmless
    store.write([item("2", "b")])
    assert first == [store]
    assert second == [store, store]


def test_a_listener_may_unsubscribe_while_being_called() -> None:
    store = TodoStore()
    calls: list[str] = []
    unsubscribe_first: list[Any] = []

    def first(_: TodoStore) -> None:
        calls.append("first")
        unsubscribe_first[0]()

    unsubscribe_first.append(store.subscribe(first))
    store.subscribe(lambda _: calls.append("second"))
    store.write([item("1", "a")])
    store.write([item("1", "b")])
    assert calls == ["first", "second", "second"]


# --- hydrate_from_history -------------------------------------------------------------------


def todo_result(todos: list[dict[str, Any]], call_id: str = "c") -> Message:
    content = json.dumps({"todos": todos, "summary": {}})
    return Message.tool_result(call_id, "todo", content)


def test_hydrate_from_message_objects_latest_wins() -> None:
    history = [
        Message.user("plan it"),
        Message.assistant([ToolCallPart(id="c1", name="todo", args={})]),
        todo_result([item("1", "old")], "c1"),
        Message.tool_result("c2", "search", json.dumps({"todos": [item("x", "not todo")]})),
        todo_result([item("1", "new", "completed"), item("2", "next")], "c3"),
        Message.assistant([TextPart(text="done")]),
    ]
    store = TodoStore.hydrate_from_history(history)
    assert as_tuples(store.read()) == [("1", "new", "completed"), ("2", "next", "pending")]


def test_hydrate_from_the_seed_plain_dict_shape() -> None:
    history = [
        {"role": "tool", "toolName": "todo", "content": json.dumps({"todos": [item("1", "a")]})},
        {"role": "tool", "toolName": "todo",
         "content": json.dumps({"todos": [item("1", "b", "in_progress")]})},
        {"role": "assistant", "content": "ok"},
    ]
    assert as_tuples(TodoStore.hydrate_from_history(history).read()) == [
        ("1", "b", "in_progress")]


@pytest.mark.parametrize("key", ["toolName", "tool_name", "name"])
def test_hydrate_accepts_the_tool_name_spellings(key: str) -> None:
    history = [{"role": "tool", key: "todo", "content": json.dumps({"todos": [item("1", "a")]})}]
    assert as_tuples(TodoStore.hydrate_from_history(history).read()) == [("1", "a", "pending")]


def test_hydrate_accepts_the_frontend_metadata_shape() -> None:
    history = [{"role": "tool", "metadata": {"toolName": "todo"},
                "content": json.dumps({"todos": [item("1", "a")]})}]
    assert as_tuples(TodoStore.hydrate_from_history(history).read()) == [("1", "a", "pending")]


def test_hydrate_ignores_non_tool_roles_and_other_tools() -> None:
    payload = json.dumps({"todos": [item("1", "a")]})
    history: list[Message | dict[str, Any]] = [
        {"role": "assistant", "toolName": "todo", "content": payload},
        {"role": "tool", "toolName": "search", "content": payload},
        {"role": "user", "content": payload},
        Message(role="user", parts=[ToolResultPart(tool_call_id="c", name="todo",
                                                   content=payload)]),
    ]
    assert TodoStore.hydrate_from_history(history).has_items() is False


@pytest.mark.parametrize("broken", [
    "{not json",
    "",
    json.dumps(["a", "list"]),
    json.dumps("a string"),
    json.dumps({"no_todos": []}),
    json.dumps({"todos": None}),
    json.dumps({"todos": "1,2,3"}),
    json.dumps({"todos": [1, 2]}),
    json.dumps({"todos": [item(str(n), "x") for n in range(MAX_TODO_ITEMS + 1)]}),
    json.dumps({"todos": [item("1", "x" * (MAX_CONTENT_LENGTH + 1))]}),
])
def test_hydrate_skips_an_unreadable_result_and_scans_to_an_earlier_one(broken: str) -> None:
    history = [
        todo_result([item("1", "earlier", "in_progress")]),
        Message.tool_result("c9", "todo", broken),
    ]
    store = TodoStore.hydrate_from_history(history)
    assert as_tuples(store.read()) == [("1", "earlier", "in_progress")]


def test_hydrate_with_only_unreadable_results_is_empty() -> None:
    history: list[Message | dict[str, Any]] = [
        Message.tool_result("c", "todo", "{oops"),
        {"role": "tool", "toolName": "todo", "content": None}]
    assert TodoStore.hydrate_from_history(history).has_items() is False


def test_hydrate_of_an_empty_history_is_empty() -> None:
    assert TodoStore.hydrate_from_history([]).read() == []
    assert TodoStore.hydrate_from_history(iter([])).read() == []


def test_hydrate_uses_the_last_todo_result_of_one_message() -> None:
    message = Message(role="tool", parts=[
        ToolResultPart(tool_call_id="a", name="todo",
                       content=json.dumps({"todos": [item("1", "first")]})),
        ToolResultPart(tool_call_id="b", name="todo",
                       content=json.dumps({"todos": [item("1", "second")]})),
    ])
    assert TodoStore.hydrate_from_history([message]).read()[0].content == "second"


def test_a_later_empty_plan_wins_over_an_earlier_full_one() -> None:
    history = [todo_result([item("1", "a")]), todo_result([])]
    assert TodoStore.hydrate_from_history(history).has_items() is False


def test_hydrate_accepts_a_generator() -> None:
    store = TodoStore.hydrate_from_history(m for m in [todo_result([item("1", "a")])])
    assert store.read()[0].id == "1"


def test_hydrate_roundtrips_the_tool_result(plan: TodoStore) -> None:
    history = [Message.tool_result("c", "todo", json.dumps(run_todo_tool(plan, {})))]
    assert TodoStore.hydrate_from_history(history).read() == plan.read()


# --- the todo tool ---------------------------------------------------------------------------


def test_tool_reads_without_todos(plan: TodoStore) -> None:
    assert run_todo_tool(plan, {}) == {
        "todos": [item("1", "Read the spec", "completed"),
                  item("2", "Write the code", "in_progress"),
                  item("3", "Write tests"),
                  item("4", "Old idea", "cancelled")],
        "summary": {"total": 4, "pending": 1, "in_progress": 1, "completed": 1,
                    "cancelled": 1},
    }
    assert run_todo_tool(plan, {"todos": None}) == run_todo_tool(plan, {})


def test_tool_writes_replace_by_default(plan: TodoStore) -> None:
    result = run_todo_tool(plan, {"todos": [item("a", "A", "in_progress")]})
    assert result == {"todos": [item("a", "A", "in_progress")],
                      "summary": {"total": 1, "pending": 0, "in_progress": 1, "completed": 0,
                                  "cancelled": 0}}
    assert as_tuples(plan.read()) == [("a", "A", "in_progress")]


def test_tool_merges(plan: TodoStore) -> None:
    result = run_todo_tool(plan, {"todos": [{"id": "3", "status": "completed"}],
                                  "merge": True})
    assert result["todos"][2] == item("3", "Write tests", "completed")
    assert result["summary"]["completed"] == 2
    assert len(result["todos"]) == 4


def test_tool_result_is_json_serialisable(plan: TodoStore) -> None:
    result = run_todo_tool(plan, {})
    assert json.loads(json.dumps(result)) == result


@pytest.mark.parametrize("merge", ["true", 1, None])
def test_tool_rejects_a_non_boolean_merge(plan: TodoStore, merge: Any) -> None:
    before = as_tuples(plan.read())
    with pytest.raises(TodoError, match="merge must be true or false"):
        run_todo_tool(plan, {"todos": [item("1", "x")], "merge": merge})
    assert as_tuples(plan.read()) == before


def test_tool_passes_write_errors_through(plan: TodoStore) -> None:
    with pytest.raises(TodoError, match="todos must be an array"):
        run_todo_tool(plan, {"todos": '[{"id": "1"}]'})
    with pytest.raises(TodoError, match="limit is 50"):
        run_todo_tool(plan, {"todos": [item(str(n), "x") for n in range(51)]})


def test_tool_schema_is_the_seeds() -> None:
    assert TODO_TOOL_PARAMETERS["type"] == "object"
    assert TODO_TOOL_PARAMETERS["required"] == []
    todos = TODO_TOOL_PARAMETERS["properties"]["todos"]
    assert todos["type"] == "array"
    assert todos["items"]["required"] == ["id", "content", "status"]
    assert todos["items"]["properties"]["status"]["enum"] == [
        "pending", "in_progress", "completed", "cancelled"]
    assert set(todos["items"]["properties"]) == {"id", "content", "status"}
    merge = TODO_TOOL_PARAMETERS["properties"]["merge"]
    assert merge == {"type": "boolean", "description": merge["description"], "default": False}
    assert "no arguments to read" in TODO_TOOL_DESCRIPTION
    assert "Only one item may be in_progress" in TODO_TOOL_DESCRIPTION


def test_hydrate_skips_entries_that_are_not_messages() -> None:
    history: list[Any] = [todo_result([item("1", "a")]), None, "text", 3, ["list"]]
    assert as_tuples(TodoStore.hydrate_from_history(history).read()) == [("1", "a", "pending")]


def test_merge_treats_null_fields_as_absent(plan: TodoStore) -> None:
    plan.write([{"id": "2", "content": None, "status": "completed"}], merge=True)
    assert as_tuples(plan.read())[1] == ("2", "Write the code", "completed")


def test_hydrate_skips_a_broken_result_within_one_message() -> None:
    message = Message(role="tool", parts=[
        ToolResultPart(tool_call_id="a", name="todo",
                       content=json.dumps({"todos": [item("1", "readable")]})),
        ToolResultPart(tool_call_id="b", name="todo", content="{broken"),
    ])
    assert as_tuples(TodoStore.hydrate_from_history([message]).read()) == [
        ("1", "readable", "pending")]


# --- invariants over arbitrary writes --------------------------------------------------------

raw_items = st.lists(st.fixed_dictionaries(
    {"id": st.sampled_from(["1", "2", "3", "4", "", " 2 "])},
    optional={"content": st.one_of(st.none(), st.text(max_size=20)),
              "status": st.sampled_from(["pending", "in_progress", "completed", "cancelled",
                                         "bogus", None])}), max_size=8)


@settings(deadline=None)  # correctness only; timing belongs in benchmarks/
@given(st.lists(st.tuples(raw_items, st.booleans()), max_size=6))
def test_invariants_hold_after_any_sequence_of_writes(
        writes: list[tuple[list[dict[str, Any]], bool]]) -> None:
    store = TodoStore()
    for todos, merge in writes:
        before_ids = [i.id for i in store.read()]
        result = store.write(todos, merge=merge)
        ids = [i.id for i in result]
        assert len(ids) == len(set(ids))
        assert result == store.read()
        summary = store.summary()
        assert summary.total == len(result) == (summary.pending + summary.in_progress
                                                + summary.completed + summary.cancelled)
        assert all(i.content.strip() and i.id.strip() for i in result)
        if merge:
            # Existing ids keep their places; new ids come after them.
            assert ids[:len(before_ids)] == before_ids
