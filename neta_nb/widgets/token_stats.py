"""``TokenStats``: compact token and context usage (seed 002 §5.3), from ``token_update``
events only — real provider usage, never an estimate."""

from __future__ import annotations

import html
import math
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal
from typing import Any

import traitlets

from ..events import ContextUsage, TokenUpdateEvent, TurnUsage
from ..labels import t
from ._base import NetaWidget, escape_markdown

__all__ = ["TokenStats", "context_level", "format_tokens"]


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


class TokenStats(NetaWidget):
    """``↑in ↓out · N calls | Context P% ●``; the realtime part while ``running``."""

    _component = traitlets.Unicode("token-stats").tag(sync=True)
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
        c, ctx = self.current, self.context
        percent = f"{round(ctx['percent'])}%"
        context = f"{t('context', self.lang)} {percent}"
        if not self.running:
            return context
        realtime = (f"↑{format_tokens(c['input_tokens'])} ↓{format_tokens(c['output_tokens'])}"
                    f" · {t(_calls_key(c['api_calls']), self.lang, n=c['api_calls'])}")
        return f"{realtime} | {context}"

    def __repr__(self) -> str:
        return f"TokenStats({self._compact()})"

    def _fallback_text(self) -> str:
        return f"{self._compact()} {_DOT[context_level(self.context['percent'])]}"

    def _fallback_markdown(self) -> str:
        return escape_markdown(self._fallback_text())

    def _fallback_html(self) -> str:
        c, ctx = self.current, self.context
        title = (f"in {c['input_tokens']:,} · out {c['output_tokens']:,} · total "
                 f"{c['total_tokens']:,} · calls {c['api_calls']} · context "
                 f"{ctx['used_tokens']:,}/{ctx['max_tokens']:,}")
        return (f'<span title="{html.escape(title)}" style="font-family:system-ui,sans-serif;'
                f'font-size:12px;color:#57606a">{html.escape(self._fallback_text())}</span>')


def _calls_key(count: int) -> str:
    return "calls_one" if count == 1 else "calls"
