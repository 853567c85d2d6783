"""``ToolCard``: one tool call (seed 000 §5) — name or label, running / done / error, and
the arguments and result on expand.

Long arguments and results are previews in the synced state (``args_chars`` /
``result_chars`` say how long the whole is, see ``neta_nb.widgets.state_bounds``); the card keeps
the whole in the kernel and the view fetches it with ``full_text`` when the user asks."""

from __future__ import annotations

import html
import json
from typing import Any, get_args

import traitlets

from ...events import ToolCallEvent, ToolResultEvent
from ...labels import t
from ...messages import RunStatus
from ..base import NetaWidget, RequestError, handles, html_card
from ..rich_static import THUMBNAIL_BUDGET, output_html, output_placeholder
from ..state_bounds import ARGS_CHARS, RESULT_CHARS, args_json, preview_args, preview_text
from .wire import CardFullText, CardFullTextRequest

__all__ = ["CardFullTextRequest", "ToolCard", "result_preview"]

_STATUS_COLOR = {"waiting": "#b35c00", "running": "#1976d2", "done": "#2e7d32",
                 "error": "#d32f2f", "rejected": "#6e7781", "cancelled": "#6e7781"}

def result_preview(result: str | None) -> tuple[str | None, int]:
    """What a card's state carries of ``result``, and the whole's length when that is a
    preview (0: it is whole). The whole stays in the kernel for ``full_text``."""
    fields: dict[str, Any] = {"result": result}
    preview_text(fields, "result", RESULT_CHARS)
    return fields["result"], int(fields.get("result_chars", 0))


class ToolCard(NetaWidget):
    """A tool call. ``ToolCard.from_event(tool_call)`` then ``card.apply(tool_result)``.

    Setting ``args`` or ``result`` keeps the whole in the kernel (:attr:`full_args`,
    :attr:`full_result`) and a preview in the synced trait."""

    _component = traitlets.Unicode("tool-card").tag(sync=True)
    _static_traits = ("status", "args", "result", "label", "lang")
    name = traitlets.Unicode("").tag(sync=True)
    label = traitlets.Unicode("", help="Display name; the tool name when empty.").tag(sync=True)
    status = traitlets.Enum(get_args(RunStatus), default_value="running").tag(sync=True)
    args = traitlets.Dict(help="The call's arguments (shown as JSON).").tag(sync=True)
    result = traitlets.Unicode(None, allow_none=True).tag(sync=True)
    expanded = traitlets.Bool(False).tag(sync=True)
    args_chars = traitlets.Int(0, help="Length of the whole arguments' JSON when `args` is a "
                                       "preview (-1: too deep to measure); 0 when it is "
                                       "whole.").tag(sync=True)
    result_chars = traitlets.Int(0, help="Length of the whole result when `result` is a "
                                         "preview; 0 when it is whole.").tag(sync=True)
    outputs = traitlets.List(traitlets.Dict(), help="What the tool displayed: figures, "
                             "tables (DisplayItem dumps).").tag(sync=True)

    def __init__(self, **kwargs: Any) -> None:
        self.full_args: dict[str, Any] = {}
        self.full_result: str | None = None
        super().__init__(**kwargs)

    @traitlets.validate("args")
    def _keep_whole_args(self, proposal: Any) -> dict[str, Any]:
        # Runs for the constructor's value too: the whole stays here, the trait previews.
        self.full_args = dict(proposal["value"])
        fields: dict[str, Any] = {"args": self.full_args}
        preview_args(fields, limit=ARGS_CHARS)
        self.args_chars = int(fields.get("args_chars", 0))
        return dict(fields["args"])

    @traitlets.validate("result")
    def _keep_whole_result(self, proposal: Any) -> str | None:
        self.full_result = proposal["value"]
        preview, self.result_chars = result_preview(self.full_result)
        return preview

    @handles("full_text")
    def _full_text(self, request: CardFullTextRequest) -> CardFullText:
        """The whole result or arguments the state holds a preview of."""
        field_name = request.get("field")
        if field_name == "result":
            return {"text": self.full_result or ""}
        if field_name == "args":
            text = args_json(self.full_args, indent=2)
            if text is None:
                raise RequestError("these arguments are nested too deeply to show as JSON")
            return {"text": text}
        raise RequestError("full_text needs 'field': 'result' or 'args'")

    @classmethod
    def from_event(cls, event: ToolCallEvent, **kwargs: Any) -> ToolCard:
        return cls(name=event.name, label=event.label, args=dict(event.args), **kwargs)

    def apply(self, event: ToolResultEvent) -> None:
        """Finish the card with a ``tool_result`` event."""
        with self.hold_sync():
            self.result = event.result
            self.outputs = list(event.outputs)
            self.status = "error" if event.is_error else "done"

    def __repr__(self) -> str:
        return f"ToolCard({self.name or '?'}: {self.status})"

    def _title(self) -> str:
        status = t(f"tool_{self.status}", self.lang)
        return f"{self.label or self.name} · {status}"

    def _args_json(self) -> str:
        return json.dumps(self.args, ensure_ascii=False, indent=2, default=str)

    def _result_note(self) -> str:
        """Said after a result preview: how much of the whole it is."""
        if not self.result_chars or self.result is None:
            return ""
        return "…\n[" + t("text_cut", self.lang, shown=f"{len(self.result):,}",
                           total=f"{self.result_chars:,}") + "]"

    def _args_note(self) -> str:
        if not self.args_chars:
            return ""
        if self.args_chars < 0:  # too deeply nested to measure
            return " [" + t("args_cut_unknown", self.lang) + "]"
        return " [" + t("args_cut", self.lang, total=f"{self.args_chars:,}") + "]"

    def _fallback_text(self) -> str:
        lines = [self._title()]
        if self.args:
            args = json.dumps(self.args, ensure_ascii=False, default=str)
            lines.append(f"{t('arguments', self.lang)}: {args}{self._args_note()}")
        if self.result is not None:
            lines.append(f"{t('result', self.lang)}: {self.result}{self._result_note()}")
        lines += [output_placeholder(item, self.lang) for item in self.outputs]
        return "\n".join(lines)

    def _fallback_html(self) -> str:
        pre = ('<pre style="white-space:pre-wrap;margin:4px 0;padding:6px 8px;'
               'background:rgba(127,127,127,.08);border-radius:4px">')
        body = ""
        if self.args:
            args = html.escape(self._args_json())
            body += (f"<div>{t('arguments', self.lang)}{html.escape(self._args_note())}</div>"
                     f"{pre}{args}</pre>")
        if self.result is not None:
            result = html.escape(self.result + self._result_note())
            body += f"<div>{t('result', self.lang)}</div>{pre}{result}</pre>"
        budget = [THUMBNAIL_BUDGET]
        body += "".join(output_html(item, self.lang, budget) for item in self.outputs)
        return html_card(html.escape(self._title()), body, accent=_STATUS_COLOR[self.status])
