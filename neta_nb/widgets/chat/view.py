"""``ChatView``: a whole conversation with an agent, live (seed 002 §5.3, §6.3, §7, §9).

The view follows an :class:`~neta_nb.runtime.session.AgentSession` through its events
(:class:`~neta_nb.widgets.chat.live.LiveChat`: events → projection → batches → views);
the session knows nothing of widgets, so a session started from a cell with
``session.start(...)`` shows here the same way as one sent from the input box. This module
adds what a user asks of it:

* **Requests** (``{kind, id}`` with a reply) are the actions: ``command`` (the session's
  ``send``/``stop``/``set_thinking_level``/``approve``), ``older`` (the previous page of
  history, loaded when the user scrolls up), ``switch_agent``, ``sync`` and ``full_text``
  (the whole of a text the state holds a preview of: state stays small, see
  ``neta_nb.widgets.state_bounds``).
* :meth:`ChatView.show_stored` shows a stored session read-only instead — one whose turn
  another kernel runs (:mod:`~neta_nb.widgets.chat.read_only`).
* The static forms a saved notebook shows without the live widget.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
from collections.abc import Mapping, Sequence
from typing import Any, cast

from ...labels import t
from ...messages import Message
from ...runtime.attachments import Attachment, guess_media_type
from ...runtime.session import Agent, AgentSession
from ...store.process_owner import SessionBusyError
from ...store.records import SessionRecord
from ...store.session_store import CompactionRecord
from ..base import BUFFERS_KEY, RequestError, handles
from .header_panels import HeaderPanels
from .live import live_session, note
from .mention_requests import (
    MentionCandidatesReply,
    MentionCandidatesRequest,
    MentionPreview,
    MentionPreviewRequest,
    candidates_for,
    preview_for,
)
from .read_only import READ_ONLY_REFRESH_INTERVAL
from .render import full_text, render_window
from .session_names import SessionNames, read_names, static_heading
from .static import static_html, static_summary, static_text
from .wire import (
    Approval,
    ChatSnapshot,
    CommandReply,
    CommandRequest,
    FullText,
    FullTextRequest,
    LiveSnapshot,
    MessageActionRequest,
    NoReply,
    NotebookReply,
    OlderPage,
    OlderRequest,
    SwitchAgentReply,
    SwitchAgentRequest,
    ViewRequest,
)

__all__ = ["READ_ONLY_REFRESH_INTERVAL", "ChatView", "live_session"]

log = logging.getLogger(__name__)



class ChatView(HeaderPanels):
    """``ChatView(session)``: messages, plan, cards, the streaming answer with its thinking,
    and an input bar with Send/Stop, agent and thinking-level selectors and token stats.

    ``agents`` lists other agents the selector offers; choosing one starts a new session
    with it (same catalog and store). Rebind with ``chat.session = other`` or
    :meth:`bind`.
    """

    def __init__(self, session: AgentSession | None = None, *,
                 agents: Sequence[Agent] = (), **kwargs: Any) -> None:
        self._tasks: set[asyncio.Task[Any]] = set()
        self._names: SessionNames | None = None
        """The shown session's names as the store had them (read once, see session_names)."""
        super().__init__(session, agents=agents, **kwargs)

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
        self.release_background()
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
        self._require_session()
        return self._projection.messages, self._projection.compactions

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
        projection = self._projection
        items, has_older = render_window(projection.messages, projection.compactions,
                                         limit=self._window, subagents=self._part_whole)
        live = projection.live
        return {
            "seq": self._batcher.seq,
            "session_id": session.id,
            "messages": items,
            "has_older": has_older,
            "live": cast("LiveSnapshot", live.snapshot()) if live is not None else None,
            "running": self.running,
            "todos": self.todos,
            "current": self.current,
            "context": self.context,
            "approvals": cast("list[Approval]", self.approvals),
            "think_level": self.think_level,
            "notice": self.notice,
            "notice_tone": self.notice_tone,
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
        messages, _ = self._history()
        try:
            if path:
                run = (self._projection.run_with(path, message_id) if self.stored is None
                       else None)
                messages = (run.messages if run is not None
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
            why = exc.message(self.lang) if isinstance(exc, SessionBusyError) else str(exc)
            raise RequestError(why) from exc
        return {"session_id": session.id}

    @handles("view_opened")
    def _view_opened(self, request: ViewRequest) -> NoReply:
        self._presence.opened(_view_id(request))
        self._page.opened(_view_id(request), request.get("notebook_bridge") is True)
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
            return {"running": True}
        if kind == "stop" and command.get("subagent") is not None:
            run_id = command.get("subagent")
            if not isinstance(run_id, str) or self._projection.running_run(run_id) is None:
                raise RequestError(f"no sub-agent {run_id!r} is running in this chat")
        try:
            session.handle_command(dict(command))
        except (KeyError, ValueError) as exc:
            raise RequestError(str(exc)) from exc
        if kind == "set_thinking_level":
            self.think_level = session.think_level
        elif kind == "approve":
            self._projection.answered(str(command.get("id")), command.get("subagent"))
            self._show_approvals()
        return {"think_level": session.think_level, "running": session.running}

    def _track(self, task: asyncio.Task[Any]) -> None:
        self._tasks.add(task)

        def finished(done: asyncio.Task[Any]) -> None:
            self._tasks.discard(done)
            if not done.cancelled() and done.exception() is not None:
                # The session reports provider failures as events; anything else would
                # vanish with the task, so it is shown where the user looks.
                log.error("chat turn failed", exc_info=done.exception())
                self.show_notice(note(f"{type(done.exception()).__name__}: "
                                      f"{done.exception()}"))

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

    @handles("message_action")
    def _message_action(self, request: MessageActionRequest) -> SwitchAgentReply:
        """Retry (an answer's prompt again), edit, rewind or fork at a message; a fork is
        shown here at once (the session list shows it as a branch)."""
        session = self._require_session()
        action, message_id = request.get("action"), request.get("message_id")
        if not isinstance(message_id, str) or action not in ("retry", "edit", "rewind",
                                                             "fork"):
            raise RequestError("message_action needs an 'action' (retry, edit, rewind or "
                               "fork) and a 'message_id'")
        try:
            if action == "fork":
                branch = session.fork(message_id)
                self.bind(branch)
                return {"session_id": branch.id}
            if action == "rewind":
                session.rewind(message_id)
            elif action == "edit":
                text = request.get("text")
                if not isinstance(text, str) or not text.strip():
                    raise RequestError("an edit needs the prompt's new 'text'")
                session.edit(message_id, text)
            else:
                session.retry(message_id)
        except (RuntimeError, KeyError, ValueError) as exc:
            raise RequestError(str(exc.args[0]) if exc.args else str(exc)) from exc
        return {"session_id": session.id}

    @handles("mention_candidates")
    def _mention_candidates(self, request: MentionCandidatesRequest) -> MentionCandidatesReply:
        """What an ``@`` being typed can mention (the input's popup)."""
        return candidates_for(self._require_session(), request)

    @handles("mention_preview")
    def _mention_preview(self, request: MentionPreviewRequest) -> MentionPreview:
        """What the model will read for one mention, or why it is unknown (a chip)."""
        return preview_for(self._require_session(), request, self.lang)

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
                           heading=self._static_heading(), lang=self.lang)

    def _static_heading(self) -> list[str]:
        """What the session list shows of the session (``session_names``)."""
        session = self.session
        if session is None or not self.messages:
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

