"""``SessionSidebar``: the stored sessions, newest first (seed 002 §10).

Each row shows the title, the plan badge ``📋 k/N``, a running dot ("Running…") or the last
message. The list follows the store (``store.subscribe``), refreshed at most every
:data:`REFRESH_INTERVAL` while a turn writes. With ``chat=chat_view``, clicking a row opens
that session in the chat view — history, plan, cards and thinking level restored by
:meth:`AgentSession.resume` — and "New chat" starts an empty session with the same agent.
A session whose turn another kernel is running opens read-only (its history as stored so
far, no Send; :meth:`ChatView.show_stored`) instead of being taken over, and can be
continued here once that turn has ended.

**Delete, with an undo.** A row's delete (confirmed in the row) takes the session off the
list at once and offers Undo; the store deletes it — with its sub-agent sessions and the
blobs nobody else uses — when the undo is no longer offered: after :data:`UNDO_SECONDS`,
at the next deletion, or when the sidebar closes. A kernel that dies before then deletes
nothing (the safe way round). A session whose turn runs, here or in another process, is
not deleted: the refusal says so on its row.
"""

from __future__ import annotations

import asyncio
import contextlib
import html
import logging
from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, Protocol, cast

import traitlets

from ....labels import t
from ....runtime.session import AgentSession
from ....runtime.session.resume import SessionNotOwnedError, SessionNotResumableError
from ....runtime.session.spending import format_usd
from ....runtime.stored_endpoint import StoredEndpointError
from ....store.process_owner import SessionBusyError
from ....store.session_store import SessionRecord, SessionStore
from ...base import NetaWidget, RequestError, handles
from ..drawing.static import shown_title
from ..live import live_session
from ..stored_session import StoredSession
from ..wire import (
    DeletedSession,
    DeleteRequest,
    OpenRequest,
    RenameRequest,
    SessionReply,
    SessionRow,
)

__all__ = ["REFRESH_INTERVAL", "UNDO_SECONDS", "DeleteRequest", "DeletedSession",
           "OpenRequest", "RenameRequest", "SessionReply", "SessionRow", "SessionSidebar",
           "SidebarChat"]

log = logging.getLogger(__name__)

REFRESH_INTERVAL = 0.25
"""Seconds between two refreshes of the list while the store keeps changing."""
UNDO_SECONDS = 15.0
"""Seconds a deleted session can be brought back before the store deletes it."""

ResumeSession = Callable[[str], AgentSession]


class SidebarChat(Protocol):
    """What the sidebar needs of the chat it opens sessions in: a
    :class:`~neta_nb.widgets.chat.view.ChatView` (which shows this sidebar in its drawer,
    so this module does not import it)."""

    session_id: str

    @property
    def session(self) -> AgentSession | None: ...

    @property
    def previous_session(self) -> AgentSession | None: ...

    def observe(self, handler: Callable[[Any], None], names: str) -> None: ...

    def unobserve(self, handler: Callable[[Any], None], names: str) -> None: ...

    def bind(self, session: AgentSession) -> None: ...

    def unbind(self) -> None: ...

    def show_stored(self, stored: StoredSession, *,
                    resume: Callable[[str], AgentSession] | None = None) -> None: ...

    def new_chat(self) -> AgentSession: ...

    def session_renamed(self, record: SessionRecord) -> None: ...

def _row(record: SessionRecord) -> SessionRow:
    summary = record.todo_summary or {}
    return {
        "id": record.id,
        "title": record.title,
        "untitled": record.untitled,
        "agent": str(record.agent.get("name", "")),
        "running": record.running,
        "elsewhere": bool(record.running and record.owner is not None
                          and not record.owner.is_current),
        # Already plain text: the store keeps the preview line (persistence.py), derived
        # from the whole message by a markdown parser.
        "last_message": record.last_message,
        "todo": ({"completed": int(summary.get("completed", 0)),
                  "total": int(summary.get("total", 0))} if summary.get("total") else None),
        "created_at": record.created_at,
        "updated_at": record.updated_at,
        "message_count": record.message_count,
        # Sub-agent sessions this one ran (they are not rows of their own): the badge.
        "child_count": record.child_count,
        "cost_usd": record.cost_usd,
        "branch_of": record.branch_of,
    }


