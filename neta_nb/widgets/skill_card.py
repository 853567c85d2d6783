"""``SkillCard``: one skill run (seed 002 §4), a single card from running to done or error:
progress and step while running, then the result in the same place."""

from __future__ import annotations

import html
from typing import Any, get_args

import traitlets

from ..events import ProgressEvent, SkillEndEvent, SkillStartEvent
from ..labels import t
from ..messages import RunStatus
from ._base import NetaWidget, escape_markdown, fenced, html_card

__all__ = ["SkillCard"]

_STATUS_COLOR = {"waiting": "#b35c00", "running": "#1976d2", "done": "#2e7d32",
                 "error": "#d32f2f", "rejected": "#6e7781", "cancelled": "#6e7781"}


class SkillCard(NetaWidget):
    """A skill run. ``SkillCard.from_event(skill_start)``, then ``card.apply(progress)``
    and ``card.apply(skill_end)``."""

    _component = traitlets.Unicode("skill-card").tag(sync=True)
    name = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Enum(get_args(RunStatus), default_value="running").tag(sync=True)
    percent = traitlets.Float(0.0, min=0.0, max=100.0).tag(sync=True)
    step = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    detail = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    result = traitlets.Unicode(None, allow_none=True,
                               help="Markdown, rendered sanitized.").tag(sync=True)
    expanded = traitlets.Bool(False, help="Whether the result is unfolded.").tag(sync=True)

    @classmethod
    def from_event(cls, event: SkillStartEvent, **kwargs: Any) -> SkillCard:
        return cls(name=event.name, label=event.label, **kwargs)

    def apply(self, event: ProgressEvent | SkillEndEvent) -> None:
        """Follow a ``progress`` or ``skill_end`` event."""
        with self.hold_sync():
            if isinstance(event, ProgressEvent):
                self.percent = min(100.0, max(0.0, event.percent))
                self.step = event.step
                self.detail = event.detail
            else:
                self.result = event.result
                self.status = event.status
                if event.status == "done":
                    self.percent = 100.0

    def __repr__(self) -> str:
        progress = f" {round(self.percent)}%" if self.status == "running" else ""
        return f"SkillCard({self.name or '?'}: {self.status}{progress})"

    def _title(self) -> str:
        name = self.label or self.name
        if self.status == "running":
            step = self.step or self.detail
            return f"{name} · {round(self.percent)}%" + (f" · {step}" if step else "")
        prefix = "skill" if self.status in ("done", "error") else "tool"
        return f"{name} · {t(f'{prefix}_{self.status}', self.lang)}"

    def _fallback_text(self) -> str:
        return self._title() + (f"\n{self.result}" if self.result else "")

    def _fallback_markdown(self) -> str:
        # The result is shown as text: a static viewer's markdown renderer may not sanitize.
        title = f"**{escape_markdown(self._title())}**"
        return title + (f"\n\n{fenced(self.result)}" if self.result else "")

    def _fallback_html(self) -> str:
        body = ""
        if self.status == "running":
            body = (f'<div style="height:4px;background:rgba(127,127,127,.2);border-radius:2px;'
                    f'margin-top:6px"><div style="height:4px;width:{self.percent:.0f}%;'
                    f'background:#1976d2;border-radius:2px"></div></div>')
        if self.result:
            body += (f'<pre style="white-space:pre-wrap;margin:6px 0 0">'
                     f"{html.escape(self.result)}</pre>")
        return html_card(html.escape(self._title()), body, accent=_STATUS_COLOR[self.status])
