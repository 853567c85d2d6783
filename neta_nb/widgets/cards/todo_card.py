"""``TodoCard``: the agent's plan as a card (seed 002 §6).

``TodoCard(session)`` follows a session's plan live — every successful write shows at
once — and its turns, as the session's
:class:`~neta_nb.runtime.projection.ConversationProjection` (the chat's model of the
conversation, followed here for its state alone) says: once a turn ends, a step still in
progress stops spinning (``paused``). ``TodoCard(store)`` follows a bare
:class:`~neta_nb.todo.TodoStore` (nothing works on it, so nothing pauses unless
:attr:`TodoCard.working` is set); ``TodoCard(todos=[...])`` shows a fixed list.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import traitlets

from ...events import Event, TodoUpdateEvent
from ...labels import t
from ...runtime.projection import ConversationProjection, NullSink
from ...runtime.session import AgentSession
from ...todo import TodoItem, TodoStore, TodoSummary
from ..base import NetaWidget, html_card

__all__ = ["TodoCard", "plan_html", "plan_text"]

_DROPPED = NullSink()  # the card draws no conversation: the projection's changes go nowhere
_TEXT_MARK = {"pending": "[ ]", "in_progress": "[>]", "completed": "[x]", "cancelled": "[-]"}
_HTML_MARK = {"pending": "○", "in_progress": "◐", "completed": "✓", "cancelled": "✕"}


def _normalize(todos: Sequence[Mapping[str, Any] | TodoItem]) -> list[dict[str, str]]:
    # The store's own lenient validation (seed rules: missing id "?", unknown status
    # "pending"), so a card shows exactly what the store would hold.
    return [item.model_dump() for item in TodoStore().write(todos)]


class TodoCard(NetaWidget):
    """The plan: title, ``k/N done``, progress, collapsible rows; the active row stays
    visible when collapsed."""

    _component = traitlets.Unicode("todo-card").tag(sync=True)
    _static_traits = ("todos", "lang")
    todos = traitlets.List(traitlets.Dict(), help="Items as {id, content, status}.").tag(sync=True)
    collapsed = traitlets.Bool(False).tag(sync=True)
    paused = traitlets.Bool(False, help="Nothing works on the plan now: the step in "
                            "progress shows a still mark instead of a spinner.").tag(sync=True)

    def __init__(self, store: TodoStore | AgentSession | None = None, *,
                 todos: Sequence[Mapping[str, Any] | TodoItem] | None = None,
                 **kwargs: Any) -> None:
        self._unsubscribe_store: Callable[[], None] | None = None
        self._unsubscribe_session: Callable[[], None] | None = None
        self._store: TodoStore | None = None
        self._working: bool | None = None
        self._turns: ConversationProjection | None = None
        """The session's conversation, followed for whether a turn runs."""
        if store is not None and todos is not None:
            raise TypeError("pass either a TodoStore (or a session) or todos=[...], not both")
        session = store if isinstance(store, AgentSession) else None
        plan = session.todo if session is not None else store
        if session is not None:
            self._turns = ConversationProjection.of_session(session)
        # The first state goes with the widget's opening, not as updates right after it.
        if isinstance(plan, TodoStore):
            kwargs.update(self._state_of(plan))
        elif todos is not None:
            kwargs["todos"] = _normalize(todos)
        super().__init__(**kwargs)
        if isinstance(plan, TodoStore):
            self.follow(plan)
        if session is not None:
            self._unsubscribe_session = session.subscribe(self._on_session_event)

    @property
    def working(self) -> bool | None:
        """Whether something works on the plan now: the session's turn runs (``None``:
        no session drives this card and none was set). When it is ``False``, a step in
        progress shows as paused, not spinning."""
        return self._turns.running if self._turns is not None else self._working

    @working.setter
    def working(self, value: bool | None) -> None:
        if self._turns is not None:
            raise AttributeError("this card follows a session: its turns say whether "
                                 "something works on the plan")
        self._working = value
        if self._store is not None:
            self._on_store_write(self._store)

    def follow(self, store: TodoStore) -> None:
        """Show ``store`` and follow its writes (replacing any store followed before; a
        session the card was given still says when its turns run)."""
        if self._unsubscribe_store is not None:
            self._unsubscribe_store()
        self._store = store
        self._on_store_write(store)
        self._unsubscribe_store = store.subscribe(self._on_store_write)

    def unfollow(self) -> None:
        """Follow nothing any more: neither the plan nor the session's turns."""
        for unsubscribe in (self._unsubscribe_store, self._unsubscribe_session):
            if unsubscribe is not None:
                unsubscribe()
        self._unsubscribe_store = self._unsubscribe_session = None

    def _on_session_event(self, event: Event) -> None:
        turns = self._turns
        assert turns is not None  # subscribed only with a session
        working = turns.running
        turns.apply(event, _DROPPED)
        if turns.running != working and self._store is not None:
            self._on_store_write(self._store)  # a turn started or ended

    def _on_store_write(self, store: TodoStore) -> None:
        with self.hold_sync():
            for name, value in self._state_of(store).items():
                setattr(self, name, value)

    def _state_of(self, store: TodoStore) -> dict[str, Any]:
        todos = [item.model_dump() for item in store.read()]
        # Only a step in progress shows it, so a plan without one never sends a change of
        # ``paused`` (two messages a turn otherwise).
        return {"todos": todos,
                "paused": self.working is False
                and any(item["status"] == "in_progress" for item in todos)}

    def apply(self, event: TodoUpdateEvent) -> None:
        """Show the list a ``todo_update`` event carries."""
        self.todos = _normalize(event.todos)

    def close(self) -> None:
        self.unfollow()
        super().close()

    @property
    def summary(self) -> TodoSummary:
        return TodoStore(TodoItem.model_validate(item) for item in self.todos).summary()

    def __repr__(self) -> str:
        s = self.summary
        return f"TodoCard({s.completed}/{s.total} done)"

    # --- static form --------------------------------------------------------------

    def _fallback_text(self) -> str:
        return plan_text(self.todos, self.lang)

    def _fallback_html(self) -> str:
        return plan_html(self.todos, self.lang)


