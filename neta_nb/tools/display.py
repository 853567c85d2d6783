"""Rich displays of the tool objects: a resolution, a config, a catalog, a trace, a diff and
a legacy migration, as HTML and markdown tables for a notebook cell.

What shapes the code:

* Everything a tool provides (name, label, description, category) is untrusted text: an
  MCP server or a user's ``@tool`` may put ``<script>`` or a backtick in it. HTML cells
  are escaped with :func:`html.escape`; markdown cells go through
  :mod:`neta_nb.escaping`, so static viewers that do not sanitize show the text, not markup.
* The output is kept in the notebook and seen in light and dark themes, on GitHub and
  nbviewer: inline styles only (no stylesheet is loaded there), text in ``currentColor``,
  no background, borders semi-transparent grey. Colour marks a state but is never the
  only carrier of it: the state is also written out.
* The words are the label table's (:func:`neta_nb.labels.t`), the same as the config
  panel's, in English unless a ``lang`` is asked for.
* Output is deterministic (no ids, no addresses, no times): notebooks compare it.
"""

from __future__ import annotations

import html
from collections.abc import Iterable, Mapping, Sequence
from typing import TYPE_CHECKING

from ..escaping import markdown_cell
from ..labels import LABELS, Notice, t
from .base import Tool
from .catalog import ToolCatalog
from .config import AgentToolConfig, LoadReport
from .displayable import Display, renders
from .resolution.resolution_steps import ResolutionDiff, ResolutionSteps
from .resolution.resolver import ToolResolution

if TYPE_CHECKING:
    from .resolution.resolver import ToolState

__all__ = ["Display", "render_catalog", "render_config", "render_diff", "render_load_report",
           "render_resolution", "render_steps"]


# --- shared pieces ----------------------------------------------------------------------

_BOX = ("border:1px solid rgba(127,127,127,.35);border-radius:8px;padding:8px 12px;"
        "margin:4px 0;font-family:system-ui,sans-serif;font-size:13px;line-height:1.5;"
        "color:inherit;background:transparent")
_CELL = ("padding:3px 12px 3px 0;text-align:left;vertical-align:top;"
         "border-bottom:1px solid rgba(127,127,127,.2)")
_MUTED = "opacity:.72"
# Mid tones that stay legible on white and on dark backgrounds.
_GREEN, _RED, _GREY = "#2ea043", "#e5534b", "#8b949e"


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _box(title: str, body: str) -> str:
    """``title`` and ``body`` must already be escaped HTML."""
    return (f'<div class="neta-static" style="{_BOX}"><div style="font-weight:600">{title}'
            f"</div>{body}</div>")


def _muted(text_html: str) -> str:
    return f'<div style="{_MUTED}">{text_html}</div>'


def _table(head: Sequence[str], rows: Iterable[str]) -> str:
    """``head`` plain words (escaped here); ``rows`` ready ``<tr>`` HTML."""
    cells = "".join(f'<th style="{_CELL}">{_e(word)}</th>' for word in head)
    return (f'<table style="border-collapse:collapse;margin-top:6px;background:transparent">'
            f"<thead><tr>{cells}</tr></thead><tbody>{''.join(rows)}</tbody></table>")


def _row(cells: Iterable[str]) -> str:
    return "<tr>" + "".join(f'<td style="{_CELL}">{cell}</td>' for cell in cells) + "</tr>"


def _group_row(title_html: str, span: int) -> str:
    return (f'<tr><th colspan="{span}" style="{_CELL};padding-top:8px;font-weight:600">'
            f"{title_html}</th></tr>")


def _md_table(head: Sequence[str], rows: Iterable[Sequence[str]]) -> list[str]:
    """``head`` plain words; ``rows`` cells already made safe for a markdown cell."""
    lines = ["| " + " | ".join(markdown_cell(word) for word in head) + " |",
             "|" + "---|" * len(head)]
    lines += ["| " + " | ".join(row) + " |" for row in rows]
    return lines


def _code(name: str) -> str:
    return f"<code>{_e(name)}</code>"


def _names_html(names: Iterable[str], lang: str) -> str:
    items = [_code(name) for name in names]
    none = _e(t("display_none", lang))
    return ", ".join(items) if items else f'<span style="{_MUTED}">{none}</span>'


def _names_md(names: Iterable[str], lang: str) -> str:
    items = [markdown_cell(name, code=True) for name in names]
    return ", ".join(items) if items else markdown_cell(t("display_none", lang))


def category_label(category: str, lang: str) -> str:
    """The category's name in ``lang``: the table's for the seed's categories and
    ``custom``; another is shown as registered, capitalised like them in English (the
    panel's ``categoryName`` says the same)."""
    key = f"category_{category}"
    if key in LABELS["en"]:
        return t(key, lang)
    return category[:1].upper() + category[1:] if lang == "en" else category


