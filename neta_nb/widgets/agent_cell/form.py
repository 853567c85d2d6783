"""The static form of an ``%%agent`` cell's turn: the plan, the prompt, a card per tool or
skill call, the answer and the token figures, as one HTML block and a short text — the
chat view's static form (:mod:`neta_nb.widgets.chat.drawing.static`) of the cell's part of its
session. A run without a page (nbclient, nbconvert, papermill) has no widget to draw, so
this form is the cell's output itself, kept current while the turn runs."""

from __future__ import annotations

from ...runtime.projection import ConversationProjection
from ...runtime.session import AgentSession
from ..chat.drawing.render import render_window
from ..chat.drawing.static import static_html, static_summary

__all__ = ["cell_form"]


def cell_form(session: AgentSession, start: int = 0, *, lang: str = "en") -> tuple[str, str]:
    """``(html, plain)`` of ``session``'s messages from the index ``start`` on (the cell's
    prompt; 0: the whole session)."""
    projection = ConversationProjection.of_session(session)
    messages = projection.messages[start:]
    items, _ = render_window(messages, [], limit=max(1, len(messages)))
    agent = session.agent.name
    context = projection.context.model_dump() if projection.context is not None else None
    rich = static_html(agent, items, empty="(no turn yet)", todos=projection.todos,
                       current=projection.usage.model_dump(), context=context, lang=lang)
    plain = static_summary(agent, items, lang) if items else agent
    return rich, plain
