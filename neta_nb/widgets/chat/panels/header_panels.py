"""What the chat view's header opens over the conversation: the list of chats and the
agent's tool panel.

A newcomer who starts from a chat view does not know that ``SessionSidebar`` and
``ToolConfigPanel`` exist. The view's header has a button for each; a click asks the
kernel (``open_panel {panel}``) for the widget, made here once for this chat and kept
while it lives, and the view draws it in a drawer (js/src/chat/chat-drawer.ts) with the
page's widget manager, from the model id in the reply:

* ``sessions``: a :class:`SessionSidebar` of the store the chat's session is saved in,
  attached to this chat (clicking a row opens that chat here; "New chat" starts one). A
  session kept in memory only has no list — a normal state, not a failure: the reply has
  no widget, only the ``empty`` text the drawer shows, which says how to keep chats.
* ``tools``: :meth:`ToolConfigPanel.for_session` of the session shown; made anew when the
  chat shows another session. A chat shown read-only (its turn runs in another kernel)
  has no tool panel here.

The header's third button opens the chat in a side panel of JupyterLab or Notebook 7 (the
page's extension draws another view of this widget's model there): ``side_panel`` tells
the view which model it is — the view cannot know, and the output it sits in may be a
box holding it with other widgets.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Protocol

from ....labels import t
from ...base import NetaWidget, RequestError
from ..stored_session import StoredSession
from ..wire import OpenPanelReply, OpenPanelRequest, SidePanelModel
from .session_sidebar import SessionSidebar, SidebarChat

if TYPE_CHECKING:
    from ....store.session_store import SessionStore
    from ...tool_config.panel import ToolConfigPanel

__all__ = ["HeaderPanels", "OpenPanelReply", "OpenPanelRequest", "SidePanelModel"]

PANELS = ("sessions", "tools")

class PanelsChat(SidebarChat, Protocol):
    """What the header's panels need of their chat: a
    :class:`~neta_nb.widgets.chat.view.ChatView` (which owns them, so this module does not
    import it) — the sidebar's side of it, its language and the stored session shown."""

    lang: str

    @property
    def stored(self) -> StoredSession | None: ...


class HeaderPanels:
    """The widgets the header of ``chat`` opens (see the module's docstring): made once,
    kept while the chat lives, closed with it. It reads the chat's public side only (the
    session shown, the stored one, its language)."""

    def __init__(self, chat: PanelsChat) -> None:
        self._chat = chat
        self._sessions_panel: SessionSidebar | None = None
        self._tools_panel: ToolConfigPanel | None = None

    def open(self, request: OpenPanelRequest) -> OpenPanelReply:
        """The ``open_panel`` request: the model id of the widget a header button opens,
        or the ``empty`` text the drawer shows instead."""
        name = request.get("panel")
        chat = self._chat
        if name == "sessions":
            if self._shown_store() is None:
                return {"model_id": "", "empty": t("sessions_need_store", chat.lang)}
            widget: NetaWidget = self.sessions_panel()
        elif name == "tools":
            widget = self.tools_panel()
        else:
            raise RequestError(f"open_panel needs 'panel': one of {', '.join(PANELS)}")
        widget.lang = chat.lang
        return {"model_id": str(widget.model_id)}

    def _shown_store(self) -> SessionStore | None:
        """The store of the session shown: the live one's, or the read-only one's."""
        chat = self._chat
        stored = chat.stored
        if stored is not None:
            return stored.store
        session = chat.session or chat.previous_session
        return session.store if session is not None else None

    def sessions_panel(self) -> SessionSidebar:
        """The list of chats of the store the chat's session is saved in, attached to the
        chat; ``RequestError`` when the session is kept in memory only."""
        chat = self._chat
        store = self._shown_store()
        if store is None:
            raise RequestError(t("sessions_need_store", chat.lang))
        panel = self._sessions_panel
        if panel is not None and panel.store is store:
            return panel
        if panel is not None:
            panel.close()
        # It fills the drawer: the drawer scrolls, the list scrolls inside it.
        self._sessions_panel = SessionSidebar(store, chat=chat, lang=chat.lang, height="100%")
        return self._sessions_panel

    def tools_panel(self) -> ToolConfigPanel:
        """The tool panel of the session shown (made anew for another session)."""
        from ...tool_config.panel import ToolConfigPanel

        chat = self._chat
        session = chat.session
        if session is None:
            raise RequestError(t("tools_read_only_chat", chat.lang) if chat.stored is not None
                               else "no session is bound to this chat view")
        panel = self._tools_panel
        if panel is not None and panel.session is session:
            return panel
        if panel is not None:
            panel.close()
        self._tools_panel = ToolConfigPanel.for_session(session, lang=chat.lang)
        return self._tools_panel

    def close(self) -> None:
        """Close the widgets made."""
        for panel in (self._sessions_panel, self._tools_panel):
            if panel is not None:
                panel.close()
        self._sessions_panel = self._tools_panel = None
