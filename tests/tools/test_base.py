"""Tool, @tool and ToolContext: schema from signatures, validation, invocation."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path
from typing import Literal

import pytest
from pydantic import BaseModel

from neta_nb.messages import ToolDefinition
from neta_nb.tools import Tool, ToolArgumentError, ToolContext, tool


@tool
def add(a: int, b: int = 2) -> int:
    """Add two numbers.

    This second paragraph is not part of the description.

    Args:
        a: The first number.
        b: The second number.
    """
    return a + b


def test_bare_decorator_builds_schema_description_and_defaults() -> None:
    assert isinstance(add, Tool)
    assert add.name == "add"
    assert add.description == "Add two numbers."
    assert add.parameters == {
        "type": "object",
        "properties": {
            "a": {"type": "integer", "description": "The first number."},
            "b": {"type": "integer", "description": "The second number.", "default": 2},
        },
        "required": ["a"],
    }
    assert add.visibility == "tool"
    assert add.category == "custom"
    assert add.capabilities == frozenset()
    assert add.core is False
    assert add.label == "Add"
    assert add.requires_approval is False
    assert add.timeout is None
    assert add.scenes is None


def test_decorator_options_are_kept() -> None:
    @tool(name="look", visibility="skill", category="vision", capabilities={"vision"},
          core=True, label="Look closely", requires_approval=True, timeout=5.0,
          scenes=["chat"])
    def look_at(path: str) -> str:
        """Look at an image."""
        return path

    assert (look_at.name, look_at.visibility, look_at.category) == ("look", "skill", "vision")
    assert look_at.capabilities == frozenset({"vision"})
    assert look_at.core
    assert look_at.requires_approval
    assert look_at.label == "Look closely"
    assert look_at.timeout == 5.0
    assert look_at.scenes == frozenset({"chat"})


def test_label_defaults_to_humanised_name() -> None:
    @tool
    def profile_the_table() -> str:
        """Profile."""
        return ""

    assert profile_the_table.label == "Profile the table"


def test_context_parameter_is_injected_not_in_schema() -> None:
    @tool
    def where(ctx: ToolContext, name: str) -> str:
        """Say where."""
        return f"{name}@{ctx.session_id}"

    assert list(where.parameters["properties"]) == ["name"]
    result = asyncio.run(where.invoke({"name": "x"}, ToolContext(session_id="s1")))
    assert result == "x@s1"


def test_property_called_title_is_kept() -> None:
    @tool
    def note(title: str, kind: Literal["a", "b"] = "a") -> str:
        """Write a note."""
        return title

    assert set(note.parameters["properties"]) == {"title", "kind"}
    assert note.parameters["properties"]["kind"] == {"enum": ["a", "b"], "type": "string",
                                                     "default": "a"}
    assert "title" not in note.parameters["properties"]["title"]


def test_definition_is_what_a_provider_gets() -> None:
    assert add.definition() == ToolDefinition(name="add", description="Add two numbers.",
                                              parameters=add.parameters)


@pytest.mark.parametrize("name", ["", "has space", "x" * 65, "dots.not.allowed"])
def test_invalid_names_are_refused(name: str) -> None:
    with pytest.raises(ValueError, match="tool name"):
        Tool(name=name, description="d", handler=lambda: None)


def test_invalid_visibility_is_refused() -> None:
    with pytest.raises(ValueError, match="visibility must be one of internal, tool, skill"):
        Tool(name="x", description="d", handler=lambda: None,
             visibility="hidden")  # type: ignore[arg-type]


def test_var_keyword_handlers_are_refused() -> None:
    def loose(**kwargs: object) -> str:
        return ""

    with pytest.raises(TypeError, match=r"\*args/\*\*kwargs"):
        tool(loose)


def test_direct_construction_with_explicit_schema_still_validates() -> None:
    def shout(text: str) -> str:
        return text.upper()

    schema = {"type": "object", "properties": {"text": {"type": "string"}},
              "required": ["text"]}
    shouting = Tool(name="shout", description="Shout.", handler=shout, parameters=schema)
    assert shouting.parameters is schema
    assert asyncio.run(shouting.invoke({"text": "hi"}, ToolContext())) == "HI"
    with pytest.raises(ToolArgumentError):
        asyncio.run(shouting.invoke({}, ToolContext()))


# --- validation -------------------------------------------------------------------------

async def test_invalid_arguments_raise_a_readable_error_and_skip_the_handler() -> None:
    calls: list[int] = []

    @tool
    def count(n: int) -> int:
        """Count."""
        calls.append(n)
        return n

    with pytest.raises(ToolArgumentError) as caught:
        await count.invoke({"n": "many", "extra": 1}, ToolContext())
    message = str(caught.value)
    assert message.startswith("Invalid arguments for tool 'count':")
    assert "- n: Input should be a valid integer" in message
    assert "(expected integer); got 'many'" in message
    assert "- extra: unexpected argument (known arguments: n)" in message
    assert calls == []


async def test_missing_argument_names_the_expected_type() -> None:
    with pytest.raises(ToolArgumentError, match=r"- a: required argument is missing "
                                                r"\(expected integer\)"):
        await add.invoke({}, ToolContext())


async def test_non_object_arguments_are_refused() -> None:
    with pytest.raises(ToolArgumentError, match="arguments must be a JSON object, got list"):
        await add.invoke([1, 2], ToolContext())  # type: ignore[arg-type]


async def test_arguments_are_coerced_by_pydantic() -> None:
    assert await add.invoke({"a": "40"}, ToolContext()) == "42"


async def test_none_arguments_mean_no_arguments() -> None:
    @tool
    def ping() -> str:
        """Ping."""
        return "pong"

    assert await ping.invoke(None, ToolContext()) == "pong"


# --- invocation -------------------------------------------------------------------------

async def test_async_handlers_are_awaited_on_the_loop_thread() -> None:
    seen: list[int | None] = []

    @tool
    async def where() -> str:
        """Where."""
        seen.append(threading.get_ident())
        return "ok"

    assert await where.invoke({}, ToolContext()) == "ok"
    assert seen == [threading.get_ident()]


async def test_sync_handlers_run_in_a_worker_thread_unless_flagged() -> None:
    seen: list[int] = []

    def record() -> str:
        seen.append(threading.get_ident())
        return "ok"

    in_worker = Tool(name="worker", description="d", handler=record)
    on_main = Tool(name="main", description="d", handler=record, runs_on_main_thread=True)
    await in_worker.invoke({}, ToolContext())
    await on_main.invoke({}, ToolContext())
    assert seen[0] != threading.get_ident()
    assert seen[1] == threading.get_ident()


class _Point(BaseModel):
    x: int
    y: int


async def test_results_become_text() -> None:
    @tool
    def as_model() -> _Point:
        """Model."""
        return _Point(x=1, y=2)

    @tool
    def as_dict() -> dict[str, object]:
        """Dict."""
        return {"a": [1, "é"], "p": Path("x")}

    @tool
    def as_none() -> None:
        """Nothing."""

    assert await as_model.invoke({}, ToolContext()) == '{"x":1,"y":2}'
    assert await as_dict.invoke({}, ToolContext()) == '{"a":[1,"é"],"p":"x"}'
    assert await as_none.invoke({}, ToolContext()) == "null"


async def test_handler_exceptions_propagate_unchanged() -> None:
    class Boom(RuntimeError):
        pass

    @tool
    def explode() -> str:
        """Explode."""
        raise Boom("bang")

    with pytest.raises(Boom, match="bang"):
        await explode.invoke({}, ToolContext())


# --- context ----------------------------------------------------------------------------

def test_context_defaults() -> None:
    ctx = ToolContext()
    assert ctx.working_dir == Path.cwd()
    assert ctx.namespace == {}
    assert ctx.todo.read() == []
    ctx.progress(50)  # no callback: nothing happens, nothing raises
    assert ToolContext().namespace is not ctx.namespace


def test_progress_is_clamped() -> None:
    reports: list[tuple[float, str | None, str | None]] = []
    ctx = ToolContext(on_progress=lambda p, s, d: reports.append((p, s, d)))
    ctx.progress(-5)
    ctx.progress(42.5, "step", "detail")
    ctx.progress(250, "done")
    ctx.progress(float("nan"))
    assert reports == [(0.0, None, None), (42.5, "step", "detail"), (100.0, "done", None),
                       (0.0, None, None)]


async def test_progress_from_a_worker_thread_arrives_on_the_loop_thread_in_order() -> None:
    threads: list[int] = []
    percents: list[float] = []

    def on_progress(percent: float, step: str | None, detail: str | None) -> None:
        threads.append(threading.get_ident())
        percents.append(percent)

    @tool(visibility="skill", category="skill")
    def work(ctx: ToolContext) -> str:
        """Work."""
        for step in range(5):
            ctx.progress(step * 25)
        return "done"

    ctx = ToolContext(on_progress=on_progress)
    assert await work.invoke({}, ctx) == "done"
    assert percents == [0, 25, 50, 75, 100]
    assert set(threads) == {threading.get_ident()}


async def test_parameter_names_that_collide_with_pydantic_are_fine() -> None:
    @tool
    def check(schema: dict[str, int], json: str = "", model_id: str = "m",
              copy: bool = False) -> str:
        """Check."""
        return f"{sorted(schema)} {json} {model_id} {copy}"

    assert list(check.parameters["properties"]) == ["schema", "json", "model_id", "copy"]
    assert check.parameters["required"] == ["schema"]
    assert await check.invoke({"schema": {"a": 1}, "copy": True}, ToolContext()) == (
        "['a']  m True")
    with pytest.raises(ToolArgumentError, match=r"- schema: required argument is missing "
                                                r"\(expected object\)"):
        await check.invoke({}, ToolContext())
    with pytest.raises(ToolArgumentError, match="argument_0"):
        await check.invoke({"argument_0": {}}, ToolContext())
