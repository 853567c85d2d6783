"""The ``todo`` tool: the agent's plan (seed 002 §3), an ``internal`` tool (seed 000).

Internal means its calls produce no tool cards; the runtime shows the plan through
``todo_update`` events and the todo card instead. The schema and result shape are the
seed's (:mod:`neta_nb.todo`); the store is the session's, reached through the context.
"""

from __future__ import annotations

from typing import Any

from ...todo import TODO_TOOL_DESCRIPTION, TODO_TOOL_PARAMETERS, run_todo_tool
from ..base import ToolContext, tool

__all__ = ["todo"]


@tool(name="todo", description=TODO_TOOL_DESCRIPTION, parameters=TODO_TOOL_PARAMETERS,
      visibility="internal", category="planning", core=True, label="Plan")
async def todo(ctx: ToolContext, todos: list[Any] | None = None,
               merge: bool | None = False) -> dict[str, Any]:
    # Items stay loosely typed here: the store applies the seed's lenient per-item rules
    # (missing id → "?", unknown status → pending) and its bounds. A refused write raises
    # TodoError, whose message the runtime returns to the model as an error result.
    # Async so it runs on the event loop, the thread that owns the session's TodoStore.
    # `merge` accepts null, meaning the default (replace), although the seed's schema
    # shows a boolean: models send null for an optional argument they do not mean to
    # set. run_todo_tool, the Python entry, stays strict about it.
    args: dict[str, Any] = {"merge": False if merge is None else merge}
    if todos is not None:
        args["todos"] = todos
    return run_todo_tool(ctx.todo, args)
