"""``ChatView``: a whole conversation with an agent, live (seed 002 §5.3, §6.3, §7, §9).

The view subscribes to an :class:`~neta_nb.runtime.session.AgentSession` and renders from its
events; the session knows nothing of widgets, so a session started from a cell with
``session.start(...)`` shows here the same way as one sent from the input box.

How state travels (DESIGN §5):

* **Traits** hold the conversation at turn boundaries — the last
:data:`~neta_nb.widgets.chat.state.WINDOW`
  drawn messages, the plan, token usage, the thinking level, pending approvals — so a
  saved notebook reopens showing it and a new view (a second output, a page reload)
  renders it at once.
* **Batches** carry everything in between: streamed text and thinking, cards as they
  change, the live response becoming a message. At most one custom message per frame
  interval, numbered; a view that sees a gap, or opens mid-turn, asks for ``sync`` and
  gets the current state including the partial response (kept here as chunks, joined only
  for that reply).
* **Requests** (``{kind, id}`` with a reply) are the actions: ``command`` (the session's
  ``send``/``stop``/``set_thinking_level``/``approve``), ``older`` (the previous page of
  history, loaded when the user scrolls up), ``switch_agent``, ``sync`` and ``full_text``
  (the whole of a text the state holds a preview of: state stays small, see
  ``neta_nb.widgets.state_bounds``).

:meth:`ChatView.show_stored` shows a stored session read-only instead — one whose turn
another kernel runs: its history as stored so far, no Send, Stop or approvals, reread on
``refresh`` and every :data:`READ_ONLY_REFRESH_INTERVAL`, and ``take_over`` resumes it here
once that turn has ended.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import logging
import weakref
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, cast

import traitlets

from ...events import (
    ApprovalRequestEvent,
    CompactionEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    SubagentEndEvent,
    SubagentEvent,
    SubagentStartEvent,
    ThinkingDeltaEvent,
    ThinkingDoneEvent,
    TodoUpdateEvent,
    TokenEvent,
    TokenUpdateEvent,
    TurnUsage,
    WarningEvent,
)
from ...labels import LABELS, t
from ...messages import Message, ToolExecution, new_id
from ...runtime.attachments import DEFAULT_ATTACHMENT_LIMITS, Attachment, guess_media_type
from ...runtime.session import Agent, AgentSession
from ...store.process_owner import SessionBusyError
from ...store.session_writes import store_warning
from ...store.sqlite import CompactionRecord, SessionStore
from ...thinking import get_model_thinking_capability
from ..base import BUFFERS_KEY, NetaWidget, RequestError, handles
from ..state_bounds import NOTE_CHARS, preview_args
from .state import (
    FLUSH_INTERVAL,
    WINDOW,
    AgentChoice,
    Approval,
    ChatItem,
    ChatSnapshot,
    CommandReply,
    CommandRequest,
    FullText,
    FullTextRequest,
    LiveResponse,
    NoReply,
    OlderPage,
    OlderRequest,
    OpBatcher,
    SubagentPart,
    SwitchAgentReply,
    SwitchAgentRequest,
    ViewRequest,
    full_text,
    keep_streamed,
    render_marker,
    render_message,
    render_window,
    renderable,
    stored_run_part,
)
from .static import static_html, static_summary, static_text
from .stored_session import StoredSession, StoredSessionFollower
from .subagent_transcript import StoredSubagents, SubagentTranscript, unwrap
from .view_presence import ViewPresence

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ChatView", "live_session"]

log = logging.getLogger(__name__)

# Sessions bound to a chat view in this kernel, by id. The sidebar reopens these objects
# instead of resuming them from the store: resuming a session whose turn is running here
# would treat that turn as killed.
_bound_sessions: weakref.WeakValueDictionary[str, AgentSession] = weakref.WeakValueDictionary()


def live_session(session_id: str, store: SessionStore | None = None) -> AgentSession | None:
    """The session with this id if a chat view in this kernel has it open (of ``store``,
    when given: two stores may hold sessions of the same id)."""
    session = _bound_sessions.get(session_id)
    if session is None or store is None:
        return session
    mine = session.store
    return session if mine is not None and Path(mine.path) == Path(store.path) else None


READ_ONLY_REFRESH_INTERVAL = 2.0
"""Seconds between two looks at the store while a session of another kernel is shown
read-only (two small queries; the full read only when something changed)."""

ResumeStored = Callable[[str], AgentSession]


def _note(text: str) -> str:
    """A one-line notice as state holds it (a provider may answer with a whole page)."""
    return text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS] + "…"


def _without_answered(approvals: list[dict[str, Any]],
                      command: Mapping[str, Any]) -> list[dict[str, Any]]:
    """The approval cards left once ``command`` answered one. Two children's calls can
    share an id, so the card that goes is the one at the answer's ``subagent`` path (a
    card of the session itself has none) — or, for an answer without a path, the first
    under that id, as the session answers it."""
    path = command.get("subagent")
    for index, approval in enumerate(approvals):
        if approval["id"] == command.get("id") and (
                path is None or list(approval.get("path") or []) == list(path)):
            return approvals[:index] + approvals[index + 1:]
    return approvals


def _levels(session: AgentSession) -> list[str]:
    provider = session.provider
    return list(get_model_thinking_capability(provider.supplier, provider.model).levels)


class ChatView(NetaWidget):
    """``ChatView(session)``: messages, plan, cards, the streaming answer with its thinking,
    and an input bar with Send/Stop, agent and thinking-level selectors and token stats.

    ``agents`` lists other agents the selector offers; choosing one starts a new session
    with it (same catalog and store). Rebind with ``chat.session = other`` or
    :meth:`bind`.
    """

    _component = traitlets.Unicode("chat-view").tag(sync=True)
    session_id = traitlets.Unicode("", help="Id of the bound session.").tag(sync=True)
    agent = traitlets.Dict(help="{name, model} of the bound session's agent.").tag(sync=True)
    agents = traitlets.List(traitlets.Dict(), help="Agents the selector offers.").tag(sync=True)
    messages = traitlets.List(traitlets.Dict(),
                              help="The latest drawn messages, as of the last turn boundary."
                              ).tag(sync=True)
    has_older = traitlets.Bool(False, help="Older messages exist before `messages`.").tag(
        sync=True)
    todos = traitlets.List(traitlets.Dict()).tag(sync=True)
    current = traitlets.Dict(help="token_update.current of the latest turn").tag(sync=True)
    context = traitlets.Dict(help="token_update.context").tag(sync=True)
    running = traitlets.Bool(False).tag(sync=True)
    think_level = traitlets.Unicode("").tag(sync=True)
    levels = traitlets.List(traitlets.Unicode()).tag(sync=True)
    approvals = traitlets.List(traitlets.Dict(),
                               help="Pending approval requests: {id, name, args}.").tag(sync=True)
    notice = traitlets.Unicode("", help="An error not tied to a message.").tag(sync=True)
    store_warning = traitlets.Unicode(
        "", help="Why what is shown is not saved yet (the store is behind); empty when it is."
    ).tag(sync=True)
    height = traitlets.Unicode("640px", help="CSS height of the view.").tag(sync=True)
    read_only = traitlets.Dict(
        help="{owner, busy} while a stored session is shown read-only (see show_stored); "
             "empty otherwise.").tag(sync=True)
    attachment_limits = traitlets.Dict(
        dataclasses.asdict(DEFAULT_ATTACHMENT_LIMITS),
        help="What the input bar lets a prompt carry: max_file_bytes, max_total_bytes, "
             "max_count (the kernel checks them again).").tag(sync=True)
    _seq = traitlets.Int(0, help="Number of the last batch reflected in the traits.").tag(
        sync=True)

    def __init__(self, session: AgentSession | None = None, *,
                 agents: Sequence[Agent] = (), window: int = WINDOW,
                 flush_interval: float = FLUSH_INTERVAL, **kwargs: Any) -> None:
        # Beside a sidebar in an HBox the view takes the remaining width, and a long line
        # never makes it grow past that.
        kwargs.setdefault("layout", {"flex": "1 1 auto", "min_width": "0"})
        self._quiet_window = False
        super().__init__(**kwargs)
        self._window = window
        self._other_agents = list(agents)
        self._batcher = OpBatcher(self.send, self._item, nested_source=self._nested_item,
                                  interval=flush_interval)
        # Sub-agents this view followed live, by the parent's `delegate` call id, and the
        # message each call is in; finished children of the history come from the store.
        self._subagents: dict[str, SubagentTranscript] = {}
        self._subagent_message: dict[str, str] = {}
        # The same transcripts by the child session they show: call ids come from the
        # model and repeat across turns (a server that sends none: `call_0` every turn),
        # so a card finds its own child by the session its call's record names.
        self._followed: dict[str, SubagentTranscript] = {}
        self._stored_subagents = StoredSubagents(None)
        self._session: AgentSession | None = None
        self._unsubscribe: Callable[[], None] | None = None
        self._presence = ViewPresence(lambda: self._kernel_loop)
        self._live: LiveResponse | None = None
        self._in_turn = False
        self._known = 0  # messages of the session accounted for
        self._last_assistant: str | None = None
        self._index: dict[str, int] = {}  # message id -> index, for this turn's messages
        # Thinking and text the views streamed for this turn's messages, by message id.
        self._streamed: dict[str, tuple[str, str]] = {}
        self._tasks: set[asyncio.Task[Any]] = set()
        # A session of another kernel shown read-only (see show_stored), how to resume it
        # once free, and the last live session (its agent, catalog and store start a new
        # chat from the read-only view).
        self._follower: StoredSessionFollower | None = None
        self._resume_stored: ResumeStored | None = None
        self._previous: AgentSession | None = None
        if session is not None:
            self.bind(session)

    # --- binding ----------------------------------------------------------------------
    @property
    def session(self) -> AgentSession | None:
        return self._session

    @session.setter
    def session(self, session: AgentSession) -> None:
        self.bind(session)

    def bind(self, session: AgentSession) -> None:
        """Show ``session`` (replacing the one shown) and follow its events."""
        self.unbind()
        self._leave_stored()
        self._session = session
        _bound_sessions[session.id] = session
        messages = session.messages
        self._known = len(messages)
        self._last_assistant = next((m.id for m in reversed(messages)
                                     if m.role == "assistant"), None)
        self._in_turn = session.running
        self._index = {}
        # The views draw this session from the state: nothing of it is "streamed here"
        # (an answer streamed before a switch away and back is drawn from its preview).
        self._streamed = {}
        self._batcher.forget_items()
        self._subagents, self._subagent_message, self._followed = {}, {}, {}
        self._stored_subagents = StoredSubagents(session.store, live=self._live_child_messages)
        items, has_older = render_window(messages, session.compactions, limit=self._window,
                                         subagents=self._part_whole)
        for item in items:
            if item["id"] == self._last_assistant:
                self._batcher.remember_item(item)  # drawn from the state: sent
        context = session.context.model_dump()
        with self.hold_sync():
            self.session_id = session.id
            self.agent = {"name": session.agent.name, "model": session.provider.model_id}
            self.agents = cast("list[dict[str, Any]]", self._agent_choices(session))
            self.messages = cast("list[dict[str, Any]]", items)
            self.has_older = has_older
            self.todos = [item.model_dump() for item in session.todo.read()]
            self.current = TurnUsage().model_dump()
            self.context = context
            self.running = session.running
            self.levels = _levels(session)
            self.think_level = session.think_level
            self.approvals = []
            self.notice = ""
            self.read_only = {}
            failure = session.store_failure
            self.store_warning = ("" if failure is None
                                  else self._warning_text(store_warning(failure)))
            self._seq = self._batcher.seq
        partial = session.streaming_message if session.running else None
        if partial is not None and partial.parts:
            # Bound mid-answer (a second view, a sidebar click): start from what already
            # streamed; the events that follow continue it.
            self._live = LiveResponse(id=new_id("live_"),
                                      thinking=[partial.thinking] if partial.thinking else [],
                                      text=[partial.text] if partial.text else [],
                                      thinking_open=session.thinking_streaming)
        self._unsubscribe = session.subscribe(self._on_event)
        self._presence.bind(session)  # the approver while a view of this widget is shown
        self._static_form.refresh()

    def unbind(self) -> None:
        """Stop following the bound session (it keeps running)."""
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None
        self._presence.unbind()
        self._batcher.cancel()
        self._live = None
        if self._session is not None:
            self._previous = self._session
        self._session = None

    # --- a stored session, read-only ---------------------------------------------------
    @property
    def stored(self) -> StoredSession | None:
        """The stored session shown read-only, if any (see :meth:`show_stored`)."""
        return self._follower.stored if self._follower is not None else None

    @property
    def previous_session(self) -> AgentSession | None:
        """The live session shown before the current one (or before a read-only view)."""
        return self._previous

    def show_stored(self, stored: StoredSession, *,
                    resume: ResumeStored | None = None) -> None:
        """Show ``stored`` read-only — a session whose turn another kernel runs — without
        taking it over. ``resume(session_id)`` opens it here once that turn has ended (the
        ``take_over`` request); by default ``AgentSession.resume`` with the last live
        session's catalog."""
        if self._session is not None and self._session.running:
            raise RequestError("stop the running turn before switching sessions")
        self.unbind()
        self._leave_stored()
        self._resume_stored = resume
        self._batcher.forget_items()
        self._subagents, self._subagent_message, self._followed = {}, {}, {}
        self._stored_subagents = StoredSubagents(stored.store)
        self._show_stored_state(stored)
        self._follower = StoredSessionFollower(stored, self._show_stored_state,
                                               interval=READ_ONLY_REFRESH_INTERVAL)

    def _show_stored_state(self, stored: StoredSession) -> None:
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self._part_whole)
        with self.hold_sync():
            self.session_id = stored.id
            self.agent = stored.agent
            self.agents = [stored.agent]
            self.messages = cast("list[dict[str, Any]]", items)
            self.has_older = has_older
            self.todos = stored.todos()
            self.current = TurnUsage().model_dump()
            self.context = {}
            self.running = False
            self.levels = []
            self.think_level = stored.record.think_level or ""
            self.approvals = []
            self.notice = ""
            self.store_warning = ""  # nothing of it is written from here
            self.read_only = {"owner": stored.owner, "busy": stored.busy}
            self._seq = self._batcher.seq
        self._static_form.refresh()

    def refresh(self) -> bool:
        """Read the session shown read-only again; True when something changed."""
        if self._follower is None:
            return False
        try:
            return self._follower.refresh()
        except KeyError as exc:
            raise RequestError(str(exc)) from exc

    def _leave_stored(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None
        self._resume_stored = None

    def take_over(self) -> AgentSession:
        """Resume the session shown read-only here, now that its turn has ended
        elsewhere (``SessionBusyError`` if it still runs)."""
        stored = self.stored
        if stored is None:
            raise RequestError("this chat view is not showing a read-only session")
        if self._resume_stored is not None:
            session = self._resume_stored(stored.id)
        else:
            catalog = self._previous.catalog if self._previous is not None else None
            session = AgentSession.resume(stored.id, store=stored.store, catalog=catalog)
        self.bind(session)
        return session

    def new_chat(self, agent: Agent | None = None) -> AgentSession:
        """Start a new, empty session with ``agent`` (default: the current one), with the
        current session's catalog and store, and show it."""
        current = self._session or self._previous
        if current is None:
            raise RequestError("no session is bound to this chat view")
        session = AgentSession(agent or current.agent, current.catalog, current.store)
        self.bind(session)
        return session

    def close(self) -> None:
        self.unbind()
        self._leave_stored()
        super().close()

    def _require_session(self) -> AgentSession:
        if self._session is None:
            stored = self.stored
            if stored is not None:
                raise RequestError("this chat is read-only: its turn runs in another kernel"
                                   + (f" ({stored.owner})" if stored.owner else ""))
            raise RequestError("no session is bound to this chat view")
        return self._session

    def _history(self) -> tuple[Sequence[Message], Sequence[CompactionRecord]]:
        """The messages and compaction markers shown: the live session's or the stored."""
        stored = self.stored
        if stored is not None:
            return stored.messages, stored.compactions
        session = self._require_session()
        return session.messages, session.compactions

    def _agent_choices(self, session: AgentSession) -> list[AgentChoice]:
        choices: list[AgentChoice] = [{"name": session.agent.name,
                                       "model": session.provider.model_id}]
        for agent in self._other_agents:
            if agent.name not in {c["name"] for c in choices}:
                model = agent.model if isinstance(agent.model, str) else (
                    agent.model.model_id if agent.model is not None else "")
                choices.append({"name": agent.name, "model": model})
        return choices

    # --- events -----------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        # Deltas are most events: keep their path short (no history access; kinds told by
        # type, see events). A child's delta is second: as common as the view's own while
        # sub-agents stream.
        if type(event) is TokenEvent:
            live = self._live_response()
            if live.thinking_open:
                live.thinking_open = False
                self._batcher.op("thinking_done")
            live.text.append(event.text)
            self._batcher.text("text", event.text)
        elif type(event) is SubagentEvent:
            # A child's delta ends in stream(). No transcript: bound after the child
            # started, its card draws the stored child instead.
            transcript = self._subagents.get(event.id)
            if transcript is not None and not transcript.stream(event.event, self._batcher):
                self._on_subagent_event(transcript, event)
        elif type(event) is ThinkingDeltaEvent:
            live = self._live_response()
            live.thinking_open = True
            live.thinking.append(event.text)
            self._batcher.text("thinking", event.text)
        elif type(event) is ThinkingDoneEvent:
            if self._live is not None and self._live.thinking_open:
                self._live.thinking_open = False
                self._batcher.op("thinking_done")
        elif type(event) is ProgressEvent:
            if self._last_assistant is not None:
                self._batcher.upsert(self._last_assistant)
        elif type(event) is WarningEvent:
            # Not a turn boundary: the store can fall behind, or catch up, between turns.
            self.store_warning = "" if event.cleared else self._warning_text(event)
        else:
            self._on_boundary(event)

    # --- sub-agents -----------------------------------------------------------------------
    def _on_subagent_event(self, transcript: SubagentTranscript, event: SubagentEvent) -> None:
        """A child's own event other than a delta (a grandchild's wrapped twice): into
        its nested card (``transcript``), whose status line may change."""
        ids, innermost = unwrap(event)
        if type(innermost) is ApprovalRequestEvent:
            child = transcript.find(ids)
            self._batcher.flush()  # the card that asks goes first
            approval: dict[str, Any] = {
                "id": innermost.id, "name": innermost.name, "args": dict(innermost.args),
                "agent": child.agent if child is not None else transcript.agent,
                "path": ids}
            preview_args(approval)
            self.approvals = [*self.approvals, approval]
        transcript.apply(event.event, self._batcher)
        self._upsert_subagent_card(event.id)

    def _on_subagent_start(self, event: SubagentStartEvent) -> None:
        transcript = self._subagents[event.id] = SubagentTranscript(event.id, event.agent,
                                                                    event.task)
        session = self._session
        child = session.subagents.get(event.id) if session is not None else None
        if child is not None:
            self._followed[child.id] = transcript
        owner = None
        if session is not None:
            # The parent's `delegate` call came just before: its message is the latest.
            owner = next((m.id for m in reversed(session.messages)
                          if m.role == "assistant" and any(c.id == event.id
                                                           for c in m.tool_calls)), None)
        self._subagent_message[event.id] = owner or self._last_assistant or ""
        self._upsert_subagent_card(event.id)

    def _on_subagent_end(self, event: SubagentEndEvent) -> None:
        transcript = self._subagents.get(event.id)
        if transcript is not None:
            transcript.finish(event, self._batcher)
        # Its questions can no longer be answered.
        remaining = [a for a in self.approvals if (a.get("path") or [None])[0] != event.id]
        if len(remaining) != len(self.approvals):
            self.approvals = remaining
        self._upsert_subagent_card(event.id)

    def _upsert_subagent_card(self, run_id: str) -> None:
        message_id = self._subagent_message.get(run_id)
        if message_id:
            if message_id not in self._index:
                self._reconcile()
            self._batcher.upsert(message_id)

    def _live_child_messages(self, session_id: str) -> list[Message] | None:
        """The messages of the child session ``session_id`` if the shown session holds it
        (the children of its current or latest turn, at any depth)."""
        session = self._session
        stack = list(session.subagents.values()) if session is not None else []
        while stack:
            child = stack.pop()
            if child.id == session_id:
                return child.messages
            stack.extend(child.subagents.values())
        return None

    def _running_subagent(self, path: Sequence[str]) -> SubagentTranscript | None:
        """The live run a per-child Stop names: by its id, at any depth."""
        for transcript in self._subagents.values():
            stack = [transcript]
            while stack:
                run = stack.pop()
                if run.id == path[-1] and run.status == "running":
                    return run
                stack.extend(run.children.values())
        return None

    def _transcript_of(self, execution: ToolExecution) -> SubagentTranscript | None:
        """The live transcript of this call's child, if this view followed it."""
        run = execution.subagent
        if run is not None:
            return self._followed.get(run.session_id)
        return self._subagents.get(execution.id)  # its record is not written yet

    def _part_streamed(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card in a streamed update: its transcript streams on its own."""
        transcript = self._transcript_of(execution)
        if transcript is not None:
            return transcript.part(whole=False)
        return self._stored_part(execution)

    def _part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card with its transcript (traits, snapshots, older pages)."""
        transcript = self._transcript_of(execution)
        if transcript is not None:
            return transcript.part(whole=True)
        return self._stored_part(execution)

    def _stored_part(self, execution: ToolExecution) -> SubagentPart | None:
        if execution.subagent is not None:
            return self._stored_subagents.part(execution)
        return stored_run_part(execution)

    def _nested_item(self, path: tuple[str, ...], item_id: str) -> ChatItem | None:
        top = self._subagents.get(path[0])
        transcript = top.find(path) if top is not None else None
        return transcript.item(item_id) if transcript is not None else None

    def _warning_text(self, event: WarningEvent) -> str:
        if event.code is not None and event.code in LABELS["en"]:
            return t(event.code, self.lang, **event.params)
        return event.message

    def _live_response(self) -> LiveResponse:
        if not self._in_turn:
            self._begin_turn()
        if self._live is None:
            self._live = LiveResponse(id=new_id("live_"))
            self._batcher.op("live", id=self._live.id)
        return self._live

    def _begin_turn(self) -> None:
        # Events arrive on the session's loop: the one requests must be handled on.
        self.remember_kernel_loop()
        self._in_turn = True
        self._index = {}
        # The last answer is redrawn first (its cards may change): the views hold its text
        # and its last item, so it is sent again only if it changed.
        last = self._last_assistant
        self._streamed = ({last: self._streamed[last]} if last in self._streamed else {})
        self._batcher.forget_items(keep=last)
        with self.hold_sync():
            self.running = True
            self.notice = ""
            self.current = TurnUsage().model_dump()
        self._reconcile()

    def _reconcile(self) -> None:
        """Account for messages the session appended since the last look, and redraw the
        latest assistant message (its cards change as tools run)."""
        session = self._session
        if session is None:
            return
        messages = session.messages
        ended = False
        for index in range(self._known, len(messages)):
            message = messages[index]
            self._index[message.id] = index
            if message.role == "assistant":
                self._last_assistant = message.id
                if self._live is not None:
                    ended = True
                    # The streamed response is now a message: the view keeps its DOM,
                    # and the text it streamed (see _item).
                    self._streamed[message.id] = ("".join(self._live.thinking),
                                                  "".join(self._live.text))
                    self._batcher.op("end", id=message.id)
                    self._live = None
            if renderable(message):
                self._batcher.upsert(message.id)
        self._known = len(messages)
        if self._last_assistant is not None:
            if self._last_assistant not in self._index:
                for index in range(len(messages) - 1, -1, -1):
                    if messages[index].id == self._last_assistant:
                        self._index[self._last_assistant] = index
                        break
            self._batcher.upsert(self._last_assistant)
        if ended:
            # A response's end goes out at once: its last words are not held back a batch
            # interval (the view draws the final text whole when it gets the end).
            self._batcher.flush()

    def _on_boundary(self, event: Event) -> None:
        session = self._require_session()
        # Only a running turn makes the view busy: `compact()` between turns emits
        # `compaction` and `token_update` too, and no `done` follows them.
        if not self._in_turn and session.running and not isinstance(event, DoneEvent):
            self._begin_turn()
        if isinstance(event, TodoUpdateEvent):
            self.todos = list(event.todos)
            return
        self._reconcile()
        if isinstance(event, SubagentStartEvent):
            self._on_subagent_start(event)
        elif isinstance(event, SubagentEndEvent):
            self._on_subagent_end(event)
        if isinstance(event, TokenUpdateEvent):
            with self.hold_sync():
                self.current = event.current.model_dump()
                self.context = event.context.model_dump()
        elif isinstance(event, ApprovalRequestEvent):
            self._batcher.flush()  # the card that asks goes first
            approval: dict[str, Any] = {"id": event.id, "name": event.name,
                                        "args": dict(event.args)}
            preview_args(approval)  # the call's card has the full arguments on demand
            self.approvals = [*self.approvals, approval]
        elif isinstance(event, CompactionEvent):
            self._batcher.upsert(f"compaction-{len(session.compactions) - 1}")
            if not self._in_turn:
                self._publish_window(session)  # a reload shows the marker too
        elif isinstance(event, ErrorEvent):
            last = self._item(self._last_assistant) if self._last_assistant else None
            if last is None or last["error"] != _note(event.message):
                self.notice = _note(event.message)
        elif isinstance(event, DoneEvent):
            self._end_turn()
        if self._in_turn and not session.running and not isinstance(event, DoneEvent):
            # Whatever ended the busy state without a `done` (there should be none),
            # the view does not stay "Working…" after it.
            self._end_turn()

    def _end_turn(self) -> None:
        if self._live is not None:
            self._batcher.op("end", id=None)
            self._live = None
        self._in_turn = False
        session = self._require_session()
        self._publish_window(session, turn_ended=True)

    def _publish_window(self, session: AgentSession, *, turn_ended: bool = False) -> None:
        """Send the drawn window (the views set their ``messages`` from its ids) and
        reflect it in the traits; at the end of a turn, the turn's state too."""
        items, has_older = render_window(session.messages, session.compactions,
                                         limit=self._window, subagents=self._part_whole)
        # The views hold every item of the window already (streamed): they set the
        # `messages` trait on their side from this list of ids, so the text of a long
        # answer crosses the wire once, not twice, and a notebook saved from that page
        # still has it. With no view open (nbconvert --execute, a cell whose output was
        # cleared, a page not showing it) nobody would set it: the trait is sent, so the
        # widget state any frontend records holds the conversation.
        self._batcher.op("window", ids=[item["id"] for item in items], has_older=has_older)
        self._batcher.flush()
        with self.hold_sync():
            self._quiet_window = self._presence.views > 0
            try:
                self.messages = cast("list[dict[str, Any]]", items)
                self.has_older = has_older
            finally:
                self._quiet_window = False
            if turn_ended:
                self.running = False
                self.approvals = []
                self.think_level = session.think_level
            self.context = session.context.model_dump()
            self._seq = self._batcher.seq
        if turn_ended:
            # The saved notebook's static form shows the turn as it ended.
            self._static_form.refresh_now()

    def _echo_wanted(self) -> bool:
        return self._presence.views == 0

    def _should_send_property(self, key: str, value: Any) -> bool:
        if self._quiet_window and key in ("messages", "has_older"):
            return False
        return bool(super()._should_send_property(key, value))

    def _item(self, item_id: str) -> ChatItem | None:
        session = self._session
        if session is None:
            return None
        if item_id.startswith("compaction-"):
            number = int(item_id.removeprefix("compaction-"))
            records = session.compactions
            return render_marker(number, records[number]) if number < len(records) else None
        index = self._index.get(item_id)
        messages = session.messages
        if index is None or index >= len(messages) or messages[index].id != item_id:
            return None
        message = messages[index]
        return keep_streamed(render_message(message, index, self._part_streamed), message,
                             self._streamed.get(item_id))

    # --- requests from views ----------------------------------------------------------
    @handles("sync")
    def _sync(self, _request: Mapping[str, object]) -> ChatSnapshot:
        """Everything a view needs to draw the present: sent after any pending batch, with
        the number of the last batch it includes."""
        self._batcher.flush()
        stored = self.stored
        if stored is not None:
            return self._stored_snapshot(stored)
        session = self._require_session()
        items, has_older = render_window(session.messages, session.compactions,
                                         limit=self._window, subagents=self._part_whole)
        return {
            "seq": self._batcher.seq,
            "session_id": session.id,
            "messages": items,
            "has_older": has_older,
            "live": self._live.snapshot() if self._live is not None else None,
            "running": self.running,
            "todos": self.todos,
            "current": self.current,
            "context": self.context,
            "approvals": cast("list[Approval]", self.approvals),
            "think_level": self.think_level,
            "notice": self.notice,
        }

    def _stored_snapshot(self, stored: StoredSession) -> ChatSnapshot:
        items, has_older = render_window(stored.messages, stored.compactions,
                                         limit=self._window, subagents=self._part_whole)
        return {"seq": self._batcher.seq, "session_id": stored.id, "messages": items,
                "has_older": has_older, "live": None, "running": False,
                "todos": self.todos, "current": self.current, "context": self.context,
                "approvals": [], "think_level": self.think_level, "notice": self.notice}

    @handles("full_text")
    def _full_text(self, request: FullTextRequest) -> FullText:
        """The whole of a text the state holds a preview of."""
        message_id, field_name = request.get("message_id"), request.get("field")
        card_id = request.get("card_id")
        if not isinstance(message_id, str) or not isinstance(field_name, str) or not (
                card_id is None or isinstance(card_id, str)):
            raise RequestError("full_text needs 'message_id' and 'field' strings "
                               "(and 'card_id' for a card)")
        path = request.get("path")
        if path is not None and not (isinstance(path, list) and path
                                     and all(isinstance(p, str) for p in path)):
            raise RequestError("full_text's 'path' must be a list of sub-agent run ids")
        messages, _ = self._history()
        try:
            if path:
                top = self._subagents.get(path[0])
                live = top.find(path) if top is not None else None
                messages = (live.messages if live is not None
                            else self._stored_subagents.find_messages(messages, path))
            return {"text": full_text(messages, message_id, field_name, card_id)}
        except LookupError as exc:
            raise RequestError(str(exc.args[0])) from exc

    @handles("refresh")
    def _refresh(self, _request: Mapping[str, object]) -> NoReply:
        self.refresh()
        return {}

    @handles("take_over")
    def _take_over(self, _request: Mapping[str, object]) -> SwitchAgentReply:
        try:
            session = self.take_over()
        except (KeyError, SessionBusyError) as exc:
            with contextlib.suppress(KeyError):
                self.refresh()  # show why: the turn is still running there
            raise RequestError(str(exc)) from exc
        return {"session_id": session.id}

    @handles("view_opened")
    def _view_opened(self, request: ViewRequest) -> NoReply:
        self._presence.opened(_view_id(request))
        return {}

    @handles("view_closed")
    def _view_closed(self, request: ViewRequest) -> NoReply:
        self._presence.closed(_view_id(request))
        return {}

    @handles("older")
    def _older(self, request: OlderRequest) -> OlderPage:
        """The page of drawn messages before message index ``before``."""
        messages, compactions = self._history()
        before = request.get("before")
        if not isinstance(before, int) or isinstance(before, bool):
            raise RequestError("older needs an integer 'before'")
        items, has_older = render_window(messages, compactions, before=before,
                                         limit=self._window, subagents=self._part_whole)
        return {"session_id": self.session_id, "messages": items, "has_older": has_older}

    @handles("command")
    def _command(self, request: CommandRequest) -> CommandReply:
        session = self._require_session()
        command = request.get("command")
        if not isinstance(command, Mapping):
            raise RequestError("command needs a 'command' object")
        kind = command.get("type")
        if kind == "send":
            text = str(command.get("text", "")).strip()
            attachments = _sent_files(command, cast(Mapping[str, Any], request).get(BUFFERS_KEY))
            if not text and not attachments:
                raise RequestError("nothing to send")
            if session.running:
                raise RequestError("a turn is already running; stop it first")
            try:
                task = session.handle_command({"type": "send", "text": text},
                                              attachments=attachments)
            except Exception as exc:
                raise RequestError(str(exc)) from exc
            if task is not None:
                self._track(task)
                # The task's first step appends the prompt; show it before the model's
                # first event (which a real model may take seconds to send).
                asyncio.get_running_loop().call_soon(self._show_started_turn, session)
            return {"running": True}
        if kind == "stop" and command.get("subagent") is not None:
            run_id = command.get("subagent")
            if not isinstance(run_id, str) or self._running_subagent([run_id]) is None:
                raise RequestError(f"no sub-agent {run_id!r} is running in this chat")
        try:
            session.handle_command(dict(command))
        except (KeyError, ValueError) as exc:
            raise RequestError(str(exc)) from exc
        if kind == "set_thinking_level":
            self.think_level = session.think_level
        elif kind == "approve":
            self.approvals = _without_answered(self.approvals, command)
        return {"think_level": session.think_level, "running": session.running}

    def _show_started_turn(self, session: AgentSession) -> None:
        if session is self._session and session.running and not self._in_turn:
            self._begin_turn()

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)

        def finished(done: asyncio.Task[Any]) -> None:
            self._tasks.discard(done)
            if not done.cancelled() and done.exception() is not None:
                # The session reports provider failures as events; anything else would
                # vanish with the task, so it is shown where the user looks.
                log.error("chat turn failed", exc_info=done.exception())
                self.notice = _note(f"{type(done.exception()).__name__}: {done.exception()}")

        task.add_done_callback(finished)

    @handles("switch_agent")
    def _switch_agent(self, request: SwitchAgentRequest) -> SwitchAgentReply:
        name = request.get("name")
        current = self._require_session()
        if name == current.agent.name:
            return {"session_id": current.id}
        agent = next((a for a in self._other_agents if a.name == name), None)
        if agent is None:
            raise RequestError(f"no agent named {name!r}")
        return {"session_id": self.new_chat(agent).id}

    # --- representation ---------------------------------------------------------------
    def _view_text(self) -> str:
        # What to do, not a status line of a run long gone: the form below shows the run.
        return self._not_running_text()

    def __repr__(self) -> str:
        state = ("read-only" if self._follower is not None
                 else "running" if self.running else "idle")
        agent = self.agent.get("name", "")
        return f"ChatView({agent!r}, {len(self.messages)} messages shown, {state})"

    def _fallback_text(self) -> str:
        return static_text(self._agent_name(), self.messages, self.lang) or repr(self)

    # A chat with nothing drawn yet shows, where a viewer without the live widget draws it
    # (a notebook opened for the first time, GitHub, nbconvert), how to get the chat
    # instead of a status line that stopped being true once the cell ran.
    def _fallback_html(self) -> str:
        return static_html(self._agent_name(), self.messages, empty=self._not_running_text(),
                           todos=self.todos, current=self.current, context=self.context,
                           lang=self.lang)

    def _static_parts(self) -> tuple[str, str]:
        plain = (static_summary(self._agent_name(), self.messages, self.lang)
                 if self.messages else self._not_running_text())
        return self._fallback_html(), plain

    def _not_running_text(self) -> str:
        return t("chat_not_running", self.lang, agent=self._agent_name())

    def _agent_name(self) -> str:
        return str(self.agent.get("name", "assistant"))


def _view_id(request: ViewRequest) -> str:
    view_id = request.get("view_id")
    if not isinstance(view_id, str) or not view_id:
        raise RequestError("view_opened and view_closed need a 'view_id' string")
    return view_id


def _sent_files(command: Mapping[str, Any], buffers: Any) -> list[Attachment]:
    """The files a ``send`` carries: ``attachments`` describes the binary buffers, one
    each, in order. A file the browser could not type is typed by its name."""
    described = command.get("attachments") or []
    received = list(buffers or [])
    if not isinstance(described, list) or len(described) != len(received):
        raise RequestError(f"{len(described) if isinstance(described, list) else '?'} "
                           f"attachments described, {len(received)} received")
    files = []
    for meta, data in zip(described, received, strict=True):
        meta = meta if isinstance(meta, Mapping) else {}
        name = str(meta.get("name") or "attachment")
        media_type = str(meta.get("media_type") or "")
        if not media_type or media_type == "application/octet-stream":
            media_type = guess_media_type(name)
        files.append(Attachment(data=bytes(data), media_type=media_type, name=name))
    return files
