"""A stand-in for the runtime's sub-agent events, for the chat view's tests (Python and
browser) until the real ``delegate`` tool lands: a tool named ``delegate`` that publishes
``subagent_start``, the child's own events wrapped in ``subagent_event``, and
``subagent_end`` through the parent session's event hub — the same channel and the same
order the runtime uses (the parent's ``tool_call`` before, its ``tool_result`` after) — and
returns the child's answer as the call's result.

What the child does is a script of steps: an event to publish (wrapped on the way), or
a callable to await (a gate the test opens, a pause). A ``stop`` command for the child
sets :attr:`ChildScript.stopped`, which a script can wait for.

The runtime's stream is complete (DESIGN §4): besides what a script spells out, a child
says when its turn starts and when a message joins or changes its history.
:class:`ChildHistory` adds those events where the runtime does — the task as the child's
prompt, an assistant message per model response (appended when the response ends, before
its ``token_update``), each card's changes, each tool result — so a view fed by the
stand-in sees what a real child sends.
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Iterable, Sequence
from typing import Any

from pydantic import BaseModel

from neta_nb import AgentSession, Tool, ToolContext, tool
from neta_nb.events import (
    ApprovalRequestEvent,
    Command,
    DoneEvent,
    ErrorEvent,
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
    TurnStartEvent,
    TurnUsage,
    message_appended_event,
    message_updated_event,
)
from neta_nb.messages import (
    Message,
    Part,
    SkillExecution,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolExecution,
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


def research_steps(answer: str = "Found **three** sources.") -> list[Event]:
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


class ChildHistory:
    """The history events a real child would add to a scripted child's events."""

    def __init__(self, emit: Callable[[Event], None], task: str) -> None:
        self._emit = emit
        self.messages: list[Message] = []
        self._thinking: list[str] = []
        self._text: list[str] = []
        self._open: Message | None = None  # the response the next tool call belongs to
        emit(TurnStartEvent())
        self._append(Message.user(task))

    def play(self, step: Event) -> None:
        """Say ``step`` with what the runtime says around it."""
        self.before(step)
        self._emit(step)
        self.after(step)

    def before(self, step: Event) -> None:
        """What the runtime says before ``step``."""
        if isinstance(step, TokenEvent | ThinkingDeltaEvent):
            if self._open is not None and self._has_cards(self._open):
                self._open = None  # tools ran: the model answers in a new response
            (self._text if isinstance(step, TokenEvent) else self._thinking).append(step.text)
        elif isinstance(step, TokenUpdateEvent | DoneEvent):
            self._close_response()
        elif isinstance(step, ToolCallEvent | SkillStartEvent) and self._open is None:
            self._close_response()
            if self._open is None:
                self._append(Message.assistant([]))
        elif isinstance(step, ErrorEvent):
            self._close_response()
            message = Message.assistant([], interrupted="error", error=step.message)
            self._append(message)

    def after(self, step: Event) -> None:
        """What the runtime says after ``step``."""
        message = self._open
        if isinstance(step, ToolCallEvent) and message is not None:
            message.parts.append(ToolCallPart(id=step.id, name=step.name, args=step.args))
            message.metadata.tool_executions.append(ToolExecution(
                id=step.id, name=step.name, label=step.label, args=step.args))
            self._changed(message)
        elif isinstance(step, SkillStartEvent) and message is not None:
            message.parts.append(ToolCallPart(id=step.id, name=step.name))
            message.metadata.skill_executions.append(SkillExecution(
                id=step.id, name=step.name, label=step.label))
            self._changed(message)
        elif isinstance(step, ApprovalRequestEvent | ToolResultEvent | SkillEndEvent):
            owner, record = self._record(step.id)
            if owner is None or record is None:
                return
            if isinstance(step, ApprovalRequestEvent):
                record.status = "waiting"
            elif isinstance(step, ToolResultEvent):
                record.status = "error" if step.is_error else "done"
                record.result = step.result
            else:
                assert isinstance(record, SkillExecution)
                record.status, record.result = step.status, step.result
                if step.status == "done":
                    record.percent = 100.0
            self._changed(owner)
            if not isinstance(step, ApprovalRequestEvent):
                self._append(Message.tool_result(step.id, step.name, step.result or "",
                                                 is_error=record.status == "error"))

    def ended(self, status: str) -> None:
        """The run ended: what streamed is a message; a run that ended early closes what
        ran, as the runtime closes a stopped turn."""
        self._close_response()
        if status == "done":
            return
        for message in self.messages:
            records: list[Any] = [*message.metadata.tool_executions,
                                  *message.metadata.skill_executions]
            if any(r.status in ("running", "waiting") for r in records):
                for record in records:
                    if record.status in ("running", "waiting"):
                        record.status = "cancelled"
                self._changed(message)
        last = next((m for m in reversed(self.messages) if m.role == "assistant"), None)
        if status in ("cancelled", "interrupted") and last is not None:
            last.metadata.interrupted = status  # type: ignore[assignment]
            self._changed(last)

    def _close_response(self) -> None:
        if not (self._thinking or self._text):
            return
        parts: list[Part] = []
        if self._thinking:
            parts.append(ThinkingPart(text="".join(self._thinking)))
        if self._text:
            parts.append(TextPart(text="".join(self._text)))
        self._thinking, self._text = [], []
        self._append(Message.assistant(parts))

    def _append(self, message: Message) -> None:
        self.messages.append(message)
        if message.role == "assistant":
            self._open = message
        self._emit(message_appended_event(len(self.messages) - 1, message))

    def _changed(self, message: Message) -> None:
        self._emit(message_updated_event(self.messages.index(message), message))

    def _record(self, call_id: str) -> tuple[Message | None, Any]:
        for message in reversed(self.messages):
            records: list[ToolExecution | SkillExecution] = [
                *message.metadata.tool_executions, *message.metadata.skill_executions]
            for record in records:
                if record.id == call_id:
                    return message, record
        return None, None

    @staticmethod
    def _has_cards(message: Message) -> bool:
        return bool(message.metadata.tool_executions or message.metadata.skill_executions)


