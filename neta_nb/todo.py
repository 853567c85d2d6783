"""The agent's plan: ``TodoItem``, ``TodoStore`` and the ``todo`` tool (seed 002 §3).

Semantics follow the seed exactly, with three additions a real user needs:

* **Bounds.** At most :data:`MAX_TODO_ITEMS` items, :data:`MAX_CONTENT_LENGTH`
  characters of content and :data:`MAX_ID_LENGTH` characters of id per item (an id is
  repeated in every injection and card, so an unbounded one costs as much as content).
  A write that breaks a bound changes nothing and raises :class:`TodoError`, whose
  message the tool hands back to the model.
* **Duplicate ids in one write** resolve deterministically: the *last* occurrence's fields
  win, at the position of the *first* occurrence (so "same id = same task" and the order
  the model chose first is kept).
* **Partial merge updates.** In merge mode an item that names an existing id updates only
  the fields it carries (``{"id": "2", "status": "completed"}`` keeps the content). The
  seed's ``Object.assign`` after defaulting would overwrite the content with the
  placeholder, which is never what the model meant.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict

from .messages import Message

log = logging.getLogger(__name__)

__all__ = [
    "MAX_CONTENT_LENGTH",
    "MAX_ID_LENGTH",
    "MAX_TODO_ITEMS",
    "TODO_TOOL_DESCRIPTION",
    "TODO_TOOL_PARAMETERS",
    "TodoError",
    "TodoItem",
    "TodoStatus",
    "TodoStore",
    "TodoSummary",
    "run_todo_tool",
]

TodoStatus = Literal["pending", "in_progress", "completed", "cancelled"]
_STATUSES: tuple[str, ...] = get_args(TodoStatus)

MAX_TODO_ITEMS = 50
MAX_CONTENT_LENGTH = 500
MAX_ID_LENGTH = 100
MISSING_ID = "?"
MISSING_CONTENT = "(no description)"
INJECTION_HEADER = "[Your active task list was preserved across context compression]"


class TodoError(ValueError):
    """A write the store refused; the message is written for the model to read."""


class TodoItem(BaseModel):
    """One step of the plan: ``id``, ``content`` and a ``status`` (pending, in_progress,
    completed, cancelled)."""

    model_config = ConfigDict(validate_assignment=True)

    id: str
    content: str
    status: TodoStatus = "pending"


class TodoSummary(BaseModel):
    """How many steps of the plan are in each status, and in total."""

    total: int = 0
    pending: int = 0
    in_progress: int = 0
    completed: int = 0
    cancelled: int = 0


def _coerce(item: object, index: int) -> dict[str, Any]:
    if isinstance(item, TodoItem):
        return item.model_dump()
    if not isinstance(item, Mapping):
        raise TodoError(f"todos[{index}] must be an object with id, content and status, "
                        f"got {type(item).__name__}")
    return dict(item)


def _text(value: object) -> str:
    if value is None:
        return ""
    return value if isinstance(value, str) else str(value)


def _validate(fields: Mapping[str, Any], index: int) -> TodoItem:
    """The seed's lenient validation: missing id → ``?``, missing content → placeholder,
    unknown status → ``pending``. Only the bounds are strict."""
    item_id = _text(fields.get("id")).strip() or MISSING_ID
    content = _text(fields.get("content")).strip() or MISSING_CONTENT
    status = fields.get("status")
    if len(item_id) > MAX_ID_LENGTH:
        raise TodoError(f"todos[{index}]: id is {len(item_id)} characters "
                        f"({item_id[:40]!r}...); the limit is {MAX_ID_LENGTH}. Use a short "
                        "id such as '1' or 'load-data'.")
    if len(content) > MAX_CONTENT_LENGTH:
        raise TodoError(f"todos[{index}] (id {item_id!r}): content is {len(content)} "
                        f"characters; the limit is {MAX_CONTENT_LENGTH}. Shorten it.")
    return TodoItem(id=item_id, content=content,
                    status=status if status in _STATUSES else "pending")


class TodoStore:
    """The plan of one session. Not thread-safe; owned by one session's event loop."""

    def __init__(self, items: Iterable[TodoItem] = ()) -> None:
        self._items: list[TodoItem] = [item.model_copy() for item in items]
        self._listeners: list[Callable[[TodoStore], None]] = []

    def subscribe(self, callback: Callable[[TodoStore], None]) -> Callable[[], None]:
        """Call ``callback(store)`` after every successful write (widgets follow the store
        this way). Returns a function that unsubscribes."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def write(self, todos: Sequence[Mapping[str, Any] | TodoItem],
              merge: bool = False) -> list[TodoItem]:
        """Replace the plan (``merge=False``) or update it by id (``merge=True``: existing
        ids are updated in place, new ids appended, order kept). Returns a copy of the
        whole list. On :class:`TodoError` nothing changes."""
        if isinstance(todos, (str, bytes)) or not isinstance(todos, Sequence):
            raise TodoError("todos must be an array of {id, content, status} objects")
        items: list[TodoItem] = [] if not merge else [i.model_copy() for i in self._items]
        positions = {item.id: n for n, item in enumerate(items)}
        for index, raw in enumerate(todos):
            fields = _coerce(raw, index)
            key = _text(fields.get("id")).strip() or MISSING_ID
            if key in positions:
                current = items[positions[key]]
                # Only the fields this write carries change; a duplicate id within one
                # replace-write overwrites its earlier occurrence the same way.
                merged = {**current.model_dump(), **{k: v for k, v in fields.items()
                                                     if v is not None and k in _FIELDS}}
                items[positions[key]] = _validate(merged, index)
            else:
                positions[key] = len(items)
                items.append(_validate(fields, index))
        if len(items) > MAX_TODO_ITEMS:
            raise TodoError(f"the plan would have {len(items)} items; the limit is "
                            f"{MAX_TODO_ITEMS}. Group small steps or drop finished ones.")
        self._items = items
        self._notify()
        return self.read()

    def _notify(self) -> None:
        for listener in list(self._listeners):
            listener(self)

    def read(self) -> list[TodoItem]:
        """A copy of the list: mutating it never changes the store."""
        return [item.model_copy() for item in self._items]

    def has_items(self) -> bool:
        return bool(self._items)

    def summary(self) -> TodoSummary:
        counts = dict.fromkeys(_STATUSES, 0)
        for item in self._items:
            counts[item.status] += 1
        return TodoSummary(total=len(self._items), **counts)

    def to_result(self) -> dict[str, Any]:
        """The ``todo`` tool's result shape: ``{"todos": [...], "summary": {...}}``."""
        return {"todos": [item.model_dump() for item in self._items],
                "summary": self.summary().model_dump()}

    def format_for_injection(self) -> str | None:
        """The active plan (pending and in-progress items only) as a user message to
        inject after context compaction; ``None`` when nothing is active."""
        lines = [
            f"- {'[>]' if item.status == 'in_progress' else '[ ]'} "
            f"{item.id}. {item.content} ({item.status})"
            for item in self._items
            if item.status in ("pending", "in_progress")
        ]
        return "\n".join([INJECTION_HEADER, *lines]) if lines else None

    @classmethod
    def hydrate_from_history(cls, messages: Iterable[Message | Mapping[str, Any]]
                             ) -> TodoStore:
        """Rebuild the plan from history: the latest readable ``todo`` tool result wins.
        Unreadable results (broken JSON, wrong shape) are skipped, never raised; the scan
        goes on to the one before."""
        for message in reversed(list(messages)):
            for content in reversed(_todo_results(message)):
                try:
                    data = json.loads(content)
                    todos = data["todos"]
                    store = cls()
                    store.write(todos)
                except (ValueError, KeyError, TypeError):
                    continue
                return store
        return cls()

    def __repr__(self) -> str:
        s = self.summary()
        return f"TodoStore({s.completed}/{s.total} done)"


