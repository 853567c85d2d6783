"""``delegate``: hand a task to one of the agent's sub-agents (category ``crew``).

The tool is the same for every agent; what it can reach is the calling session's crew
(:class:`neta_nb.runtime.session.tool_calls.subagents.Crew`, given to the call as
``ToolContext.crew``). The session shows each model a copy of the schema whose ``agent``
argument lists that agent's own sub-agents by name, with their descriptions. It is
offered only to an agent that may delegate (it has sub-agents and is within the nesting
limit), and several calls of one response run at the same time (the crew bounds how
many).
"""

from __future__ import annotations

import copy
from collections.abc import Sequence

from ...messages import ToolDefinition
from ..base import Tool, ToolContext, ToolFailure

__all__ = ["DELEGATE_TIMEOUT", "delegate", "delegate_definition"]

DELEGATE_TIMEOUT = 3600.0
"""Seconds one delegation may take. A child keeps its own limits (model calls, tool
timeouts); this only bounds a child that never ends."""


async def _delegate(ctx: ToolContext, agent: str, task: str) -> str:
    """Hand a self-contained task to one of your sub-agents and get its final answer. The
    sub-agent sees only the task you write (not this conversation), so include everything
    it needs. Several delegate calls in one response run at the same time.

    Args:
        agent: Which sub-agent does the task.
        task: The task, complete and self-contained: what to do and what to report back.
    """
    crew = ctx.crew
    if crew is None:
        raise ToolFailure("This agent has no sub-agents to delegate to.")
    result: str = await crew.delegate(ctx.tool_call_id, agent, task)
    return result


delegate = Tool.from_function(_delegate, name="delegate", category="crew", core=True,
                              label="Delegate", reentrant=True, needs_subagents=True,
                              timeout=DELEGATE_TIMEOUT)


def delegate_definition(base: ToolDefinition,
                        members: Sequence[tuple[str, str | None]]) -> ToolDefinition:
    """``base`` (the tool's own definition) for an agent whose sub-agents are
    ``members`` (name, description): the ``agent`` argument is an enum of their names, and
    the description says who does what."""
    parameters = copy.deepcopy(base.parameters)
    agent_schema = parameters.setdefault("properties", {}).setdefault("agent", {})
    agent_schema["enum"] = [name for name, _ in members]
    roster = "\n".join(f"- {name}: {description}" if description else f"- {name}"
                       for name, description in members)
    return ToolDefinition.model_construct(
        name=base.name, description=f"{base.description}\n\nSub-agents:\n{roster}",
        parameters=parameters)
