"""Rich outputs and attachments in the widgets' static forms (nbconvert, GitHub, a
notebook reopened without its kernel): a bracketed placeholder per item in text and
markdown, and in HTML a thumbnail when the image is small enough, else the placeholder.
A proposed notebook edit is drawn as its card is: the diff, line by line, and what the
user decided. Bounded: the static forms are written into the notebook three times over."""

from __future__ import annotations

import html
import json
import re
from collections.abc import Mapping
from typing import Any

from ..labels import t
from ..tools.rich import CELL_EDIT_TYPE

__all__ = ["THUMBNAIL_BUDGET", "attachment_placeholder", "output_html", "output_placeholder",
           "proposal_html"]

THUMBNAIL_BUDGET = 60_000
"""Base64 characters of images one static HTML form may embed; later ones are
placeholders."""

_RASTER = ("image/png", "image/jpeg", "image/gif", "image/webp")
_BASE64 = re.compile(r"[A-Za-z0-9+/]*={0,2}")
_DIFF_LINES = 80
"""Diff lines a static form shows of one proposal."""
_DIFF_COLOURS = {"+": "background:rgba(46,125,50,.14)", "-": "background:rgba(211,47,47,.14)",
                 "@": "color:#1976d2"}


def _nested_deeper_than(text: str, limit: int) -> bool:
    """Whether JSON ``text`` nests arrays and objects deeper than ``limit`` (brackets inside
    strings do not count). Checked before parsing: a hostile item of 100,000 ``[`` would
    take the parser to the recursion limit, where the interpreter cannot even report an
    exception a finalizer raises meanwhile."""
    depth, in_string, escaped = 0, False, False
    for char in text:
        if in_string:
            if escaped:
                escaped = False
            elif char == "\\":
                escaped = True
            elif char == '"':
                in_string = False
        elif char == '"':
            in_string = True
        elif char in "[{":
            depth += 1
            if depth > limit:
                return True
        elif char in "]}":
            depth -= 1
    return False


def _proposal(item: Mapping[str, Any]) -> dict[str, Any] | None:
    """The item's proposal when well formed (any tool may return an item of this type,
    and a stored one may be damaged: the static form must not fail on it)."""
    text = str(item.get("text") or "")
    if _nested_deeper_than(text, 16):  # a proposal nests three deep
        return None
    try:
        data = json.loads(text)
    except (ValueError, RecursionError):
        return None
    if not isinstance(data, dict) or not isinstance(data.get("diff"), list):
        return None
    left_out = data.get("diff_left_out") or 0
    if not isinstance(left_out, int) or isinstance(left_out, bool):
        return None
    return data


def _proposal_title(proposal: Mapping[str, Any], lang: str) -> str:
    name = str(proposal.get("cell_id", ""))
    if proposal.get("kind") == "delete":
        title = t("cell_delete_title", lang, id=name)
    elif proposal.get("kind") == "move":
        title = t("cell_move_title", lang, id=name, **{"from": str(proposal.get("from_index")),
                                                      "to": str(proposal.get("to_index"))})
    elif proposal.get("kind") == "insert":
        kind = str(proposal.get("cell_type") or "code")
        after = proposal.get("after_cell_id")
        title = (t("cell_insert_after", lang, type=kind, id=str(after)) if after
                 else t("cell_insert_end", lang, type=kind))
    else:
        title = t("cell_edit_title", lang, id=str(proposal.get("cell_id", "")))
    decision = str(proposal.get("decision", "pending"))
    known = decision if decision in ("accepted", "rejected") else "pending"
    return f"{title} · {t(f'cell_edit_{known}', lang)}"


def _diff_style(line: str) -> str:
    if line.startswith(("+++", "---")):
        return "opacity:.7"
    return _DIFF_COLOURS.get(line[:1], "")


def proposal_html(item: Mapping[str, Any], lang: str) -> str:
    """A proposed notebook edit: its title, decision and diff (escaped, bounded)."""
    proposal = _proposal(item)
    if proposal is None:
        return f"<div>{html.escape(output_placeholder(item, lang))}</div>"
    lines = [str(line) for line in proposal["diff"]]
    more = len(lines) - _DIFF_LINES + int(proposal.get("diff_left_out") or 0)
    rows = "".join(f'<span style="display:block;{_diff_style(line)}">'
                   f"{html.escape(line) or ' '}</span>" for line in lines[:_DIFF_LINES])
    tail = (f"<div>{html.escape(t('cell_edit_more_lines', lang, n=more))}</div>"
            if more > 0 else "")
    title = html.escape(_proposal_title(proposal, lang))
    return (f"<div>{_changes_html(proposal, lang)}<b>{title}</b>"
            f'<pre style="margin:4px 0 0;font-size:11px;overflow:auto;max-height:320px">'
            f"{rows}</pre>{tail}</div>")