_FIELDS = frozenset(TodoItem.model_fields)


def _todo_results(message: Message | Mapping[str, Any]) -> list[str]:
    """The ``todo`` results a history message carries, in order. Accepts our
    :class:`Message` and the seed's plain shape (``role``, ``toolName``, ``content``)."""
    if isinstance(message, Message):
        if message.role != "tool":
            return []
        return [p.content for p in message.tool_results if p.name == "todo"]
    if not isinstance(message, Mapping) or message.get("role") != "tool":
        return []  # anything else in a history is not a todo result; never raise on it
    name = message.get("toolName") or message.get("tool_name") or message.get("name")
    if name is None and isinstance(message.get("metadata"), Mapping):
        name = message["metadata"].get("toolName")
    content = message.get("content")
    return [content] if name == "todo" and isinstance(content, str) else []


# --- the `todo` tool ---------------------------------------------------------------

TODO_TOOL_DESCRIPTION = (
    "Manage the task list of this session. Use it for tasks of 3 or more steps, or when "
    "the user gives several tasks.\n"
    "Call with no arguments to read the current list.\n"
    "Pass `todos` to write: merge=false (default) replaces the whole plan; merge=true "
    "updates items by id and appends new ones.\n"
    "Each item: {id: string, content: string, status: "
    "pending|in_progress|completed|cancelled}.\n"
    "List order is priority. Only one item may be in_progress at a time.\n"
    "Mark an item completed as soon as it is done. If it fails, cancel it and add a "
    "corrective item.\n"
    "Always returns the full list."
)

TODO_TOOL_PARAMETERS: dict[str, Any] = {
    "type": "object",
    "properties": {
        "todos": {
            "type": "array",
            "description": "Task items. Omit to read the current list.",
            "items": {
                "type": "object",
                "properties": {
                    "id": {"type": "string", "description": "Unique identifier"},
                    "content": {"type": "string", "description": "Task description"},
                    "status": {
                        "type": "string",
                        "enum": list(_STATUSES),
                        "description": "Current status",
                    },
                },
                "required": ["id", "content", "status"],
            },
        },
        "merge": {
            "type": "boolean",
            "description": "true = update by id and append new items. "
                           "false (default) = replace the whole list.",
            "default": False,
        },
    },
    "required": [],
}


def run_todo_tool(store: TodoStore, args: Mapping[str, Any]) -> dict[str, Any]:
    """Execute the ``todo`` tool: read when ``todos`` is absent, else write. Returns the
    full list plus summary. Raises :class:`TodoError` for a write it refuses."""
    todos = args.get("todos")
    if todos is not None:
        merge = args.get("merge", False)
        if not isinstance(merge, bool):
            raise TodoError("merge must be true or false")
        store.write(todos, merge=merge)
    return store.to_result()
