"""``SkillCard``: one skill run (seed 002 §4), a single card from running to done or error:
progress and step while running, then the result in the same place.

A long result is a preview in the synced state (``result_chars`` says how long the whole
is, see ``neta_nb.widgets.state_bounds``); the whole stays in the kernel for ``full_text``."""

from __future__ import annotations

import html
from typing import Any, get_args

import traitlets

from ...events import ProgressEvent, SkillEndEvent, SkillStartEvent
from ...labels import t
from ...messages import RunStatus
from ..base import NetaWidget, RequestError, handles, html_card
from ..state_bounds import NOTE_CHARS
from .tool_card import result_preview
from .wire import CardFullText, CardFullTextRequest

__all__ = ["SkillCard"]

_STATUS_COLOR = {"waiting": "#b35c00", "running": "#1976d2", "done": "#2e7d32",
                 "error": "#d32f2f", "rejected": "#6e7781", "cancelled": "#6e7781"}


class SkillCard(NetaWidget):
    """A skill run. ``SkillCard.from_event(skill_start)``, then ``card.apply(progress)``
    and ``card.apply(skill_end)``."""

    _component = traitlets.Unicode("skill-card").tag(sync=True)
    _static_traits = ("status", "percent", "step", "result", "lang")
    name = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Enum(get_args(RunStatus), default_value="running").tag(sync=True)
    percent = traitlets.Float(0.0, min=0.0, max=100.0).tag(sync=True)
    step = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    detail = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    result = traitlets.Unicode(None, allow_none=True,
                               help="Markdown, rendered sanitized.").tag(sync=True)
    expanded = traitlets.Bool(False, help="Whether the result is unfolded.").tag(sync=True)
    result_chars = traitlets.Int(0, help="Length of the whole result when `result` is a "
                                         "preview; 0 when it is whole.").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        self.full_result: str | None = None
        super().__init__(**kwargs)

    @traitlets.validate("result")
    def _keep_whole_result(self, proposal: Any) -> str | None:
        self.full_result = proposal["value"]
        preview, self.result_chars = result_preview(self.full_result)
        return preview

    @traitlets.validate("step", "detail")
    def _short_note(self, proposal: Any) -> str | None:
        value = proposal["value"]
        return value[:NOTE_CHARS] if isinstance(value, str) else value

    @handles("full_text")
    def _full_text(self, request: CardFullTextRequest) -> CardFullText:
        """The whole result the state holds a preview of."""
        if request.get("field") != "result":
            raise RequestError("full_text needs 'field': 'result'")
        return {"text": self.full_result or ""}

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

    def _shown_result(self) -> str:
        """The result as state holds it, with how much of the whole it is."""
        result = self.result or ""
        if result and self.result_chars:
            result += "…\n[" + t("text_cut", self.lang, shown=f"{len(result):,}",
                                  total=f"{self.result_chars:,}") + "]"
        return result

    def _fallback_text(self) -> str:
        return self._title() + (f"\n{self._shown_result()}" if self.result else "")

    def _fallback_html(self) -> str:
        body = ""
        if self.status == "running":
            body = (f'<div style="height:4px;background:rgba(127,127,127,.2);border-radius:2px;'
                    f'margin-top:6px"><div style="height:4px;width:{self.percent:.0f}%;'
                    f'background:#1976d2;border-radius:2px"></div></div>')
        if self.result:
            body += (f'<pre style="white-space:pre-wrap;margin:6px 0 0">'
                     f"{html.escape(self._shown_result())}</pre>")
        return html_card(html.escape(self._title()), body, accent=_STATUS_COLOR[self.status])
