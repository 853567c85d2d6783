"""``LiveChat``: the chat view's adapter to a live session — its events go into a
:class:`~neta_nb.runtime.projection.ConversationProjection`, whose changes go to the
batcher and on to the views; the traits follow the projection at turn boundaries.

How state travels (DESIGN §5):

* **Traits** hold the conversation at turn boundaries — the last
  :data:`~neta_nb.widgets.chat.render.WINDOW` drawn messages, the plan, token usage, the
  thinking level, pending approvals — so a saved notebook reopens showing it and a new
  view (a second output, a page reload) renders it at once.
* **Batches** carry everything in between: streamed text and thinking, cards as they
  change, the live response becoming a message. At most one custom message per frame
  interval, numbered; a view that sees a gap, or opens mid-turn, asks for ``sync`` and
  gets the current state including the partial response.

The adapter reads no history of the session: what it draws is the projection's, built
from the session once at :meth:`LiveChat.bind` and followed with its events from then on.
"""

from __future__ import annotations

import dataclasses
import uuid
import weakref
from collections.abc import Callable, Sequence
from functools import partial
from typing import Any, Literal, cast

import traitlets

from ...events import (
    ApprovalRequestEvent,
    CompactionEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    SubagentEndEvent,
    SubagentEvent,
    TodoUpdateEvent,
    TokenUpdateEvent,
    TurnStartEvent,
    TurnUsage,
    WarningEvent,
)
from ...labels import LABELS, t
from ...messages import ToolExecution
from ...runtime.attachments import DEFAULT_ATTACHMENT_LIMITS
from ...runtime.projection import ConversationProjection, PendingApproval
from ...runtime.session import Agent, AgentSession
from ...runtime.subagents import subagent_history
from ...store.session_store import SessionStore
from ...store.session_writes import store_warning
from ...thinking import get_model_thinking_capability
from ...tools.notebook.kernel import watch_cells
from ..base import NetaWidget
from ..state_bounds import NOTE_CHARS, preview_args
from ..streaming import FLUSH_INTERVAL
from .batcher import OpBatcher
from .notebook_page import PageBridge
from .render import (
    WINDOW,
    keep_streamed,
    render_marker,
    render_message,
    render_window,
    stored_run_part,
)
from .stored_session import StoredSessionFollower
from .subagent_parts import StoredSubagents, followed_run, run_item, run_part
from .view_presence import ViewPresence
from .wire import AgentChoice, ChatItem, SubagentPart

__all__ = ["LiveChat", "approval_item", "live_session", "note"]

# Sessions bound to a chat view in this kernel, by id. The sidebar reopens these objects
# instead of resuming them from the store: resuming a session whose turn is running here
# would treat that turn as killed.
_bound_sessions: weakref.WeakValueDictionary[str, AgentSession] = weakref.WeakValueDictionary()
_chats: weakref.WeakSet[LiveChat] = weakref.WeakSet()
"""The chat widgets of this kernel: a session shown in two hands its notebook page on to
the other when one stops showing it."""


def live_session(session_id: str, store: SessionStore | None = None) -> AgentSession | None:
    """The session with this id if a chat view in this kernel has it open (of ``store``,
    when given: two stores may hold sessions of the same id)."""
    session = _bound_sessions.get(session_id)
    if session is None or store is None:
        return session
    mine = session.store
    return session if mine is not None and mine.same_database(store) else None


def note(text: str) -> str:
    """A one-line notice as state holds it (a provider may answer with a whole page)."""
    return text if len(text) <= NOTE_CHARS else text[:NOTE_CHARS] + "…"


def approval_item(pending: PendingApproval) -> dict[str, Any]:
    approval: dict[str, Any] = {"id": pending.id, "name": pending.name,
                                "args": dict(pending.args)}
    if pending.proposal is not None:
        approval["proposal"] = pending.proposal
    if pending.path:
        approval["agent"], approval["path"] = pending.agent, list(pending.path)
    preview_args(approval)  # the call's card has the full arguments on demand
    return approval