def state_words(state: ToolState | None, lang: str) -> str:
    if state is None:
        return t("display_not_in_catalog", lang)
    return t(f"state_{state.value}", lang)


def _dot(colour: str) -> str:
    return f'<span style="color:{colour}" aria-hidden="true">●</span>'


def _state_colour(state: ToolState | None, on: bool) -> str:
    if on:
        return _GREEN
    return _RED if state is not None and state.value == "globally_disabled" else _GREY


def _reason(reason: Notice | None, lang: str) -> str:
    return "" if reason is None else reason.text(lang)


def _grouped(tools: Iterable[Tool]) -> list[tuple[str, list[Tool]]]:
    """Tools by category, in the order given (the catalog's display order)."""
    groups: dict[str, list[Tool]] = {}
    for item in tools:
        groups.setdefault(item.category, []).append(item)
    return list(groups.items())


def _notes(unknown: Sequence[str], warnings: Sequence[Notice], lang: str) -> tuple[str, list[str]]:
    body = ""
    lines: list[str] = []
    if unknown:
        body += _muted(f"{_e(t('display_unknown', lang))} {_names_html(unknown, lang)}")
        lines += ["", f"{markdown_cell(t('display_unknown', lang))} {_names_md(unknown, lang)}"]
    if warnings:
        items = "".join(f"<li>{_e(warning.text(lang))}</li>" for warning in warnings)
        body += (f"<div>{_e(t('display_warnings', lang))}</div>"
                 f'<ul style="margin:2px 0 0;padding-left:18px">{items}</ul>')
        lines += ["", markdown_cell(t("display_warnings", lang)), ""]
        lines += [f"- {markdown_cell(warning.text(lang))}" for warning in warnings]
    return body, lines


# --- a resolution -------------------------------------------------------------------------

@renders(ToolResolution)
def render_resolution(resolution: ToolResolution, lang: str = "en") -> Display:
    """Every catalog tool, grouped by category in the panel's order: mark, label, name,
    state and why it is not available."""
    catalog_tools = resolution.catalog_tools
    tools = [catalog_tools[name] for name in resolution.states if name in catalog_tools]
    granted = set(resolution.names)
    summary = t("panel_summary", lang, enabled=len(granted), total=len(resolution.states),
                core=sum(1 for item in tools if item.core))
    head = ["", t("display_column_label", lang), t("display_column_name", lang),
            t("panel_column_state", lang), t("display_column_reason", lang)]
    rows_html: list[str] = []
    rows_md: list[list[str]] = []
    for category, members in _grouped(tools):
        on = sum(1 for item in members if item.name in granted)
        rows_html.append(_group_row(
            f"{_e(category_label(category, lang))} "
            f'<span style="{_MUTED};font-weight:400">· {on}/{len(members)}</span>', len(head)))
        for item in members:
            state = resolution.states[item.name]
            available = item.name in granted
            core = (f' <span style="{_MUTED};font-size:11px">{_e(t("display_core", lang))}'
                    "</span>" if item.core else "")
            reason = _reason(resolution.reasons.get(item.name), lang)
            rows_html.append(_row([
                _dot(_state_colour(state, available)), _e(item.label) + core,
                _code(item.name), _e(state_words(state, lang)), _e(reason)]))
            rows_md.append([
                "✓" if available else "–",
                markdown_cell(item.label) + (f" *{t('display_core', lang)}*" if item.core else ""),
                markdown_cell(item.name, code=True),
                markdown_cell(category_label(category, lang)),
                markdown_cell(state_words(state, lang)), markdown_cell(reason)])
    notes_html, notes_md = _notes(resolution.unknown, resolution.warnings, lang)
    title = t("display_resolution_title", lang)
    body = (_muted(_e(summary)) + _table(head, rows_html) + notes_html)
    md_head = [*head[:3], t("panel_column_category", lang), *head[3:]]
    markdown = "\n".join([f"**{markdown_cell(title)}** — {markdown_cell(summary)}", "",
                          *_md_table(md_head, rows_md), *notes_md])
    return Display(_box(_e(title), body), markdown, repr(resolution))


# --- the steps of a resolution ------------------------------------------------------------

def _step_title(rule: str, applies: bool, lang: str) -> str:
    if rule == "core" and not applies:
        return t("step_core_not_inherited", lang)
    return t(f"step_{rule}", lang)


