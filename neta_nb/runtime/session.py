"""AgentSession: the async ReAct loop that streams a model, runs tools and emits events
(DESIGN §3–§4).

A turn appends the prompt, then calls the model until it answers without tools, a limit
is hit, the user cancels, or the provider fails; whatever happens, the history stays valid
for the next turn (a cut response keeps what streamed, marked; calls that never ran get an
error result). This module keeps the loop, cancellation and the history; the parts with a
job of their own live beside it — ``agent``, ``approvals``, ``tool_runner``, ``turn``
(everything that lives for one turn), ``usage_meter``, ``persistence``, ``event_hub`` and
the summarising call in ``compaction``. The session knows nothing of widgets.

(About 610 lines, a little over the project's ~500: ``_run``, ``_loop_turn`` and
``resume`` are the places that end a turn — by answer, Stop, interrupt, error or a dead
kernel — and they must close the history the same way, so they stay together.)
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any, Literal

from ..events import (
    ApprovalDecision,
    ApproveCommand,
    Command,
    CompactionEvent,
    ContextUsage,
    DoneEvent,
    ErrorEvent,
    Event,
    SendCommand,
    SetThinkingLevelCommand,
    StopCommand,
    TodoUpdateEvent,
    TokenUpdateEvent,
    TurnStartEvent,
    TurnUsage,
    parse_command,
)
from ..messages import (
    Message,
    SubagentRun,
    Usage,
    encodable,
    new_id,
    valid_conversation,
)
from ..providers.base import ModelRequest, Provider, ProviderError
from ..store.process_owner import ProcessOwner, SessionBusyError
from ..store.session_writes import (
    LOAD_FLUSH_LIMIT,
    SessionPersistence,
    flush_session,
    store_warning,
)
from ..store.sqlite import CompactionRecord, SessionRecord, SessionStore
from ..store.turn_claims import TurnClaim
from ..store.writer import StoreFailure
from ..thinking import THINK_LEVELS, ThinkLevel, check_think_level, resolve_think_level
from ..todo import TodoStore
from ..tools import PromptPreview, ToolCatalog, ToolContext, preview_prompt, resolve_tools
from ..tools.base import ProgressCallback
from ..tools.builtin.python_exec import notebook_namespace
from ..tools.resolution_cache import ResolutionCache
from ..tools.resolver import ToolResolution
from ..tools.threads import ToolThreads
from .agent import Agent
from .approvals import ApprovalPolicy, Approvals
from .attachments import attachment_parts
from .compaction import CompactionError, compact_view
from .event_hub import EventHub
from .history import History
from .subagents import Crew, CrewLink, add_usage
from .tool_runner import ToolLimits, ToolRunner
from .turn import Turn
from .usage_meter import UsageMeter, estimate_request_tokens

__all__ = ["Agent", "AgentSession", "ApprovalPolicy"]

log = logging.getLogger(__name__)

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
        crew_link: CrewLink | None = None,
    ) -> None:
        self.agent = agent
        self.crew_link = crew_link
        """How this session hangs below its parent while it runs (``None``: a top-level
        session, or a resumed child: see :attr:`parent_id`)."""
        self.parent_id: str | None = crew_link.parent_id if crew_link else None
        """The session that delegated to this one (``None``: a top-level session)."""
        self.parent_call_id: str | None = crew_link.call_id if crew_link else None
        """The parent's ``delegate`` call that ran this session."""
        self.catalog = catalog if catalog is not None else ToolCatalog.default()
        self.provider = provider or agent.create_provider()
        self.id = session_id or new_id("s_")
        self._saved = SessionPersistence(self.id, store, self._describe,
                                         on_behind=lambda f: self._emit(store_warning(f)))
        self.working_dir = Path(working_dir) if working_dir else Path.cwd()
        if namespace is None:
            # The notebook's own variables, or outside IPython one namespace for the
            # session, so the `python` tool keeps its variables between calls there too.
            namespace = notebook_namespace()
        self.namespace: dict[str, Any] = namespace if namespace is not None else {}
        self.todo = TodoStore()
        self.todo.working = False  # idle until a turn runs
        self.compactions: list[CompactionRecord] = []
        """Every compaction of this session (the chat view draws a marker for each)."""
        info = self.provider.info
        self._meter = UsageMeter(info.context_window, window_assumed=info.assumed)
        self._think_level: ThinkLevel | None = check_think_level(think_level)
        self._events = EventHub()
        self._emit = self._events.emit
        self._history = History(self._saved, self._meter, self._emit)
        self._approvals = Approvals(approval_policy, self._emit,
                                    parent=crew_link.approvals if crew_link else None)
        self._crew = Crew(self, depth=crew_link.depth if crew_link else 0,
                          max_depth=(crew_link.max_depth if crew_link
                                     else agent.max_subagent_depth),
                          emit=self._emit, on_usage=self._children_counted,
                          on_record=self._record_subagent, on_interrupt=self._interrupted)
        self._threads = ToolThreads()
        self._tools = ToolRunner(emit=self._emit, append=self._history.append,
                                 persist=self._history.changed, approvals=self._approvals,
                                 make_context=self._tool_context,
                                 resolve=self._resolution,
                                 on_todo_written=self._todo_written,
                                 on_interrupt=self._interrupted)
        self._turn: Turn | None = None
        self._resolved = ResolutionCache()
        self._compacting = False
        self._saved.create_record(self._history.messages)

    # --- public state -----------------------------------------------------------------
    @property
    def store(self) -> SessionStore | None:
        """Where the session is saved (``None``: in memory only)."""
        return self._saved.store

    @property
    def messages(self) -> list[Message]:
        """The conversation so far (a copy of the list)."""
        return list(self._history.messages)

    @property
    def model_view(self) -> list[Message]:
        """What the model is sent as history: :attr:`messages`, or after a compaction the
        summary, the preserved plan and the turns kept verbatim (a copy of the list)."""
        return list(self._history.view)

    @property
    def streaming_message(self) -> Message | None:
        """The answer being streamed right now, as far as it got (``None`` between model
        calls): a view that opens mid-answer starts from it."""
        return self._turn.streaming if self._turn is not None else None

    @property
    def thinking_streaming(self) -> bool:
        """True while a thinking block is streaming."""
        return self._turn is not None and self._turn.thinking_open

    @property
    def usage(self) -> Usage:
        """Usage of every model call in this session, as the provider reported it."""
        return self._meter.total

    @property
    def can_delegate(self) -> bool:
        """The agent has sub-agents and is above the nesting limit, so ``delegate`` is
        offered (if its tool config and the catalog allow it)."""
        return self._crew.can_delegate

    @property
    def subagent_usage(self) -> dict[str, TurnUsage]:
        """Tokens of each sub-agent run in the current (or latest) turn, by the id of the
        ``delegate`` call that ran it; the turn total in ``token_update`` includes them."""
        return self._crew.usage

    @property
    def subagents(self) -> dict[str, AgentSession]:
        """The child sessions of the current (or latest) turn, by ``delegate`` call id."""
        return {call_id: run.session for call_id, run in self._crew.runs.items()}

    @property
    def context(self) -> ContextUsage:
        """How full the context window was after the latest model call."""
        return self._meter.context

    @property
    def running(self) -> bool:
        """True from ``start()`` (or ``run()``) until the turn's ``done`` event."""
        return self._turn is not None

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """What decides calls that need approval while no UI is attached."""
        return self._approvals.policy

    @approval_policy.setter
    def approval_policy(self, policy: ApprovalPolicy) -> None:
        self._approvals.policy = policy

    @property
    def store_failure(self) -> StoreFailure | None:
        """Why what the session has shown is not stored yet, while its store is behind
        (locked by another program, a full disk); writes are being retried."""
        return self._saved.failure

    @property
    def think_level(self) -> ThinkLevel:
        """The level the next model call will use (session choice → agent default →
        model default, falling back where the model does not support a level)."""
        return resolve_think_level(self._think_level, self.agent.default_think_level,
                                   self.provider.supplier, self.provider.model)

    def set_thinking_level(self, level: ThinkLevel | str) -> None:
        """Choose the thinking level; it applies from the next model call, even mid-turn."""
        self._think_level = check_think_level(level)
        self._saved.update(think_level=self._think_level)

    def preview(self) -> PromptPreview:
        """The system prompt and tool definitions the next model call will send — the
        same computation the loop uses, so preview and runtime cannot disagree."""
        preview = preview_prompt(system_prompt=self.agent.system_prompt, catalog=self.catalog,
                                 config=self.agent.tools,
                                 model_capabilities=self.provider.info.capabilities,
                                 scene=self.agent.scene, delegates=self._crew.can_delegate)
        if "delegate" not in preview.resolution:
            return preview
        # `delegate` as this agent's model sees it: its own sub-agents by name.
        tools = [self._crew.definition(d) if d.name == "delegate" else d
                 for d in preview.tools]
        return dataclasses.replace(preview, tools=tools)

    def _resolution_key(self) -> tuple[object, ...]:
        return ResolutionCache.key(self.catalog, self.agent.tools, self.agent.scene,
                                   self._crew.can_delegate)

    def _resolution(self) -> ToolResolution:
        """The agent's tools now, as `preview` resolves them (cached: ResolutionCache)."""
        key = self._resolution_key()
        resolution = self._resolved.get(key)
        if resolution is None:
            resolution = resolve_tools(self.catalog, self.agent.tools,
                                       model_capabilities=self.provider.info.capabilities,
                                       scene=self.agent.scene,
                                       delegates=self._crew.can_delegate)
            self._resolved.put(key, resolution)
        return resolution

    # --- events -----------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order. Returns an unsubscribe
        function. A callback that raises is logged and never breaks the turn."""
        return self._events.subscribe(callback)

    def attach_approver(self) -> Callable[[], None]:
        """Declare that a UI will answer approval requests (the chat view does). While
        one is attached, calls needing approval wait for :meth:`approve`; otherwise
        :attr:`approval_policy` decides. Returns a function that detaches."""
        return self._approvals.attach()

    # --- commands from a UI -----------------------------------------------------------
    def handle_command(self, command: Command | dict[str, Any],
                       attachments: Sequence[Any] = ()) -> asyncio.Task[Any] | None:
        """Apply a UI→server command (``send``, ``stop``, ``set_thinking_level``,
        ``approve``). ``send`` starts a turn and returns its task."""
        cmd = parse_command(command) if isinstance(command, dict) else command
        if isinstance(cmd, SendCommand):
            return self.start(cmd.text, attachments=attachments)
        if isinstance(cmd, StopCommand):
            if cmd.subagent is not None:
                self.stop_subagent(cmd.subagent)
            else:
                self.cancel()
        elif isinstance(cmd, SetThinkingLevelCommand):
            self.set_thinking_level(cmd.level)
        elif isinstance(cmd, ApproveCommand):
            self.approve(cmd.id, cmd.decision, subagent=cmd.subagent)
        return None

    def approve(self, call_id: str, decision: ApprovalDecision, *,
                subagent: Sequence[str] | None = None) -> bool:
        """Answer an ``approval_request``: ``allow_once``, ``allow_always`` (this tool, for
        the rest of this session) or ``reject``. Returns False when that request is no
        longer pending (the turn was stopped meanwhile: a harmless race with Stop).

        A sub-agent's request (it arrives wrapped in ``subagent_event``) is answered the
        same way. ``subagent`` is the path of wrapper ids it came in (``[]``: this
        session's own request), so the answer reaches exactly the child that asked even
        when two children's calls share an id; without it the request's id alone is
        followed (this session's own first, then the first child waiting under it)."""
        if subagent is None:
            return (self._approvals.answer(call_id, decision)
                    or self._crew.approve(call_id, decision))
        if not subagent:
            return self._approvals.answer(call_id, decision)
        return self._crew.approve(call_id, decision, path=subagent)

    def stop_subagent(self, call_id: str) -> bool:
        """Stop one sub-agent — the ``id`` of its ``subagent_start`` (its ``delegate``
        call) — and let this session go on: its model reads the stop as the call's error
        result. A grandchild's id (at any depth) stops that grandchild, and its parent
        goes on. False when no such run is running."""
        return self._crew.stop(call_id)

    # --- running turns ----------------------------------------------------------------
    def start(self, prompt: str, attachments: Sequence[Any] | None = None
              ) -> asyncio.Task[Any]:
        """Run a turn in the background and return its task; the notebook cell returns
        at once, so Stop and other widget messages keep working. ``attachments`` as for
        :meth:`run`; a refused one raises :class:`AttachmentError` here, before any turn."""
        self._check_idle()
        prompt_message = self._prompt_message(prompt, attachments)
        turn = self._turn = Turn()
        task = asyncio.get_running_loop().create_task(self._run(prompt_message, turn),
                                                      name=f"neta_nb turn {self.id}")
        turn.task = task

        def release(_: asyncio.Task[Any]) -> None:
            # A task cancelled before its first step never enters _run: free the session
            # and still close the turn for its subscribers (a view waits for `done`).
            if self._turn is turn:
                self._turn = None
            if not turn.begun:
                self._emit(DoneEvent(stop_reason="cancelled"))

        task.add_done_callback(release)
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
        turn = self._turn
        if turn is None or turn.task is None or turn.task.done():
            return False
        turn.cancel_requested = True
        self._crew.stop_all()
        if turn.begun:
            turn.task.cancel()
        # else: start() was called but its task has not run yet — cancelling the task now
        # would skip the turn entirely (no user message, no `done`); it starts and stops.
        return True

    def _interrupted(self) -> None:
        """A tool was interrupted by a kernel interrupt: stop the turn like Stop does."""
        turn = self._turn
        if turn is not None and turn.task is not None and not turn.task.done():
            turn.interrupted = turn.cancel_requested = True
            turn.task.cancel()

    async def run(self, prompt: str, attachments: Sequence[Any] | None = None
                  ) -> Message | None:
        """Run one turn to its end and return the last assistant message. Provider
        failures are reported as an ``error`` event, not raised.

        ``attachments``: files for the model — paths, ``(bytes, media_type)``, PIL images
        or :class:`~neta_nb.runtime.attachments.Attachment` (see
        :mod:`neta_nb.runtime.attachments`). One the model cannot take raises
        :class:`AttachmentError` before anything is sent or stored."""
        self._check_idle()
        prompt_message = self._prompt_message(prompt, attachments)
        turn = self._turn = Turn(task=asyncio.current_task())
        return await self._run(prompt_message, turn)

    def _prompt_message(self, prompt: str, attachments: Sequence[Any] | None) -> Message:
        message = Message.user(encodable(prompt))
        if attachments:
            info = self.provider.info
            message.parts.extend(attachment_parts(attachments, capabilities=info.capabilities,
                                                  model=self.provider.model_id))
        return message

    async def _run(self, prompt_message: Message, turn: Turn) -> Message | None:
        turn.begun = True
        self.todo.working = True
        self._events.bind_to_running_loop()
        self._emit(TurnStartEvent())
        claim: TurnClaim | None = None
        try:
            # First, before anything is stored: the claim that keeps another kernel from
            # taking this turn over, even while the store cannot record the owner yet.
            if self.store is not None:
                claim = TurnClaim.take(self.store.path, self.id)
            self._crew.begin_turn()
            self._history.append(prompt_message)
            if turn.cancel_requested:
                turn.stop_reason = "cancelled"
                return None
            self._save_record(running=True, owner=ProcessOwner.current())
            return await self._loop_turn(turn)
        except asyncio.CancelledError:
            # Children close their histories first (their cancelled `delegate` calls
            # stopped them): then their ends come before this turn's results and `done`.
            with contextlib.suppress(asyncio.CancelledError):
                await self._crew.wait_stopped()
            self._finish_interrupted(turn, "interrupted" if turn.interrupted else "cancelled",
                                     None)
            turn.stop_reason = "interrupted" if turn.interrupted else "cancelled"
            if not turn.cancel_requested:
                raise  # cancelled from outside (kernel shutdown…): keep propagating
            if turn.task is not None:
                turn.task.uncancel()
            return turn.message
        except Exception as exc:
            # A bug or an unexpected failure (e.g. the store's disk is full): the turn ends
            # with an error event like any provider failure; the session stays usable.
            log.exception("turn of session %s failed", self.id)
            text = encodable(f"{type(exc).__name__}: {exc}")
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "error", text)
            self._emit(ErrorEvent(message=f"The turn failed: {text}", retryable=False))
            turn.stop_reason = "error"
            return turn.message
        except BaseException:
            # KeyboardInterrupt or SystemExit raised in the turn's own frames: the turn is
            # closed like a cancel (history valid, cards final, store written, `done`),
            # then the exception goes on.
            turn.interrupted = True
            with contextlib.suppress(Exception):
                self._finish_interrupted(turn, "interrupted", None)
            turn.stop_reason = "interrupted"
            raise
        finally:
            turn.stop_draft_timer()
            with contextlib.suppress(Exception):
                self._saved.clear_draft()
                self._save_record(running=False, owner=None)
            try:
                if sys.exc_info()[0] is None:
                    # Not while an exception propagates: that must not wait.
                    await self._settle(turn)
            finally:
                if claim is not None:
                    claim.release()
                # Last, whatever ended the wait: the session is running until `done`
                # (no second turn can start inside this one), and a subscriber reacting
                # to `done` sees an idle session (and may start the next turn from its
                # handler).
                self._turn = None
                with contextlib.suppress(Exception):
                    self.todo.working = False  # a card's step in progress stops spinning
                self._emit(DoneEvent(stop_reason=turn.stop_reason))

    async def _settle(self, turn: Turn) -> None:
        """Wait until the turn is stored — or the store is behind, which the session has
        said (a `warning`); its writes go on retrying either way. Stop ends the wait."""
        try:
            await self._saved.settled()
        except asyncio.CancelledError:
            if not turn.cancel_requested:
                raise  # cancelled from outside: `done` is still said, then it goes on
            if turn.task is not None:
                turn.task.uncancel()

    async def _learn_window(self) -> None:
        """A local server's window is its own: ask it once, before the first call."""
        await self.provider.discover_context_window()
        info = self.provider.info
        self._meter.set_window(info.context_window, assumed=info.assumed)

    async def _loop_turn(self, turn: Turn) -> Message | None:
        await self._learn_window()
        for _call in range(self.agent.max_model_calls):
            if not turn.compaction_failed and self._meter.nearly_full(self.agent.compact_at):
                try:
                    await self._compact(turn)
                except CompactionError as exc:
                    turn.compaction_failed = True  # don't retry on every call of this turn
                    self._emit(ErrorEvent(message=encodable(str(exc)), retryable=True))
                    if self._meter.full:
                        turn.stop_reason = "context_full"
                        return turn.message
            key = self._resolution_key()
            preview = self.preview()
            self._resolved.put(key, preview.resolution)  # what the re-checks compare with
            request = ModelRequest(system_prompt=preview.system_prompt,
                                   # Maintained as messages arrive (History), so a call
                                   # costs no pass over a long history; providers never
                                   # mutate it.
                                   messages=self._history.view, tools=preview.tools,
                                   think_level=self.think_level)
            try:
                message = await self._stream_response(turn, request)
            except Exception as exc:
                error = exc if isinstance(exc, ProviderError) else _unexpected(exc)
                text = encodable(error.message)  # a server's words may carry anything
                self._finish_interrupted(turn, "error", text, error.usage)
                if error.usage is not None:
                    self._count_usage(turn, error.usage)
                self._emit(ErrorEvent(message=text, retryable=error.retryable))
                turn.stop_reason = "error"
                return turn.message
            if not message.tool_calls:
                turn.stop_reason = message.metadata.stop_reason or "end_turn"
                return message
            # The resolution this call was made with also answers calls outside it: the
            # refusal the model reads is the resolver's own.
            limits = ToolLimits(timeout=self.agent.tool_timeout,
                                max_result_chars=self.agent.max_tool_result_chars)
            await self._tools.run(message, preview.resolution, live_calls=turn.live_calls,
                                  limits=limits)
        turn.stop_reason = "max_model_calls"
        return turn.message

    async def _stream_response(self, turn: Turn, request: ModelRequest) -> Message:
        checkpoint = self._saved.draft if self.store is not None else None
        assembler = await turn.stream(self.provider, request, self._emit, checkpoint)
        message = Message.assistant(assembler.parts, usage=assembler.usage,
                                    model=self.provider.model_id,
                                    stop_reason=assembler.stop_reason)
        turn.assembler = None
        turn.message = message
        self._history.append(message, replaces_draft=True)
        # No usage reported: the window is estimated from what was sent and answered
        # (the history's size is kept as it grows: no pass over it per call).
        estimate = (estimate_request_tokens(request.system_prompt, request.tools,
                                            self._history.view_characters)
                    if assembler.usage is None else None)
        self._count_usage(turn, assembler.usage, estimate)
        return message

    def _count_usage(self, turn: Turn, usage: Usage | None,
                     estimated_tokens: int | None = None) -> None:
        turn.usage = self._meter.record_call(turn.usage, usage,
                                             estimated_tokens=estimated_tokens)
        self._emit(TokenUpdateEvent(current=self._turn_total(turn.usage),
                                    context=self._meter.context))

    def _turn_total(self, own: TurnUsage) -> TurnUsage:
        """The turn's figures as ``token_update`` shows them: this session's own calls
        plus its sub-agents' (the split is :attr:`subagent_usage`)."""
        children = self._crew.runs
        return add_usage(own, self._crew.turn_usage) if children else own

    def _children_counted(self) -> None:
        """A sub-agent's figures changed: the turn total follows; the context figure is
        this session's own."""
        turn = self._turn
        own = turn.usage if turn is not None else TurnUsage()
        self._emit(TokenUpdateEvent(current=self._turn_total(own),
                                    context=self._meter.context))

    def _record_subagent(self, call_id: str, record: SubagentRun) -> None:
        """Keep a child's run on its ``delegate`` call's execution (resume rebuilds the
        nested card from it) and store the message."""
        turn = self._turn
        message = turn.message if turn is not None else None
        if message is None:
            return
        for execution in message.metadata.tool_executions:
            if execution.id == call_id:
                execution.subagent = record
                self._history.changed(message)
                return

    # --- tools ------------------------------------------------------------------------
    def _tool_context(self, call_id: str, on_progress: ProgressCallback) -> ToolContext:
        return ToolContext(session_id=self.id, tool_call_id=call_id,
                           working_dir=self.working_dir, namespace=self.namespace,
                           todo=self.todo, on_progress=on_progress, threads=self._threads,
                           crew=self._crew if self._crew.can_delegate else None)

    def _todo_written(self) -> None:
        summary = self.todo.summary()
        self._emit(TodoUpdateEvent(todos=[i.model_dump() for i in self.todo.read()],
                                   summary=summary.model_dump()))
        self._save_record(todo_summary=summary.model_dump())

    # --- compaction -------------------------------------------------------------------
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
            await self._learn_window()
            return await self._compact(None)
        finally:
            self._compacting = False

    async def _compact(self, turn: Turn | None) -> CompactionEvent | None:
        done = await compact_view(self.provider, self._history.view,
                                  keep_turns=self.agent.keep_recent_turns,
                                  plan=self.todo.format_for_injection(),
                                  # What the model would read now, results
                                  # appended since the last call included.
                                  tokens_before=self._meter.expected_tokens,
                                  after_message=len(self._history.messages))
        if done is None:
            return None
        record = done.record
        self._history.set_view(done.view)
        self.compactions.append(record)
        self._saved.view(done.stored.model_copy(update={"compactions": self.compactions}))
        current = self._meter.record_summary(turn.usage if turn else None, record.usage,
                                             record.tokens_after)
        if turn is not None:
            turn.usage = current
        compaction = CompactionEvent(tokens_before=record.tokens_before,
                                     tokens_after=record.tokens_after,
                                     messages_folded=record.messages_folded)
        self._emit(compaction)
        # The context figure changes now, not at the next call.
        self._emit(TokenUpdateEvent(current=current, context=self._meter.context))
        return compaction

    # --- history and persistence ------------------------------------------------------
    def _finish_interrupted(self, turn: Turn, why: Literal["cancelled", "interrupted", "error"],
                            error: str | None, usage: Usage | None = None) -> None:
        """Keep what streamed of an interrupted response and close the history so the
        next turn starts from a valid conversation."""
        turn.close_thinking(self._emit)
        if turn.assembler is not None:
            parts = turn.assembler.snapshot()
            message = Message.assistant(parts, interrupted=why, error=error, usage=usage,
                                        model=self.provider.model_id)
            turn.assembler = None
            turn.message = message
            self._history.append(message, replaces_draft=True)
        elif turn.message is not None and why in ("cancelled", "interrupted"):
            turn.message.metadata.interrupted = why
            self._history.changed(turn.message)
        self._tools.close_unanswered(self._history.messages, why, turn.live_calls)

    def _describe(self) -> dict[str, Any]:
        """The record fields only the session knows (see SessionPersistence.record)."""
        return {"agent": self.agent.to_record(self.provider), "think_level": self._think_level,
                "todo_summary": (self.todo.summary().model_dump() if self.todo.has_items()
                                 else None),
                "mcp_servers": self.catalog.mcp_server_specs(),
                "parent_id": self.parent_id, "parent_call_id": self.parent_call_id}

    def _save_record(self, **fields: Any) -> None:
        self._saved.save_record(self._history.messages, **fields)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything the session has shown is in its store (a script about to
        exit calls this); ``False`` if ``timeout`` seconds ran out first. Writes are
        otherwise stored in the background, in order, and retried while the store is
        locked or full — ``run()`` returns once its turn is stored or the session has
        warned that the store is behind."""
        return self._saved.flush(timeout)

    # --- resume -----------------------------------------------------------------------
    @classmethod
    def resume(cls, session_id: str, store: SessionStore, *, catalog: ToolCatalog | None = None,
               agent: Agent | None = None, **options: Any) -> AgentSession:
        """Rebuild a stored session: history, plan (hydrated from the latest ``todo``
        result), skill and tool cards (message metadata) and the thinking level. A turn
        that was running when its process died is closed, keeping what streamed, marked
        ``interrupted="killed"``. Raises :class:`SessionBusyError` while the session's turn
        runs in a live process, or while this process has writes of it not stored yet."""
        TurnClaim.check(store.path, session_id)  # a live turn, even one not recorded yet
        behind = flush_session(store, session_id)  # this process's own writes of it first
        if behind is not None:
            # What it has not stored yet would be missing here, and two writers of one
            # session would store their messages in either order.
            failure = behind.failure
            why = f" ({failure.detail})" if failure is not None else ""
            raise SessionBusyError(
                f"session {session_id} is open in this process and {behind.pending} of its "
                f"writes are not stored yet{why}; use the session that is open, or resume "
                f"once they are stored (its flush())")
        record = store.get_session(session_id)  # a dead owner's turn is settled here
        if record is None:
            raise KeyError(f"no session {session_id!r} in {store.path}")
        if record.running and record.owner is not None:
            record.owner.check_not_busy(session_id)
        catalog = catalog if catalog is not None else ToolCatalog.default()
        # MCP servers come back before the agent, so its config finds their tools.
        for problem in catalog.restore_mcp_servers(record.mcp_servers):
            log.warning("resume %s: %s", session_id, problem)
        agent = agent or Agent.from_record(record.agent, catalog)
        level = record.think_level if record.think_level in THINK_LEVELS else None
        session = cls(agent, catalog, store, session_id=session_id,
                      think_level=level, **options)
        session.parent_id, session.parent_call_id = record.parent_id, record.parent_call_id
        if record.parent_id is not None:
            session._crew.depth, session._crew.max_depth = _place_in_tree(store, record)
        stored = session._saved.load(store)
        history = session._history
        history.load(stored.messages, stored.view)
        session.compactions = stored.compactions
        session.todo = TodoStore.hydrate_from_history(history.messages)
        session.todo.working = False
        session._meter.restore(history.messages, session.compactions)
        draft = stored.draft
        if draft is not None or record.running or record.owner_died:
            # Calls whose tools were running when the process died get their error result
            # first (it must follow the message that made the calls); then the answer that
            # was streaming, as far as it was checkpointed, or an empty marker — whose own
            # complete calls are closed in turn.
            session._tools.close_unanswered(history.messages, "killed", {})
            message = draft or Message.assistant([])
            message.metadata.interrupted = "killed"
            message.metadata.error = "The kernel stopped while this turn was running."
            history.append(message)
            session._tools.close_unanswered(history.messages, "killed", {})
            session._saved.clear_draft()  # it is a message now
        session._settle_subagents(store, catalog)
        # What a store hands back may break the rules providers enforce (a damaged row);
        # the model is sent a conversation that keeps them.
        history.set_view(valid_conversation(history.view))
        session._save_record(running=False, owner=None, owner_died=False)
        return session

    def _settle_subagents(self, store: SessionStore, catalog: ToolCatalog) -> None:
        """A child still recorded as running was cut off by a dead kernel: its card is
        marked interrupted, and the child's own session is closed the way this one was
        (its turn marked killed) so both read as interrupted."""
        for message in self._history.messages:
            changed = False
            for execution in message.metadata.tool_executions:
                run = execution.subagent
                if run is None or run.status != "running":
                    continue
                execution.subagent = run.model_copy(update={"status": "interrupted"})
                changed = True
                child = store.get_session(run.session_id)  # settles a dead owner
                if child is None or not (child.running or child.owner_died):
                    continue
                try:
                    settled = type(self).resume(run.session_id, store, catalog=catalog,
                                                namespace=self.namespace)
                    # Stored before this resume returns: a view loads the child's
                    # messages from the store to rebuild its nested card.
                    settled.flush(LOAD_FLUSH_LIMIT)
                except Exception as exc:  # e.g. its provider needs a key not set here
                    log.warning("resume %s: its sub-agent session %s stays unsettled until "
                                "it is resumed itself (%s)", self.id, run.session_id, exc)
            if changed:
                self._history.changed(message)

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return (f"AgentSession({self.id!r}, agent={self.agent.name!r}, "
                f"model={self.provider.model_id!r}, "
                f"{len(self._history.messages)} messages, {state})")


def _place_in_tree(store: SessionStore, record: SessionRecord) -> tuple[int, int]:
    """A stored child's depth below its top-level session and that session's nesting
    limit: the limit holds for the whole tree, so a child opened on its own (resumed
    directly) may delegate no deeper than it could inside its parent's run."""
    depth, top, seen = 0, record, {record.id}
    while top.parent_id is not None:
        parent = store.get_session(top.parent_id)
        if parent is None or parent.id in seen:
            break  # the parent was deleted (or a damaged row loops): the chain ends here
        depth, top = depth + 1, parent
        seen.add(parent.id)
    if top is record:  # its parent is gone: at least one level below one
        return 1, Agent.max_subagent_depth
    limit = top.agent.get("max_subagent_depth") if isinstance(top.agent, dict) else None
    return depth, limit if isinstance(limit, int) and limit >= 0 else Agent.max_subagent_depth


def _unexpected(exc: Exception) -> ProviderError:
    """A provider failure that is not a ProviderError (a bug, an unmapped network error):
    reported the same way, as not worth retrying blindly."""
    log.exception("the model call failed unexpectedly")
    return ProviderError(f"The model call failed: {type(exc).__name__}: {exc}",
                         retryable=False)
