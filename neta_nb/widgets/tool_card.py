"""``ToolCard``: one tool call (seed 000 §5) — name or label, running / done / error, and
the arguments and result on expand."""

from __future__ import annotations

import html
import json
from typing import Any, get_args

import traitlets

from ..events import ToolCallEvent, ToolResultEvent
from ..labels import t
from ..messages import RunStatus
from ._base import NetaWidget, escape_markdown, fenced, html_card

__all__ = ["ToolCard"]

_STATUS_COLOR = {"waiting": "#b35c00", "running": "#1976d2", "done": "#2e7d32",
                 "error": "#d32f2f", "rejected": "#6e7781", "cancelled": "#6e7781"}


class ToolCard(NetaWidget):
    """A tool call. ``ToolCard.from_event(tool_call)`` then ``card.apply(tool_result)``."""

    _component = traitlets.Unicode("tool-card").tag(sync=True)
    name = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("", help="Display name; the tool name when empty.").tag(sync=True)
    status = traitlets.Enum(get_args(RunStatus), default_value="running").tag(sync=True)
    args = traitlets.Dict(help="The call's arguments (shown as JSON).").tag(sync=True)
    result = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    expanded = traitlets.Bool(False).tag(sync=True)

    @classmethod
    def from_event(cls, event: ToolCallEvent, **kwargs: Any) -> ToolCard:
        return cls(name=event.name, label=event.label, args=dict(event.args), **kwargs)

    def apply(self, event: ToolResultEvent) -> None:
        """Finish the card with a ``tool_result`` event."""
        with self.hold_sync():
            self.result = event.result
            self.status = "error" if event.is_error else "done"

    def __repr__(self) -> str:
        return f"ToolCard({self.name or '?'}: {self.status})"

    def _title(self) -> str:
        status = t(f"tool_{self.status}", self.lang)
        return f"{self.label or self.name} · {status}"

    def _args_json(self) -> str:
        return json.dumps(self.args, ensure_ascii=False, indent=2, default=str)

    def _fallback_text(self) -> str:
        lines = [self._title()]
        if self.args:
            args = json.dumps(self.args, ensure_ascii=False, default=str)
            lines.append(f"{t('arguments', self.lang)}: {args}")
        if self.result is not None:
            lines.append(f"{t('result', self.lang)}: {self.result}")
        return "\n".join(lines)

    def _fallback_markdown(self) -> str:
        parts = [f"**{escape_markdown(self._title())}**"]
        if self.args:
            parts.append(f"{t('arguments', self.lang)}:\n\n{fenced(self._args_json(), 'json')}")
        if self.result is not None:
            parts.append(f"{t('result', self.lang)}:\n\n{fenced(self.result)}")
        return "\n\n".join(parts)

    def _fallback_html(self) -> str:
        pre = ('<pre style="white-space:pre-wrap;margin:4px 0;padding:6px 8px;'
               'background:rgba(127,127,127,.08);border-radius:4px">')
        body = ""
        if self.args:
            args = html.escape(self._args_json())
            body += f"<div>{t('arguments', self.lang)}</div>{pre}{args}</pre>"
        if self.result is not None:
            body += f"<div>{t('result', self.lang)}</div>{pre}{html.escape(self.result)}</pre>"
        return html_card(html.escape(self._title()), body, accent=_STATUS_COLOR[self.status])