@renders(ResolutionSteps)
def render_steps(steps: ResolutionSteps, lang: str = "en") -> Display:
    """A compact trace: one row per rule with what it added, removed or kept out."""
    head = [t("display_column_step", lang), t("display_column_added", lang),
            t("display_column_removed", lang), t("display_column_kept_out", lang),
            t("display_column_after", lang)]
    rows_html: list[str] = []
    rows_md: list[list[str]] = []
    for number, step in enumerate(steps, 1):
        title = f"{number}. {_step_title(step.rule.value, step.applies, lang)}"
        why_html = _why_html(step.removed + step.kept_out, step.reasons, lang)
        rows_html.append(_row([
            _e(title), _signed_html("+", step.added), _signed_html("−", step.removed) + why_html,
            _names_html(step.kept_out, lang) if step.kept_out else "",
            f'<span style="{_MUTED}">{len(step.names)}</span>']))
        rows_md.append([
            markdown_cell(title), _signed_md("+", step.added),
            _signed_md("−", step.removed),
            ", ".join(markdown_cell(name, code=True) for name in step.kept_out),
            str(len(step.names))])
    final = steps.names
    footer_html = _muted(f"→ {_names_html(final, lang)}")
    footer_md = f"→ {_names_md(final, lang)}"
    title = t("steps_title", lang)
    markdown = "\n".join([f"**{markdown_cell(title)}**", "", *_md_table(head, rows_md), "",
                          footer_md])
    return Display(_box(_e(title), _table(head, rows_html) + footer_html), markdown,
                   repr(steps))


def _signed_html(sign: str, names: Sequence[str]) -> str:
    return ", ".join(f"{sign}{_code(name)}" for name in names)


def _signed_md(sign: str, names: Sequence[str]) -> str:
    return ", ".join(f"{sign}{markdown_cell(name, code=True)}" for name in names)


def _why_html(names: Sequence[str], reasons: Mapping[str, Notice], lang: str) -> str:
    # One line per distinct reason, naming its tools: a filter that removes ten tools for
    # the same missing capability says so once.
    by_reason: dict[str, list[str]] = {}
    for name in names:
        reason = reasons.get(name)
        if reason is not None:
            by_reason.setdefault(reason.text(lang), []).append(name)
    if not by_reason:
        return ""
    return "".join(f'<div style="{_MUTED};font-size:12px">{_e(text)}: '
                   f"{', '.join(_code(name) for name in members)}</div>"
                   for text, members in by_reason.items())


# --- a what-if diff -----------------------------------------------------------------------

@renders(ResolutionDiff)
def render_diff(diff: ResolutionDiff, lang: str = "en") -> Display:
    """One row per tool that differs: the change, then state (and reason) before and after."""
    title = t("diff_title", lang)
    changed = sum(1 for change in diff.changes if change.kind.value == "state_changed")
    summary = (t("diff_summary", lang, added=len(diff.added), removed=len(diff.removed),
                 changed=changed) if diff else t("diff_none", lang))
    head = [t("display_column_name", lang), t("display_column_change", lang),
            t("display_column_before", lang), t("display_column_now", lang)]
    rows_html: list[str] = []
    rows_md: list[list[str]] = []
    for change in diff.changes:
        kind = t(f"diff_{change.kind.value}", lang)
        colour = {"added": _GREEN, "removed": _RED}.get(change.kind.value, _GREY)
        before = _state_and_reason(change.before, change.before_reason, lang)
        after = _state_and_reason(change.after, change.after_reason, lang)
        rows_html.append(_row([_code(change.name), f"{_dot(colour)} {_e(kind)}",
                               _e(before), _e(after)]))
        rows_md.append([markdown_cell(change.name, code=True), markdown_cell(kind),
                        markdown_cell(before), markdown_cell(after)])
    body = _muted(_e(summary)) + (_table(head, rows_html) if diff else "")
    markdown = "\n".join([f"**{markdown_cell(title)}** — {markdown_cell(summary)}",
                          *(["", *_md_table(head, rows_md)] if diff else [])])
    return Display(_box(_e(title), body), markdown, repr(diff))


def _state_and_reason(state: ToolState | None, reason: Notice | None, lang: str) -> str:
    words = state_words(state, lang)
    return f"{words} — {reason.text(lang)}" if reason is not None and reason.text(lang) != words \
        else words


# --- a config, a catalog, a migration -----------------------------------------------------

def _config_rows(config: AgentToolConfig, lang: str) -> list[tuple[str, str, str]]:
    """(label, html, markdown) per field."""
    inherit = t("display_yes" if config.inherit_core_tools else "display_no", lang)
    return [
        (t("config_inherit_core_tools", lang), _e(inherit), markdown_cell(inherit)),
        (t("config_enabled", lang), _names_html(config.enabled, lang),
         _names_md(config.enabled, lang)),
        (t("config_disabled", lang), _names_html(config.disabled, lang),
         _names_md(config.disabled, lang)),
    ]


