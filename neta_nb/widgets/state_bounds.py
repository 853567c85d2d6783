"""How much of a conversation widget state carries: long texts travel as previews that say
how much is hidden, and the full text stays in the kernel, fetched when the user asks.

Widget state is not a store. It is sent to the page whole at every reload and written into
the ``.ipynb`` when widget-state saving is on; measured here (issue 21), one 5 MB tool
result made 5.7 MB of chat view state. So every unbounded field of a drawn message —
message text, thinking, tool arguments and results, skill results, errors — is cut to a
preview here, and the window of messages kept in state is cut to a byte budget, so a saved
chat view stays well under 256 KB whatever the session holds.

A field ``f`` that was cut comes with ``f_chars``: the length of the full text (of the
compact JSON for arguments), so a view can say how much is hidden and offer to fetch the
rest (the ``full_text`` request of :class:`~neta_nb.widgets.ChatView`, ``ToolCard`` and
``SkillCard``). An uncut field has no ``_chars`` companion.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any, TypeVar

__all__ = [
    "ARGS_CHARS",
    "NOTE_CHARS",
    "RESULT_CHARS",
    "SUBAGENT_BYTES",
    "SUBAGENT_ITEMS",
    "TASK_CHARS",
    "TEXT_CHARS",
    "THINKING_CHARS",
    "WINDOW_BYTES",
    "args_json",
    "fit_window",
    "item_bytes",
    "preview_args",
    "preview_text",
    "task_preview",
]

TEXT_CHARS = 20_000
"""A user or assistant message's text in state. A long answer (some 3,000 words) still
shows whole; a pasted log or a runaway answer shows its beginning."""

THINKING_CHARS = 8_000
"""A message's thinking in state: it is folded once done, and read far less than the
answer."""

RESULT_CHARS = 2_000
"""A tool or skill result in state: about what a card's body shows without scrolling, and
enough to see what the tool returned."""

ARGS_CHARS = 2_000
"""A tool call's arguments in state, measured as compact JSON. Longer ones are shown with
long strings and lists shortened (a ``write_file`` with a 5 MB ``content``)."""

TASK_CHARS = 2_000
"""A sub-agent's task in its card's state (the whole task is the child's first message
and the ``delegate`` call's arguments)."""

NOTE_CHARS = 1_000
"""Short fields that are usually a line but come from outside: a skill's step and detail,
an error message (a provider may answer with a whole HTML page)."""

WINDOW_BYTES = 120_000
"""The drawn messages kept in state, as UTF-8 JSON. With the plan (50 items of at most 500
characters) and the rest of the traits, a chat view's state stays under 256 KB; older
messages load from the kernel on scroll as before. (The widgets' code, the JS and CSS
bundle of some 230 KB, is one shared model per kernel, see ``neta_nb.widgets.bundle``; a saved
output carries one static form, see ``neta_nb.widgets.chat.drawing.static``: a saved
notebook with one chat view stays under 512 KB.)"""

SUBAGENT_ITEMS = 30
"""A sub-agent's transcript inside its card in state: its newest responses (a child that
looped through hundreds of tool calls shows its end; earlier ones are in its session)."""

SUBAGENT_BYTES = 40_000
"""The same transcript as UTF-8 JSON: three children running side by side still leave the
parent's window room (see :data:`WINDOW_BYTES`)."""

_ARGS_STRING_CHARS = 240
"""A string inside shortened arguments."""

_ARGS_LIST_ITEMS = 20
"""Items kept of a list inside shortened arguments."""

_ARGS_DEPTH = 6
"""Nesting kept inside shortened arguments (arguments nested hundreds deep exist)."""

_ELLIPSIS = "…"

Item = TypeVar("Item", bound=Mapping[str, Any])


def task_preview(task: str) -> str:
    """A sub-agent's task as its card's header shows it: cut at :data:`TASK_CHARS`. The
    task is the parent model's own writing, of any length, and the card carries it in
    every update of the parent's message."""
    return task if len(task) <= TASK_CHARS else task[:TASK_CHARS] + _ELLIPSIS


def preview_text(fields: dict[str, Any], name: str, limit: int) -> None:
    """Cut ``fields[name]`` to ``limit`` characters, recording the full length in
    ``fields[name + "_chars"]`` when it was cut."""
    text = fields.get(name)
    if isinstance(text, str) and len(text) > limit:
        fields[name] = text[:limit]
        fields[f"{name}_chars"] = len(text)


def args_json(args: Any, *, indent: int | None = None) -> str | None:
    """The arguments as JSON text, or ``None`` when they cannot be written (nested deeper
    than the encoder's recursion allows)."""
    try:
        return json.dumps(args, ensure_ascii=False, default=str, indent=indent,
                          separators=None if indent else (",", ":"))
    except (RecursionError, ValueError, TypeError):
        return None


def preview_args(fields: dict[str, Any], name: str = "args", limit: int = ARGS_CHARS) -> None:
    """Shorten the arguments in ``fields[name]`` when their compact JSON is longer than
    ``limit``: long strings and lists cut, deep nesting folded, and keys dropped past the
    budget. ``fields[name + "_chars"]`` is the full JSON's length (-1 when it cannot be
    written at all)."""
    args = fields.get(name)
    if not isinstance(args, Mapping):
        return
    full = args_json(args)
    if full is not None and len(full) <= limit:
        return
    fields[name] = _shorten_mapping(args, 0, limit)
    fields[f"{name}_chars"] = len(full) if full is not None else -1


def _shorten(value: Any, depth: int) -> Any:
    if isinstance(value, str):
        return value if len(value) <= _ARGS_STRING_CHARS else (
            value[:_ARGS_STRING_CHARS] + _ELLIPSIS)
    if isinstance(value, Mapping):
        return _ELLIPSIS if depth >= _ARGS_DEPTH else _shorten_mapping(value, depth, None)
    if isinstance(value, Sequence) and not isinstance(value, (bytes, bytearray)):
        if depth >= _ARGS_DEPTH:
            return _ELLIPSIS
        kept = [_shorten(item, depth + 1) for item in list(value)[:_ARGS_LIST_ITEMS]]
        if len(value) > _ARGS_LIST_ITEMS:
            kept.append(f"{_ELLIPSIS} +{len(value) - _ARGS_LIST_ITEMS}")
        return kept
    if value is None or isinstance(value, (bool, int, float)):
        return value
    return _shorten(str(value), depth)


def _shorten_mapping(mapping: Mapping[Any, Any], depth: int, budget: int | None
                     ) -> dict[str, Any]:
    shortened: dict[str, Any] = {}
    used = 2
    for position, (key, value) in enumerate(mapping.items()):
        entry = _shorten(value, depth + 1)
        if budget is not None:
            used += len(str(key)) + len(args_json(entry) or "") + 4
            if used > budget and shortened:
                shortened[_ELLIPSIS] = f"+{len(mapping) - position}"
                break
        shortened[str(key)[:_ARGS_STRING_CHARS]] = entry
    return shortened


def item_bytes(item: Mapping[str, Any]) -> int:
    """The size of one drawn item in state (UTF-8 JSON, as a saved notebook holds it)."""
    return len(json.dumps(item, ensure_ascii=False, default=str).encode("utf-8"))


def fit_window(items: list[Item], budget: int = WINDOW_BYTES) -> tuple[list[Item], bool]:
    """The newest ``items`` that fit in ``budget`` bytes (at least one), and whether older
    ones were left out (they load on scroll like any older page). A single item over the
    budget — hundreds of tool calls in one message — keeps its cards without previews."""
    kept: list[Item] = []
    used = 0
    for item in reversed(items):
        size = item_bytes(item)
        if kept and used + size > budget:
            break
        kept.append(item)
        used += size
    kept.reverse()
    if len(kept) == 1 and used > budget:
        kept = [_without_card_previews(kept[0])]
    return kept, len(kept) < len(items)


def _without_card_previews(item: Item) -> Item:
    cards = item.get("cards")
    if not cards:
        return item
    bare = []
    for card in cards:
        card = dict(card)
        part = card.get("subagent")
        if isinstance(part, Mapping) and part.get("messages"):
            # A sub-agent's transcript goes too: its card still says who did what.
            card["subagent"] = {**part, "messages": [], "has_older": True}
        for name in ("result", "args"):
            value = card.get(name)
            if value:
                full = value if isinstance(value, str) else args_json(value)
                card.setdefault(f"{name}_chars", len(full) if full is not None else 0)
                card[name] = "" if isinstance(value, str) else {}
        bare.append(card)
    return {**item, "cards": bare}  # type: ignore[return-value]
