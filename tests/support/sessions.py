"""Session test doubles shared by the session, approval, cancellation, resume,
compaction, store and chat view tests: a provider whose responses a test spells out event
by event, an event recorder, small tools, a session builder and a history check.

ScriptedProvider covers demos; these tests need exact control (an error after the third
delta, a stream that never ends, a response chosen by what the request contained).
The browser tests' kernels import this module too (tests/browser/chat_cells.py).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable, Sequence
from typing import Any

from neta_nb import (
    Agent,
    AgentSession,
    AgentToolConfig,
    SessionStore,
    Tool,
    ToolCatalog,
    ToolContext,
    tool,
)
from neta_nb.events import HISTORY_EVENTS, ApprovalDecision
from neta_nb.messages import Message, Usage
from neta_nb.providers.base import (
    ModelRequest,
    Provider,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.providers.models import ModelInfo
from neta_nb.tools.base import ToolVisibility

Step = StreamEvent | BaseException | Callable[[], Any]


class FakeProvider(Provider):
    """Plays one list of steps per model call. A step is a stream event, an exception to
    raise, or a callable (sync or async) to run — e.g. an event to wait on."""

    def __init__(self, responses: list[list[Step]], *, context_window: int = 100_000,
                 supplier: str = "scripted", model: str = "fake") -> None:
        self.supplier = supplier
        self.model = model
        self.responses = list(responses)
        self.requests: list[ModelRequest] = []
        self._info = ModelInfo(supplier=supplier, model=model, context_window=context_window,
                               max_output_tokens=8192,
                               capabilities=frozenset({"tools", "thinking", "vision"}))

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # Keep a snapshot: the session's list object grows after the call.
        self.requests.append(dataclasses.replace(request, messages=list(request.messages),
                                                 tools=list(request.tools)))
        if not self.responses:
            raise AssertionError("the model was called more often than the test planned")
        for step in self.responses.pop(0):
            if isinstance(step, BaseException):
                raise step
            if not isinstance(step, StreamEvent):  # a callable to run
                outcome = step()
                if asyncio.iscoroutine(outcome):
                    await outcome
                continue
            yield step
            # A real stream yields to the event loop between chunks (it awaits the
            # network); so does this one, or a Stop could never land mid-stream.
            await asyncio.sleep(0)


def answer(text: str, *, usage: Usage | None = None, thinking: str | None = None,
           signature: str | None = "sig") -> list[Step]:
    steps: list[Step] = []
    if thinking is not None:
        steps += [ThinkingDelta(thinking[: len(thinking) // 2]),
                  ThinkingDelta(thinking[len(thinking) // 2:]), ThinkingEnd(signature)]
    steps += [TextDelta(text[: len(text) // 2]), TextDelta(text[len(text) // 2:])]
    steps += [UsageUpdate(usage or Usage(input_tokens=100, output_tokens=20)),
              StreamDone("end_turn")]
    return steps


def calls(*tool_calls: tuple[str, str, dict[str, Any]], raw: dict[str, str] | None = None,
          usage: Usage | None = None) -> list[Step]:
    steps: list[Step] = [ToolCallReady(call_id, name, args, (raw or {}).get(call_id))
                         for call_id, name, args in tool_calls]
    steps += [UsageUpdate(usage or Usage(input_tokens=120, output_tokens=30)),
              StreamDone("tool_use")]
    return steps


class Recorder:
    """Records a session's events. The history events (``turn_start``,
    ``message_appended``, ``message_updated``) go to :attr:`history` unless
    ``history=True``: most tests read what streams, and those events have tests of their
    own."""

    def __init__(self, *, history: bool = False) -> None:
        self.events: list[Any] = []
        self.history: list[Any] = []
        self._keep_history = history
        self._arrived: asyncio.Event | None = None

    def __call__(self, event: Any) -> None:
        if event.type in HISTORY_EVENTS and not self._keep_history:
            self.history.append(event)
            return
        self.events.append(event)
        if self._arrived is not None:
            self._arrived.set()

    async def wait_for(self, kind: str) -> None:
        """Wait (at most 10 s) until an event of type ``kind`` has been recorded."""
        async with asyncio.timeout(10):
            while kind not in self.types:
                self._arrived = asyncio.Event()
                await self._arrived.wait()

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


# --- small tools ------------------------------------------------------------------------

@tool(core=True, label="Add numbers")
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@tool(visibility="skill", category="skill", core=True, label="Count up")
async def count_up(steps: int, ctx: ToolContext) -> str:
    """A skill that reports progress at each step."""
    for n in range(1, steps + 1):
        ctx.progress(100 * n / steps, step=f"step {n}")
        await asyncio.sleep(0)  # a step of real work lets the loop run (and a Stop land)
    return f"counted to {steps}"


@tool(core=True)
def plus(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


ran: list[str] = []
"""What the approval-gated tools really ran (clear it at the start of a test)."""


@tool(core=True, requires_approval=True)
def guarded_op(x: int) -> str:
    """Needs the user's approval."""
    ran.append(f"guarded_op {x}")
    return f"ran {x}"


def make_session(responses: list[list[Any]], *, extra: Sequence[Any] = (),
                 store: SessionStore | None = None, context_window: int = 10_000,
                 **options: Any) -> tuple[AgentSession, Recorder, FakeProvider]:
    """A session on a :class:`FakeProvider` with the default catalog plus ``plus``,
    ``guarded_op`` and ``extra``, and a :class:`Recorder` subscribed to it."""
    catalog = ToolCatalog.default()
    for item in (plus, guarded_op, *extra):
        catalog.register(item)
    provider = FakeProvider(responses, context_window=context_window)
    agent_options = {"tools": AgentToolConfig(), **options.pop("agent_options", {})}
    agent = Agent("reviewer", model=provider, **agent_options)
    session = AgentSession(agent, catalog, store, **options)
    session.flush()  # its record is in the store (it is written in the background)
    recorder = Recorder()
    session.subscribe(recorder)
    return session, recorder, provider


def answer_approvals(session: AgentSession, decision: ApprovalDecision) -> None:
    """Subscribe to ``session`` an approver that answers every request with
    ``decision`` (the approver must be attached too)."""

    def decide(event: Any) -> None:
        if event.type == "approval_request":
            session.approve(event.id, decision)

    session.subscribe(decide)


def assert_valid_history(messages: Sequence[Message]) -> None:
    """What every provider API demands: each tool call is answered by the tool messages
    that directly follow its assistant message, and no result answers a call that is not
    right before it."""
    index = 0
    while index < len(messages):
        message = messages[index]
        if message.role == "tool":
            raise AssertionError(f"tool result at {index} answers no call right before it")
        index += 1
        if message.role == "assistant" and message.tool_calls:
            answered: list[str] = []
            while index < len(messages) and messages[index].role == "tool":
                answered += [p.tool_call_id for p in messages[index].tool_results]
                index += 1
            assert sorted(answered) == sorted(c.id for c in message.tool_calls), (
                f"calls {[c.id for c in message.tool_calls]} answered by {answered}")


def hanging_tool(name: str = "slow_job", visibility: ToolVisibility = "tool"
                 ) -> tuple[Tool, asyncio.Event]:
    """A tool that starts (the event is set) and never returns: a call a Stop finds
    running."""
    started = asyncio.Event()

    @tool(name=name, core=True, visibility=visibility)
    async def slow_job() -> str:
        """Takes a while."""
        started.set()
        await asyncio.Event().wait()
        return "never"

    return slow_job, started
