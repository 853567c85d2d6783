"""Agent and AgentSession: the async ReAct loop that streams a model, runs tools and
emits events (DESIGN §3–§4).

One turn: the user's prompt is appended, then the model is called repeatedly — each call
streams thinking and text as events, its tool calls run (concurrently where they are
independent), their results go back in call order — until the model answers without
tools, a limit is hit, the user cancels, or the provider fails. Whatever happens, the
history stays valid for the next turn: a cut or cancelled response keeps what streamed,
marked as such, and tool calls that never ran get an error result.

The session knows nothing of widgets: a UI subscribes to its events and sends it the
commands of :mod:`neta_nb.events`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import threading
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal, get_args

from .compaction import (
    SUMMARY_SYSTEM_PROMPT,
    CompactionError,
    estimate_tokens_after,
    plan_compaction,
    render_transcript,
    summary_message,
)
from .events import (
    ApprovalDecision,
    ApprovalRequestEvent,
    ApproveCommand,
    Command,
    CompactionEvent,
    ContextUsage,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    SendCommand,
    SetThinkingLevelCommand,
    SkillEndEvent,
    SkillStartEvent,
    StopCommand,
    ThinkingDeltaEvent,
    ThinkingDoneEvent,
    TodoUpdateEvent,
    TokenEvent,
    TokenUpdateEvent,
    ToolCallEvent,
    ToolResultEvent,
    TurnUsage,
    parse_command,
)
from .messages import (
    Message,
    SkillExecution,
    ToolCallPart,
    ToolExecution,
    Usage,
    count_characters,
)
from .providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    ResponseAssembler,
    StreamDone,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from .providers.factory import create_provider, default_provider
from .store import CompactedView, CompactionRecord, SessionRecord, SessionStore
from .thinking import THINK_LEVELS, ThinkLevel, resolve_think_level
from .todo import TodoStore
from .tools import (
    AgentToolConfig,
    PromptPreview,
    Tool,
    ToolArgumentError,
    ToolCatalog,
    ToolContext,
    preview_prompt,
)

__all__ = ["Agent", "AgentSession", "ApprovalPolicy"]

log = logging.getLogger(__name__)

DEFAULT_SYSTEM_PROMPT = (
    "You are a capable assistant working inside a Jupyter notebook. For a task of three "
    "or more steps, first write a plan with the `todo` tool, keep exactly one item "
    "in_progress, and mark items completed as soon as they are done. Answer in Markdown."
)

ApprovalPolicy = (
    Literal["reject", "allow"]
    | Callable[[str, dict[str, Any]], bool | Awaitable[bool]]
)
"""What decides a call that needs approval when no UI is attached: reject it, allow it,
or ask a function ``(tool_name, args) -> bool``."""

_DRAFT_INTERVAL = 0.5  # seconds between checkpoints of the message being streamed


@dataclass
class Agent:
    """An agent's definition: who it is, which model, which tools.

    ``model`` is ``"supplier:model"`` (``"anthropic:claude-sonnet-4-6"``, ``"openai:gpt-5"``,
    ``"deepseek:deepseek-reasoner"``, ``"scripted"``), a provider instance, or ``None`` to
    pick the first supplier whose key is in the environment (else the offline model).
    """

    name: str
    model: str | Provider | None = None
    system_prompt: str = DEFAULT_SYSTEM_PROMPT
    tools: AgentToolConfig = field(default_factory=AgentToolConfig)
    default_think_level: ThinkLevel | None = None
    scene: str | None = None
    max_model_calls: int = 25
    """Model calls allowed in one turn before it ends with ``done(max_model_calls)``."""
    tool_timeout: float = 120.0
    """Seconds a tool may run (unless the tool sets its own) before it is stopped."""
    compact_at: float | None = 0.8
    """Share of the context window at which older turns are summarised before the next
    model call; ``None`` turns automatic compaction off (``session.compact()`` still works)."""
    keep_recent_turns: int = 2
    """Turns kept verbatim when compacting."""

    def __post_init__(self) -> None:
        if self.keep_recent_turns < 1:
            raise ValueError("keep_recent_turns must be at least 1")
        if self.compact_at is not None and not 0 < self.compact_at <= 1:
            raise ValueError("compact_at is a share of the context window: 0 < compact_at ≤ 1")
        if self.max_model_calls < 1:
            raise ValueError("max_model_calls must be at least 1")

    def create_provider(self) -> Provider:
        if isinstance(self.model, Provider):
            return self.model
        return create_provider(self.model) if self.model else default_provider()

    def to_record(self, provider: Provider) -> dict[str, Any]:
        """The definition as stored with a session (keys never included)."""
        return {
            "name": self.name,
            "model": provider.model_id,
            "system_prompt": self.system_prompt,
            "tools": self.tools.dump(),
            "default_think_level": self.default_think_level,
            "scene": self.scene,
            "max_model_calls": self.max_model_calls,
            "tool_timeout": self.tool_timeout,
            "compact_at": self.compact_at,
            "keep_recent_turns": self.keep_recent_turns,
        }

    @classmethod
    def from_record(cls, data: dict[str, Any], catalog: ToolCatalog) -> Agent:
        known = {k: data[k] for k in ("system_prompt", "default_think_level", "scene",
                                      "max_model_calls", "tool_timeout", "compact_at",
                                      "keep_recent_turns") if k in data}
        return cls(name=str(data.get("name", "agent")), model=data.get("model") or None,
                   tools=AgentToolConfig.load(data.get("tools") or {}, catalog), **known)


@dataclass(slots=True)
class _TurnState:
    """Bookkeeping of the turn in flight (what cancel and errors must save)."""

    assembler: ResponseAssembler | None = None
    message: Message | None = None  # the current assistant message once complete
    thinking_open: bool = False
    usage: TurnUsage = field(default_factory=TurnUsage)
    draft_timer: asyncio.TimerHandle | None = None
    compaction_failed: bool = False
    stop_reason: str = "end_turn"  # what the closing `done` event will say


class AgentSession:
    """One conversation with an agent. Create it, subscribe a UI, ``await run(prompt)``
    or ``start(prompt)``; ``cancel()`` stops the turn in flight."""

    def __init__(
        self,
        agent: Agent,
        catalog: ToolCatalog | None = None,
        store: SessionStore | None = None,
        *,
        session_id: str | None = None,
        think_level: ThinkLevel | None = None,
        working_dir: str | Path | None = None,
        namespace: dict[str, Any] | None = None,
        approval_policy: ApprovalPolicy = "reject",
        provider: Provider | None = None,
    ) -> None:
        from .messages import new_id

        self.agent = agent
        self.catalog = catalog if catalog is not None else ToolCatalog.default()
        self.store = store
        self.provider = provider or agent.create_provider()
        self.id = session_id or new_id("s_")
        self.working_dir = Path(working_dir) if working_dir else Path.cwd()
        self.namespace = namespace if namespace is not None else _notebook_namespace()
        self.approval_policy = approval_policy
        self.todo = TodoStore()
        self._messages: list[Message] = []
        self._view: list[Message] = []  # what the model sees: see _history_for_model
        self.compactions: list[CompactionRecord] = []
        """Every compaction of this session (the chat view draws a marker for each)."""
        self._last_turn_usage = TurnUsage()
        self._chars_since_usage = 0  # prompt text added since the last reported usage
        self._usage = Usage()
        self._think_level: ThinkLevel | None = _check_level(think_level)
        self._subscribers: list[Callable[[Event], None]] = []
        self._approvers = 0
        self._pending_approvals: dict[str, asyncio.Future[str]] = {}
        self._always_allowed: set[str] = set()
        self._task: asyncio.Task[Any] | None = None  # created by start(), not yet begun
        self._turn_task: asyncio.Task[Any] | None = None  # whatever runs the current turn
        self._turn: _TurnState | None = None
        self._compacting = False
        self._live_calls: set[str] = set()  # tool calls whose events may still be emitted
        self._cancel_requested = False
        self._cancel_before_start = False
        self._loop: asyncio.AbstractEventLoop | None = None
        self._loop_thread: int | None = None
        self._last_context = ContextUsage(max_tokens=self.provider.info.context_window)
        if store is not None and store.get_session(self.id) is None:
            store.save_session(self._record())

    # --- public state -----------------------------------------------------------------
    @property
    def messages(self) -> list[Message]:
        """The conversation so far (a copy of the list)."""
        return list(self._messages)

    @property
    def model_view(self) -> list[Message]:
        """What the model is sent as history: :attr:`messages`, or after a compaction the
        summary, the preserved plan and the turns kept verbatim (a copy of the list)."""
        return list(self._view)

    @property
    def streaming_message(self) -> Message | None:
        """The answer being streamed right now, as far as it got (``None`` between model
        calls): a view that opens mid-answer starts from it."""
        turn = self._turn
        if turn is None or turn.assembler is None:
            return None
        return Message.assistant(turn.assembler.snapshot())

    @property
    def thinking_streaming(self) -> bool:
        """True while a thinking block is streaming."""
        return self._turn is not None and self._turn.thinking_open

    @property
    def usage(self) -> Usage:
        """Usage of every model call in this session, as the provider reported it."""
        return self._usage

    @property
    def context(self) -> ContextUsage:
        """How full the context window was after the latest model call."""
        return self._last_context

    @property
    def running(self) -> bool:
        """True from ``start()`` (or ``run()``) until the turn's ``done`` event."""
        return self._turn is not None or self._start_pending

    @property
    def _start_pending(self) -> bool:
        """A turn was started in the background and has not begun yet."""
        return self._task is not None and not self._task.done()

    @property
    def think_level(self) -> ThinkLevel:
        """The level the next model call will use (session choice → agent default →
        model default, falling back where the model does not support a level)."""
        return resolve_think_level(self._think_level, self.agent.default_think_level,
                                   self.provider.supplier, self.provider.model)

    def set_thinking_level(self, level: ThinkLevel | str) -> None:
        """Choose the thinking level; it applies from the next model call, even mid-turn."""
        self._think_level = _check_level(level)
        if self.store is not None:
            self.store.update_session(self.id, think_level=self._think_level)

    def preview(self) -> PromptPreview:
        """The system prompt and tool definitions the next model call will send — the
        same computation the loop uses, so preview and runtime cannot disagree."""
        return preview_prompt(system_prompt=self.agent.system_prompt, catalog=self.catalog,
                              config=self.agent.tools,
                              model_capabilities=self.provider.info.capabilities,
                              scene=self.agent.scene)

    # --- events -----------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order. Returns an unsubscribe
        function. A callback that raises is logged and never breaks the turn."""
        self._subscribers.append(callback)

        def unsubscribe() -> None:
            if callback in self._subscribers:
                self._subscribers.remove(callback)

        return unsubscribe

    def attach_approver(self) -> Callable[[], None]:
        """Declare that a UI will answer approval requests (the chat view does). While
        one is attached, calls needing approval wait for :meth:`approve`; otherwise
        :attr:`approval_policy` decides. Returns a function that detaches."""
        self._approvers += 1
        detached = False

        def detach() -> None:
            nonlocal detached
            if not detached:
                detached = True
                self._approvers -= 1
                if self._approvers <= 0:
                    # No one is left to answer: the policy decides what is still pending
                    # (a closed chat view must not leave a turn waiting forever).
                    for future in list(self._pending_approvals.values()):
                        if not future.done():
                            future.set_result(_BY_POLICY)

        return detach

    def _emit(self, event: Event) -> None:
        if self._loop_thread is not None and threading.get_ident() != self._loop_thread:
            # Progress from a tool running in a worker thread: deliver on the loop, so
            # subscribers (widgets) are only ever called from the kernel's thread.
            assert self._loop is not None
            self._loop.call_soon_threadsafe(self._emit, event)
            return
        for callback in tuple(self._subscribers):  # a callback may unsubscribe itself
            try:
                callback(event)
            except Exception:
                log.exception("event subscriber %r failed on %s", callback, event.type)

    # --- commands from a UI -----------------------------------------------------------
    def handle_command(self, command: Command | dict[str, Any]) -> asyncio.Task[Any] | None:
        """Apply a UI→server command (``send``, ``stop``, ``set_thinking_level``,
        ``approve``). ``send`` starts a turn and returns its task."""
        cmd = parse_command(command) if isinstance(command, dict) else command
        if isinstance(cmd, SendCommand):
            return self.start(cmd.text)
        if isinstance(cmd, StopCommand):
            self.cancel()
        elif isinstance(cmd, SetThinkingLevelCommand):
            self.set_thinking_level(cmd.level)
        elif isinstance(cmd, ApproveCommand):
            self.approve(cmd.id, cmd.decision)
        return None

    def approve(self, call_id: str, decision: ApprovalDecision) -> bool:
        """Answer an ``approval_request``: ``allow_once``, ``allow_always`` (this tool, for
        the rest of this session) or ``reject``. Returns False when that request is no
        longer pending (the turn was stopped meanwhile: a harmless race with Stop)."""
        if decision not in _DECISIONS:
            raise ValueError(f"unknown approval decision {decision!r}; "
                             f"choose one of {', '.join(_DECISIONS)}")
        future = self._pending_approvals.get(call_id)
        if future is None or future.done():
            return False
        future.set_result(decision)
        return True

    # --- running turns ----------------------------------------------------------------
    def start(self, prompt: str) -> asyncio.Task[Any]:
        """Run a turn in the background and return its task; the notebook cell returns
        at once, so Stop and other widget messages keep working."""
        self._check_idle()
        task = asyncio.get_running_loop().create_task(self.run(prompt),
                                                      name=f"neta_nb turn {self.id}")
        self._task = task
        return task

    def _check_idle(self) -> None:
        if self.running:
            raise RuntimeError("a turn is already running in this session; "
                               "cancel() it or wait for it to finish")
        if self._compacting:
            raise RuntimeError("the session is compacting its history; try again when "
                               "compact() has finished")

    def cancel(self) -> bool:
        """Stop the turn in flight: streaming stops, running tools are abandoned, the
        partial answer is kept marked ``cancelled``. Returns False if nothing was running."""
        if self._turn is None:
            if not self._start_pending:
                return False
            # start() was called but its task has not run yet: cancelling the task now
            # would skip run() entirely (no user message, no `done`). Let it start and stop.
            self._cancel_before_start = True
            return True
        if self._turn_task is None or self._turn_task.done():
            return False
        self._cancel_requested = True
        self._turn_task.cancel()
        return True

    async def run(self, prompt: str) -> Message | None:
        """Run one turn to its end and return the last assistant message. Provider
        failures are reported as an ``error`` event, not raised."""
        current = asyncio.current_task()
        if current is not self._task:
            self._check_idle()  # a direct run(), not the task start() created
        self._task = None
        self._loop = asyncio.get_running_loop()
        self._loop_thread = threading.get_ident()
        self._turn_task = current
        self._cancel_requested = False
        turn = self._turn = _TurnState()
        try:
            self._append(Message.user(prompt))
            if self._cancel_before_start:
                turn.stop_reason = "cancelled"
                return None
            self._save_record(running=True)
            return await self._loop_turn(turn)
        except asyncio.CancelledError:
            self._finish_interrupted(turn, "cancelled", None)
            turn.stop_reason = "cancelled"
            if not self._cancel_requested:
                raise  # cancelled from outside (kernel shutdown…): keep propagating
            if current is not None:
                current.uncancel()
            return turn.message
        except Exception as exc:
            # A bug or an unexpected failure (e.g. the store's disk is full): the turn ends
            # with an error event like any provider failure; the session stays usable.
            log.exception("turn of session %s failed", self.id)
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "error", f"{type(exc).__name__}: {exc}")
            self._emit(ErrorEvent(message=f"The turn failed: {type(exc).__name__}: {exc}",
                                  retryable=False))
            turn.stop_reason = "error"
            return turn.message
        finally:
            if turn.draft_timer is not None:
                turn.draft_timer.cancel()
            self._turn = None
            self._turn_task = None
            self._cancel_requested = False
            self._cancel_before_start = False
            with contextlib.suppress(Exception):
                if self.store is not None:
                    self.store.clear_draft(self.id)
                self._save_record(running=False)
            # Last: a subscriber reacting to `done` sees an idle session (and may start
            # the next turn from its handler).
            self._emit(DoneEvent(stop_reason=turn.stop_reason))

    async def _loop_turn(self, turn: _TurnState) -> Message | None:
        for _call in range(self.agent.max_model_calls):
            if not turn.compaction_failed and self._context_is_nearly_full():
                try:
                    await self._compact(turn)
                except CompactionError as exc:
                    turn.compaction_failed = True  # don't retry on every call of this turn
                    self._emit(ErrorEvent(message=str(exc), retryable=True))
                    context = self._last_context
                    if context.max_tokens and context.used_tokens >= context.max_tokens:
                        turn.stop_reason = "context_full"
                        return turn.message
            preview = self.preview()
            allowed = {t.name: t for t in preview.resolution.tools}
            request = ModelRequest(system_prompt=preview.system_prompt,
                                   messages=self._history_for_model(), tools=preview.tools,
                                   think_level=self.think_level)
            try:
                message = await self._stream_response(turn, request)
            except Exception as exc:
                error = exc if isinstance(exc, ProviderError) else _unexpected(exc)
                self._finish_interrupted(turn, "error", error.message, error.usage)
                if error.usage is not None:
                    self._count_usage(turn, error.usage)
                self._emit(ErrorEvent(message=error.message, retryable=error.retryable))
                turn.stop_reason = "error"
                return turn.message
            calls = message.tool_calls
            if not calls:
                turn.stop_reason = message.metadata.stop_reason or "end_turn"
                return message
            await self._run_tools(message, calls, allowed)
        turn.stop_reason = "max_model_calls"
        return turn.message

    async def _stream_response(self, turn: _TurnState, request: ModelRequest) -> Message:
        assembler = turn.assembler = ResponseAssembler()
        turn.message = None
        emit = self._emit
        async for event in self.provider.stream(request):
            assembler.feed(event)
            # Most events are deltas: test those first and keep the path short.
            if type(event) is TextDelta:
                if turn.thinking_open:
                    turn.thinking_open = False
                    emit(ThinkingDoneEvent())
                emit(TokenEvent(text=event.text))
            elif type(event) is ThinkingDelta:
                turn.thinking_open = True
                emit(ThinkingDeltaEvent(text=event.text))
            elif isinstance(event, (ThinkingEnd, ToolCallReady, StreamDone)):
                if turn.thinking_open:
                    turn.thinking_open = False
                    emit(ThinkingDoneEvent())
            elif isinstance(event, UsageUpdate):
                pass
            if turn.draft_timer is None and self.store is not None:
                turn.draft_timer = asyncio.get_running_loop().call_later(
                    _DRAFT_INTERVAL, self._save_draft, turn)
        if turn.thinking_open:
            turn.thinking_open = False
            emit(ThinkingDoneEvent())
        if assembler.stop_reason is None:
            # The provider contract says a stream ends with StreamDone; treat anything
            # else as a cut stream rather than trusting a possibly truncated answer.
            raise ProviderError("the model's response ended without its final event",
                                retryable=True, partial=assembler.snapshot(),
                                usage=assembler.usage)
        usage = assembler.usage
        message = Message.assistant(assembler.parts, usage=usage,
                                    model=self.provider.model_id,
                                    stop_reason=assembler.stop_reason)
        turn.assembler = None
        turn.message = message
        self._append(message)
        if turn.draft_timer is not None:
            turn.draft_timer.cancel()
            turn.draft_timer = None
        if self.store is not None:
            self.store.clear_draft(self.id)  # the message itself is stored now
        self._count_usage(turn, usage)
        return message

    def _save_draft(self, turn: _TurnState) -> None:
        """Checkpoint what has streamed so far (at most every ``_DRAFT_INTERVAL`` and at
        most that long after the last delta), so a dying kernel loses almost nothing."""
        turn.draft_timer = None
        if self.store is not None and turn.assembler is not None:
            self.store.save_draft(self.id, Message.assistant(turn.assembler.snapshot()))

    def _count_usage(self, turn: _TurnState, usage: Usage | None) -> None:
        if usage is None:
            # A server that reports no usage (some local ones): count the call, keep the
            # last known context figure rather than pretending the window emptied.
            usage = Usage()
        else:
            # What this call put in the window: its prompt (cached or not) plus its
            # answer, which the next call will carry.
            self._last_context = self._context_of(usage.context_tokens + usage.output_tokens)
            self._chars_since_usage = 0
        self._usage = self._usage + usage
        turn.usage = self._last_turn_usage = _add_turn_usage(turn.usage, usage)
        self._emit(TokenUpdateEvent(current=turn.usage, context=self._last_context))

    def _context_of(self, used: int) -> ContextUsage:
        window = self.provider.info.context_window
        return ContextUsage(used_tokens=used, max_tokens=window,
                            percent=round(100.0 * used / window, 1) if window else 0.0)

    # --- compaction -------------------------------------------------------------------
    def _context_is_nearly_full(self) -> bool:
        threshold = self.agent.compact_at
        context = self._last_context
        # The last real figure plus what was appended since (a large tool result can fill
        # the window before the next call reports it), at ~4 characters a token.
        used = context.used_tokens + self._chars_since_usage // 4
        return bool(threshold is not None and context.max_tokens
                    and used >= threshold * context.max_tokens)

    async def compact(self) -> CompactionEvent | None:
        """Summarise older turns now (between turns). Returns the ``compaction`` event, or
        ``None`` when there is nothing old enough to fold. Raises :class:`CompactionError`
        if the summarising call fails; the history is then unchanged."""
        if self.running:
            raise RuntimeError("compact() runs between turns; during a turn the session "
                               "compacts by itself when the context is nearly full")
        if self._compacting:
            raise RuntimeError("compact() is already running")
        self._compacting = True
        try:
            return await self._compact(None)
        finally:
            self._compacting = False

    async def _compact(self, turn: _TurnState | None) -> CompactionEvent | None:
        plan = plan_compaction(self._view, keep_turns=self.agent.keep_recent_turns)
        if plan is None:
            return None
        request = ModelRequest(system_prompt=SUMMARY_SYSTEM_PROMPT,
                               messages=[Message.user(render_transcript(plan.folded))],
                               think_level="off", purpose="summary")
        chunks: list[str] = []
        usage: Usage | None = None
        finished = False
        try:
            async for piece in self.provider.stream(request):
                if isinstance(piece, TextDelta):
                    chunks.append(piece.text)
                elif isinstance(piece, UsageUpdate):
                    usage = piece.usage
                elif isinstance(piece, StreamDone):
                    finished = True
        except ProviderError as exc:
            raise CompactionError(f"Compacting the conversation failed: {exc.message}. "
                                  f"The history was left as it was.") from exc
        except Exception as exc:
            log.exception("summarising call of session %s failed", self.id)
            raise CompactionError(f"Compacting the conversation failed: "
                                  f"{type(exc).__name__}: {exc}. The history was left as "
                                  f"it was.") from exc
        text = "".join(chunks).strip()
        if not finished or not text:
            raise CompactionError("Compacting the conversation failed: the model returned "
                                  "no summary. The history was left as it was.")
        prefix = [summary_message(text)]
        plan_text = self.todo.format_for_injection()
        if plan_text is not None:
            injected = Message.user(plan_text)
            injected.metadata.compacted = True
            prefix.append(injected)
        if usage is not None:
            self._usage = self._usage + usage  # the summary is real spend
            if turn is not None:
                turn.usage = self._last_turn_usage = _add_turn_usage(turn.usage, usage)
        before = self._last_context.used_tokens
        after = estimate_tokens_after(before, self._view, plan.kept,
                                      usage.output_tokens if usage else len(text) // 4,
                                      prefix[1:])
        self._view = [*prefix, *plan.kept]
        compaction = CompactionEvent(tokens_before=before, tokens_after=after,
                                     messages_folded=len(plan.folded))
        self.compactions.append(CompactionRecord(after_message=len(self._messages),
                                                 tokens_before=before, tokens_after=after,
                                                 messages_folded=len(plan.folded),
                                                 usage=usage))
        if self.store is not None:
            self.store.save_view(self.id, CompactedView(prefix=prefix,
                                                        kept_from=plan.kept[0].id,
                                                        compactions=self.compactions))
        self._last_context = self._context_of(after)
        self._chars_since_usage = 0  # the estimate above covers the whole new view
        self._emit(compaction)
        # The context figure changes now, not at the next call.
        self._emit(TokenUpdateEvent(current=turn.usage if turn else self._last_turn_usage,
                                    context=self._last_context))
        return compaction

    # --- tools ------------------------------------------------------------------------
    async def _run_tools(self, message: Message, calls: list[ToolCallPart],
                         allowed: dict[str, Tool]) -> None:
        # Calls of one response run concurrently, except calls to the same tool, which
        # keep their order (a tool need not be re-entrant; two `todo` writes must apply
        # in the order the model wrote them). Results are stored in call order as soon
        # as they and the ones before them are in, so a kernel that dies mid-tools keeps
        # every finished result.
        chains: dict[str, asyncio.Future[Any]] = {}
        tasks = []
        for call in calls:
            previous = chains.get(call.name)
            task = asyncio.ensure_future(self._run_after(previous, message, call, allowed))
            chains[call.name] = task
            tasks.append(task)
        try:
            for task in tasks:
                self._append(await task)
        finally:
            for task in tasks:
                task.cancel()  # only the unfinished ones notice (cancel of a stopped turn)
            # Executions recorded during the calls belong to the assistant message.
            self._persist(message)

    async def _run_after(self, previous: asyncio.Future[Any] | None, message: Message,
                         call: ToolCallPart, allowed: dict[str, Tool]) -> Message:
        if previous is not None:
            await asyncio.wait([previous])
        return await self._run_tool(message, call, allowed)

    async def _run_tool(self, message: Message, call: ToolCallPart,
                        allowed: dict[str, Tool]) -> Message:
        tool = allowed.get(call.name)
        visibility = tool.visibility if tool is not None else "tool"
        label = tool.label if tool is not None else call.name
        tool_record: ToolExecution | None = None
        skill_record: SkillExecution | None = None
        self._live_calls.add(call.id)
        if visibility == "skill":
            skill_record = SkillExecution(id=call.id, name=call.name, label=label)
            message.metadata.skill_executions.append(skill_record)
            self._emit(SkillStartEvent(id=call.id, name=call.name, label=label))
        elif visibility == "tool":
            tool_record = ToolExecution(id=call.id, name=call.name, label=label,
                                        args=call.args)
            message.metadata.tool_executions.append(tool_record)
            self._emit(ToolCallEvent(id=call.id, name=call.name, label=label, args=call.args))
        if tool_record is not None or skill_record is not None:
            self._persist(message)  # the card exists from now on, even if the kernel dies

        try:
            content, is_error = await self._execute(call, tool, skill_record)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in the approval path or the context: never fatal
            log.exception("tool call %s (%s) failed outside its handler", call.id, call.name)
            content, is_error = f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", True
        self._live_calls.discard(call.id)

        if tool_record is not None:
            tool_record.status, tool_record.result = ("error" if is_error else "done"), content
            self._emit(ToolResultEvent(id=call.id, name=call.name, result=content,
                                       is_error=is_error))
        elif skill_record is not None:
            skill_record.status = "error" if is_error else "done"
            skill_record.result = content
            if not is_error:
                skill_record.percent = 100.0
            self._emit(SkillEndEvent(id=call.id, name=call.name, status=skill_record.status,
                                     result=content))
        if call.name == "todo" and tool is not None:
            summary = self.todo.summary()
            self._emit(TodoUpdateEvent(todos=[i.model_dump() for i in self.todo.read()],
                                       summary=summary.model_dump()))
            self._save_record(todo_summary=summary.model_dump())
        if tool_record is not None or skill_record is not None:
            self._persist(message)
        return Message.tool_result(call.id, call.name, content, is_error=is_error)

    async def _execute(self, call: ToolCallPart, tool: Tool | None,
                       skill_record: SkillExecution | None) -> tuple[str, bool]:
        """Run one call; every failure becomes an error result the model can read."""
        if tool is None:
            return self._unavailable(call.name), True
        if call.raw_args is not None:
            return (f"The arguments for '{call.name}' were not a JSON object: "
                    f"{call.raw_args[:500]!r}. Call the tool again with valid JSON."), True
        if tool.requires_approval and tool.name not in self._always_allowed:
            allowed, why = await self._approval(call)
            if not allowed:
                return why, True

        def on_progress(percent: float, step: str | None, detail: str | None) -> None:
            if call.id not in self._live_calls:
                return  # a worker thread still reporting after its call was closed
            if skill_record is not None:
                skill_record.percent, skill_record.step, skill_record.detail = (
                    percent, step, detail)
            self._emit(ProgressEvent(id=call.id, percent=percent, step=step, detail=detail))

        ctx = ToolContext(session_id=self.id, tool_call_id=call.id,
                          working_dir=self.working_dir, namespace=self.namespace,
                          todo=self.todo, on_progress=on_progress)
        timeout = tool.timeout or self.agent.tool_timeout
        try:
            async with asyncio.timeout(timeout):
                return await tool.invoke(dict(call.args), ctx), False
        except ToolArgumentError as exc:
            return str(exc), True
        except TimeoutError:
            return (f"Tool '{call.name}' did not finish within {timeout:g} s and was "
                    f"stopped."), True
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the turn is being stopped
            # The tool's own await was cancelled (not the turn): report it like a failure.
            return f"Tool '{call.name}' was cancelled before it finished.", True
        except Exception as exc:
            return f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", True

    def _unavailable(self, name: str) -> str:
        resolution = self.preview().resolution
        if name in self.catalog:
            reason = resolution.reasons.get(name, "it is not enabled for this agent")
            return (f"Tool '{name}' is not available to this agent: {reason}. "
                    f"Do not call it again.")
        offered = ", ".join(resolution.names) or "none"
        return f"Unknown tool '{name}'. The tools you can call are: {offered}."

    async def _approval(self, call: ToolCallPart) -> tuple[bool, str]:
        rejected = f"The user did not allow '{call.name}' to run."
        if self._approvers > 0:
            future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
            self._pending_approvals[call.id] = future
            self._emit(ApprovalRequestEvent(id=call.id, name=call.name, args=call.args))
            try:
                decision = await future
            finally:
                self._pending_approvals.pop(call.id, None)
            if decision != _BY_POLICY:
                if decision == "allow_always":
                    self._always_allowed.add(call.name)
                # Fail closed: only an explicit allow runs the tool.
                return decision in ("allow_once", "allow_always"), rejected
        policy = self.approval_policy
        if policy == "allow":
            return True, ""
        if policy == "reject":
            return False, (f"'{call.name}' needs the user's approval and no one was "
                           f"there to give it, so it did not run.")
        try:
            verdict = policy(call.name, dict(call.args))
            if not isinstance(verdict, bool):
                verdict = await verdict
        except Exception as exc:
            log.exception("approval policy failed for %s", call.name)
            return False, (f"'{call.name}' did not run: deciding whether to allow it "
                           f"failed ({type(exc).__name__}: {exc}).")
        return bool(verdict), rejected

    # --- history and persistence ------------------------------------------------------
    def _history_for_model(self) -> list[Message]:
        # Maintained as messages arrive (see _append), so a model call costs no pass over
        # a long history. Providers read it before streaming and never mutate it.
        return self._view

    def _finish_interrupted(self, turn: _TurnState, why: Literal["cancelled", "error"],
                            error: str | None, usage: Usage | None = None) -> None:
        """Keep what streamed of an interrupted response and close the history so the
        next turn starts from a valid conversation."""
        if turn.thinking_open:
            turn.thinking_open = False
            self._emit(ThinkingDoneEvent())
        if turn.assembler is not None:
            parts = turn.assembler.snapshot()
            message = Message.assistant(parts, interrupted=why, error=error, usage=usage,
                                        model=self.provider.model_id)
            turn.assembler = None
            turn.message = message
            self._append(message)
        elif turn.message is not None and why == "cancelled":
            turn.message.metadata.interrupted = why
            self._persist(turn.message)
        self._close_dangling_calls(why)

    def _close_dangling_calls(self, why: str) -> None:
        """Give every call of the last assistant message that has no result an error
        result (APIs require a result for each call) — e.g. calls whose tools were
        running when the turn stopped — and close their cards."""
        position = next((n for n in range(len(self._messages) - 1, -1, -1)
                         if self._messages[n].role == "assistant"), None)
        if position is None:
            return
        last_assistant = self._messages[position]
        # Only results after that message count: ids can repeat across responses (some
        # OpenAI-compatible servers number calls per response).
        answered = {p.tool_call_id for m in self._messages[position + 1:]
                    for p in m.tool_results}
        text = {"cancelled": "This call did not finish: the user cancelled the turn.",
                "killed": "This call did not finish: the kernel stopped."}.get(
                    why, "This call did not run: the turn stopped.")
        for call in last_assistant.tool_calls:
            if call.id in answered:
                continue
            self._live_calls.discard(call.id)
            for record in last_assistant.metadata.tool_executions:
                if record.id == call.id and record.status == "running":
                    record.status, record.result = "error", text
                    self._emit(ToolResultEvent(id=call.id, name=call.name, result=text,
                                               is_error=True))
            for skill in last_assistant.metadata.skill_executions:
                if skill.id == call.id and skill.status == "running":
                    skill.status, skill.result = "error", text
                    self._emit(SkillEndEvent(id=call.id, name=call.name, status="error",
                                             result=text))
            self._append(Message.tool_result(call.id, call.name, text, is_error=True))
        self._persist(last_assistant)

    def _append(self, message: Message) -> None:
        self._messages.append(message)
        # Interrupted answers with nothing in them carry no information for the model,
        # and some APIs reject empty assistant turns: they stay out of the model's view.
        if message.parts:
            self._view.append(message)
            if message.role != "assistant":  # an answer's tokens are in its own usage
                self._chars_since_usage += count_characters([message])
        self._persist(message)

    def _persist(self, message: Message) -> None:
        if self.store is not None:
            self.store.append_message(self.id, message)

    def _record(self, **fields: Any) -> SessionRecord:
        first_user = next((m.text for m in self._messages if m.role == "user"), "")
        last = next((m for m in reversed(self._messages)
                     if m.role in ("user", "assistant") and m.text), None)
        data: dict[str, Any] = {
            "id": self.id,
            "title": _title(first_user),
            "agent": self.agent.to_record(self.provider),
            "think_level": self._think_level,
            "last_message": _one_line(last.text, 120) if last else "",
            "todo_summary": self.todo.summary().model_dump() if self.todo.has_items() else None,
            "message_count": len(self._messages),
        }
        data.update(fields)
        return SessionRecord(**data)

    def _save_record(self, **fields: Any) -> None:
        if self.store is None:
            return
        existing = self.store.get_session(self.id)
        record = self._record(**fields)
        if existing is not None:
            record.created_at = existing.created_at
            if "running" not in fields:
                record.running = existing.running
        self.store.save_session(record)

    # --- resume -----------------------------------------------------------------------
    @classmethod
    def resume(cls, session_id: str, store: SessionStore, *, catalog: ToolCatalog | None = None,
               agent: Agent | None = None, **options: Any) -> AgentSession:
        """Rebuild a stored session: history, plan (hydrated from the latest ``todo``
        result), skill and tool cards (message metadata) and the thinking level. A turn
        that was running when its process died is closed, keeping what streamed, marked
        ``interrupted="killed"``."""
        record = store.get_session(session_id)
        if record is None:
            raise KeyError(f"no session {session_id!r} in {store.path}")
        catalog = catalog if catalog is not None else ToolCatalog.default()
        agent = agent or Agent.from_record(record.agent, catalog)
        level = record.think_level if record.think_level in THINK_LEVELS else None
        session = cls(agent, catalog, store, session_id=session_id,
                      think_level=level, **options)
        session._messages = store.load_messages(session_id)
        session._view = [m for m in session._messages if m.parts]
        view = store.load_view(session_id)
        if view is not None:
            ids = [m.id for m in session._view]
            if view.kept_from in ids:
                start = ids.index(view.kept_from)
                session._view = [*view.prefix, *session._view[start:]]
                session.compactions = list(view.compactions)
            else:
                store.warnings.append(f"session {session_id}: the compacted view points at "
                                      f"a missing message; the model sees the full history")
        session.todo = TodoStore.hydrate_from_history(session._messages)
        session._restore_figures()
        draft = store.take_draft(session_id)
        if draft is not None or record.running:
            # Calls whose tools were running when the process died get their error result
            # first (it must follow the message that made the calls); then the answer that
            # was streaming, as far as it was checkpointed, or an empty marker — whose own
            # complete calls are closed in turn.
            session._close_dangling_calls("killed")
            message = draft or Message.assistant([])
            message.metadata.interrupted = "killed"
            message.metadata.error = "The kernel stopped while this turn was running."
            session._append(message)
            session._close_dangling_calls("killed")
        session._save_record(running=False)
        return session

    def _restore_figures(self) -> None:
        """Usage and the context figure of a resumed session, from what was stored: every
        call's usage (summaries included) and the window after the latest call or, if
        later, the latest compaction."""
        last_index, last_usage = -1, None
        for index, message in enumerate(self._messages):
            if message.metadata.usage is not None:
                self._usage = self._usage + message.metadata.usage
                if message.role == "assistant":
                    last_index, last_usage = index, message.metadata.usage
        for compaction in self.compactions:
            if compaction.usage is not None:
                self._usage = self._usage + compaction.usage
        latest = self.compactions[-1] if self.compactions else None
        if latest is not None and latest.after_message > last_index:
            self._last_context = self._context_of(latest.tokens_after)
        elif last_usage is not None:
            self._last_context = self._context_of(last_usage.context_tokens
                                                  + last_usage.output_tokens)

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return (f"AgentSession({self.id!r}, agent={self.agent.name!r}, "
                f"model={self.provider.model_id!r}, {len(self._messages)} messages, {state})")


_DECISIONS: tuple[str, ...] = get_args(ApprovalDecision)
_BY_POLICY = "policy"  # an approval nobody can answer any more: the policy decides


def _unexpected(exc: Exception) -> ProviderError:
    """A provider failure that is not a ProviderError (a bug, an unmapped network error):
    reported the same way, as not worth retrying blindly."""
    log.exception("the model call failed unexpectedly")
    return ProviderError(f"The model call failed: {type(exc).__name__}: {exc}",
                         retryable=False)


def _add_turn_usage(current: TurnUsage, usage: Usage) -> TurnUsage:
    return TurnUsage(input_tokens=current.input_tokens + usage.input_tokens,
                     output_tokens=current.output_tokens + usage.output_tokens,
                     total_tokens=current.total_tokens + usage.total_tokens,
                     api_calls=current.api_calls + 1)


def _check_level(level: str | None) -> ThinkLevel | None:
    if level is None:
        return None
    if level not in THINK_LEVELS:
        raise ValueError(f"unknown thinking level {level!r}; "
                         f"choose one of {', '.join(THINK_LEVELS)}")
    return level


def _one_line(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def _title(prompt: str) -> str:
    return _one_line(prompt, 60) if prompt.strip() else "New chat"


def _notebook_namespace() -> dict[str, Any] | None:
    """The running notebook's user namespace (for the `python` tool), if any."""
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    return shell.user_ns if shell is not None else None

