"""AgentSession: one conversation with an agent — its public face (DESIGN §3–§4).

The session takes what a user or a UI asks: run or start a turn, cancel it, answer
approvals, set the thinking level, subscribe to events, compact, branch, resume. What it
holds has one owner, :class:`~.state.SessionState` (history, figures, events, the turn in
flight, compactions, writes, plan, approvals, :class:`~.spending.Spending`); what a turn
runs with is :class:`~.deps.TurnDeps` (the agent and provider, the tool runner, the
sub-agents, the prompt preview, the call gate, the tracer); a
:class:`~.runner.TurnRunner` runs turns over both, and branching (``branches``) and
resuming (``resume``) are functions over them. The session knows nothing of widgets.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Awaitable, Callable, Sequence
from functools import partial
from pathlib import Path
from typing import Any, Literal, overload

from ...events import (
    ApprovalDecision,
    ApprovalRequestEvent,
    ApproveCommand,
    Command,
    CompactionEvent,
    ContextUsage,
    Event,
    SendCommand,
    SetThinkingLevelCommand,
    StopCommand,
    TurnUsage,
    parse_command,
)
from ...messages import MentionPart, Message, Usage, new_id
from ...providers.base import Provider
from ...store.session_store import CompactionRecord, SessionStore, check_session_id
from ...store.writer import StoreFailure
from ...thinking import ThinkLevel, check_think_level
from ...todo import TodoStore
from ...tools import PromptPreview, ToolCatalog
from ...tools.builtin.python_exec import notebook_namespace
from ...tools.notebook.changes.restore import NotebookRestore
from ...tools.notebook.page import NotebookPage
from ..agent import Agent
from ..approvals import ApprovalPolicy
from ..mentions.page_mentions import page_mention_parts
from . import branches
from .deps import CallGate, TurnDeps
from .notebook_rewind import NotebookRewind, changes_made, start_restore, subagent_histories
from .resume import resume_session
from .runner import TurnRunner, next_think_level
from .state import SessionState
from .tool_calls.subagents import CrewLink
from .turn import Turn, shown_as_one_line
from .workspace import Workspace

__all__ = ["Agent", "AgentSession", "ApprovalPolicy"]


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
        parent_id: str | None = None,
        call_gate: CallGate | None = None,
        branch_of: tuple[str, str] | None = None,
        notebook_page: NotebookPage | None = None,
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
        self.catalog = catalog if catalog is not None else ToolCatalog.default()
        provider = provider or agent.create_provider()
        if session_id is not None:
            check_session_id(session_id)
        self.id = session_id or new_id("s_")
        self.working_dir = Path(working_dir) if working_dir else Path.cwd()
        if namespace is None:
            # The notebook's own variables, or outside IPython one namespace for the
            # session, so the `python` tool keeps its variables between calls there too.
            namespace = notebook_namespace()
        self.namespace: dict[str, Any] = namespace if namespace is not None else {}
        info = provider.info
        self.state = SessionState(self.id, store, partial(_record_fields, self),
                                  context_window=info.context_window,
                                  window_assumed=info.assumed, think_level=think_level,
                                  approval_policy=approval_policy, parent=crew_link)
        """What the session holds (see :class:`~.state.SessionState`)."""
        turn_end = crew_link.turn_end if crew_link is not None else None
        workspace = Workspace(agent, provider, self.catalog, working_dir=self.working_dir,
                              namespace=self.namespace, approvals=self.state.approvals,
                              turn_end=turn_end or (lambda: _turn_end(self)))
        workspace.notebook_page = notebook_page
        self.deps = TurnDeps(self.state, workspace, type(self),
                             depth=crew_link.depth if crew_link else 0,
                             max_depth=(crew_link.max_depth if crew_link
                                        else agent.max_subagent_depth),
                             call_gate=call_gate)
        """What its turns run with (see :class:`~.deps.TurnDeps`)."""
        self._runner = TurnRunner(self.state, self.deps)
        self.state.saved.create_record(self.state.history.messages)

    # --- public state -----------------------------------------------------------------
    @property
    def provider(self) -> Provider:
        """The model's provider; one set here is used from the next model call."""
        return self.deps.workspace.provider

    @provider.setter
    def provider(self, provider: Provider) -> None:
        self.deps.workspace.provider = provider

    @property
    def notebook_page(self) -> NotebookPage | None:
        """The notebook page a chat view of this session is on (the notebook tools reach
        the notebook through it); ``None``: no page, the edit and run tools are left out."""
        return self.deps.workspace.notebook_page

    @notebook_page.setter
    def notebook_page(self, page: NotebookPage | None) -> None:
        self.deps.workspace.notebook_page = page

    @property
    def todo(self) -> TodoStore:
        """The plan (the latest ``todo`` result among the messages)."""
        return self.state.todo

    @property
    def compactions(self) -> list[CompactionRecord]:
        """Every compaction of this session (the chat view draws a marker for each)."""
        return self.state.compactions

    @property
    def store(self) -> SessionStore | None:
        """Where the session is saved (``None``: in memory only)."""
        return self.state.saved.store

    @property
    def messages(self) -> list[Message]:
        """The conversation so far (a copy of the list)."""
        return list(self.state.history.messages)

    @property
    def model_view(self) -> list[Message]:
        """What the model is sent as history: :attr:`messages`, or after a compaction the
        summary, the preserved plan and the turns kept verbatim (a copy of the list)."""
        return list(self.state.history.view)

    @property
    def streaming_message(self) -> Message | None:
        """The answer being streamed right now, as far as it got (``None`` between model
        calls): a view that opens mid-answer starts from it."""
        turn = self.state.turn
        return turn.streaming if turn is not None else None

    @property
    def usage(self) -> Usage:
        """Usage of every model call in this session, as the provider reported it."""
        return self.state.meter.total

    @property
    def can_delegate(self) -> bool:
        """The agent has sub-agents and is above the nesting limit, so ``delegate`` is
        offered (if its tool config and the catalog allow it)."""
        return self.deps.crew.can_delegate

    @property
    def subagent_usage(self) -> dict[str, TurnUsage]:
        """Tokens of each sub-agent run in the current (or latest) turn, by the id of the
        ``delegate`` call that ran it; the turn total in ``token_update`` includes them."""
        return self.deps.crew.usage

    @property
    def subagents(self) -> dict[str, AgentSession]:
        """The child sessions of the current (or latest) turn, by ``delegate`` call id."""
        return {call_id: run.session for call_id, run in self.deps.crew.runs.items()
                if isinstance(run.session, AgentSession)}

    @property
    def context(self) -> ContextUsage:
        """How full the context window was after the latest model call."""
        return self.state.meter.context

    @property
    def running(self) -> bool:
        """True from ``start()`` (or ``run()``) until the turn's ``done`` event."""
        return self.state.turn is not None

    @property
    def approval_policy(self) -> ApprovalPolicy:
        """What decides calls that need approval while no UI is attached."""
        return self.state.approvals.policy

    @approval_policy.setter
    def approval_policy(self, policy: ApprovalPolicy) -> None:
        self.state.approvals.policy = policy

    @property
    def store_failure(self) -> StoreFailure | None:
        """Why what the session has shown is not stored yet, while its store is behind
        (locked by another program, a full disk); writes are being retried."""
        return self.state.saved.failure

    @property
    def think_level(self) -> ThinkLevel:
        """The level the next model call will use (session choice → agent default →
        model default, falling back where the model does not support a level)."""
        return next_think_level(self.state, self.deps)

    def set_thinking_level(self, level: ThinkLevel | str) -> None:
        """Choose the thinking level; it applies from the next model call, even mid-turn."""
        state = self.state
        state.think_level = check_think_level(level)
        state.saved.update(think_level=state.think_level)
        level = self.think_level
        for listener in list(state.level_listeners):
            state.events.deliver(partial(listener, level), "thinking level")

    def on_thinking_level(self, callback: Callable[[ThinkLevel], None]) -> Callable[[], None]:
        """Call ``callback(level)`` after each :meth:`set_thinking_level` (a view shows the
        level chosen from code at once), as event subscribers are called (on the session's
        loop; one that raises is logged); returns a function that stops it."""
        return _listen(self.state.level_listeners, callback)

    def preview(self) -> PromptPreview:
        """The system prompt and tool definitions the next model call will send — the
        same computation the loop uses, so preview and runtime cannot disagree."""
        return self.deps.toolbox.preview()

    # --- money ------------------------------------------------------------------------
    @property
    def cost_usd(self) -> float | None:
        """What this session has cost in USD — its own calls, summaries and sub-agents'
        — or ``None`` when a call's cost is unknown (a model with no price, a call that
        reported no usage)."""
        return self.state.spending.cost_usd(self.deps.crew.turn_usage, self.provider.price)

    @property
    def spent_usd(self) -> float | None:
        """All this session has paid in USD: :attr:`cost_usd` (its history's calls) and
        what it paid for the calls of turns it went back over (:meth:`retry`,
        :meth:`edit`, :meth:`rewind`), each call counted once — what counts against
        ``agent.budget_usd``. ``None`` when a call's cost is unknown. A fork starts with
        its copied history's cost and none of this session's turns gone back over."""
        return self.state.spending.spent_usd(self.deps.crew.turn_usage, self.provider.price)

    # --- events -----------------------------------------------------------------------
    def subscribe(self, callback: Callable[[Event], None]) -> Callable[[], None]:
        """Call ``callback(event)`` for every event, in order. Returns an unsubscribe
        function. A callback that raises is logged and never breaks the turn."""
        return self.state.events.subscribe(callback)

    def attach_approver(self) -> Callable[[], None]:
        """Declare that a UI will answer approval requests (the chat view does). While
        one is attached, calls needing approval wait for :meth:`approve`; otherwise
        :attr:`approval_policy` decides. Returns a function that detaches."""
        return self.state.approvals.attach()

    def pending_approvals(self) -> list[ApprovalRequestEvent]:
        """This session's approval requests still waiting for an answer, in the order
        asked (a sub-agent's are its own session's: see :attr:`subagents`)."""
        return self.state.approvals.pending()

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
            return (self.state.approvals.answer(call_id, decision, text=text)
                    or self.deps.crew.approve(call_id, decision, text=text))
        if not subagent:
            return self.state.approvals.answer(call_id, decision, text=text)
        return self.deps.crew.approve(call_id, decision, path=subagent, text=text)

    def stop_subagent(self, call_id: str) -> bool:
        """Stop one sub-agent — the ``id`` of its ``subagent_start`` (its ``delegate``
        call) — and let this session go on: its model reads the stop as the call's error
        result. A grandchild's id (at any depth) stops that grandchild, and its parent
        goes on. False when no such run is running."""
        return self.deps.crew.stop(call_id)

    # --- running turns ----------------------------------------------------------------
    def start(self, prompt: str, attachments: Sequence[Any] | None = None, *,
              mentions: Sequence[MentionPart] | None = None,
              page_parts: Sequence[MentionPart] = ()) -> asyncio.Task[Any]:
        """Run a turn in the background and return its task; the notebook cell returns
        at once, so Stop and other widget messages keep working. ``attachments`` and
        ``mentions`` as for :meth:`run`; a refused attachment or mention raises here,
        before any turn. Cell mentions (``@this``, ``@cells[…]``, ``@cell:…``) are read
        from the page, which takes an ``await``: :meth:`run` reads them, here
        ``page_parts`` gives them (``page_mentions.page_mention_parts``)."""
        runner = self._runner
        return runner.start(runner.ready(prompt, attachments, mentions, page_parts=page_parts))

    def cancel(self) -> bool:
        """Stop the turn in flight: streaming stops, running tools are abandoned, the
        partial answer is kept marked ``cancelled``. Returns False if nothing was running."""
        return self.state.cancel(self.deps.crew)

    def close(self) -> None:
        """Stop the turn in flight (as :meth:`cancel`) and end what the session keeps
        running outside this process — an outside agent's process and its children. The
        session stays usable: a next turn starts such an agent again."""
        self.cancel()
        outside = self.deps.outside
        if outside is not None:
            outside.close()

    async def run(self, prompt: str, attachments: Sequence[Any] | None = None, *,
                  mentions: Sequence[MentionPart] | None = None) -> Message | None:
        """Run one turn to its end and return the last assistant message. Provider
        failures are reported as an ``error`` event, not raised.

        ``attachments``: files for the model — paths, ``(bytes, media_type)``, PIL images
        or :class:`~neta_nb.runtime.mentions.attachments.Attachment` (see
        :mod:`neta_nb.runtime.mentions.attachments`). One the model cannot take raises
        :class:`AttachmentError` before anything is sent or stored; so does a ``@`` mention
        that does not resolve (``MentionError``, :mod:`neta_nb.runtime.mentions.mentions`).
        ``mentions``: blocks sent instead of resolving them (``()``: ``@`` is text).
        Cell mentions (``@this``, ``@cells[3:5]``, ``@cell:<id>``) are read from the
        notebook page now, as the editor holds them
        (:mod:`neta_nb.runtime.mentions.page_mentions`)."""
        runner = self._runner
        page_parts = (await page_mention_parts(prompt, self.notebook_page)
                      if mentions is None and "@" in prompt else [])
        prompt_message = runner.ready(prompt, attachments, mentions, page_parts=page_parts)
        turn = self.state.turn = Turn(task=asyncio.current_task())
        try:
            return await runner.run(prompt_message, turn)
        except asyncio.CancelledError as cancelled:
            # Cancelled from outside (a kernel interrupt of the awaiting cell): the turn
            # is closed already; a cell says so in one line, not from inside the library.
            raise shown_as_one_line(cancelled)  # noqa: B904 - the same exception, re-raised

    async def compact(self) -> CompactionEvent | None:
        """Summarise older turns now (between turns). Returns the ``compaction`` event, or
        ``None`` when there is nothing old enough to fold. Raises :class:`CompactionError`
        if the summarising call fails; the history is then unchanged."""
        return await self._runner.compact()

    # --- branches (see branches) ------------------------------------------------------
    @overload
    def fork(self, message_id: str, *, notebook: Literal[False] = False) -> AgentSession: ...
    @overload
    def fork(self, message_id: str, *, notebook: Literal[True]
             ) -> asyncio.Task[NotebookRewind[AgentSession]]: ...
    def fork(self, message_id: str, *, notebook: bool = False
             ) -> AgentSession | asyncio.Task[NotebookRewind[AgentSession]]:
        """A new session whose history is this one's up to and including ``message_id``
        — and the results of its tool calls, when it made some (or is one of those
        results): a call is never left without its result — with the plan, cards, token
        and cost figures and thinking level as they were there; stored as a branch of
        this one (the session list shows it so), which is left exactly as it was.
        Refused while a turn runs.

        ``notebook=True`` also puts back the notebook's cells the agent changed after
        that point (as :meth:`rewind` does), for the new branch to go on from; it returns
        a task whose :class:`NotebookRewind` holds the fork and what was restored."""
        branches.check_free(self.state, "fork")
        messages = branches.fork_end(self.state, message_id)
        if not notebook:
            return _branch(self, messages, branch_at=message_id)
        return start_restore(self.notebook_page,
                             changes_made(self.state.history.messages[len(messages):],
                                          subagent_histories(self)),
                             lambda: _branch(self, messages, branch_at=message_id),
                             lambda fork, outcome: _keep_restore(fork, outcome))

    @overload
    def rewind(self, message_id: str, *, notebook: Literal[False] = False
               ) -> AgentSession | None: ...
    @overload
    def rewind(self, message_id: str, *, notebook: Literal[True]
               ) -> asyncio.Task[NotebookRewind[AgentSession | None]]: ...
    def rewind(self, message_id: str, *, notebook: bool = False
               ) -> AgentSession | asyncio.Task[NotebookRewind[AgentSession | None]] | None:
        """Go back to just before ``message_id``: the history (what the model is sent
        next), plan, cards, token and cost figures and thinking level become what they
        were there. What it replaces is kept as a branch — a session holding the whole
        history as it was, listed as a branch of this one — which is returned (``None``
        without a store: nothing is kept). Refused while a turn runs.

        ``notebook=True`` also puts the notebook back: every cell the agent changed from
        ``message_id`` on gets its text of then again (cells it inserted are removed,
        those it deleted come back), as one step of the notebook's undo history; a cell
        the user changed since is left as it is and listed as a conflict. It needs the
        chat open on a JupyterLab or Notebook 7 page and returns a task (``await`` it in
        a cell) whose :class:`NotebookRewind` holds the kept branch and what was
        restored; the conversation is rewound at once."""
        state = self.state
        branches.check_free(state, "rewind")
        index = branches.message_index(state, message_id)
        if notebook:
            return start_restore(self.notebook_page,
                                 changes_made(state.history.messages[index:],
                                              subagent_histories(self)),
                                 lambda: _rewind_to(self, message_id, index),
                                 lambda _kept, outcome: _keep_restore(self, outcome))
        return _rewind_to(self, message_id, index)

    @property
    def notebook_restore(self) -> NotebookRestore | None:
        """What the last rewind or fork with ``notebook=True`` did to the notebook (the
        cells put back, those left as the user changed them), while no message has come
        since; kept in the store, so a resumed session has it too."""
        kept = self.state.notebook_restore
        if kept is None or kept.get("after_message") != len(self.state.history.messages):
            return None
        return NotebookRestore.from_json(kept)

    def retry(self, message_id: str | None = None) -> asyncio.Task[Any]:
        """Ask a prompt again: the last one, or the one ``message_id`` (an answer, a tool
        result…) answered. A rewind to it (what followed kept as a branch) and a turn with
        the same prompt and attachments. Returns the turn's task."""
        branches.check_free(self.state, "retry")
        return branches.ask_again(self.state, self._runner,
                                  branches.prompt_of(self.state, message_id), None, self.rewind)

    def edit(self, message_id: str, text: str) -> asyncio.Task[Any]:
        """Send ``text`` in place of the prompt ``message_id``: a rewind to it (what
        followed kept as a branch) and a turn with the new text and the prompt's
        attachments. Returns the turn's task."""
        state = self.state
        branches.check_free(state, "edit")
        prompt = state.history.messages[branches.message_index(state, message_id)]
        if prompt.role != "user":
            raise ValueError(f"message {message_id!r} is not a prompt: only what the user "
                             f"sent can be edited")
        return branches.ask_again(state, self._runner, prompt, text, self.rewind)

    def on_rewind(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after each rewind (a view redraws from the session);
        returns a function that stops it."""
        return _listen(self.state.rewind_listeners, callback)

    # --- the store --------------------------------------------------------------------
    def flush(self, timeout: float | None = None) -> bool:
        """Wait until everything the session has shown is in its store (a script about to
        exit calls this); ``False`` if ``timeout`` seconds ran out first. Writes are
        otherwise stored in the background, in order, and retried while the store is
        locked or full — ``run()`` returns once its turn is stored or the session has
        warned that the store is behind."""
        return self.state.saved.flush(timeout)

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
                f"{len(self.state.history.messages)} messages, {state})")


def _listen(listeners: list[Any], callback: Any) -> Callable[[], None]:
    """Add ``callback`` to ``listeners``; returns a function that takes it out again."""
    listeners.append(callback)
    return lambda: listeners.remove(callback) if callback in listeners else None


def _branch(session: AgentSession, messages: Sequence[Message], *,
            branch_at: str) -> AgentSession:
    """A new session of ``messages`` (copies), stored as a branch of ``session``."""
    branch = type(session)(session.agent, session.catalog, session.store,
                           think_level=branches.level_at(messages, session.state),
                           provider=session.provider, namespace=session.namespace,
                           working_dir=session.working_dir,
                           approval_policy=session.approval_policy,
                           branch_of=(session.id, branch_at))
    branches.copy_into(branch.state, session.state, branch.deps, messages)
    ours, theirs = branch.deps.outside, session.deps.outside
    if ours is not None and theirs is not None \
            and len(messages) == len(session.state.history.messages):
        # The whole conversation: an outside agent's session can be copied with it.
        ours.fork_from(theirs)
        branch.state.save_record(running=False, owner=None, owner_died=False)
    return branch


def _record_fields(session: AgentSession) -> dict[str, Any]:
    """The record fields only the session knows (see SessionPersistence.record)."""
    state = session.state
    todo = state.todo
    agent = session.agent.to_record(session.provider)
    outside = session.deps.outside
    if outside is not None:  # how to continue the outside agent's own session
        agent["outside"] = outside.stored()
    return {"agent": agent,
            "think_level": state.think_level,
            "todo_summary": todo.summary().model_dump() if todo.has_items() else None,
            "mcp_servers": session.catalog.mcp_server_specs(),
            "parent_id": session.parent_id, "parent_call_id": session.parent_call_id,
            "branch_of": session.branch_of, "branch_at": session.branch_at,
            "cost_usd": session.cost_usd,
            "rewound": dataclasses.asdict(state.spending.rewound),
            "notebook_restore": state.notebook_restore}


def _rewind_to(session: AgentSession, message_id: str, index: int) -> AgentSession | None:
    """:meth:`AgentSession.rewind`'s conversation half: what follows ``index`` kept as a
    branch (with a store), then dropped."""
    state = session.state
    kept = (_branch(session, state.history.messages, branch_at=message_id)
            if session.store is not None else None)
    state.notebook_restore = None  # an earlier restore's place is gone
    branches.rewind(state, session.deps, index)
    return kept


def _keep_restore(session: AgentSession, outcome: NotebookRestore) -> None:
    """Keep what a rewind or fork with the notebook did, in the session's record."""
    state = session.state
    state.notebook_restore = {**outcome.to_json(), "after_message": len(state.history.messages)}
    state.save_record()


def _turn_end(session: AgentSession) -> Awaitable[None] | None:
    """The end of the turn ``session`` runs now (``None``: none runs), to wait for."""
    return _idle(session) if session.running else None


async def _idle(session: AgentSession) -> None:
    ended = asyncio.Event()
    unsubscribe = session.subscribe(lambda event: ended.set() if event.type == "done" else None)
    try:
        while session.running:  # `done` comes once the session is idle
            ended.clear()
            await ended.wait()
    finally:
        unsubscribe()