def complete_stream(steps: Iterable[Event], task: str, *, ended: str | None = "done"
                    ) -> list[Event]:
    """A child's scripted events with the history events the runtime adds (the run
    ``ended`` so, or still going when ``None``)."""
    events: list[Event] = []
    history = ChildHistory(events.append, task)
    for step in steps:
        history.play(step)
    if ended is not None:
        history.ended(ended)
    return events


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

        def handle_command(command: Command | dict[str, Any],
                           attachments: Sequence[Any] = ()) -> asyncio.Task[Any] | None:
            if isinstance(command, dict) and command.get("type") == "stop" and \
                    command.get("subagent") in running:
                running[command["subagent"]].stopped.set()
                return None
            return original(command, attachments)

        session.handle_command = handle_command  # type: ignore[method-assign]

    def _make_tool(self) -> Tool:
        stand_in = self

        @tool(category="crew", label="Delegate", core=True)
        async def delegate(agent: str, task: str, ctx: ToolContext) -> str:
            """Hand a task to a sub-agent."""
            assert stand_in.session is not None, "install() the stand-in on its session"
            script = stand_in.children[agent]
            run_id = ctx.tool_call_id
            hub = stand_in.session.state.events  # the session's own hub: what the runtime emits on
            stand_in.running[run_id] = script
            hub.emit(SubagentStartEvent(id=run_id, agent=agent, task=task))

            def emit(event: Event) -> None:
                hub.emit(SubagentEvent(id=run_id, event=event))

            history = ChildHistory(emit, task)
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
                    history.play(step)
                    await asyncio.sleep(0)
            finally:
                stand_in.running.pop(run_id, None)
            history.ended(status)
            result = script.answer() if status == "done" else "stopped by the user"
            hub.emit(SubagentEndEvent(
                id=run_id, agent=agent, status=status,
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