_CHANGE_KINDS = ("insert", "edit", "delete", "move")
_CHANGE_FATES = {"accepted": "cell_edit_accepted", "rejected": "cell_edit_rejected",
                 "failed": "changes_failed"}


def _changes_html(proposal: Mapping[str, Any], lang: str) -> str:
    """The summary of a set of changes reviewed together, which its first change's card
    carries (``group.changes``): what became of each; "" for any other card."""
    group = proposal.get("group")
    lines = group.get("changes") if isinstance(group, dict) else None
    if not isinstance(lines, list):
        return ""
    shown = [line for line in lines
             if isinstance(line, dict) and line.get("kind") in _CHANGE_KINDS][:200]
    counts = " · ".join(t(f"changes_kind_{kind}", lang, n=n) for kind in _CHANGE_KINDS
                        if (n := sum(line["kind"] == kind for line in shown)))
    rows = []
    for line in shown:
        word = t(f"changes_kind_{line['kind']}", lang, n="").strip()
        fate = t(_CHANGE_FATES.get(str(line.get("decision")), "cell_edit_pending"), lang)
        name = str(line.get("cell_label") or line.get("cell_id", ""))
        delta = " ".join(part for part in (
            f"+{line['added']}" if isinstance(line.get("added"), int) and line["added"] else "",
            f"−{line['removed']}" if isinstance(line.get("removed"), int) and line["removed"]
            else "") if part)
        rows.append(f"<li>{html.escape(word)} {html.escape(name)} {html.escape(delta)} · "
                    f"{html.escape(fate)}</li>")
    return (f'<div style="margin:0 0 6px" data-neta-changes="{len(shown)}">'
            f"<b>{html.escape(t('changes_title', lang))}</b> {html.escape(counts)}"
            f'<ol style="margin:2px 0 0;padding-left:20px">{"".join(rows)}</ol></div>')


def _size_text(item: Mapping[str, Any]) -> str:
    width, height = item.get("width") or 0, item.get("height") or 0
    return f"{width}×{height}" if width and height else str(item.get("media_type", ""))


def output_placeholder(item: Mapping[str, Any], lang: str) -> str:
    """``[image 640×480]``, ``[HTML table]``: one display item in words."""
    kind = str(item.get("media_type", ""))
    if kind == CELL_EDIT_TYPE:
        proposal = _proposal(item)
        return f"[{_proposal_title(proposal, lang)}]" if proposal else "[cell edit]"
    if kind.startswith("image/"):
        if item.get("data") is None and item.get("text") is None:
            return t("static_output_missing", lang)
        return t("static_output_image", lang, size=_size_text(item))
    if kind == "text/html":
        return t("static_output_html", lang)
    return t("static_output_markdown", lang)


def attachment_placeholder(attachment: Mapping[str, Any], lang: str) -> str:
    size = int(attachment.get("size") or 0)
    shown = (f"{size / (1024 * 1024):.1f} MB" if size >= 1024 * 1024 else
             f"{size / 1024:.0f} KB" if size >= 1024 else f"{size} B")
    return t("static_attachment", lang, name=str(attachment.get("name", "")), size=shown)


def output_html(item: Mapping[str, Any], lang: str, budget: list[int]) -> str:
    """A thumbnail ``<img>`` while ``budget[0]`` (characters left) allows, else the
    placeholder. Only raster ``data:`` images: nothing that runs or loads."""
    kind = str(item.get("media_type", ""))
    if kind == CELL_EDIT_TYPE:
        return proposal_html(item, lang)
    data = item.get("data")
    # Only base64 goes into the attribute: a stored item is data from a tool or a file,
    # and a quote in it would add attributes (onerror=…) to the tag.
    if (kind in _RASTER and isinstance(data, str) and len(data) <= budget[0]
            and _BASE64.fullmatch(data)):
        budget[0] -= len(data)
        return (f'<img alt="{html.escape(output_placeholder(item, lang))}" '
                f'src="data:{kind};base64,{data}" style="max-width:100%;max-height:320px">')
    return f"<div>{html.escape(output_placeholder(item, lang))}</div>"
