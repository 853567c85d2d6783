"""``ChatView``: a whole conversation with an agent, live (seed 002 §5.3, §6.3, §7, §9).

The view follows an :class:`~neta_nb.runtime.session.AgentSession` through its events
(:class:`~neta_nb.widgets.chat.live.LiveFollower`: events → projection → batches → views);
the session knows nothing of widgets, so a session started from a cell with
``session.start(...)`` shows here the same way as one sent from the input box. The view
holds the traits and answers the requests; its collaborators own the rest: the live
follower, the read-only mode of a stored session (:mod:`~neta_nb.widgets.chat.read_only`),
the traits of the turn's state both write (:class:`~neta_nb.widgets.chat.live.TurnTraits`),
the message actions (:mod:`~neta_nb.widgets.chat.requests.message_actions`) and the widgets its
header opens (:mod:`~neta_nb.widgets.chat.panels.header_panels`). Live or stored, what it draws
is one :class:`~neta_nb.runtime.projection.ConversationProjection`. What a user asks of
it:

* **Requests** (``{kind, id}`` with a reply) are the actions: ``command`` (the session's
  ``send``/``stop``/``set_thinking_level``/``approve``), ``older`` (the previous page of
  history, loaded when the user scrolls up), ``switch_agent``, ``set_mode`` (an outside
  agent's session mode: :mod:`~neta_nb.widgets.chat.requests.agent_controls`), ``sync`` and
  ``full_text``
  (the whole of a text the state holds a preview of: state stays small, see
  ``neta_nb.widgets.state_bounds``).
* :meth:`ChatView.show_stored` shows a stored session read-only instead — one whose turn
  another kernel runs (:mod:`~neta_nb.widgets.chat.read_only`).
* The static forms a saved notebook shows without the live widget.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import uuid
from collections.abc import Awaitable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, ClassVar, Literal, Protocol, cast

import traitlets

from ...labels import t
from ...messages import MentionPart, ToolExecution
from ...runtime.mentions.attachments import DEFAULT_ATTACHMENT_LIMITS, Attachment, guess_media_type
from ...runtime.projection import ConversationProjection
from ...runtime.session import Agent, AgentSession
from ...store.process_owner import SessionBusyError
from ...store.records import SessionRecord
from ..base import BUFFERS_KEY, NetaWidget, RequestError, Requests, handles
from ..streaming import FLUSH_INTERVAL
from ..wire import ContextUsageDict, TodoItemDict, TurnUsageDict
from .drawing.batcher import OpBatcher
from .drawing.render import WINDOW, full_text, render_window
from .drawing.session_names import SessionNames, read_names, static_heading
from .drawing.static import static_html, static_summary, static_text
from .drawing.subagent_parts import SubagentRuns
from .live import LiveFollower, QuietWindow, TurnTraits, live_session
from .notebook_page import PageBridge
from .outside_requests import OutsideRequests
from .panels.header_panels import HeaderPanels, OpenPanelReply, OpenPanelRequest, SidePanelModel
from .panels.session_sidebar import SessionSidebar
from .read_only import READ_ONLY_REFRESH_INTERVAL, ReadOnlyMode, ResumeStored
from .requests.agent_controls import AgentControlTraits
from .requests.cell_context import chip_cells, reads_the_page, send_with_cells
from .requests.error_actions import ErrorActions
from .requests.mention_requests import MentionRequests
from .requests.message_actions import message_action, notebook_action, wants_notebook
from .view_presence import ViewPresence
from .wire import (
    Approval,
    ChatItem,
    ChatSnapshot,
    CommandReply,
    CommandRequest,
    FullText,
    FullTextRequest,
    LiveSnapshot,
    MessageActionReply,
    MessageActionRequest,
    NoReply,
    NotebookReply,
    OlderPage,
    OlderRequest,
    SubagentPart,
    SwitchAgentReply,
    SwitchAgentRequest,
    ViewRequest,
)

if TYPE_CHECKING:
    from ..tool_config.panel import ToolConfigPanel
    from .stored_session import StoredSession, StoredSessionFollower

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ChatView", "live_session"]


class Shown(Protocol):
    """What the view shows: the live follower's conversation or the read-only one's."""

    projection: ConversationProjection
    subagents: SubagentRuns

    def part_whole(self, execution: ToolExecution) -> SubagentPart | None: ...


class ChatView(NetaWidget):
    """``ChatView(session)``: messages, plan, cards, the streaming answer with its thinking,
    and an input bar with Send/Stop, agent and thinking-level selectors and token stats.

    ``agents`` lists other agents the selector offers; choosing one starts a new session
    with it (same catalog and store). Rebind with ``chat.session = other`` or
    :meth:`bind`.
    """

    _component = traitlets.Unicode("chat-view").tag(sync=True)
    # Jobs with an object of their own, each answering its requests (see base.Requests).
    _request_delegates: ClassVar[Mapping[str, type[Requests]]] = {
        "_agent_controls": AgentControlTraits, "_mention_requests": MentionRequests,
        "_error_actions": ErrorActions}
    session_id = traitlets.Unicode("", help="Id of the bound session.").tag(sync=True)
    rewinds = traitlets.Int(0, help="Rewinds of the shown session so far: when it changes "
                            "the views draw everything again.").tag(sync=True)
    keeps_branches = traitlets.Bool(True, help="The session shown has a store, which keeps "
                                    "as a branch what a rewind, retry or edit replaces; "
                                    "without one the views ask first.").tag(sync=True)
    fork_of = traitlets.Unicode("", help="The session shown is a fork made in this view: the "
                                "id of the chat it was forked from, which Back shows again; "
                                "empty otherwise.").tag(sync=True)
    notebook_restore = traitlets.Dict(help="What the last rewind or fork that put the "
                                      "notebook back did (NotebookRestore.to_json()), until "
                                      "the next message; empty otherwise.").tag(sync=True)
    hosts_outside = traitlets.Bool(True, help="This chat also shows the requests outside "
                                   "MCP clients wait for; false in a client's own review "
                                   "view (see widgets/outside_reviews.py).").tag(sync=True)
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
    agent_commands = traitlets.List(traitlets.Dict(), help="An outside agent's `/` commands: "
                                    "{name, description} (see agent_controls.py).").tag(sync=True)
    agent_modes = traitlets.List(traitlets.Dict(), help="An outside agent's session modes: "
                                 "{id, name, description}.").tag(sync=True)
    agent_mode = traitlets.Unicode("", help="The session mode the outside agent is in.").tag(
        sync=True)
    mode_error = traitlets.Unicode("", help="Why the mode last chosen was not set.").tag(
        sync=True)
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

    def __init__(self, session: AgentSession | None = None, *,
                 agents: Sequence[Agent] = (), window: int = WINDOW,
                 flush_interval: float = FLUSH_INTERVAL, **kwargs: Any) -> None:
        # Beside a sidebar in an HBox the view takes the remaining width, and a long line
        # never makes it grow past that.
        kwargs.setdefault("layout", {"flex": "1 1 auto", "min_width": "0"})
        kwargs.setdefault("_key", uuid.uuid4().hex)
        self._quiet: QuietWindow | None = None  # traits set before it is made are sent
        super().__init__(**kwargs)
        self._window = window
        self._batcher = OpBatcher(self.send, self._item,
                                  nested_source=lambda path, item_id:
                                  self._live.nested_item(path, item_id),
                                  interval=flush_interval)
        self._presence = ViewPresence(lambda: self._kernel_loop)
        self._quiet = QuietWindow(self._presence)
        self._page = PageBridge(self.send)  # the notebook tools' way to the notebook
        turn = TurnTraits(self, self._batcher)
        self._live = LiveFollower(self, self._batcher, self._page, turn=turn,
                                  quiet=self._quiet, window=window, agents=agents,
                                  rebind=self.bind, shown_through=self._shown_through,
                                  turn_ended=self._static_form.refresh_now)
        # A session of another kernel shown read-only (see show_stored).
        self._read_only = ReadOnlyMode(self, self._batcher, turn, window=window,
                                       shown_through=self._shown_through,
                                       shown=self._static_form.refresh)
        self._panels = HeaderPanels(self)
        self._names: SessionNames | None = None
        """The shown session's names as the store had them (read once, see session_names)."""
        self._fork_origin: AgentSession | None = None
        """The chat the session shown was forked from in this view (see ``fork_of``)."""
        # The outside clients' waiting requests, shown after the session's own.
        self._outside = OutsideRequests(self, turn)
        self._agent_controls = AgentControlTraits(self)
        self._mention_requests = MentionRequests(self._require_session, lambda: self.lang)
        self._error_actions = ErrorActions(
            self._require_session,
            lambda session, prompt: _send_and_track(
                self._live, session, {"type": "send", "text": prompt}))
        if session is not None:
            self.bind(session)
        self._outside.changed()
        self.observe(lambda _change: self._outside.changed(), names="session_id")

    # --- binding ----------------------------------------------------------------------
    @property
    def session(self) -> AgentSession | None:
        return self._live.session

    @session.setter
    def session(self, session: AgentSession) -> None:
        self.bind(session)

    @property
    def previous_session(self) -> AgentSession | None:
        """The live session shown before the current one (or before a read-only view)."""
        return self._live.previous

    def bind(self, session: AgentSession) -> None:
        """Show ``session`` (replacing the one shown) and follow its events. One shown
        mid-turn before goes on running in the background (see :meth:`unbind`)."""
        self.unbind()
        self._read_only.leave()
        self.keeps_branches = session.store is not None
        self._live.bind(session, self._presence)
        self.notebook_restore = _restore_shown(session)
        self._agent_controls.follow(session.deps.outside)
        self._static_form.refresh()

    def unbind(self) -> None:
        """Stop following the bound session (it keeps running). A turn running then goes
        on in the background: this view stays its approver until the turn ends, so a
        tool call waiting for approval waits for the user to come back to it (through the
        sidebar, which shows it running) rather than going to the approval policy."""
        self._live.unbind(self._presence)
        self._agent_controls.follow(None)
        self._fork_origin = None
        self.fork_of = ""

    def release_background(self) -> None:
        """Let go of every session running in the background: what they have pending for
        approval goes to their approval policy (this view is closing)."""
        self._live.release_background()

    def show_notice(self, text: str, *, tone: Literal["error", "warning"] = "error") -> None:
        """Show ``text`` under the conversation (an error, or a ``"warning"``)."""
        with self.hold_sync():  # the tone first: an observer of the notice sees its own
            self.notice_tone = tone
            self.notice = text

    # A hook of the live follower and the read-only mode: this widget's own state.
    def _shown_through(self, seq: int) -> None:
        self._seq = seq

    def _echo_wanted(self) -> bool:
        return self._presence.views == 0

    def _should_send_property(self, key: str, value: Any) -> bool:
        if self._quiet is not None and self._quiet.holds(key):
            return False
        return bool(super()._should_send_property(key, value))

    # --- a stored session, read-only ------------------------------------------------------
    @property
    def stored(self) -> StoredSession | None:
        """The stored session shown read-only, if any (see :meth:`show_stored`)."""
        return self._read_only.stored

    @property
    def _follower(self) -> StoredSessionFollower | None:
        """What rereads the stored session shown read-only, if any."""
        return self._read_only.follower

    def show_stored(self, stored: StoredSession, *, resume: ResumeStored | None = None,
                    batch_row: int | None = None) -> None:
        """Show ``stored`` read-only — a session whose turn another kernel runs — without
        taking it over. ``resume(session_id)`` opens it here once that turn has ended (the
        ``take_over`` request); by default ``AgentSession.resume`` with the last live
        session's catalog. ``batch_row``: the session is that row's of a batch run — the
        bar says so and offers no "Continue here"."""
        self.unbind()  # a running turn goes on in the background
        self._read_only.show(stored, resume=resume, batch_row=batch_row)

    def refresh(self) -> bool:
        """Read the session shown read-only again; True when something changed."""
        return self._read_only.refresh()

    def take_over(self) -> AgentSession:
        """Resume the session shown read-only here, now that its turn has ended
        elsewhere (``SessionBusyError`` if it still runs)."""
        session = self._read_only.resume_here(self.previous_session)
        self.bind(session)
        return session

    # --- what the header opens --------------------------------------------------------
    def sessions_panel(self) -> SessionSidebar:
        """The list of chats of the store this chat's session is saved in, attached to
        this chat; ``RequestError`` when the session is kept in memory only."""
        return self._panels.sessions_panel()

    def tools_panel(self) -> ToolConfigPanel:
        """The tool panel of the session shown (made anew for another session)."""
        return self._panels.tools_panel()

    @handles("open_panel")
    def _open_panel(self, request: OpenPanelRequest) -> OpenPanelReply:
        return self._panels.open(request)

    @handles("side_panel")
    def _side_panel(self, _request: Mapping[str, object]) -> SidePanelModel:
        return {"model_id": str(self.model_id)}

    # --- drawing ----------------------------------------------------------------------
    def _item(self, item_id: str) -> ChatItem | None:
        return self._live.item(item_id)

    def _shown(self) -> Shown:
        """The conversation shown: the stored one read-only, else the live session's
        (``RequestError`` when neither is)."""
        if self._read_only.stored is not None:
            return self._read_only
        self._require_session()
        return self._live

    def new_chat(self, agent: Agent | None = None) -> AgentSession:
        """Start a new, empty session with ``agent`` (default: the current one), with the
        current session's catalog and store, and show it."""
        current = self.session or self.previous_session
        if current is None:
            raise RequestError("no session is bound to this chat view")
        session = AgentSession(agent or current.agent, current.catalog, current.store)
        self.bind(session)
        return session

    def close(self) -> None:
        self._outside.close()
        self.unbind()
        self.release_background()
        self._read_only.leave()
        self._panels.close()
        super().close()

    def _require_session(self) -> AgentSession:
        session = self.session
        if session is None:
            stored = self.stored
            if stored is not None:
                raise RequestError("this chat is read-only: its turn runs in another kernel"
                                   + (f" ({stored.owner})" if stored.owner else ""))
            raise RequestError("no session is bound to this chat view")
        return session

    # --- requests from views ----------------------------------------------------------
    @handles("sync")
    def _sync(self, _request: Mapping[str, object]) -> ChatSnapshot:
        """Everything a view needs to draw the present: sent after any pending batch, with
        the number of the last batch it includes."""
        self._batcher.flush()
        shown = self._shown()
        projection = shown.projection
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=shown.part_whole)
        live = projection.live
        return {
            "seq": self._batcher.seq,
            "session_id": self.session_id,
            "messages": items,
            "has_older": has_older,
            "live": cast("LiveSnapshot", live.snapshot()) if live is not None else None,
            "running": self.running,
            "todos": cast("list[TodoItemDict]", self.todos),
            "current": cast("TurnUsageDict", self.current),
            "context": cast("ContextUsageDict", self.context),
            "approvals": cast("list[Approval]", self.approvals),
            "think_level": self.think_level,
            "notice": self.notice,
            "notice_tone": cast("Literal['error', 'warning']", self.notice_tone),
        }

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
        shown = self._shown()
        messages = shown.projection.messages
        try:
            if path:
                messages = shown.subagents.transcript(shown.projection, path, message_id)
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
            why = exc.message(self.lang) if isinstance(exc, SessionBusyError) else str(exc)
            raise RequestError(why) from exc
        return {"session_id": session.id}

    @handles("view_opened")
    def _view_opened(self, request: ViewRequest) -> NoReply:
        self._presence.opened(_view_id(request))
        bridge = request.get("notebook_bridge") is True
        self._page.opened(_view_id(request), bridge)
        if bridge:
            # A page that draws a view anew may have lost the form's display id (reloaded
            # while the kernel ran on): sent again, the bridge writes it after the view.
            self._static_form.refresh()
        return {}

    @handles("view_closed")
    def _view_closed(self, request: ViewRequest) -> NoReply:
        self._presence.closed(_view_id(request))
        self._page.closed(_view_id(request))
        return {}

    @handles("notebook_reply")
    def _notebook_reply(self, request: NotebookReply) -> NoReply:
        """The page's answer to a notebook tool's request (see ``notebook_page``)."""
        self._page.replied(request)
        return {}

    @handles("older")
    def _older(self, request: OlderRequest) -> OlderPage:
        """The page of drawn messages before message index ``before``."""
        shown = self._shown()
        before = request.get("before")
        if not isinstance(before, int) or isinstance(before, bool):
            raise RequestError("older needs an integer 'before'")
        projection = shown.projection
        items, has_older = render_window(projection.messages, projection.compactions,
                                         before=before, limit=self._window,
                                         subagents=shown.part_whole)
        return {"session_id": self.session_id, "messages": items, "has_older": has_older}

    @handles("command")
    def _command(self, request: CommandRequest) -> CommandReply | Awaitable[CommandReply]:
        command = request.get("command")
        if not isinstance(command, Mapping):
            raise RequestError("command needs a 'command' object")
        kind = command.get("type")
        if kind == "approve" and command.get("client") is not None:
            self._outside.decide(command)  # an outside client's request shown here
            return {"running": self.running}
        session = self._require_session()
        if kind == "send":
            buffers = cast(Mapping[str, Any], request).get(BUFFERS_KEY)
            cells = chip_cells(command)

            def start(page_parts: Sequence[MentionPart] = ()) -> CommandReply:
                _send_and_track(self._live, session, command, buffers, page_parts)
                return {"running": True}

            text = str(command.get("text", "")).strip()
            if reads_the_page(text, cells):  # the cells are read from the page first
                return send_with_cells(text, cells, self._page, self.lang, start)
            return start()
        if kind == "stop" and command.get("subagent") is not None:
            run_id = command.get("subagent")
            if not isinstance(run_id, str) or self._live.projection.running_run(run_id) is None:
                raise RequestError(f"no sub-agent {run_id!r} is running in this chat")
        try:
            session.handle_command(dict(command))
        except (KeyError, ValueError) as exc:
            raise RequestError(str(exc)) from exc
        if kind == "set_thinking_level":
            self.think_level = session.think_level
        elif kind == "approve":
            self._live.projection.answered(str(command.get("id")), command.get("subagent"))
            self._live.show_approvals()
        return {"think_level": session.think_level, "running": session.running}

    @handles("switch_agent")
    def _switch_agent(self, request: SwitchAgentRequest) -> SwitchAgentReply:
        name = request.get("name")
        current = self._require_session()
        if name == current.agent.name:
            return {"session_id": current.id}
        agent = next((a for a in self._live.other_agents if a.name == name), None)
        if agent is None:
            raise RequestError(f"no agent named {name!r}")
        return {"session_id": self.new_chat(agent).id}

    @handles("message_action")
    def _message_action(self, request: MessageActionRequest
                        ) -> MessageActionReply | Awaitable[MessageActionReply]:
        """Retry (an answer's prompt again), edit, rewind or fork at a message; a fork is
        shown here at once (the session list shows it as a branch). A rewind or fork that
        puts the notebook back answers when the page has, with what it did."""
        origin = self._require_session()
        if wants_notebook(request):
            task = notebook_action(origin, request)

            async def restored() -> MessageActionReply:
                done = await task
                shown = origin
                if request.get("action") == "fork":  # shown once its cells are back
                    shown = done.session
                    self._show_fork(origin, shown)
                self.notebook_restore = _restore_shown(shown)
                self.refresh_static_form()  # it says what was put back
                return {"session_id": shown.id, "notebook": done.notebook.to_json()}

            return restored()
        session = message_action(origin, request)
        if session is not origin:
            self._show_fork(origin, session)
        return {"session_id": session.id}

    def _show_fork(self, origin: AgentSession, fork: AgentSession) -> None:
        """Show the fork, marked as one, with a way back to the original."""
        self.bind(fork)
        self._fork_origin = origin
        self.fork_of = origin.id

    @handles("back_from_fork")
    def _back_from_fork(self, _request: Mapping[str, object]) -> SwitchAgentReply:
        """Show again the chat the fork shown was made from (kept in memory, store or not)."""
        origin = self._fork_origin
        if origin is None:
            raise RequestError("the chat shown is not a fork made in this view")
        self.bind(origin)
        return {"session_id": origin.id}

    # --- representation ---------------------------------------------------------------
    def _view_text(self) -> str:
        # What to do, not a status line of a run long gone: the form below shows the run.
        return t("chat_not_running", self.lang, agent=_agent_name(self.agent))

    def __repr__(self) -> str:
        state = ("read-only" if self.stored is not None
                 else "running" if self.running else "idle")
        agent = self.agent.get("name", "")
        return f"ChatView({agent!r}, {len(self.messages)} messages shown, {state})"

    def _fallback_text(self) -> str:
        return static_text(_agent_name(self.agent), self.messages, self.lang) or repr(self)

    # A chat with nothing drawn yet shows, where a viewer without the live widget draws it
    # (a notebook opened for the first time, GitHub, nbconvert), how to get the chat
    # instead of a status line that stopped being true once the cell ran.
    def _fallback_html(self) -> str:
        return static_html(_agent_name(self.agent), self.messages, empty=self._view_text(),
                           todos=self.todos, current=self.current, context=self.context,
                           heading=self._static_heading(), lang=self.lang)

    def _static_heading(self) -> list[str]:
        """What the session list shows of the session (``session_names``)."""
        session = self.session
        if session is None or not (self.messages or session.notebook_restore):
            return []
        names = self._names
        if names is None or names.session_id != session.id:
            names = self._names = read_names(session)  # once per session shown
        return static_heading(session, names, self.lang)

    def session_renamed(self, record: SessionRecord) -> None:
        """The session list renamed ``record``: the saved form names it anew if it is
        the session shown or the one it is a branch of."""
        session, names = self.session, self._names
        if (session is not None and names is not None and names.session_id == session.id
                and record.id in (session.id, session.branch_of)):
            names.heard(record)
            self.refresh_static_form()

    def _static_parts(self) -> tuple[str, str]:
        plain = (static_summary(_agent_name(self.agent), self.messages, self.lang)
                 if self.messages else self._view_text())
        return self._fallback_html(), plain


