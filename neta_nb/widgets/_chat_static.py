"""The chat view's static forms — plain text, markdown and HTML — for viewers without a
kernel (nbconvert, GitHub, a notebook reopened without widget state): the conversation as
drawn, with model text kept as text (never live markdown or HTML: see
``literal_markdown``)."""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from typing import Any

from ._base import escape_markdown, literal_markdown

__all__ = ["static_html", "static_markdown", "static_text"]


def transcript(items: Sequence[Mapping[str, Any]]) -> list[tuple[str, str]]:
    """(role, text) of the user and assistant items, with stops and errors said."""
    lines: list[tuple[str, str]] = []
    for item in items:
        if item["role"] == "user":
            lines.append(("user", item["text"]))
        elif item["role"] == "assistant":
            text = item["text"] or ("(stopped)" if item.get("interrupted") else "")
            if item.get("error"):
                text = f"{text}\n\nError: {item['error']}".strip()
            lines.append(("assistant", text))
    return lines


def static_text(agent: str, items: Sequence[Mapping[str, Any]]) -> str:
    return "\n\n".join(f"{'You' if role == 'user' else agent}: {text}"
                       for role, text in transcript(items))


def static_markdown(agent: str, items: Sequence[Mapping[str, Any]]) -> str:
    name = escape_markdown(agent)
    parts = [f"**You:** {literal_markdown(text)}" if role == "user"
             else f"**{name}:**\n\n{literal_markdown(text)}"
             for role, text in transcript(items)]
    return "\n\n---\n\n".join(parts)


def static_html(agent: str, items: Sequence[Mapping[str, Any]], *, empty: str) -> str:
    name = html.escape(agent)
    rows = [f'<div style="margin:6px 0"><b>{"You" if role == "user" else name}:</b> '
            f'<span style="white-space:pre-wrap">{html.escape(text)}</span></div>'
            for role, text in transcript(items)]
    return (f'<div class="neta-static" style="font-family:system-ui,sans-serif;'
            f'font-size:13px">{"".join(rows) or html.escape(empty)}</div>')
