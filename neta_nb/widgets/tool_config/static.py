"""The tool configuration panel's static forms — text and HTML — for viewers
without a kernel, built from the panel's published state (what the view draws)."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from html import escape as _escape
from typing import Any

from ...labels import t
from ...tools.display import category_label
from ..base import html_card

__all__ = ["PanelStatic"]


@dataclass(frozen=True)
class PanelStatic:
    """The state the static forms are drawn from (the panel's traits)."""

    lang: str
    tools: Sequence[dict[str, Any]]
    states: Mapping[str, dict[str, Any]]
    summary: Mapping[str, Any]
    unknown: Sequence[str]
    warnings: Sequence[str]
    previewing_as: Mapping[str, Any] | None

    def _rows(self) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(tool, self.states[tool["name"]]) for tool in self.tools
                if tool["name"] in self.states]

    def _summary_line(self) -> str:
        return t("panel_summary", self.lang, enabled=self.summary.get("enabled", 0),
                 total=self.summary.get("total", 0), core=self.summary.get("core", 0))

    def _note(self, state: Mapping[str, Any]) -> str:
        reason = state.get("reason")
        if not reason or state["state"] in ("agent_disabled", "globally_disabled", "available"):
            # The state words already say it; only a filter reason adds something.
            return ""
        return str(reason)  # already in the panel's language

    def _core_word(self) -> str:
        # The table's "Core" is a tag; inside a sentence of the text forms it is a word.
        return t("panel_core", self.lang).lower()

    def _state_words(self, state: Mapping[str, Any]) -> str:
        return t(f"state_{state['state']}", self.lang)

    def text(self) -> str:
        lines = [f"{t('panel_title', self.lang)} — {self._summary_line()} "
                 f"({t('panel_scope', self.lang)})"]
        if self.previewing_as:  # the rows below are the preview's, not the agent's
            lines.append(f"» {self.previewing_as['text']}")
        for tool, state in self._rows():
            mark = "[x]" if state["available"] else "[ ]"
            core = f" ({self._core_word()})" if tool["core"] else ""
            note = self._note(state)
            lines.append(f"{mark} {tool['name']}{core} "
                         f"[{category_label(tool['category'], self.lang)}]: "
                         f"{self._state_words(state)}" + (f" — {note}" if note else ""))
        if self.unknown:
            lines.append(f"{t('panel_unknown', self.lang)} {', '.join(self.unknown)}")
        lines += [f"! {warning}" for warning in self.warnings]
        return "\n".join(lines)

    def html(self) -> str:
        lang = self.lang
        cell = 'style="padding:3px 10px 3px 0;text-align:left;vertical-align:top"'
        head = "".join(f"<th {cell}>{_escape(t(f'panel_column_{key}', lang))}</th>"
                       for key in ("tool", "category", "state", "note"))
        rows = []
        for tool, state in self._rows():
            colour = ("#2e7d32" if state["available"]
                      else "#d32f2f" if state["state"] == "globally_disabled" else "#8c959f")
            core = (f' <span style="font-size:11px;color:#1976d2">{t("panel_core", lang)}</span>'
                    if tool["core"] else "")
            rows.append(
                f"<tr><td {cell}><span style=\"color:{colour}\">●</span> "
                f"<code>{_escape(tool['name'])}</code>{core}</td>"
                f"<td {cell}>{_escape(category_label(tool['category'], lang))}</td>"
                f"<td {cell}>{_escape(self._state_words(state))}</td>"
                f"<td {cell}>{_escape(self._note(state))}</td></tr>")
        body = (f'<div style="color:#57606a">{_escape(self._summary_line())} · '
                f"{_escape(t('panel_scope', lang))}</div>"
                + (f'<div style="font-weight:600;color:#1976d2">'
                   f"{_escape(self.previewing_as['text'])}</div>" if self.previewing_as else "")
                + f'<table style="border-collapse:collapse;margin-top:6px"><thead><tr>{head}'
                f"</tr></thead><tbody>{''.join(rows)}</tbody></table>")
        if self.unknown:
            body += (f"<div>{_escape(t('panel_unknown', lang))} "
                     f"{_escape(', '.join(self.unknown))}</div>")
        if self.warnings:
            items = "".join(f"<li>{_escape(warning)}</li>" for warning in self.warnings)
            body += f'<ul style="margin:6px 0 0;padding-left:18px">{items}</ul>'
        return html_card(_escape(t("panel_title", lang)), body)