def _agent_name(agent: Mapping[str, Any]) -> str:
    """The name of the agent shown (the ``agent`` trait)."""
    return str(agent.get("name", "assistant"))


def _view_id(request: ViewRequest) -> str:
    view_id = request.get("view_id")
    if not isinstance(view_id, str) or not view_id:
        raise RequestError("view_opened and view_closed need a 'view_id' string")
    return view_id


def _send_and_track(live: LiveFollower, session: AgentSession, command: Mapping[str, Any],
                    buffers: Any = None, page_parts: Sequence[MentionPart] = ()) -> None:
    """A ``send`` started (:func:`_send`) and kept by ``live`` until it ends: the view's
    Send, and a prompt made here (Fix on an error)."""
    task = _send(session, command, buffers, page_parts=page_parts)
    if task is not None:
        live.track(task)


def _send(session: AgentSession, command: Mapping[str, Any], buffers: Any, *,
          page_parts: Sequence[MentionPart] = ()) -> asyncio.Task[Any] | None:
    """A view's ``send``: the prompt and the files it carries, as a turn of ``session``;
    ``page_parts``: the cells read from the page for it."""
    text = str(command.get("text", "")).strip()
    attachments = _sent_files(command, buffers)
    if not text and not attachments:
        raise RequestError("nothing to send")
    if session.running:
        raise RequestError("a turn is already running; stop it first")
    try:
        if page_parts:
            return session.start(text, attachments, page_parts=page_parts)
        return session.handle_command({"type": "send", "text": text}, attachments=attachments)
    except Exception as exc:
        raise RequestError(str(exc)) from exc


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


def _restore_shown(session: AgentSession) -> dict[str, Any]:
    """The ``notebook_restore`` trait of ``session`` (see ``AgentSession.notebook_restore``)."""
    restore = session.notebook_restore
    return {} if restore is None else restore.to_json()
