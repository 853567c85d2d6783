"""``TodoCard``: the agent's plan as a card (seed 002 §6).

``TodoCard(store)`` follows a :class:`~neta_nb.todo.TodoStore` live (every successful
``store.write`` shows at once); ``TodoCard(todos=[...])`` shows a fixed list.
"""

from __future__ import annotations

import html
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import traitlets

from ..events import TodoUpdateEvent
from ..labels import t
from ..todo import TodoItem, TodoStore, TodoSummary
from ._base import NetaWidget, escape_markdown, html_card

__all__ = ["TodoCard"]

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
    todos = traitlets.List(traitlets.Dict(), help="Items as {id, content, status}.").tag(sync=True)
    collapsed = traitlets.Bool(False).tag(sync=True)

    def __init__(self, store: TodoStore | None = None, *,
                 todos: Sequence[Mapping[str, Any] | TodoItem] | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._unsubscribe: Callable[[], None] | None = None
        if store is not None and todos is not None:
            raise TypeError("pass either a TodoStore or todos=[...], not both")
        if store is not None:
            self.follow(store)
        elif todos is not None:
            self.todos = _normalize(todos)

    def follow(self, store: TodoStore) -> None:
        """Show ``store`` and follow its writes (replacing any store followed before)."""
        self.unfollow()
        self.todos = [item.model_dump() for item in store.read()]
        self._unsubscribe = store.subscribe(self._on_store_write)

    def unfollow(self) -> None:
        if self._unsubscribe is not None:
            self._unsubscribe()
            self._unsubscribe = None

    def _on_store_write(self, store: TodoStore) -> None:
        self.todos = [item.model_dump() for item in store.read()]

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

    # --- static fallbacks ----------------------------------------------------------

    def _header(self) -> str:
        s = self.summary
        done = t("done_count", self.lang, k=s.completed, n=s.total)
        return f"{t('plan', self.lang)} · {done}"

    def _status_suffix(self, status: str) -> str:
        if status == "in_progress":
            return f" ({t('in_progress', self.lang)})"
        if status == "cancelled":
            return f" ({t('status_cancelled', self.lang)})"
        return ""

    def _fallback_text(self) -> str:
        lines = [self._header()]
        lines += [f"{_TEXT_MARK.get(item['status'], '[ ]')} {item['content']}"
                  f"{self._status_suffix(item['status'])}" for item in self.todos]
        return "\n".join(lines)

    def _fallback_markdown(self) -> str:
        lines = [f"**{escape_markdown(self._header())}**", ""]
        for item in self.todos:
            content = escape_markdown(item["content"])
            if item["status"] in ("completed", "cancelled"):
                content = f"~~{content}~~"
            elif item["status"] == "in_progress":
                content = f"**{content}**"
            mark = "x" if item["status"] == "completed" else " "
            suffix = escape_markdown(self._status_suffix(item["status"]))
            lines.append(f"- [{mark}] {content}{suffix}")
        return "\n".join(lines)

    def _fallback_html(self) -> str:
        rows = []
        for item in self.todos:
            status = item["status"]
            style = {"completed": "text-decoration:line-through;opacity:.6",
                     "cancelled": "text-decoration:line-through;opacity:.6;font-style:italic",
                     "in_progress": "font-weight:600"}.get(status, "")
            rows.append(f'<li style="list-style:none;{style}">{_HTML_MARK.get(status, "○")} '
                        f"{html.escape(item['content'])}"
                        f"{html.escape(self._status_suffix(status))}</li>")
        body = f'<ul style="margin:4px 0 0;padding:0">{"".join(rows)}</ul>'
        return html_card(html.escape(self._header()), body)