class LiveChat(NetaWidget):
    """The traits and the live half of :class:`~neta_nb.widgets.ChatView` (see the
    module's docstring)."""

    _component = traitlets.Unicode("chat-view").tag(sync=True)
    session_id = traitlets.Unicode("", help="Id of the bound session.").tag(sync=True)
    rewinds = traitlets.Int(0, help="Rewinds of the shown session so far: when it changes "
                            "the views draw everything again.").tag(sync=True)
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
    notice = traitlets.Unicode("", help="An error not tied to a message, or a warning "
                               "(a budget mostly spent).").tag(sync=True)
    notice_tone = traitlets.Enum(("error", "warning"), default_value="error",
                                 help="How the notice is drawn.").tag(sync=True)
    store_warning = traitlets.Unicode(
        "", help="Why what is shown is not saved yet (the store is behind); empty when it is."
    ).tag(sync=True)
    height = traitlets.Unicode("640px", help="CSS height of the view.").tag(sync=True)
    read_only = traitlets.Dict(
        help="{owner, busy[, batch_row]} while a stored session is shown read-only (see "
             "show_stored); empty otherwise.").tag(sync=True)
    attachment_limits = traitlets.Dict(
        dataclasses.asdict(DEFAULT_ATTACHMENT_LIMITS),
        help="What the input bar lets a prompt carry: max_file_bytes, max_total_bytes, "
             "max_count (the kernel checks them again).").tag(sync=True)
    _seq = traitlets.Int(0, help="Number of the last batch reflected in the traits; -1 "
                                 "while a turn runs that began before this widget showed "
                                 "the session (its start is in no trait).").tag(sync=True)
    _key = traitlets.Unicode(
        help="This widget's name on the page: the widgets' loader keeps the batches its model "
             "receives under it, so a view drawn mid-turn (Run All draws the chat after its "
             "turn started) builds from them instead of asking for a snapshot "
             "(js/src/received-batches.ts).").tag(sync=True)

    @traitlets.default("_key")
    def _default_key(self) -> str:
        return uuid.uuid4().hex

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
        self._projection = ConversationProjection()
        self._approvals_shown: list[PendingApproval] = []  # what the trait holds
        self._stored_subagents = StoredSubagents(None)
        self._session: AgentSession | None = None
        self._unfollow: list[Callable[[], None]] = []
        """What stops following the bound session: its events, rewinds, level changes."""
        self._presence = ViewPresence(lambda: self._kernel_loop)
        self._page = PageBridge(self.send)  # the notebook tools' way to the notebook
        _chats.add(self)
        self._background: dict[str, Callable[[], None]] = {}
        """Sessions switched away from mid-turn, by id: what ends their hold (below)."""
        # A session of another kernel shown read-only (see ChatView.show_stored), and the
        # last live session (its agent, catalog and store start a new chat from there).
        self._follower: StoredSessionFollower | None = None
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
        """Show ``session`` (replacing the one shown) and follow its events. One shown
        mid-turn before goes on running in the background (see :meth:`unbind`)."""
        self.unbind()
        self._leave_stored()
        self._session = session
        _bound_sessions[session.id] = session
        # The views draw this session from the state: nothing of it is "streamed here"
        # (an answer streamed before a switch away and back is drawn from its preview).
        projection = self._projection = ConversationProjection.of_session(session)
        self._batcher.forget_items()
        self._stored_subagents = StoredSubagents(session.store,
                                                 live=partial(subagent_history, session))
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self._part_whole)
        last = projection.last_assistant
        for item in items:
            if last is not None and item["id"] == last.id:
                self._batcher.remember_item(item)  # drawn from the state: sent
        with self.hold_sync():
            self.session_id = session.id
            self.agent = {"name": session.agent.name, "model": session.provider.model_id}
            self.agents = cast("list[dict[str, Any]]", self._agent_choices(session))
            self.messages = cast("list[dict[str, Any]]", items)
            self.has_older = has_older
            self.todos = list(projection.todos)
            self.current = TurnUsage().model_dump()
            self.context = session.context.model_dump()
            self.running = projection.running
            self.levels = list(get_model_thinking_capability(
                session.provider.supplier, session.provider.model).levels)
            self.think_level = session.think_level
            # Set whatever the trait held: the session shown before may have had some.
            self._approvals_shown = list(projection.approvals)
            self.approvals = [approval_item(a) for a in projection.approvals]
            self.notice = ""
            self.read_only = {}
            failure = session.store_failure
            self.store_warning = ("" if failure is None
                                  else self._warning_text(store_warning(failure)))
            # Bound mid-turn, the traits lack the live response (it goes in batches and
            # snapshots only): -1 says so, and a view asks for a snapshot until the turn
            # ends (js/src/received-batches.ts).
            self._seq = -1 if projection.running else self._batcher.seq
        self._unfollow = [
            session.subscribe(self._on_event),
            # A rewind (retry, edit) changes the history behind the events: drawn again.
            session.on_rewind(lambda: self._rewound(session)),
            # A level chosen from code shows at once (one from the selector is shown).
            session.on_thinking_level(self._level_chosen),
        ]
        self._presence.bind(session)  # the approver while a view of this widget is shown
        session.notebook_page = self._page
        watch_cells()
        release = self._background.get(session.id)
        if release is not None:
            release()  # back in front, the presence answers for it (attached first: no gap)
        self._static_form.refresh()

    def unbind(self) -> None:
        """Stop following the bound session (it keeps running). A turn running then goes
        on in the background: this view stays its approver until the turn ends, so a
        tool call waiting for approval waits for the user to come back to it (through the
        sidebar, which shows it running) rather than going to the approval policy."""
        unfollow, self._unfollow = self._unfollow, []
        for stop in unfollow:
            stop()
        if self._session is not None and self._session.running:
            self._keep_in_background(self._session)
        self._presence.unbind()
        if self._session is not None and self._session.notebook_page is self._page:
            # Another chat showing this session is on the page too: its page now.
            others = [chat._page for chat in list(_chats)
                      if chat is not self and chat._session is self._session]
            self._session.notebook_page = next(
                (page for page in reversed(others) if page.available),
                others[-1] if others else None)
        self._batcher.cancel()
        self._projection = ConversationProjection()
        self._approvals_shown = []
        if self._session is not None:
            self._previous = self._session
        self._session = None

    def _level_chosen(self, level: str) -> None:
        self.think_level = level

    def _rewound(self, session: AgentSession) -> None:
        self.bind(session)
        self.rewinds += 1

    def _keep_in_background(self, session: AgentSession) -> None:
        if session.id in self._background:
            return
        detach = session.attach_approver()  # before the presence lets go: no gap

        def on_event(event: Event) -> None:
            if type(event) is DoneEvent:  # the turn's own end (a sub-agent's is wrapped)
                release()

        unsubscribe = session.subscribe(on_event)

        def release() -> None:
            if self._background.get(session.id) is release:
                del self._background[session.id]
            unsubscribe()
            detach()

        self._background[session.id] = release

    def release_background(self) -> None:
        """Let go of every session running in the background: what they have pending for
        approval goes to their approval policy (this view is closing)."""
        for release in list(self._background.values()):
            release()

    def _leave_stored(self) -> None:
        if self._follower is not None:
            self._follower.close()
            self._follower = None

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
        projection = self._projection
        # Deltas are most events, a child's among them: the projection streams them
        # straight into the batcher (kinds told by type, no history touched).
        if projection.stream(event, self._batcher):
            return
        kind = type(event)
        if kind is WarningEvent:
            assert isinstance(event, WarningEvent)
            self._on_warning(event)
            return
        projection.apply(event, self._batcher)
        if kind is TurnStartEvent:
            self._begin_turn()
        elif kind is TodoUpdateEvent:
            self.todos = list(projection.todos)
        elif kind is TokenUpdateEvent:
            assert isinstance(event, TokenUpdateEvent)
            with self.hold_sync():
                self.current = event.current.model_dump()
                self.context = event.context.model_dump()
        elif kind is CompactionEvent:
            if not projection.running:
                self._publish_window()  # a reload shows the marker too
        elif kind is ErrorEvent:
            assert isinstance(event, ErrorEvent)
            last = projection.last_assistant
            item = self._item(last.id) if last is not None else None
            if item is None or item["error"] != note(event.message):
                self.show_notice(note(event.message))
        elif kind is DoneEvent:
            self._publish_window(turn_ended=True)
            return
        if kind is ApprovalRequestEvent or kind is SubagentEvent or kind is SubagentEndEvent:
            self._show_approvals(flush=True)

    def _show_approvals(self, *, flush: bool = False) -> None:
        """The trait follows the projection's waiting approvals when they changed;
        ``flush``: the card that asks goes first."""
        pending = self._projection.approvals
        if pending == self._approvals_shown:
            return
        self._approvals_shown = list(pending)
        if flush:
            self._batcher.flush()
        self.approvals = [approval_item(a) for a in pending]

    def _on_warning(self, event: WarningEvent) -> None:
        if event.code is not None and event.code.startswith("store_"):
            # Not a turn boundary: the store can fall behind, or catch up, between turns.
            self.store_warning = "" if event.cleared else self._warning_text(event)
            return
        # A budget 80 % used (or some costs unknown), usage a server reported wrong: a
        # warning; a turn the budget stopped is an error.
        code = event.code or ""
        self.show_notice(self._warning_text(event), tone="error"
                         if code.startswith("budget_reached") else "warning")

    def show_notice(self, text: str, *, tone: Literal["error", "warning"] = "error") -> None:
        """Show ``text`` under the conversation (an error, or a ``"warning"``)."""
        with self.hold_sync():  # the tone first: an observer of the notice sees its own
            self.notice_tone = tone
            self.notice = text

    def _warning_text(self, event: WarningEvent) -> str:
        if event.code is not None and event.code in LABELS["en"]:
            return t(event.code, self.lang, **event.params)
        return event.message

    def _begin_turn(self) -> None:
        # Events arrive on the session's loop: the one requests must be handled on.
        self.remember_kernel_loop()
        # The last answer is redrawn first (its cards may change): the views hold its
        # text and its last item, so it is sent again only if it changed.
        last = self._projection.last_assistant
        self._batcher.forget_items(keep=last.id if last is not None else None)
        with self.hold_sync():
            self.running = True
            self.notice = ""
            self.current = TurnUsage().model_dump()

    def _publish_window(self, *, turn_ended: bool = False) -> None:
        """Send the drawn window (the views set their ``messages`` from its ids) and
        reflect it in the traits; at the end of a turn, the turn's state too."""
        projection = self._projection
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self._part_whole)
        # The views hold every item of the window already (streamed): they set the
        # `messages` trait on their side from this list of ids, so the text of a long
        # answer crosses the wire once, not twice, and a notebook saved from that page
        # still has it. With no view open (nbconvert --execute, a cell whose output was
        # cleared, a page not showing it) nobody would set it: the trait is sent, so the
        # widget state any frontend records holds the conversation.
        self._batcher.op("window", ids=[item["id"] for item in items], has_older=has_older)
        self._batcher.flush()
        session = self._session
        with self.hold_sync():
            self._quiet_window = self._presence.views > 0
            try:
                self.messages = cast("list[dict[str, Any]]", items)
                self.has_older = has_older
            finally:
                self._quiet_window = False
            if turn_ended:
                self.running = False
                self._show_approvals()
                if session is not None:
                    self.think_level = session.think_level
            if projection.context is not None:
                self.context = projection.context.model_dump()
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

    # --- drawing ----------------------------------------------------------------------
    def _item(self, item_id: str) -> ChatItem | None:
        projection = self._projection
        if item_id.startswith("compaction-"):
            number = int(item_id.removeprefix("compaction-"))
            records = projection.compactions
            return render_marker(number, records[number]) if number < len(records) else None
        index = projection.index_of(item_id)
        if index is None:
            return None
        message = projection.messages[index]
        return keep_streamed(render_message(message, index, self._part_streamed), message,
                             projection.streamed.get(item_id))

    def _nested_item(self, path: tuple[str, ...], item_id: str) -> ChatItem | None:
        run = self._projection.find(path)
        return run_item(run, item_id) if run is not None else None

    def _part_streamed(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card in a streamed update: its transcript streams on its own."""
        run = followed_run(self._projection, execution)
        return run_part(run, whole=False) if run is not None else self._stored_part(execution)

    def _part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card with its transcript (traits, snapshots, older pages)."""
        run = followed_run(self._projection, execution)
        return run_part(run, whole=True) if run is not None else self._stored_part(execution)

    def _stored_part(self, execution: ToolExecution) -> SubagentPart | None:
        if execution.subagent is not None:
            return self._stored_subagents.part(execution)
        return stored_run_part(execution)
