"""``LiveFollower``: the chat view's follower of a live session — its events go into a
:class:`~neta_nb.runtime.projection.ConversationProjection`, whose changes go to the
batcher and on to the views; the view's traits follow the projection at turn boundaries.

How state travels (DESIGN §5):

* **Traits** hold the conversation at turn boundaries — the last
  :data:`~neta_nb.widgets.chat.drawing.render.WINDOW` drawn messages, the plan, token usage, the
  thinking level, pending approvals — so a saved notebook reopens showing it and a new
  view (a second output, a page reload) renders it at once.
* **Batches** carry everything in between: streamed text and thinking, cards as they
  change, the live response becoming a message. At most one custom message per frame
  interval, numbered; a view that sees a gap, or opens mid-turn, asks for ``sync`` and
  gets the current state including the partial response.

The follower reads no history of the session: what it draws is the projection's, built
from the session once at :meth:`LiveFollower.bind` and followed with its events from then
on — the sub-agent cards too, through
:class:`~neta_nb.widgets.chat.drawing.subagent_parts.SubagentRuns`. It owns what following
takes (the session, its projection, the subscriptions, the sessions kept running in the
background, the turns started from the input box) and is given what it writes to: the
view's public traits (:class:`ChatTraits`), of which the turn's state goes through the
view's :class:`TurnTraits` (shared with the read-only mode, the one writer of ``running``,
``todos`` and ``approvals``), its batcher and notebook page, its :class:`QuietWindow`, and
hooks for the view's own state (the batch number its traits reflect, its static form).
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import weakref
from collections.abc import Callable, Iterator, Mapping, Sequence
from functools import partial
from types import MappingProxyType
from typing import Any, Literal, Protocol, cast

from ...events import (
    ApprovalRequestEvent,
    CompactionEvent,
    DoneEvent,
    ErrorEvent,
    Event,
    ProgressEvent,
    SkillEndEvent,
    SubagentEndEvent,
    SubagentEvent,
    TodoUpdateEvent,
    TokenUpdateEvent,
    ToolResultEvent,
    TurnStartEvent,
    TurnUsage,
    WarningEvent,
)
from ...labels import LABELS, t
from ...messages import ToolExecution
from ...runtime.projection import ConversationProjection, PendingApproval
from ...runtime.session import Agent, AgentSession
from ...runtime.session.tool_calls.subagents import subagent_history
from ...store.session_store import SessionStore
from ...store.session_writes import store_warning
from ...thinking import get_model_thinking_capability
from ...tools.notebook.kernel import watch_cells
from ..state_bounds import NOTE_CHARS, preview_args
from .drawing.batcher import OpBatcher
from .drawing.render import (
    keep_streamed,
    render_marker,
    render_message,
    render_window,
)
from .drawing.subagent_parts import SubagentRuns, run_item
from .notebook_page import PageBridge
from .view_presence import ViewPresence
from .wire import AgentChoice, ChatItem, SubagentPart

__all__ = ["ChatTraits", "LiveFollower", "QuietWindow", "TurnTraits", "approval_item",
           "live_session", "note"]

log = logging.getLogger(__name__)

# Sessions bound to a chat view in this kernel, by id. The sidebar reopens these objects
# instead of resuming them from the store: resuming a session whose turn is running here
# would treat that turn as killed.
_bound_sessions: weakref.WeakValueDictionary[str, AgentSession] = weakref.WeakValueDictionary()
_followers: weakref.WeakSet[LiveFollower] = weakref.WeakSet()
"""The chat views' followers of this kernel: a session shown in two hands its notebook
page on to the other when one stops showing it."""


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
    if pending.preview is not None:
        approval["preview"] = pending.preview.model_dump()
    if pending.path:
        approval["agent"], approval["path"] = pending.agent, list(pending.path)
    preview_args(approval)  # the call's card has the full arguments on demand
    return approval



_ASKING = frozenset({ApprovalRequestEvent, SubagentEvent, SubagentEndEvent})
"""Events after which the waiting approvals may have changed (a request; a child's)."""
_GOING_ON = frozenset({ProgressEvent, ToolResultEvent, SkillEndEvent})
"""Events of a call that may have waited for an answer and no longer does."""


class ChatTraits(Protocol):
    """What a follower writes to: the chat view's public traits (see ``ChatView``), its
    ``hold_sync`` and ``show_notice``; ``lang`` for the notices it words."""

    lang: str
    session_id: str
    rewinds: int
    agent: dict[str, Any]
    agents: list[dict[str, Any]]
    messages: list[dict[str, Any]]
    has_older: bool
    todos: list[dict[str, Any]]
    current: dict[str, Any]
    context: dict[str, Any]
    running: bool
    think_level: str
    levels: list[str]
    approvals: list[dict[str, Any]]
    notice: str
    notice_tone: str
    notebook_restore: dict[str, Any]
    store_warning: str
    read_only: dict[str, Any]

    def hold_sync(self) -> Any: ...

    def remember_kernel_loop(self) -> None: ...

    def show_notice(self, text: str, *, tone: Literal["error", "warning"] = "error") -> None:
        ...


class TurnTraits:
    """The chat view's traits that say where the shown conversation's turn is — whether
    one runs (``running``), the plan (``todos``), the approvals waiting (``approvals``) —
    written here only, from the projection shown (live or stored): one writer each."""

    def __init__(self, chat: ChatTraits, batcher: OpBatcher) -> None:
        self._chat = chat
        self._batcher = batcher
        self._approvals: list[PendingApproval] = []  # the shown session's, in the trait
        self._own: list[dict[str, Any]] = []  # ...as its items
        self._outside: list[dict[str, Any]] = []  # outside clients' (see outside_reviews)

    def show(self, projection: ConversationProjection) -> None:
        """All three, as ``projection`` has them (a conversation shown anew)."""
        chat = self._chat
        with chat.hold_sync():
            self.running(projection)
            self.plan(projection)
            # Set whatever the trait held: the conversation shown before may have had some.
            self._approvals = list(projection.approvals)
            self._own = [approval_item(a) for a in projection.approvals]
            chat.approvals = self._own + self._outside

    def running(self, projection: ConversationProjection) -> None:
        """Whether a turn runs (a turn's start and end)."""
        self._chat.running = projection.running

    def plan(self, projection: ConversationProjection) -> None:
        self._chat.todos = list(projection.todos)

    def approvals(self, projection: ConversationProjection, *, flush: bool = False) -> None:
        """The waiting approvals, when they changed; ``flush``: the card that asks goes
        first."""
        pending = projection.approvals
        if pending == self._approvals:
            return
        self._approvals = list(pending)
        if flush:
            self._batcher.flush()
        self._own = [approval_item(a) for a in pending]
        self._chat.approvals = self._own + self._outside

    @property
    def holds_approvals(self) -> bool:
        """The shown session's approvals in the trait are not none."""
        return bool(self._approvals)

    def outside(self, items: list[dict[str, Any]]) -> None:
        """The outside clients' waiting requests shown after the session's own, when
        they changed (see :mod:`..outside_reviews`)."""
        if items == self._outside:
            return
        self._outside = items
        self._chat.approvals = self._own + items


class QuietWindow:
    """The drawn window set in the traits without sending it while a view is open: the
    views set ``messages`` themselves from the window's ids (see
    :meth:`LiveFollower._publish_window`). The chat view asks :meth:`holds` of each
    property it would send."""

    def __init__(self, presence: ViewPresence) -> None:
        self._presence = presence
        self._quiet = False

    @contextlib.contextmanager
    def setting(self) -> Iterator[None]:
        """Set ``messages`` and ``has_older`` inside: sent only with no view open."""
        self._quiet = self._presence.views > 0
        try:
            yield
        finally:
            self._quiet = False

    def holds(self, key: str) -> bool:
        return self._quiet and key in ("messages", "has_older")


def warning_text(event: WarningEvent, lang: str) -> str:
    """A warning in the view's language when its code is a label, else its message."""
    if event.code is not None and event.code in LABELS["en"]:
        return t(event.code, lang, **event.params)
    return event.message


class LiveFollower:
    """The chat view's follower of the live session it shows (see the module's docstring).

    ``chat``: the traits it writes (the turn's state through ``turn``); ``batcher``:
    where the projection's changes go; ``page``: the view's notebook page, handed to the
    session shown; ``quiet``: how the drawn window is set. The hooks are the view's:
    ``rebind(session)`` shows a session again (a rewound one), ``shown_through(seq)``
    records the last batch the traits reflect, ``turn_ended()`` draws the static form as
    the turn ended.
    """

    def __init__(self, chat: ChatTraits, batcher: OpBatcher, page: PageBridge, *,
                 turn: TurnTraits, quiet: QuietWindow, window: int, agents: Sequence[Agent],
                 rebind: Callable[[AgentSession], None],
                 shown_through: Callable[[int], None],
                 turn_ended: Callable[[], None]) -> None:
        self._chat = chat
        self._batcher = batcher
        self.page = page
        """The notebook tools' way to the notebook, through the view's page."""
        self._turn = turn
        self._quiet = quiet
        self._window = window
        self.other_agents = list(agents)
        """The agents the selector offers besides the session's."""
        self._rebind = rebind
        self._shown_through = shown_through
        self._turn_ended = turn_ended
        self.projection = ConversationProjection()
        """What the bound session's events made of it (empty while none is bound)."""
        self.subagents = SubagentRuns()
        """The runs of the bound session's sub-agent cards (see ``subagent_parts``)."""
        self._tasks: set[asyncio.Task[Any]] = set()
        """The turns started from the input box (see :meth:`track`)."""
        self._session: AgentSession | None = None
        self._previous: AgentSession | None = None
        self._unfollow: list[Callable[[], None]] = []
        """What stops following the bound session: its events, rewinds, level changes."""
        self._background: dict[str, Callable[[], None]] = {}
        """Sessions switched away from mid-turn, by id: what ends their hold (below)."""
        _followers.add(self)

    @property
    def session(self) -> AgentSession | None:
        """The session followed, if any."""
        return self._session

    @property
    def previous(self) -> AgentSession | None:
        """The last session followed before (its agent, catalog and store start a new chat
        from a read-only view)."""
        return self._previous

    @property
    def background(self) -> Mapping[str, Callable[[], None]]:
        """The sessions kept running in the background, by id (see :meth:`unbind`)."""
        return MappingProxyType(self._background)

    # --- binding ----------------------------------------------------------------------
    def bind(self, session: AgentSession, presence: ViewPresence) -> None:
        """Show ``session`` and follow its events; ``presence`` answers its approvals
        while a view is shown. Call :meth:`unbind` first."""
        chat, batcher = self._chat, self._batcher
        self._session = session
        _bound_sessions[session.id] = session
        # The views draw this session from the state: nothing of it is "streamed here"
        # (an answer streamed before a switch away and back is drawn from its preview).
        projection = self.projection = ConversationProjection.of_session(session)
        batcher.forget_items()
        self.subagents = SubagentRuns(session.store, live=partial(subagent_history, session))
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self.part_whole)
        last = projection.last_assistant
        for item in items:
            if last is not None and item["id"] == last.id:
                batcher.remember_item(item)  # drawn from the state: sent
        with chat.hold_sync():
            chat.session_id = session.id
            chat.agent = {"name": session.agent.name, "model": session.provider.model_id}
            chat.agents = cast("list[dict[str, Any]]", self._agent_choices(session))
            chat.messages = cast("list[dict[str, Any]]", items)
            chat.has_older = has_older
            chat.current = projection.usage.model_dump()
            chat.context = session.context.model_dump()
            self._turn.show(projection)
            chat.levels = list(get_model_thinking_capability(
                session.provider.supplier, session.provider.model).levels)
            chat.think_level = session.think_level
            chat.notice = ""
            chat.read_only = {}
            failure = session.store_failure
            chat.store_warning = ("" if failure is None
                                  else warning_text(store_warning(failure), chat.lang))
            # Bound mid-turn, the traits lack the live response (it goes in batches and
            # snapshots only): -1 says so, and a view asks for a snapshot until the turn
            # ends (js/src/received-batches.ts).
            self._shown_through(-1 if projection.running else batcher.seq)
        self._unfollow = [
            session.subscribe(self._on_event),
            # A rewind (retry, edit) changes the history behind the events: drawn again.
            session.on_rewind(partial(self._rewound, session)),
            # A level chosen from code shows at once (one from the selector is shown).
            session.on_thinking_level(self._level_chosen),
        ]
        presence.bind(session)  # the approver while a view of this widget is shown
        session.notebook_page = self.page
        watch_cells()
        release = self._background.get(session.id)
        if release is not None:
            release()  # back in front, the presence answers for it (attached first: no gap)

    def unbind(self, presence: ViewPresence) -> None:
        """Stop following the bound session (it keeps running). A turn running then goes
        on in the background: this view stays its approver until the turn ends, so a
        tool call waiting for approval waits for the user to come back to it (through the
        sidebar, which shows it running) rather than going to the approval policy."""
        unfollow, self._unfollow = self._unfollow, []
        for stop in unfollow:
            stop()
        session = self._session
        if session is not None and session.running:
            self._keep_in_background(session)
        presence.unbind()
        if session is not None and session.notebook_page is self.page:
            # Another chat showing this session is on the page too: its page now.
            others = [follower.page for follower in list(_followers)
                      if follower is not self and follower.session is session]
            session.notebook_page = next(
                (page for page in reversed(others) if page.available),
                others[-1] if others else None)
        self._batcher.cancel()
        self.projection = ConversationProjection()
        if session is not None:
            self._previous = session
        self._session = None

    def _rewound(self, session: AgentSession) -> None:
        self._chat.notebook_restore = {}  # one with the notebook tells of it once done
        self._rebind(session)
        self._chat.rewinds += 1  # the views draw everything again

    def _level_chosen(self, level: str) -> None:
        self._chat.think_level = level

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
        approval goes to their approval policy (the view is closing)."""
        for release in list(self._background.values()):
            release()

    def track(self, task: asyncio.Task[Any]) -> None:
        """Keep a turn started from the input box until it ends; what it raises is shown
        as the notice (the session reports provider failures as events: anything else
        would vanish with the task)."""
        self._tasks.add(task)

        def finished(done: asyncio.Task[Any]) -> None:
            self._tasks.discard(done)
            if not done.cancelled() and done.exception() is not None:
                log.error("chat turn failed", exc_info=done.exception())
                self._chat.show_notice(note(f"{type(done.exception()).__name__}: "
                                            f"{done.exception()}"))

        task.add_done_callback(finished)

    def _agent_choices(self, session: AgentSession) -> list[AgentChoice]:
        choices: list[AgentChoice] = [{"name": session.agent.name,
                                       "model": session.provider.model_id}]
        for agent in self.other_agents:
            if agent.name not in {c["name"] for c in choices}:
                model = agent.model if isinstance(agent.model, str) else (
                    agent.model.model_id if agent.model is not None else "")
                choices.append({"name": agent.name, "model": model})
        return choices

    # --- events -----------------------------------------------------------------------
    def _on_event(self, event: Event) -> None:
        projection, chat = self.projection, self._chat
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
            self._turn.plan(projection)
        elif kind is TokenUpdateEvent:
            assert isinstance(event, TokenUpdateEvent)
            with chat.hold_sync():
                chat.current = event.current.model_dump()
                chat.context = event.context.model_dump()
        elif kind is CompactionEvent:
            if not projection.running:
                self._publish_window()  # a reload shows the marker too
        elif kind is ErrorEvent:
            assert isinstance(event, ErrorEvent)
            last = projection.last_assistant
            item = self.item(last.id) if last is not None else None
            if item is None or item["error"] != note(event.message):
                chat.show_notice(note(event.message))
        elif kind is DoneEvent:
            self._publish_window(turn_ended=True)
            return
        self._approvals_after(kind)

    def _approvals_after(self, kind: type[Event]) -> None:
        """The waiting approvals after an event of ``kind``: a request adds one (its card
        goes first); a call that may have waited goes on or is refused — however it was
        answered (this view, another one, a cell), its approval card goes."""
        if kind in _ASKING:
            self.show_approvals(flush=True)
        elif kind in _GOING_ON and self._turn.holds_approvals:
            self.show_approvals()

    def show_approvals(self, *, flush: bool = False) -> None:
        """The trait follows the projection's waiting approvals when they changed;
        ``flush``: the card that asks goes first."""
        self._turn.approvals(self.projection, flush=flush)

    def _on_warning(self, event: WarningEvent) -> None:
        chat = self._chat
        if event.code is not None and event.code.startswith("store_"):
            # Not a turn boundary: the store can fall behind, or catch up, between turns.
            chat.store_warning = "" if event.cleared else warning_text(event, chat.lang)
            return
        # A budget 80 % used (or some costs unknown), usage a server reported wrong, a
        # budget reached by a whole answer (nothing cut): a warning; a turn the budget
        # stopped short is an error.
        code = event.code or ""
        stopped = code.startswith("budget_reached") and "_answered" not in code
        chat.show_notice(warning_text(event, chat.lang), tone="error" if stopped else "warning")

    def _begin_turn(self) -> None:
        chat = self._chat
        # Events arrive on the session's loop: the one requests must be handled on.
        chat.remember_kernel_loop()
        # The last answer is redrawn first (its cards may change): the views hold its
        # text and its last item, so it is sent again only if it changed.
        last = self.projection.last_assistant
        self._batcher.forget_items(keep=last.id if last is not None else None)
        with chat.hold_sync():
            self._turn.running(self.projection)
            chat.notice = ""
            chat.notebook_restore = {}  # a message comes after the restore it told of
            chat.current = TurnUsage().model_dump()

    def _publish_window(self, *, turn_ended: bool = False) -> None:
        """Send the drawn window (the views set their ``messages`` from its ids) and
        reflect it in the traits; at the end of a turn, the turn's state too."""
        projection, chat = self.projection, self._chat
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self.part_whole)
        # The views hold every item of the window already (streamed): they set the
        # `messages` trait on their side from this list of ids, so the text of a long
        # answer crosses the wire once, not twice, and a notebook saved from that page
        # still has it. With no view open (nbconvert --execute, a cell whose output was
        # cleared, a page not showing it) nobody would set it: the trait is sent, so the
        # widget state any frontend records holds the conversation.
        self._batcher.op("window", ids=[item["id"] for item in items], has_older=has_older)
        self._batcher.flush()
        session = self._session
        with chat.hold_sync():
            with self._quiet.setting():
                chat.messages = cast("list[dict[str, Any]]", items)
                chat.has_older = has_older
            if turn_ended:
                self._turn.running(projection)
                self.show_approvals()
                if session is not None:
                    chat.think_level = session.think_level
            if projection.context is not None:
                chat.context = projection.context.model_dump()
            self._shown_through(self._batcher.seq)
        if turn_ended:
            # The saved notebook's static form shows the turn as it ended.
            self._turn_ended()

    # --- drawing ----------------------------------------------------------------------
    def item(self, item_id: str) -> ChatItem | None:
        """The drawn item ``item_id`` of the projection (the batcher's source)."""
        projection = self.projection
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

    def nested_item(self, path: tuple[str, ...], item_id: str) -> ChatItem | None:
        """The drawn item ``item_id`` of the sub-agent run at ``path``."""
        run = self.projection.find(path)
        return run_item(run, item_id, self.subagents) if run is not None else None

    def _part_streamed(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card in a streamed update: a followed run's transcript streams on
        its own."""
        return self.subagents.part(self.projection, execution, whole=False)

    def part_whole(self, execution: ToolExecution) -> SubagentPart | None:
        """A sub-agent card with its transcript (traits, snapshots, older pages)."""
        return self.subagents.part(self.projection, execution)
