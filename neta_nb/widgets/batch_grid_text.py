"""What a batch run's grid says in words, without JS: its plain-text representation and
the static HTML form a saved notebook shows without its kernel (a bar of the rows by state,
the counters, the first failures) — for :class:`~neta_nb.widgets.batch_grid.BatchGrid`."""

from __future__ import annotations

import html
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from ..labels import t
from .cards.token_stats import format_tokens

if TYPE_CHECKING:
    from ..batch.run import BatchRun

__all__ = ["BatchGridText", "batch_html"]


class BatchGridText:
    """The grid's words, from its traits (a mixin of ``BatchGrid``)."""

    lang: str
    counts: Mapping[str, Any]
    total: int
    finished: bool
    failures: list[dict[str, Any]]
    run: BatchRun

    def _count(self, state: str) -> str:
        """``58 done``: a counter in words, the figure with thousands separators."""
        return t(f"batch_{state}", self.lang, n=f"{int(self.counts.get(state, 0)):,}")

    def _summary(self) -> str:
        c = self.counts
        parts = [self._count("done"), self._count("failed")]
        if not self.finished or c.get("running") or c.get("queued"):
            parts += [self._count("running"), self._count("queued")]
        if c.get("retried"):
            parts.append(self._count("retried"))
        return ", ".join(parts)

    def _status(self) -> str:
        c = self.counts
        if self.finished:
            return t("batch_status_stopped" if c.get("queued") or c.get("running")
                     else "batch_status_finished", self.lang)
        return t("batch_status_running" if self.run.started_at is not None
                 or c.get("running") or c.get("done") or c.get("failed")
                 else "batch_status_waiting", self.lang)

    def _rows_text(self) -> str:
        return (t("batch_rows_one", self.lang) if self.total == 1
                else t("batch_rows", self.lang, n=f"{self.total:,}"))

    def _tokens_text(self) -> str:
        c = self.counts
        return t("batch_tokens", self.lang, input=format_tokens(c.get("input_tokens", 0)),
                 output=format_tokens(c.get("output_tokens", 0)))

    # No run id in the representations and static forms: it is random unless given, and an
    # executed notebook must compare equal under nbval (the id is `run.run_id`).
    def __repr__(self) -> str:
        return f"BatchGrid({self._summary()} of {self.total})"

    def _fallback_text(self) -> str:
        lines = [f"{t('batch_title', self.lang)} · {self._rows_text()} · "
                 f"{self._status()}: {self._summary()} · {self._tokens_text()}"]
        lines += [t("batch_failure_line", self.lang, row=f["idx"], error=f["error"])
                  for f in self.failures]
        more = int(self.counts.get("failed", 0)) - len(self.failures)
        if more > 0:
            lines.append(t("batch_more_failures", self.lang, n=f"{more:,}"))
        return "\n".join(lines)

    def _fallback_html(self) -> str:
        return batch_html(self)



# Inline colours: a static viewer loads no stylesheet (light pages, mostly).
_COLORS = {"done": "#2e7d32", "failed": "#d32f2f", "running": "#1976d2", "queued": "#9e9e9e"}


def batch_html(grid: BatchGridText) -> str:
    """The grid as self-contained HTML: title, a bar of the rows by state, the counters and
    the first failures (model and tool text escaped)."""
    lang, c = grid.lang, grid.counts
    total = max(1, grid.total)
    segments = "".join(
        f'<div title="{html.escape(grid._count(state))}" '
        f'style="width:{100 * c.get(state, 0) / total:.3f}%;background:{color}"></div>'
        for state, color in _COLORS.items() if c.get(state, 0))
    bar = (f'<div style="display:flex;height:10px;border-radius:5px;overflow:hidden;'
           f'background:#e0e0e0;margin:6px 0">{segments}</div>')
    chips = " · ".join(
        f'<span style="white-space:nowrap"><span style="color:{_COLORS[state]}">●</span> '
        f'{html.escape(grid._count(state))}</span>'
        for state in ("done", "failed", "running", "queued")
        if c.get(state, 0) or state in ("done", "failed"))
    extra = ([html.escape(grid._count("retried"))] if c.get("retried")
             else []) + [html.escape(grid._tokens_text())]
    failures = ""
    if grid.failures:
        failed = t("batch_state_failed", lang)
        items = "".join(
            f'<li><span style="color:#57606a">'
            f'{html.escape(t("batch_tile", lang, row=f["idx"], state=failed))}</span> '
            f'<code style="white-space:pre-wrap;word-break:break-word">'
            f'{html.escape(f["error"])}</code></li>' for f in grid.failures)
        more = int(c.get("failed", 0)) - len(grid.failures)
        tail = (f'<div style="color:#57606a">'
                f'{html.escape(t("batch_more_failures", lang, n=f"{more:,}"))}'
                f"</div>" if more > 0 else "")
        failures = (f'<div style="margin-top:6px;font-weight:600">'
                    f'{html.escape(t("batch_failures", lang))}</div>'
                    f'<ul style="margin:2px 0;padding-left:18px">{items}</ul>{tail}')
    accent = _COLORS["failed"] if c.get("failed") else _COLORS["done"]
    title = (f'{html.escape(t("batch_title", lang))} <span style="font-weight:400;'
             f'color:#57606a">{html.escape(grid._rows_text())} · '
             f'{html.escape(grid._status())}</span>')
    return (f'<div class="neta-static neta-static-batch" style="border:1px solid #d0d7de;'
            f"border-left:3px solid {accent};border-radius:8px;padding:8px 12px;margin:4px 0;"
            f'font-family:system-ui,sans-serif;font-size:13px;line-height:1.5">'
            f'<div style="font-weight:600">{title}</div>{bar}'
            f'<div>{chips} · {" · ".join(extra)}</div>{failures}</div>')
