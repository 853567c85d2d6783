"""What a saved chat says of its session above the conversation: its title, the session
a branch was forked from, what it has cost — the names the session list shows — and what
a rewind or fork that put the notebook back did, until the next message.

Rendering never reads the store (a saved form is drawn at every turn's end, on the
kernel's loop, and a store's server may be down): the names that only the store knows
(a title the user gave, the parent's title) are read once when a view first draws a
session (:func:`read_names`) and then updated by whoever changes them (the session
list's rename); the rest comes from the session itself."""

from __future__ import annotations

import logging
from dataclasses import dataclass

from ....labels import t
from ....runtime.session import AgentSession
from ....runtime.session.spending import format_usd
from ....store.records import UNTITLED, SessionRecord, automatic_title
from ....tools.notebook.changes.restore import NotebookRestore
from .static import shown_title

__all__ = ["SessionNames", "read_names", "restore_note", "static_heading"]

log = logging.getLogger(__name__)


@dataclass
class SessionNames:
    """What the store knows of a session's names, as a view last heard it."""

    session_id: str
    user_title: str | None = None
    """The title the user gave (``rename_session``); ``None``: the automatic one."""
    parent: tuple[str, bool] | None = None
    """A branch's parent: its title and whether it has none yet (shown as "New chat")."""

    def heard(self, record: SessionRecord) -> None:
        """``record`` changed (renamed): keep what concerns this session."""
        if record.id == self.session_id:
            self.user_title = record.title if record.title_by_user else None
        elif self.parent is not None:
            self.parent = (record.title, record.untitled)


def read_names(session: AgentSession) -> SessionNames:
    """The session's names from its store: nothing to read for a new session (no title
    of the user's yet, no parent) or while the store is known to be failing."""
    names = SessionNames(session.id)
    store = session.store
    if (store is None or session.store_failure is not None
            or not (session.messages or session.branch_of)):
        return names
    try:
        record = store.get_session(session.id)
        parent = store.get_session(session.branch_of) if session.branch_of else None
    except Exception as exc:  # a picture only: read again when the session is shown again
        log.warning("the saved chat's title could not be read from the store: %s", exc)
        return names
    if record is not None and record.title_by_user:
        names.user_title = record.title
    if parent is not None:
        names.parent = (parent.title, parent.untitled)
    return names


def static_heading(session: AgentSession, names: SessionNames, lang: str) -> list[str]:
    """The title (the user's, else the one derived from the session's own messages: its
    record may not be written yet), a branch's parent, the session's cost ("—" unknown)."""
    if names.user_title is not None:
        heading = [names.user_title]
    else:
        title = automatic_title(session.messages)
        heading = [shown_title(title, title == UNTITLED, lang)]
    if session.branch_of:
        heading.append(t("sidebar_branch", lang) if names.parent is None else t(
            "sidebar_branch_of", lang, title=shown_title(*names.parent, lang)))
    cost = session.cost_usd
    heading.append(t("cost_session_line", lang, cost=format_usd(cost) if cost is not None
                     else t("cost_unknown", lang)))
    restore = session.notebook_restore
    if restore is not None:
        heading.append(restore_note(restore, lang))
    return heading


def restore_note(restore: NotebookRestore, lang: str) -> str:
    """What a rewind or fork did to the notebook, in one line: the changes undone and the
    cells left as the user changed them (by id), or why it was not done."""
    if restore.error is not None:
        return t("notebook_restore_failed", lang, error=restore.error)
    text = (t("notebook_restore_done", lang, n=len(restore.restored)) if restore.restored
            else t("notebook_restore_none", lang))
    if restore.conflicts:
        left = ", ".join(f"{c.cell_id} ({t(f'notebook_restore_{c.reason}', lang)})"
                         for c in restore.conflicts)
        text += f" {t('notebook_restore_conflicts', lang)} {left}"
    return text
