"""``TokenStats``: compact token and context usage (seed 002 §5.3), from ``token_update``
events only — the provider's usage; what it did not report shows as unknown (``↑? ↓?``)
and an estimated context share as ``~P%``, never as a reported figure."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import traitlets

from ...events import ContextUsage, TokenUpdateEvent, TurnUsage
from ...labels import t
from ...runtime.session.spending import format_usd
from ..base import NetaWidget

__all__ = ["TokenStats", "context_level", "format_context_share", "format_reported",
           "format_tokens", "reported_share", "usage_html", "usage_line", "usage_notes"]


def format_tokens(value: float) -> str:
    """999 → ``999``, 1234 → ``1.2K``, 12345 → ``12.3K``, 1_200_000 → ``1.2M``.

    Rounds halves up, as the JS component does (``Math.round``, ``toFixed``): Python's
    ``round`` and ``:.1f`` round halves to even, which showed 1250 as ``1.2K`` here and
    ``1.3K`` in the view (tests/fixtures/token_format.json holds the shared cases)."""
    n = max(0, math.floor(value + 0.5))
    if n < 1000:
        return str(n)
    divisor, suffix = ((1000, "K") if n < 999_950 else
                       (1_000_000, "M") if n < 999_950_000 else (1_000_000_000, "B"))
    tenths = Decimal(n / divisor).quantize(Decimal("0.1"), rounding=ROUND_HALF_UP)
    text = str(tenths)
    return (text[:-2] if text.endswith(".0") else text) + suffix


def context_level(percent: float) -> str:
    """``ok`` (green) up to 50 %, ``warn`` (yellow) up to 80 %, ``high`` (red) above."""
    return "ok" if percent <= 50 else "warn" if percent <= 80 else "high"


_DOT = {"ok": "🟢", "warn": "🟡", "high": "🔴"}
# In HTML the dot is a coloured character: an emoji needs a font many pages lack.
_DOT_COLOR = {"ok": "#2e7d32", "warn": "#b58105", "high": "#d32f2f"}


def reported_share(current: Mapping[str, Any]) -> str:
    """``all``, ``some`` or ``none``: how much of a turn's usage the server reported."""
    calls, unreported = current.get("api_calls", 0), current.get("unreported_calls", 0)
    if unreported <= 0 or calls <= 0:
        return "all"
    return "none" if unreported >= calls else "some"


def format_reported(value: float, reported: str) -> str:
    """A token figure of the compact line: ``1.2K``, ``?`` (unknown), ``1.2K+?`` (more)."""
    if reported == "none":
        return "?"
    return f"{format_tokens(value)}+?" if reported == "some" else format_tokens(value)


def format_context_share(context: Mapping[str, Any]) -> str:
    """``32%``, or ``~32%`` when the figure is an estimate (as the JS component shows it)."""
    value = max(0.0, float(context.get("percent") or 0))
    percent = "<1" if 0 < value < 1 else str(math.floor(value + 0.5))
    return f"{'~' if context.get('estimate') else ''}{percent}%"