@renders(AgentToolConfig)
def render_config(config: AgentToolConfig, lang: str = "en") -> Display:
    """The three fields as stored (seed §5.1) and what loading had to work around."""
    rows = _config_rows(config, lang)
    body = _table(["", ""], [_row([_e(label), cell]) for label, cell, _ in rows])
    notes_html, notes_md = _notes([], config.load_warnings, lang)
    title = t("display_config_title", lang)
    markdown = "\n".join([f"**{markdown_cell(title)}**", "",
                          *_md_table(["", ""], [[markdown_cell(label), cell]
                                                for label, _, cell in rows]), *notes_md])
    return Display(_box(_e(title), body + notes_html), markdown, repr(config))


@renders(ToolCatalog)
def render_catalog(catalog: ToolCatalog, lang: str = "en") -> Display:
    """Every tool by category: label, name, core, global state, needs, description."""
    tools = catalog.ordered()
    disabled = catalog.globally_disabled
    summary = t("display_catalog_summary", lang, total=len(tools),
                core=sum(1 for item in tools if item.core), disabled=len(disabled))
    head = ["", t("display_column_label", lang), t("display_column_name", lang),
            t("display_column_global", lang), t("display_column_needs", lang),
            t("display_column_description", lang)]
    rows_html: list[str] = []
    rows_md: list[list[str]] = []
    for category, members in _grouped(tools):
        rows_html.append(_group_row(
            f"{_e(category_label(category, lang))} "
            f'<span style="{_MUTED};font-weight:400">· {len(members)}</span>', len(head)))
        for item in members:
            off = item.name in disabled
            state = t("state_globally_disabled" if off else "panel_filter_enabled", lang)
            needs = ", ".join(sorted(item.capabilities))
            description = item.description.strip().splitlines()[0] if item.description.strip() \
                else ""
            core = (f' <span style="{_MUTED};font-size:11px">{_e(t("display_core", lang))}'
                    "</span>" if item.core else "")
            rows_html.append(_row([_dot(_RED if off else _GREEN), _e(item.label) + core,
                                   _code(item.name), _e(state), _e(needs), _e(description)]))
            rows_md.append([
                "–" if off else "✓",
                markdown_cell(item.label) + (f" *{t('display_core', lang)}*" if item.core else ""),
                markdown_cell(item.name, code=True), markdown_cell(state),
                markdown_cell(needs), markdown_cell(description)])
    title = t("display_catalog_title", lang)
    md_head = [*head[:3], t("panel_column_category", lang), *head[3:]]
    md_rows = []
    for row, item in zip(rows_md, tools, strict=True):
        md_rows.append([*row[:3], markdown_cell(category_label(item.category, lang)), *row[3:]])
    markdown = "\n".join([f"**{markdown_cell(title)}** — {markdown_cell(summary)}", "",
                          *_md_table(md_head, md_rows)])
    return Display(_box(_e(title), _muted(_e(summary)) + _table(head, rows_html)), markdown,
                   repr(catalog))


@renders(LoadReport)
def render_load_report(report: LoadReport, lang: str = "en") -> Display:
    """Before (the legacy toolsets and disabled list) and after (the new shape), with the
    tools each toolset brought in and the notes."""
    title = t("migration_title", lang)
    rows = _config_rows(report.config, lang)
    if not report.legacy:
        body = _muted(_e(t("migration_not_legacy", lang)))
        md = [markdown_cell(t("migration_not_legacy", lang))]
    else:
        before = [(t("migration_toolsets", lang), _names_html(report.toolsets, lang),
                   _names_md(report.toolsets, lang)),
                  (t("migration_legacy_disabled", lang),
                   _names_html(report.legacy_disabled, lang),
                   _names_md(report.legacy_disabled, lang))]
        head = [t("migration_before", lang), "", t("migration_after", lang), ""]
        pairs = list(zip([*before, ("", "", "")], rows, strict=True))
        body = _table(head, [_row([_e(b[0]), b[1], _e(a[0]), a[1]]) for b, a in pairs])
        md = _md_table(head, [[markdown_cell(b[0]), b[2], markdown_cell(a[0]), a[2]]
                              for b, a in pairs])
        for toolset, names in report.brought_in.items():
            text = t("migration_brought_in", lang, toolset=toolset,
                     names=", ".join(names) or t("display_none", lang))
            body += _muted(_e(text))
            md += ["", markdown_cell(text)]
    notes_html, notes_md = _notes([], report.notes, lang)
    markdown = "\n".join([f"**{markdown_cell(title)}**", "", *md, *notes_md])
    return Display(_box(_e(title), body + notes_html), markdown, repr(report))