def _made_at(seconds: Any, lang: str) -> str:
    """``14:02`` today, ``Dec 5 14:02`` (``12月5日 14:02``) another day, in local time, as
    the live row says it; ``""`` for no time."""
    if not isinstance(seconds, (int, float)) or seconds <= 0:
        return ""
    made = datetime.fromtimestamp(seconds)
    clock = f"{made.hour:02d}:{made.minute:02d}"
    if made.date() == datetime.now().date():
        return clock
    if lang == "zh-CN":
        return f"{made.month}月{made.day}日 {clock}"
    return f"{_MONTHS[made.month - 1]} {made.day} {clock}"


_MONTHS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sep", "Oct", "Nov", "Dec")


class SessionSidebar(NetaWidget):
    """``SessionSidebar(store, chat=chat_view)``: the session list of ``store``.

    ``resume(session_id) -> AgentSession`` decides how a stored session is opened;
    by default a session already open in this kernel is reused and any other is resumed
    with ``AgentSession.resume(id, store=store)`` (with the chat's current catalog).
    ``all_users=True`` lists every user's sessions of a shared store, not only the
    current user's; another user's session opens read-only.
    """

    _component = traitlets.Unicode("session-sidebar").tag(sync=True)
    _static_traits = ("sessions", "active", "lang")
    sessions = traitlets.List(traitlets.Dict(), help="Rows, most recent first.").tag(sync=True)
    active = traitlets.Unicode("", help="Id of the session shown in the chat.").tag(sync=True)
    can_open = traitlets.Bool(False, help="A chat view is attached.").tag(sync=True)
    height = traitlets.Unicode("640px").tag(sync=True)
    query = traitlets.Unicode("", help="What the search box holds: the list shows the "
                              "sessions whose title or messages contain it.").tag(sync=True)
    deleted = traitlets.Dict(help="{id, title} of the session just deleted, which Undo "
                             "brings back; empty once it is gone for good.").tag(sync=True)

    def __init__(self, store: SessionStore, chat: SidebarChat | None = None, *,
                 resume: ResumeSession | None = None, limit: int = 200,
                 all_users: bool = False, **kwargs: Any) -> None:
        kwargs.setdefault("layout", {"width": "280px", "flex": "none"})
        super().__init__(**kwargs)
        self.store = store
        self.chat = chat
        self._limit = limit
        self._all_users = all_users
        self._resume = resume
        self._refresh_timer: asyncio.TimerHandle | None = None
        self._undo_timer: asyncio.TimerHandle | None = None
        self.can_open = chat is not None
        self._unsubscribe_store = store.subscribe(self._on_store_change)
        self._unobserve_chat: Callable[[], None] | None = None
        if chat is not None:
            chat.observe(self._on_chat_session, names="session_id")
            # The chat rereads a session of another kernel (its turn ended, its owner died):
            # this process's store never hears of that, so the list follows the chat.
            chat.observe(self._on_chat_read_only, names="read_only")

            def unobserve() -> None:
                chat.unobserve(self._on_chat_session, names="session_id")
                chat.unobserve(self._on_chat_read_only, names="read_only")

            self._unobserve_chat = unobserve
            self.active = chat.session_id
        self.refresh()

    def refresh(self) -> None:
        """Read the list from the store now."""
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
            self._refresh_timer = None
        found = (self.store.search_sessions(self.query, limit=self._limit,
                                            all_users=self._all_users)
                 if self.query.strip()
                 else self.store.list_sessions(self._limit, all_users=self._all_users))
        hidden = self.deleted.get("id")
        self.sessions = cast("list[dict[str, Any]]",
                             [_row(record) for record in found if record.id != hidden])

    def _refresh_in_background(self) -> None:
        """:meth:`refresh` where no one waits for an answer (a timer, the search box): a
        store that fails (its server down or hung) leaves the list as it was, said in
        the log, and the next change or search reads it again."""
        try:
            self.refresh()
        except Exception as exc:
            log.warning("the session list could not be read from the store: %s", exc)

    @traitlets.observe("query")
    def _on_query(self, _change: Mapping[str, Any]) -> None:
        self._refresh_in_background()

    def _on_store_change(self, _session_id: str) -> None:
        # A running turn writes every message: coalesce into one refresh per interval.
        if self._refresh_timer is not None:
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            self.refresh()
            return
        self._refresh_timer = loop.call_later(REFRESH_INTERVAL, self._refresh_in_background)

    def _on_chat_session(self, change: Mapping[str, Any]) -> None:
        self.active = str(change["new"])

    def _on_chat_read_only(self, _change: Mapping[str, Any]) -> None:
        self.refresh()

    # --- actions ----------------------------------------------------------------------
    def open_session(self, session_id: str) -> AgentSession | None:
        """Open a stored session in the attached chat view."""
        """Open a stored session in the attached chat view: resumed, or read-only while
        another kernel runs its turn. Returns the live session, or ``None`` for a
        read-only view (``chat.stored`` then holds what it shows)."""
        chat = self._require_chat()
        current = chat.session
        if current is not None and current.id == session_id:
            return current
        session = live_session(session_id, self.store)
        if session is None:
            try:
                session = self._resume_here(session_id)
            except (SessionBusyError, SessionNotOwnedError, SessionNotResumableError):
                # Running elsewhere, another user's, or an outside MCP client's (no model
                # to continue with): shown as it is, not taken over.
                try:
                    stored = StoredSession.read(self.store, session_id)
                except KeyError as exc:
                    raise RequestError(str(exc)) from exc
                chat.show_stored(stored, resume=self._resume_here)
                return None
            except (KeyError, StoredEndpointError) as exc:
                # A stored server this user did not configure: the message says how to
                # use it on purpose.
                raise RequestError(str(exc)) from exc
        chat.bind(session)
        return session

    def _resume_here(self, session_id: str) -> AgentSession:
        """Resume ``session_id`` in this kernel (``SessionBusyError`` while another
        process runs its turn)."""
        if self._resume is not None:
            return self._resume(session_id)
        chat = self._require_chat()
        template = chat.session or chat.previous_session
        catalog = template.catalog if template is not None else None
        return AgentSession.resume(session_id, store=self.store, catalog=catalog)

    def new_chat(self) -> AgentSession:
        """Start an empty session with the chat's current agent and show it."""
        chat = self._require_chat()
        session = chat.new_chat()  # a running turn goes on in the background
        self.refresh()
        return session

    def delete_session(self, session_id: str) -> None:
        """Take ``session_id`` off the list, to be deleted from the store unless
        :meth:`undo_delete` brings it back first (see the module note). ``RequestError``
        while a turn of it runs, here or in another process."""
        live = live_session(session_id, self.store)
        if live is not None and live.running:
            raise RequestError(t("delete_running_here", self.lang))
        record = self.store.get_session(session_id)
        if record is None:
            raise RequestError(f"session {session_id!r} is not in the store")
        try:
            self.store.check_not_busy(session_id, action="delete")
        except SessionBusyError as exc:
            raise RequestError(exc.message(self.lang)) from exc
        self._delete_for_good()  # the one offered before cannot come back any more
        chat = self.chat
        if chat is not None and chat.session_id == session_id:
            if chat.session is not None or chat.previous_session is not None:
                chat.new_chat()  # the chat moves on to an empty one
            else:
                chat.unbind()
        self.deleted = {"id": session_id, "title": _shown_title(_row(record), self.lang)}
        with contextlib.suppress(RuntimeError):  # no loop (a script): until the next one
            loop = asyncio.get_running_loop()
            self._undo_timer = loop.call_later(UNDO_SECONDS, self._delete_for_good)
        self.refresh()

    def undo_delete(self) -> None:
        """Bring back the session deleted last, while the undo is offered."""
        self._cancel_undo_timer()
        self.deleted = {}
        self.refresh()

    def _delete_for_good(self) -> None:
        self._cancel_undo_timer()
        doomed = self.deleted.get("id")
        if not doomed:
            return
        self.deleted = {}
        try:
            self.store.delete_session(doomed)
        except SessionBusyError:
            # Opened and started again (in another kernel) while the undo was offered:
            # it is kept, and back in the list.
            log.warning("session %s was not deleted: a turn of it runs", doomed)
        except KeyError:
            pass  # deleted meanwhile by someone else
        except Exception as exc:  # the store failed (its server down or hung)
            # Back in the list once the store answers, unless the deletion was made late.
            log.warning("session %s was not deleted: %s", doomed, exc)
        self._refresh_in_background()

    def _cancel_undo_timer(self) -> None:
        if self._undo_timer is not None:
            self._undo_timer.cancel()
            self._undo_timer = None

    def _require_chat(self) -> SidebarChat:
        if self.chat is None:
            raise RequestError("this sidebar has no chat view to open sessions in")
        return self.chat

    @handles("open")
    def _open(self, request: OpenRequest) -> SessionReply:
        session_id = request.get("session_id")
        if not isinstance(session_id, str):
            raise RequestError("open needs a 'session_id'")
        self.open_session(session_id)
        return {"session_id": session_id}

    @handles("rename")
    def _rename(self, request: RenameRequest) -> SessionReply:
        session_id, title = request.get("session_id"), request.get("title")
        if not isinstance(session_id, str) or not isinstance(title, str):
            raise RequestError("rename needs a 'session_id' and a 'title'")
        try:
            record = self.store.rename_session(session_id, title)
        except KeyError as exc:
            raise RequestError(str(exc)) from exc
        self.refresh()
        if self.chat is not None:
            self.chat.session_renamed(record)  # its saved form names the session
        return {"session_id": session_id}

    @handles("new_chat")
    def _new_chat(self, _request: Mapping[str, object]) -> SessionReply:
        return {"session_id": self.new_chat().id}

    @handles("delete")
    def _delete(self, request: DeleteRequest) -> SessionReply:
        session_id = request.get("session_id")
        if not isinstance(session_id, str):
            raise RequestError("delete needs a 'session_id'")
        self.delete_session(session_id)
        return {"session_id": session_id}

    @handles("undo_delete")
    def _undo_delete(self, _request: Mapping[str, object]) -> SessionReply:
        session_id = str(self.deleted.get("id", ""))
        self.undo_delete()
        return {"session_id": session_id}

    def close(self) -> None:
        self._delete_for_good()  # the undo is no longer offered
        self._unsubscribe_store()
        if self._unobserve_chat is not None:
            # Once: a widget is closed again when it is garbage-collected.
            unobserve, self._unobserve_chat = self._unobserve_chat, None
            unobserve()
        if self._refresh_timer is not None:
            self._refresh_timer.cancel()
        super().close()

    # --- representation ---------------------------------------------------------------
    def __repr__(self) -> str:
        return f"SessionSidebar({len(self.sessions)} sessions)"

    def _row_text(self, row: Mapping[str, Any], titles: Mapping[str, str]) -> str:
        return " — ".join(part for part in (
            " ".join(self._row_marks(row, titles)), self._row_status(row)) if part)

    def _titles(self) -> dict[str, str]:
        return {row["id"]: _shown_title(row, self.lang) for row in self.sessions}

    def _row_marks(self, row: Mapping[str, Any], titles: Mapping[str, str]) -> list[str]:
        """The title and what the live row shows beside it: plan badge, branch, cost."""
        marks = [_shown_title(row, self.lang)]
        todo = row.get("todo")
        if todo:
            marks.append(f"📋 {todo['completed']}/{todo['total']}")
        parent = row.get("branch_of")
        if parent:
            title = titles.get(parent)
            when = _made_at(row.get("created_at"), self.lang)
            marks.append(f"({t('sidebar_branch_of_when', self.lang, title=title, when=when)})"
                         if title and when else
                         f"({t('sidebar_branch_of', self.lang, title=title)})" if title
                         else f"({t('sidebar_branch', self.lang)})")
        cost = row.get("cost_usd")
        if isinstance(cost, (int, float)) and cost > 0:
            marks.append(format_usd(cost))
        return marks

    def _row_status(self, row: Mapping[str, Any]) -> str:
        return f"● {t('running', self.lang)}" if row.get("running") else str(
            row.get("last_message", ""))

    def _fallback_text(self) -> str:
        titles = self._titles()
        return "\n".join(self._row_text(row, titles) for row in self.sessions) or repr(self)

    def _fallback_html(self) -> str:
        """The list as the live one draws it (titles, badges, branches, costs), the
        session shown in the chat in bold."""
        titles = self._titles()
        items = []
        for row in self.sessions:
            marks = self._row_marks(row, titles)
            title = html.escape(marks[0])
            if row["id"] == self.active:
                title = f"<b>{title}</b>"
            rest = html.escape(" · ".join(marks[1:]))
            status = html.escape(self._row_status(row))
            items.append(f'<li style="margin:2px 0">{title}'
                         f'{" · " + rest if rest else ""}'
                         f'<div style="opacity:.72;font-size:12px">{status}</div></li>')
        if not items:
            return super()._fallback_html()
        return (f'<ul class="neta-static neta-static-sessions" style="list-style:none;'
                f'padding:0;margin:4px 0;font-family:system-ui,sans-serif;font-size:13px">'
                f'{"".join(items)}</ul>')


def _shown_title(row: Mapping[str, Any], lang: str) -> str:
    return shown_title(str(row.get("title", "")), bool(row.get("untitled")), lang)
