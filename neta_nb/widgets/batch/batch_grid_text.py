"""What a batch run's grid says in words, without JS: its plain-text representation and
the static HTML form a saved notebook shows without its kernel (a bar of the rows by state,
the counters, the first failures) — for :class:`~neta_nb.widgets.batch.batch_grid.BatchGrid`.

The words come from a :class:`BatchFigures`, the few values they need (the grid takes one
from its traits and its run); nothing here reads the grid itself.
"""

from __future__ import annotations

import html
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ...labels import t
from ..cards.token_stats import format_tokens

__all__ = ["BatchFigures", "batch_html"]


@dataclass(frozen=True)
class BatchFigures:
    """What the grid's words are made of: the grid's ``lang``, ``counts``, ``total``,
    ``finished`` and ``failures`` traits, and whether its run has started."""

    lang: str
    counts: Mapping[str, Any]
    total: int
    finished: bool
    started: bool
    """The run has started (``run.started_at`` is set)."""
    failures: Sequence[Mapping[str, Any]] = ()

    def count(self, state: str) -> str:
        """``58 done``: a counter in words, the figure with thousands separators."""
        return t(f"batch_{state}", self.lang, n=f"{int(self.counts.get(state, 0)):,}")

    def summary(self) -> str:
        c = self.counts
        parts = [self.count("done"), self.count("failed")]
        if not self.finished or c.get("running") or c.get("queued"):
            parts += [self.count("running"), self.count("queued")]
        if c.get("retried"):
            parts.append(self.count("retried"))
        return ", ".join(parts)

    def status(self) -> str:
        c = self.counts
        if self.finished:
            return t("batch_status_stopped" if c.get("queued") or c.get("running")
                     else "batch_status_finished", self.lang)
        return t("batch_status_running" if self.started
                 or c.get("running") or c.get("done") or c.get("failed")
                 else "batch_status_waiting", self.lang)

    def rows_text(self) -> str:
        return (t("batch_rows_one", self.lang) if self.total == 1
                else t("batch_rows", self.lang, n=f"{self.total:,}"))

    def tokens_text(self) -> str:
        c = self.counts
        return t("batch_tokens", self.lang, input=format_tokens(c.get("input_tokens", 0)),
                 output=format_tokens(c.get("output_tokens", 0)))

    def more_failures(self) -> int:
        """Failed rows beyond those listed."""
        return int(self.counts.get("failed", 0)) - len(self.failures)

    # No run id in the representations and static forms: it is random unless given, and an
    # executed notebook must compare equal under nbval (the id is `run.run_id`).
    def repr_line(self) -> str:
        """The grid's ``repr``."""
        return f"BatchGrid({self.summary()} of {self.total})"

    def text(self) -> str:
        """The grid as a few lines of text: the header line, then the failures listed."""
        lines = [f"{t('batch_title', self.lang)} · {self.rows_text()} · "
                 f"{self.status()}: {self.summary()} · {self.tokens_text()}"]
        lines += [t("batch_failure_line", self.lang, row=f["idx"], error=f["error"])
                  for f in self.failures]
        more = self.more_failures()
        if more > 0:
            lines.append(t("batch_more_failures", self.lang, n=f"{more:,}"))
        return "\n".join(lines)


# Inline colours: a static viewer loads no stylesheet (light pages, mostly).
_COLORS = {"done": "#2e7d32", "failed": "#d32f2f", "running": "#1976d2", "queued": "#9e9e9e"}


def batch_html(figures: BatchFigures) -> str:
    """The grid as self-contained HTML: title, a bar of the rows by state, the counters and
    the first failures (model and tool text escaped)."""
    lang, c = figures.lang, figures.counts
    total = max(1, figures.total)
    segments = "".join(
        f'<div title="{html.escape(figures.count(state))}" '
        f'style="width:{100 * c.get(state, 0) / total:.3f}%;background:{color}"></div>'
        for state, color in _COLORS.items() if c.get(state, 0))
    bar = (f'<div style="display:flex;height:10px;border-radius:5px;overflow:hidden;'
           f'background:#e0e0e0;margin:6px 0">{segments}</div>')
    chips = " · ".join(
        f'<span style="white-space:nowrap"><span style="color:{_COLORS[state]}">●</span> '
        f'{html.escape(figures.count(state))}</span>'
        for state in ("done", "failed", "running", "queued")
        if c.get(state, 0) or state in ("done", "failed"))
    extra = ([html.escape(figures.count("retried"))] if c.get("retried")
             else []) + [html.escape(figures.tokens_text())]
    failures = ""
    if figures.failures:
        failed = t("batch_state_failed", lang)
        items = "".join(
            f'<li><span style="color:#57606a">'
            f'{html.escape(t("batch_tile", lang, row=f["idx"], state=failed))}</span> '
            f'<code style="white-space:pre-wrap;word-break:break-word">'
            f'{html.escape(f["error"])}</code></li>' for f in figures.failures)
        more = figures.more_failures()
        tail = (f'<div style="color:#57606a">'
                f'{html.escape(t("batch_more_failures", lang, n=f"{more:,}"))}'
                f"</div>" if more > 0 else "")
        failures = (f'<div style="margin-top:6px;font-weight:600">'
                    f'{html.escape(t("batch_failures", lang))}</div>'
                    f'<ul style="margin:2px 0;padding-left:18px">{items}</ul>{tail}')
    accent = _COLORS["failed"] if c.get("failed") else _COLORS["done"]
    title = (f'{html.escape(t("batch_title", lang))} <span style="font-weight:400;'
             f'color:#57606a">{html.escape(figures.rows_text())} · '
             f'{html.escape(figures.status())}</span>')
    return (f'<div class="neta-static neta-static-batch" style="border:1px solid #d0d7de;'
            f"border-left:3px solid {accent};border-radius:8px;padding:8px 12px;margin:4px 0;"
            f'font-family:system-ui,sans-serif;font-size:13px;line-height:1.5">'
            f'<div style="font-weight:600">{title}</div>{bar}'
            f'<div>{chips} · {" · ".join(extra)}</div>{failures}</div>')
