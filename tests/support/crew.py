"""A stand-in for the runtime's sub-agent events, for the chat view's tests (Python and
browser) until the real ``delegate`` tool lands: a tool named ``delegate`` that publishes
``subagent_start``, the child's own events wrapped in ``subagent_event``, and
``subagent_end`` through the parent session's event hub — the same channel and the same
order the runtime uses (the parent's ``tool_call`` before, its ``tool_result`` after) — and
returns the child's answer as the call's result.

What the child does is a script of steps: an event to publish (wrapped on the way), a
callable to await (a gate the test opens, a pause), or :data:`END` to finish early.
A ``stop`` command for the child sets :attr:`ChildScript.stopped`, which a script can wait
for.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from neta_nb import AgentSession, Tool, ToolContext, tool
from neta_nb.events import (
    ApprovalRequestEvent,
    DoneEvent,
    Event,
    SkillEndEvent,
    SkillStartEvent,
    SubagentEndEvent,
    SubagentEvent,
    SubagentStartEvent,
    ThinkingDeltaEvent,
    ThinkingDoneEvent,
    TodoUpdateEvent,
    TokenEvent,
    TokenUpdateEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnUsage,
)

Step = Event | Callable[[], Any]


def usage(input_tokens: int, output_tokens: int, calls: int) -> TokenUpdateEvent:
    return TokenUpdateEvent.model_validate({
        "current": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                    "total_tokens": input_tokens + output_tokens, "api_calls": calls},
        "context": {"used_tokens": input_tokens, "max_tokens": 100_000,
                    "percent": input_tokens / 1000}})


def plan(done: int, total: int) -> TodoUpdateEvent:
    todos = [{"id": str(n + 1), "content": f"step {n + 1}",
              "status": "completed" if n < done else "in_progress" if n == done else "pending"}
             for n in range(total)]
    return TodoUpdateEvent(todos=todos, summary={
        "total": total, "completed": done, "in_progress": int(done < total),
        "pending": max(0, total - done - 1), "cancelled": 0})


def research_steps(answer: str = "Found **three** sources.") -> list[Step]:
    """A child that thinks, plans, runs a tool and a skill, and answers."""
    half = len(answer) // 2
    return [
        ThinkingDeltaEvent(text="Where to look first"), ThinkingDeltaEvent(text="…"),
        ThinkingDoneEvent(), plan(0, 2), usage(200, 30, 1),
        ToolCallEvent(id="c1", name="web_search", label="Web search", args={"q": "crew"}),
        ToolResultEvent(id="c1", name="web_search", result="3 results"),
        plan(1, 2),
        SkillStartEvent(id="c2", name="summarize", label="Summarize"),
        SkillEndEvent(id="c2", name="summarize", status="done", result="summary"),
        usage(420, 60, 2),
        TokenEvent(text=answer[:half]), TokenEvent(text=answer[half:]),
        plan(2, 2), usage(650, 90, 3), DoneEvent(stop_reason="end_turn"),
    ]


class ChildScript:
    """What one child does when the parent delegates to it."""

    def __init__(self, steps: Iterable[Step], *, status: str = "done",
                 result: str | None = None) -> None:
        self.steps = list(steps)
        self.status = status
        self.result = result
        self.stopped = asyncio.Event()

    def answer(self) -> str:
        text = "".join(s.text for s in self.steps if isinstance(s, TokenEvent))
        return self.result if self.result is not None else text


class CrewStandIn:
    """The ``delegate`` tool (:attr:`tool`) whose children follow ``children[agent]``, for
    the session given to :meth:`install` (the tool is built before the session). Installing
    also wraps the session's ``handle_command`` so that ``{"type": "stop", "subagent": id}``
    stops only that child, as the runtime does."""

    def __init__(self, children: dict[str, ChildScript]) -> None:
        self.children = children
        self.running: dict[str, ChildScript] = {}
        self.session: AgentSession | None = None
        self.tool: Tool = self._make_tool()

    def install(self, session: AgentSession) -> None:
        self.session = session
        original = session.handle_command
        running = self.running

        def handle_command(command: Any, **options: Any) -> Any:
            if isinstance(command, dict) and command.get("type") == "stop" and \
                    command.get("subagent") in running:
                running[command["subagent"]].stopped.set()
                return None
            return original(command, **options)  # e.g. a send's attachments

        session.handle_command = handle_command  # type: ignore[method-assign]

    def _make_tool(self) -> Tool:
        stand_in = self

        @tool(category="crew", label="Delegate", core=True)
        async def delegate(agent: str, task: str, ctx: ToolContext) -> str:
            """Hand a task to a sub-agent."""
            assert stand_in.session is not None, "install() the stand-in on its session"
            script = stand_in.children[agent]
            run_id = ctx.tool_call_id
            hub = stand_in.session._events  # the session's own hub: what the runtime emits on
            stand_in.running[run_id] = script
            hub.emit(SubagentStartEvent(id=run_id, agent=agent, task=task))
            status = script.status
            try:
                for step in script.steps:
                    if script.stopped.is_set():
                        status = "cancelled"
                        break
                    if not isinstance(step, BaseModel):
                        outcome = step()
                        if asyncio.iscoroutine(outcome):
                            await outcome
                        continue
                    hub.emit(SubagentEvent(id=run_id, event=step))
                    await asyncio.sleep(0)
            finally:
                stand_in.running.pop(run_id, None)
            result = script.answer() if status == "done" else "stopped by the user"
            hub.emit(SubagentEndEvent(
                id=run_id, agent=agent, status=status,  # type: ignore[arg-type]
                result=result, usage=TurnUsage(input_tokens=650, output_tokens=90,
                                               total_tokens=740, api_calls=3)))
            return result

        return delegate


def approval_steps(call_id: str, gate: Callable[[], Any]) -> Sequence[Step]:
    """A child whose tool asks for approval, then waits on ``gate``."""
    return [ToolCallEvent(id=call_id, name="write_file", label="Write file",
                          args={"path": "notes.md"}),
            ApprovalRequestEvent(id=call_id, name="write_file", args={"path": "notes.md"}),
            gate]