def _header(todos: Sequence[Mapping[str, Any]], lang: str) -> str:
    s = TodoStore(TodoItem.model_validate(item) for item in todos).summary()
    done = t("done_count", lang, k=s.completed, n=s.total)
    return f"{t('plan', lang)} · {done}"


def _status_suffix(status: str, lang: str) -> str:
    if status == "in_progress":
        return f" ({t('in_progress', lang)})"
    if status == "cancelled":
        return f" ({t('status_cancelled', lang)})"
    return ""


def plan_text(todos: Sequence[Mapping[str, Any]], lang: str) -> str:
    """The plan as text: a header line and one line per item (the card's and the chat
    view's static form)."""
    lines = [_header(todos, lang)]
    lines += [f"{_TEXT_MARK.get(item['status'], '[ ]')} {item['content']}"
              f"{_status_suffix(item['status'], lang)}" for item in todos]
    return "\n".join(lines)


def plan_html(todos: Sequence[Mapping[str, Any]], lang: str) -> str:
    """The plan as a self-contained HTML card, its text escaped."""
    rows = []
    for item in todos:
        status = item["status"]
        style = {"completed": "text-decoration:line-through;opacity:.6",
                 "cancelled": "text-decoration:line-through;opacity:.6;font-style:italic",
                 "in_progress": "font-weight:600"}.get(status, "")
        rows.append(f'<li style="list-style:none;{style}">{_HTML_MARK.get(status, "○")} '
                    f"{html.escape(item['content'])}"
                    f"{html.escape(_status_suffix(status, lang))}</li>")
    body = f'<ul style="margin:4px 0 0;padding:0">{"".join(rows)}</ul>'
    return html_card(html.escape(_header(todos, lang)), body)
