"""The chat view's static form, for viewers without the live widget (a notebook saved
without widget state and reopened, GitHub, nbviewer, nbconvert): one HTML form — the
conversation as drawn, the plan, a card per tool or skill call (a sub-agent's with its
name, how its run ended, its task and the start of its answer), the token figures — and a
short plain-text line beside it.

Model text is written as text (escaped, never live markdown or HTML: a static viewer may
not sanitize). The form is written into the notebook with the output and sent again each
time it is updated (the end of every turn), so it is bounded: the newest messages up to
:data:`STATIC_CHARS`, and a line saying how many earlier ones are left out. The items are
the chat view's state, whose long fields are previews already (``neta_nb.widgets.state_bounds``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ....escaping import static_markdown_html
from ....labels import LABELS, t
from ....tools.rich import CELL_EDIT_TYPE
from ...cards.todo_card import plan_html
from ...cards.token_stats import usage_html
from ...rich_static import attachment_placeholder, output_placeholder, proposal_html

__all__ = ["CARD_RESULT_CHARS", "STATIC_CHARS", "shown_title", "static_html", "static_summary",
           "static_text", "transcript"]

STATIC_CHARS = 24_000
"""Characters of conversation in the static form: a long answer (some 3,000 words) shows
whole; with the widget state (bounded the same way) a saved chat stays under twice its
transcript plus a few KB."""

CARD_RESULT_CHARS = 300
"""The start of a tool or skill result shown on its static card (the card says how long
the whole is)."""

CARD_MARKDOWN_CHARS = 2_000
"""A whole result up to this long is drawn on its static card as the live card draws it
(markdown: a profile's table as a table); a longer one, or a preview, shows its start as
text — cut anywhere, its markdown would be broken."""

_MUTED = "opacity:.72"  # muted in light and dark pages alike (no colour of its own)
_BOX = ("border:1px solid #d0d7de;border-radius:6px;padding:4px 8px;margin:4px 0;"
        "font-size:12px")
_STATUS_ACCENT = {"running": "#1976d2", "done": "#2e7d32", "error": "#c62828",
                  "cancelled": "#8c959f", "rejected": "#8c959f", "interrupted": "#8c959f"}


def shown_title(title: str, untitled: bool, lang: str) -> str:
    """A session's title as the views show it: "New chat" in their language before any."""
    return t("new_chat", lang) if untitled else title


def _cut_note(shown: str, total: int | None, lang: str) -> str:
    if not total:
        return shown
    note = t("text_cut", lang, shown=f"{len(shown):,}", total=f"{total:,}")
    return f"{shown}…\n[{note}]"


def _subagent(card: Mapping[str, Any]) -> Mapping[str, Any] | None:
    part = card.get("subagent")
    return part if card.get("kind") == "subagent" and isinstance(part, Mapping) else None


def _subagent_title(part: Mapping[str, Any], lang: str) -> str:
    status = str(part.get("status", "done"))
    key = f"subagent_{status}" if f"subagent_{status}" in LABELS["en"] else "subagent_done"
    return t("subagent_static", lang, agent=part.get("agent") or "?",
             status=t(key, lang), task=part.get("task") or "")


def _subagent_answer(part: Mapping[str, Any]) -> str:
    """The child's last answer, on one line (its whole transcript is in the widget state
    and in its own session)."""
    answers = [item.get("text") for item in part.get("messages") or []
               if item.get("role") == "assistant" and item.get("text")]
    return " ".join(str(answers[-1]).split()) if answers else ""


def _card_title(card: Mapping[str, Any], lang: str) -> str:
    part = _subagent(card)
    if part is not None:
        return "↳ " + _subagent_title(part, lang)
    name = card.get("label") or card.get("name") or "?"
    status = str(card.get("status", "done"))
    key = f"skill_{status}" if card.get("kind") == "skill" else f"tool_{status}"
    return f"{name} · {t(key if key in LABELS['en'] else f'tool_{status}', lang)}"


def _card_line(card: Mapping[str, Any], lang: str) -> str:
    part = _subagent(card)
    if part is not None:
        line = f"↳ [{_subagent_title(part, lang)}]"
        answer = _subagent_answer(part)
        if len(answer) > CARD_RESULT_CHARS:
            answer = answer[:CARD_RESULT_CHARS] + "…"
        return f"{line} {answer}" if answer else line
    line = f"[{_card_title(card, lang)}]"
    total = card.get("result_chars")
    if total:  # a preview: the static form names the result's size instead
        line += f" ({t('result_size', lang, total=f'{int(total):,}')})"
    outputs = card.get("outputs") or []
    if outputs:
        line += " " + " ".join(output_placeholder(item, lang) for item in outputs)
    return line


def _drawn_whole(card: Mapping[str, Any]) -> bool:
    """The card's result is whole (not a preview), short, and not JSON (shown as sent)."""
    result = card.get("result")
    if not isinstance(result, str) or not result or card.get("result_chars"):
        return False
    return len(result) <= CARD_MARKDOWN_CHARS and result.lstrip()[:1] not in ("{", "[")


def _card_weight(card: Mapping[str, Any]) -> int:
    """About how many characters the card takes in the static form."""
    result = card.get("result")
    return 80 + (len(result) if _drawn_whole(card) and isinstance(result, str)
                 else CARD_RESULT_CHARS)


def _card_html(card: Mapping[str, Any], lang: str) -> str:
    accent = _STATUS_ACCENT.get(str(card.get("status")), "#1976d2")
    body = ""
    part = _subagent(card)
    result = _subagent_answer(part) if part is not None else card.get("result")
    if part is not None:
        accent = _STATUS_ACCENT.get(str(part.get("status")), "#1976d2")
    if part is None and _drawn_whole(card):
        body = (f'<div class="neta-static-text" style="margin:4px 0 0">'
                f'{static_markdown_html(str(result))}</div>')
    elif isinstance(result, str) and result:
        total = (len(result) if part is not None else card.get("result_chars")) or len(result)
        shown = result[:CARD_RESULT_CHARS]
        note = (f'<div style="{_MUTED}">{html.escape(t("result_size", lang, total=f"{total:,}"))}'
                f"</div>" if total > len(shown) else "")
        body = (f'<pre style="white-space:pre-wrap;margin:4px 0 0;font-size:11px">'
                f"{html.escape(shown)}{'…' if total > len(shown) else ''}</pre>{note}")
    outputs = card.get("outputs") or []
    if outputs:  # figures and tables: named here (their data is in the widget state)
        body += "".join(proposal_html(item, lang) if item.get("media_type") == CELL_EDIT_TYPE
                        else f'<div style="{_MUTED}">{html.escape(output_placeholder(item, lang))}'
                        "</div>" for item in outputs)
    return (f'<div class="neta-static-card" style="{_BOX};border-left:3px solid {accent}">'
            f'<b>{html.escape(_card_title(card, lang))}</b>{body}</div>')


def _message_text(item: Mapping[str, Any], lang: str) -> str:
    text = _cut_note(item.get("text") or "", item.get("text_chars"), lang)
    files = " ".join(attachment_placeholder(a, lang) for a in item.get("attachments") or [])
    if files:
        text = f"{text}\n{files}".strip()
    if not text and item.get("interrupted"):
        text = f"({t('stopped', lang)})"
    if item.get("error"):
        text = f"{text}\n\n{t('error', lang)}: {item['error']}".strip()
    return text


def _message_html(item: Mapping[str, Any], lang: str) -> str:
    """A message's body in the HTML form: the model's markdown drawn (safely, see
    ``static_markdown_html``), the user's words as typed; then what the text form says
    besides (a cut, an error) as muted text."""
    if item["role"] != "assistant" or not item.get("text"):
        text = _message_text(item, lang)
        return f'<div style="white-space:pre-wrap">{html.escape(text)}</div>' if text else ""
    body = f'<div class="neta-static-text">{static_markdown_html(item["text"])}</div>'
    notes: list[str] = []
    if item.get("text_chars"):
        notes.append(t("text_cut", lang, shown=f"{len(item['text']):,}",
                       total=f"{item['text_chars']:,}"))
    if item.get("error"):
        notes.append(f"{t('error', lang)}: {item['error']}")
    if notes:
        body += (f'<div style="white-space:pre-wrap;{_MUTED}">'
                 f'{html.escape(chr(10).join(notes))}</div>')
    return body


def transcript(items: Sequence[Mapping[str, Any]], lang: str = "en"
               ) -> tuple[list[Mapping[str, Any]], int]:
    """The user and assistant items that fit in :data:`STATIC_CHARS`, newest kept, and how
    many earlier ones are left out."""
    shown = [item for item in items if item["role"] in ("user", "assistant")
             and (item.get("cards") or _message_text(item, lang))]  # not a bare todo call
    kept: list[Mapping[str, Any]] = []
    used = 0
    for item in reversed(shown):
        size = len(_message_text(item, lang)) + sum(_card_weight(card)
                                                     for card in item.get("cards") or [])
        if kept and used + size > STATIC_CHARS:
            break
        kept.append(item)
        used += size
    kept.reverse()
    return kept, len(shown) - len(kept)


def _speaker(item: Mapping[str, Any], agent: str, lang: str) -> str:
    return t("you", lang) if item["role"] == "user" else agent


def static_text(agent: str, items: Sequence[Mapping[str, Any]], lang: str = "en") -> str:
    """The conversation as text, for the short ``text/plain`` beside the HTML form (the
    caller cuts it) and for ``print``-like uses; the newest messages last."""
    kept, hidden = transcript(items, lang)
    lines = [t("static_hidden", lang, n=hidden)] if hidden else []
    for item in kept:
        calls = "\n".join(_card_line(card, lang) for card in item.get("cards") or [])
        text = "\n\n".join(part for part in (calls, _message_text(item, lang)) if part)
        lines.append(f"{_speaker(item, agent, lang)}: {text}")
    return "\n\n".join(lines)


def static_summary(agent: str, items: Sequence[Mapping[str, Any]], lang: str = "en") -> str:
    """One or two lines: who, how many messages, the start of the last answer."""
    shown = [item for item in items if item["role"] in ("user", "assistant")]
    last = next((item for item in reversed(shown) if item["role"] == "assistant"), None)
    head = f"{agent} · {t('static_messages', lang, n=len(shown))}"
    return f"{head}\n{_message_text(last, lang)}" if last is not None else head


def static_html(agent: str, items: Sequence[Mapping[str, Any]], *, empty: str,
                todos: Sequence[Mapping[str, Any]] = (),
                current: Mapping[str, Any] | None = None,
                context: Mapping[str, Any] | None = None,
                heading: Sequence[str] = (),
                lang: str = "en") -> str:
    """The chat as one self-contained HTML block (inline styles; every text escaped).
    ``heading``: the session's title, then notes shown after it (a branch's parent, the
    session's cost)."""
    kept, hidden = transcript(items, lang)
    rows = []
    if heading:
        notes = "".join(f' <span style="{_MUTED}">· {html.escape(note)}</span>'
                        for note in heading[1:])
        rows.append(f'<div class="neta-static-heading" style="margin:4px 0">'
                    f"<b>{html.escape(heading[0])}</b>{notes}</div>")
    if hidden:
        rows.append(f'<div style="margin:6px 0;{_MUTED}"><i>'
                    f"{html.escape(t('static_hidden', lang, n=hidden))}</i></div>")
    for item in kept:
        speaker = html.escape(_speaker(item, agent, lang))
        cards = "".join(_card_html(card, lang) for card in item.get("cards") or [])
        body = _message_html(item, lang)
        role = "user" if item["role"] == "user" else "assistant"
        rows.append(f'<div class="neta-static-{role}" style="margin:8px 0">'
                    f"<b>{speaker}</b>{cards}{body}</div>")
    if not kept and not hidden:
        rows.append(f'<div style="{_MUTED}">{html.escape(empty)}</div>')
    plan = plan_html(todos, lang) if todos else ""
    usage = ""
    if kept and current and context and "percent" in context and "api_calls" in current:
        usage = f'<div style="margin-top:6px">{usage_html(current, context, False, lang)}</div>'
    return (f'<div class="neta-static neta-static-chat" style="font-family:system-ui,'
            f'sans-serif;font-size:13px;line-height:1.5">{plan}{"".join(rows)}{usage}</div>')
