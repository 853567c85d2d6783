"""The chat view's static forms — plain text, markdown and HTML — for viewers without a
kernel (nbconvert, GitHub, a notebook reopened without widget state): the conversation as
drawn, with model text kept as text (never live markdown or HTML: see
``literal_markdown``), one line per tool or skill call — a sub-agent's with its name, how
its run ended, its task and the start of its answer — and a word where a text was cut.

They are written into the notebook with the output, three times over (one per form), so
each is bounded: the newest messages up to :data:`STATIC_CHARS`, and a line saying how
many earlier ones are left out. The items are the chat view's state, whose long fields are
previews already (``_state_bounds``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ..labels import LABELS, t
from ._base import escape_markdown, literal_markdown
from ._rich_static import attachment_placeholder, output_placeholder

__all__ = ["STATIC_CHARS", "static_html", "static_markdown", "static_text"]

STATIC_CHARS = 24_000
"""Characters of conversation in one static form: three forms, the widget state and the
widget's code together stay under 512 KB in a saved notebook."""


def _cut_note(shown: str, total: int | None, lang: str) -> str:
    if not total:
        return shown
    note = t("text_cut", lang, shown=f"{len(shown):,}", total=f"{total:,}")
    return f"{shown}…\n[{note}]"


SUBAGENT_ANSWER_CHARS = 300
"""Of a sub-agent's answer, what its line in a static form quotes (its whole transcript is
in the widget state and its own session)."""


def _subagent_line(part: Mapping[str, Any], lang: str) -> str:
    status = str(part.get("status", "done"))
    key = f"subagent_{status}" if f"subagent_{status}" in LABELS["en"] else "subagent_done"
    line = "↳ [" + t("subagent_static", lang, agent=part.get("agent") or "?",
                     status=t(key, lang), task=part.get("task") or "") + "]"
    answers = [item.get("text") for item in part.get("messages") or []
               if item.get("role") == "assistant" and item.get("text")]
    if answers:
        answer = " ".join(str(answers[-1]).split())
        if len(answer) > SUBAGENT_ANSWER_CHARS:
            answer = answer[:SUBAGENT_ANSWER_CHARS] + "…"
        line += f" {answer}"
    return line


def _card_line(card: Mapping[str, Any], lang: str) -> str:
    part = card.get("subagent")
    if card.get("kind") == "subagent" and isinstance(part, Mapping):
        return _subagent_line(part, lang)
    name = card.get("label") or card.get("name") or "?"
    status = str(card.get("status", "done"))
    key = f"skill_{status}" if card.get("kind") == "skill" else f"tool_{status}"
    line = f"[{name} · {t(key if key in LABELS['en'] else f'tool_{status}', lang)}]"
    total = card.get("result_chars")
    if total:  # a preview: the static form names the result's size instead
        line += f" ({t('result_size', lang, total=f'{int(total):,}')})"
    outputs = card.get("outputs") or []
    if outputs:
        line += " " + " ".join(output_placeholder(item, lang) for item in outputs)
    return line


def transcript(items: Sequence[Mapping[str, Any]], lang: str = "en"
               ) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant items — the newest that fit in
    :data:`STATIC_CHARS` — with stops, errors, calls and cuts said."""
    lines: list[tuple[str, str]] = []
    for item in items:
        if item["role"] == "user":
            text = _cut_note(item.get("text") or "", item.get("text_chars"), lang)
            files = " ".join(attachment_placeholder(a, lang)
                             for a in item.get("attachments") or [])
            lines.append(("user", f"{text}\n{files}".strip() if files else text))
        elif item["role"] == "assistant":
            text = _cut_note(item.get("text") or "", item.get("text_chars"), lang)
            calls = "\n".join(_card_line(card, lang) for card in item.get("cards") or [])
            text = "\n\n".join(part for part in (calls, text) if part)
            if not text and item.get("interrupted"):
                text = "(stopped)"
            if item.get("error"):
                text = f"{text}\n\nError: {item['error']}".strip()
            lines.append(("assistant", text))
    kept: list[tuple[str, str]] = []
    used = 0
    for role, text in reversed(lines):
        if kept and used + len(text) > STATIC_CHARS:
            break
        kept.append((role, text if len(text) <= STATIC_CHARS else _cut_note(
            text[:STATIC_CHARS], len(text), lang)))
        used += len(text)
    kept.reverse()
    if len(kept) < len(lines):
        kept.insert(0, ("note", f"({len(lines) - len(kept)} earlier messages not shown)"))
    return kept


def _speaker(role: str, agent: str) -> str:
    return "You" if role == "user" else agent


def static_text(agent: str, items: Sequence[Mapping[str, Any]], lang: str = "en") -> str:
    return "\n\n".join(text if role == "note" else f"{_speaker(role, agent)}: {text}"
                       for role, text in transcript(items, lang))


def static_markdown(agent: str, items: Sequence[Mapping[str, Any]], lang: str = "en") -> str:
    name = escape_markdown(agent)
    parts = [f"*{escape_markdown(text)}*" if role == "note"
             else f"**You:** {literal_markdown(text)}" if role == "user"
             else f"**{name}:**\n\n{literal_markdown(text)}"
             for role, text in transcript(items, lang)]
    return "\n\n---\n\n".join(parts)


def static_html(agent: str, items: Sequence[Mapping[str, Any]], *, empty: str,
                lang: str = "en") -> str:
    name = html.escape(agent)
    rows = [f'<div style="margin:6px 0;opacity:.7"><i>{html.escape(text)}</i></div>'
            if role == "note" else
            f'<div style="margin:6px 0"><b>{"You" if role == "user" else name}:</b> '
            f'<span style="white-space:pre-wrap">{html.escape(text)}</span></div>'
            for role, text in transcript(items, lang)]
    return (f'<div class="neta-static" style="font-family:system-ui,sans-serif;'
            f'font-size:13px">{"".join(rows) or html.escape(empty)}</div>')
