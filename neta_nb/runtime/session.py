"""AgentSession: one conversation with an agent — its public face (DESIGN §3–§4).

The session holds the conversation's state and takes what a user or a UI asks: run or
start a turn, cancel it, answer approvals, set the thinking level, subscribe to events,
compact, resume. Each part with a job of its own lives beside it: the loop that runs a
turn (``turn_loop``), the one place the history grows (``history``), tool calls
(``tool_runner``, ``approvals``), sub-agents (``subagents``), token figures
(``usage_meter``), resuming (``resume``) and writing to the store
(``neta_nb.store.session_writes``). The session knows nothing of widgets.
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
from collections.abc import Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any

from ..encodable import encodable
from ..events import (
    ApprovalDecision,
    ApprovalRequestEvent,
    ApproveCommand,
    Command,
    ContextUsage,
    DoneEvent,
    Event,
    SendCommand,
    SetThinkingLevelCommand,
    StopCommand,
    TodoUpdateEvent,
    TurnUsage,
    parse_command,
)
from ..messages import (
    MentionPart,
    Message,
    Usage,
    new_id,
)
from ..providers.base import Provider
from ..store.session_store import CompactionRecord, SessionStore, check_session_id
from ..store.session_writes import (
    SessionPersistence,
    deleted_warning,
    store_warning,
)
from ..store.writer import StoreFailure
from ..thinking import ThinkLevel, check_think_level, resolve_think_level
from ..todo import TodoStore
from ..tools import PromptPreview, ToolCatalog, ToolContext, preview_prompt, resolve_tools
from ..tools.base import ProgressCallback
from ..tools.builtin.python_exec import notebook_namespace
from ..tools.notebook.kernel import cell_running
from ..tools.notebook.page import NotebookAccess, NotebookPage
from ..tools.resolution_cache import ResolutionCache
from ..tools.resolver import ToolResolution
from ..tools.threads import ToolThreads
from .agent import Agent
from .approvals import ApprovalPolicy, Approvals
from .branches import Branches
from .budget import BudgetGuard, Spend
from .event_hub import EventHub
from .history import History
from .mentions import prompt_parts
from .resume import resume_session
from .subagents import Crew, CrewLink
from .tool_runner import ToolRunner
from .turn import Turn, shown_as_one_line
from .turn_loop import CallGate, TurnLoop
from .usage_meter import UsageMeter

__all__ = ["Agent", "AgentSession", "ApprovalPolicy"]

log = logging.getLogger(__name__)

class AgentSession(TurnLoop, Branches):
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
        parent_id: str | None = None,
        call_gate: CallGate | None = None,
        branch_of: tuple[str, str] | None = None,
    ) -> None:
        # Sub-agents that lead back to an agent would make its stored record endless;
        # refused here, with the chain named, before anything is created or stored.
        agent.check_subagents()
        self.agent = agent
        self.crew_link = crew_link
        """How this session hangs below its parent while it runs (``None``: a top-level
        session, or a resumed child: see :attr:`parent_id`)."""
        self.parent_id: str | None = crew_link.parent_id if crew_link else parent_id
        """The session that delegated to this one, or the record it belongs to (a batch
        run's); ``None``: a top-level session."""
        self.call_gate = call_gate
        """What each model call waits for before it starts (a batch run's limiter)."""
        self.parent_call_id: str | None = crew_link.call_id if crew_link else None
        """The parent's ``delegate`` call that ran this session."""
        self.branch_of: str | None = branch_of[0] if branch_of else None
        """The session this one was forked from (:meth:`fork`), if any."""
        self.branch_at: str | None = branch_of[1] if branch_of else None
        """The message of :attr:`branch_of` this one was forked at (``branch_of=(session
        id, message id)``: its first stored record says so already)."""
        self._rewind_listeners: list[Callable[[], None]] = []
        self._level_listeners: list[Callable[[ThinkLevel], None]] = []
        self.catalog = catalog if catalog is not None else ToolCatalog.default()
        self.provider = provider or agent.create_provider()
        if session_id is not None:
            check_session_id(session_id)
        self.id = session_id or new_id("s_")
        self._saved = SessionPersistence(self.id, store, self._describe,
                                         on_behind=lambda f: self._emit(store_warning(f)),
                                         on_deleted=lambda: self._emit(deleted_warning()),
                                         parent=crew_link.saved if crew_link else None)
        self.working_dir = Path(working_dir) if working_dir else Path.cwd()
        if namespace is None:
            # The notebook's own variables, or outside IPython one namespace for the
            # session, so the `python` tool keeps its variables between calls there too.
            namespace = notebook_namespace()
        self.namespace: dict[str, Any] = namespace if namespace is not None else {}
        self.todo = TodoStore()
        self.compactions: list[CompactionRecord] = []
        """Every compaction of this session (the chat view draws a marker for each)."""
        info = self.provider.info
        self._meter = UsageMeter(info.context_window, window_assumed=info.assumed)
        self._think_level: ThinkLevel | None = check_think_level(think_level)
        self._events = EventHub()
        self._emit = self._events.emit
        self._budget = BudgetGuard(self._emit)
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
        self.notebook_page: NotebookPage | None = None
        """The notebook page a chat view of this session is on (the notebook tools reach
        the notebook through it); ``None``: no page, the edit and run tools are left out."""
        self._notebook = NotebookAccess(lambda: self.notebook_page, lambda *asked: (
            self._approvals.decide_edit(
                *asked, accept_without_asking=self.agent.accept_notebook_edits)), cell_running)
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
        level = self.think_level
        for listener in list(self._level_listeners):
            self._events.deliver(partial(listener, level), "thinking level")

    def on_thinking_level(self, callback: Callable[[ThinkLevel], None]) -> Callable[[], None]:
        """Call ``callback(level)`` after each :meth:`set_thinking_level` (a view shows the
        level chosen from code at once), as event subscribers are called (on the session's
        loop; one that raises is logged); returns a function that stops it."""
        self._level_listeners.append(callback)
        return lambda: (self._level_listeners.remove(callback)
                        if callback in self._level_listeners else None)

    def preview(self) -> PromptPreview:
        """The system prompt and tool definitions the next model call will send — the
        same computation the loop uses, so preview and runtime cannot disagree."""
        preview = preview_prompt(system_prompt=self.agent.system_prompt, catalog=self.catalog,
                                 config=self.agent.tools,
                                 model_capabilities=self.provider.info.capabilities,
                                 scene=self.agent.scene, delegates=self._crew.can_delegate,
                                 notebook_page=self._page_answers())
        if "delegate" not in preview.resolution:
            return preview
        # `delegate` as this agent's model sees it: its own sub-agents by name.
        tools = [self._crew.definition(d) if d.name == "delegate" else d
                 for d in preview.tools]
        return dataclasses.replace(preview, tools=tools)

    def _resolution_key(self) -> tuple[object, ...]:
        return ResolutionCache.key(self.catalog, self.agent.tools, self.agent.scene,
                                   self._crew.can_delegate, self._page_answers())

    def _page_answers(self) -> bool:
        page = self.notebook_page
        return page is not None and page.available

    def _resolution(self) -> ToolResolution:
        """The agent's tools now, as `preview` resolves them (cached: ResolutionCache)."""
        key = self._resolution_key()
        resolution = self._resolved.get(key)
        if resolution is None:
            resolution = resolve_tools(self.catalog, self.agent.tools,
                                       model_capabilities=self.provider.info.capabilities,
                                       scene=self.agent.scene,
                                       delegates=self._crew.can_delegate,
                                       notebook_page=self._page_answers())
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

    def pending_approvals(self) -> list[ApprovalRequestEvent]:
        """This session's approval requests still waiting for an answer, in the order
        asked (a sub-agent's are its own session's: see :attr:`subagents`)."""
        return self._approvals.pending()

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
            self.approve(cmd.id, cmd.decision, subagent=cmd.subagent, text=cmd.text)
        return None

    def approve(self, call_id: str, decision: ApprovalDecision, *,
                subagent: Sequence[str] | None = None, text: str | None = None) -> bool:
        """Answer an ``approval_request``: ``allow_once``, ``allow_always`` (this tool, for
        the rest of this session) or ``reject``. Returns False when that request is no
        longer pending (the turn was stopped meanwhile: a harmless race with Stop).

        A sub-agent's request (it arrives wrapped in ``subagent_event``) is answered the
        same way. ``subagent`` is the path of wrapper ids it came in (``[]``: this
        session's own request), so the answer reaches exactly the child that asked even
        when two children's calls share an id; without it the request's id alone is
        followed (this session's own first, then the first child waiting under it)."""
        if subagent is None:
            return (self._approvals.answer(call_id, decision, text=text)
                    or self._crew.approve(call_id, decision, text=text))
        if not subagent:
            return self._approvals.answer(call_id, decision, text=text)
        return self._crew.approve(call_id, decision, path=subagent, text=text)

    def stop_subagent(self, call_id: str) -> bool:
        """Stop one sub-agent — the ``id`` of its ``subagent_start`` (its ``delegate``
        call) — and let this session go on: its model reads the stop as the call's error
        result. A grandchild's id (at any depth) stops that grandchild, and its parent
        goes on. False when no such run is running."""
        return self._crew.stop(call_id)

    # --- running turns ----------------------------------------------------------------
    def start(self, prompt: str, attachments: Sequence[Any] | None = None, *,
              mentions: Sequence[MentionPart] | None = None) -> asyncio.Task[Any]:
        """Run a turn in the background and return its task; the notebook cell returns
        at once, so Stop and other widget messages keep working. ``attachments`` and
        ``mentions`` as for :meth:`run`; a refused attachment or mention raises here,
        before any turn."""
        return self._start_turn(self._ready(prompt, attachments, mentions))

    def _start_turn(self, prompt_message: Message) -> asyncio.Task[Any]:
        """:meth:`start` with its prompt ready (checked by :meth:`_ready`)."""
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

    def cancel(self) -> bool:
        """Stop the turn in flight: streaming stops, running tools are abandoned, the
        partial answer is kept marked ``cancelled``. Returns False if nothing was running."""
        turn = self._turn
        if turn is None or turn.task is None or turn.task.done():
            return False
        if turn.cancel_requested:
            return True  # stopping already: a second cancel would outlive the turn
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

    async def run(self, prompt: str, attachments: Sequence[Any] | None = None, *,
                  mentions: Sequence[MentionPart] | None = None) -> Message | None:
        """Run one turn to its end and return the last assistant message. Provider
        failures are reported as an ``error`` event, not raised.

        ``attachments``: files for the model — paths, ``(bytes, media_type)``, PIL images
        or :class:`~neta_nb.runtime.attachments.Attachment` (see
        :mod:`neta_nb.runtime.attachments`). One the model cannot take raises
        :class:`AttachmentError` before anything is sent or stored; so does a ``@`` mention
        that does not resolve (``MentionError``, :mod:`neta_nb.runtime.mentions`).
        ``mentions``: blocks sent instead of resolving them (``()``: ``@`` is text)."""
        prompt_message = self._ready(prompt, attachments, mentions)
        turn = self._turn = Turn(task=asyncio.current_task())
        try:
            return await self._run(prompt_message, turn)
        except asyncio.CancelledError as cancelled:
            # Cancelled from outside (a kernel interrupt of the awaiting cell): the turn
            # is closed already; a cell says so in one line, not from inside the library.
            raise shown_as_one_line(cancelled)  # noqa: B904 - the same exception, re-raised

    def _ready(self, prompt: str, attachments: Sequence[Any] | None,
               mentions: Sequence[MentionPart] | None = None, *,
               paid: tuple[Spend, Spend] | None = None) -> Message:
        """The checks before a turn (idle, budget, a sub-agent tree changed since), then
        its prompt; nothing is changed. ``paid``: all the session will have paid when the
        turn starts and what of it for turns gone back over, if not what it has now (a
        retry's, after its rewind)."""
        self._check_idle()
        self._check_budget(paid)
        self.agent.check_subagents()
        message = Message.user(encodable(prompt))
        message.metadata.think_level = self.think_level
        if attachments or mentions or "@" in prompt:
            message.parts.extend(prompt_parts(
                message.text, attachments, mentions, namespace=self.namespace,
                working_dir=self.working_dir, capabilities=self.provider.info.capabilities,
                model=self.provider.model_id))
        return message

    # --- tools ------------------------------------------------------------------------
    def _tool_context(self, call_id: str, on_progress: ProgressCallback) -> ToolContext:
        return ToolContext(session_id=self.id, tool_call_id=call_id,
                           working_dir=self.working_dir, namespace=self.namespace,
                           todo=self.todo, on_progress=on_progress, threads=self._threads,
                           crew=self._crew if self._crew.can_delegate else None,
                           notebook=self._notebook)

    def _todo_written(self) -> None:
        summary = self.todo.summary()
        self._emit(TodoUpdateEvent(todos=[i.model_dump() for i in self.todo.read()],
                                   summary=summary.model_dump()))
        self._save_record(todo_summary=summary.model_dump())

    # --- history and persistence ------------------------------------------------------
    def _describe(self) -> dict[str, Any]:
        """The record fields only the session knows (see SessionPersistence.record)."""
        return {"agent": self.agent.to_record(self.provider), "think_level": self._think_level,
                "todo_summary": (self.todo.summary().model_dump() if self.todo.has_items()
                                 else None),
                "mcp_servers": self.catalog.mcp_server_specs(),
                "parent_id": self.parent_id, "parent_call_id": self.parent_call_id,
                "branch_of": self.branch_of, "branch_at": self.branch_at,
                "cost_usd": self.cost_usd, "rewound": dataclasses.asdict(self._meter.rewound)}

    def _save_record(self, **fields: Any) -> None:
        self._saved.save_record(self._history.messages, **fields)

    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything the session has shown is in its store (a script about to
        exit calls this); ``False`` if ``timeout`` seconds ran out first. Writes are
        otherwise stored in the background, in order, and retried while the store is
        locked or full — ``run()`` returns once its turn is stored or the session has
        warned that the store is behind."""
        return self._saved.flush(timeout)

    @classmethod
    def resume(cls, session_id: str, store: SessionStore, *, catalog: ToolCatalog | None = None,
               agent: Agent | None = None, **options: Any) -> AgentSession:
        """Rebuild a stored session: history, plan (hydrated from the latest ``todo``
        result), skill and tool cards (message metadata) and the thinking level. A turn
        that was running when its process died is closed, keeping what streamed, marked
        ``interrupted="killed"``. Raises :class:`SessionBusyError` while the session's turn
        runs in a live process, or while this process has writes of it not stored yet.
        Without ``agent=`` (or ``provider=``) the stored agent's provider is rebuilt with
        this environment's key; a stored ``base_url`` this environment did not configure
        raises :class:`~neta_nb.runtime.stored_endpoint.StoredEndpointError`, naming it
        and how to use it on purpose (``provider=create_provider(spec, base_url=...)``)."""
        return resume_session(cls, session_id, store, catalog=catalog, agent=agent,
                              **options)

    def __repr__(self) -> str:
        state = "running" if self.running else "idle"
        return (f"AgentSession({self.id!r}, agent={self.agent.name!r}, "
                f"model={self.provider.model_id!r}, "
                f"{len(self._history.messages)} messages, {state})")