class TokenStats(NetaWidget):
    """``↑in ↓out · N calls | Context P% ●``: the turn's figures while ``running`` and,
    muted, the last turn's after it; the context share always."""

    _component = traitlets.Unicode("token-stats").tag(sync=True)
    _static_traits = ("current", "context", "running", "lang")
    current = traitlets.Dict(help="token_update.current").tag(sync=True)
    context = traitlets.Dict(help="token_update.context").tag(sync=True)
    running = traitlets.Bool(False, help="A turn runs: show the realtime part.").tag(sync=True)

    def __init__(self, event: TokenUpdateEvent | Mapping[str, Any] | None = None,
                 **kwargs: Any) -> None:
        kwargs.setdefault("current", TurnUsage().model_dump())
        kwargs.setdefault("context", ContextUsage().model_dump())
        super().__init__(**kwargs)
        if event is not None:
            self.apply(event)

    @traitlets.validate("current")
    def _validate_current(self, proposal: Any) -> dict[str, Any]:
        return TurnUsage.model_validate(proposal["value"]).model_dump()

    @traitlets.validate("context")
    def _validate_context(self, proposal: Any) -> dict[str, Any]:
        return ContextUsage.model_validate(proposal["value"]).model_dump()

    def apply(self, event: TokenUpdateEvent | Mapping[str, Any]) -> None:
        """Show a ``token_update`` event (the model or its dict/JSON shape)."""
        if isinstance(event, Mapping):
            event = TokenUpdateEvent.model_validate({"type": "token_update", **event})
        with self.hold_sync():
            self.current = event.current.model_dump()
            self.context = event.context.model_dump()

    def _compact(self) -> str:
        return usage_line(self.current, self.context, self.running, self.lang)

    def _notes(self) -> list[str]:
        """The sentences that explain unknown or estimated figures (the view's details)."""
        return usage_notes(self.current, self.context, self.lang)

    def __repr__(self) -> str:
        return f"TokenStats({self._compact()})"

    def _fallback_text(self) -> str:
        return f"{self._compact()} {_DOT[context_level(self.context['percent'])]}"

    def _fallback_html(self) -> str:
        return usage_html(self.current, self.context, self.running, self.lang)


def usage_line(current: Mapping[str, Any], context: Mapping[str, Any], running: bool,
               lang: str) -> str:
    """``↑1.2K ↓340 · 3 calls | Context 32%`` (the context share alone before any call)."""
    c = current
    share = f"{t('context', lang)} {format_context_share(context)}"
    if not running and not c.get("api_calls"):
        return share
    reported = reported_share(c)
    realtime = (f"↑{format_reported(c['input_tokens'], reported)} "
                f"↓{format_reported(c['output_tokens'], reported)}"
                f" · {t(_calls_key(c['api_calls']), lang, n=c['api_calls'])}")
    cost = c.get("cost_usd")
    if cost is not None:  # known: the turn's, and the session's when it differs
        session = c.get("session_cost_usd")
        shown = format_usd(cost)
        realtime += f" · {shown}" + (
            f" / {format_usd(session)}" if session is not None
            and format_usd(session) != shown else "")
    return f"{realtime} | {share}"


def usage_notes(current: Mapping[str, Any], context: Mapping[str, Any], lang: str
                ) -> list[str]:
    """The sentences that explain unknown or estimated figures."""
    notes = []
    if reported_share(current) != "all":
        value = t("usage_unreported_value", lang, n=current["unreported_calls"],
                  m=current["api_calls"])
        notes.append(f"{t('usage_unreported', lang)}: {value}")
    if context.get("estimate") is not None:
        notes.append(t(f"context_estimated_{context['estimate']}", lang))
    if context.get("window_assumed"):
        notes.append(t("context_window_assumed", lang))
    return notes


def usage_html(current: Mapping[str, Any], context: Mapping[str, Any], running: bool,
               lang: str) -> str:
    """The figures as one muted line, the exact numbers in its tooltip."""
    c, ctx = current, context
    title = " · ".join([
        f"in {c['input_tokens']:,} · out {c['output_tokens']:,} · total "
        f"{c['total_tokens']:,} · calls {c['api_calls']} · context "
        f"{'~' if ctx['estimate'] else ''}{ctx['used_tokens']:,}/{ctx['max_tokens']:,}",
        *usage_notes(c, ctx, lang)])
    level = context_level(ctx["percent"])
    dot = f'<span style="color:{_DOT_COLOR[level]}" aria-label="{level}">●</span>'
    return (f'<span title="{html.escape(title)}" style="font-family:system-ui,sans-serif;'
            f'font-size:12px;color:#57606a">{html.escape(usage_line(c, ctx, running, lang))} '
            f"{dot}</span>")


def _calls_key(count: int) -> str:
    return "calls_one" if count == 1 else "calls"
