"""``ThinkingLevelSelector``: choose the thinking level among those the current model
supports (seed 002 §9.2). The capability table lives in :mod:`neta_nb.thinking`; this
widget only shows it and reports the choice."""

from __future__ import annotations

import html
from collections.abc import Callable
from typing import Any

import traitlets

from ...labels import t
from ...thinking import get_model_thinking_capability
from ..base import NetaWidget

__all__ = ["ThinkingLevelSelector"]


class ThinkingLevelSelector(NetaWidget):
    """Levels follow ``supplier``/``model``; a level the new model lacks falls back to the
    model's default. ``disabled`` while a turn runs."""

    _component = traitlets.Unicode("thinking-level-selector").tag(sync=True)
    _static_traits = ("level", "lang")
    supplier = traitlets.Unicode("", help="Provider, e.g. 'anthropic'.")
    model = traitlets.Unicode("", help="Model id, e.g. 'claude-sonnet-4-6'.")
    levels = traitlets.List(traitlets.Unicode(), read_only=True).tag(sync=True)
    level = traitlets.Unicode("").tag(sync=True)
    disabled = traitlets.Bool(False).tag(sync=True)

    def __init__(self, supplier: str = "", model: str = "", *, level: str | None = None,
                 **kwargs: Any) -> None:
        super().__init__(supplier=supplier, model=model, **kwargs)
        self._refresh_levels()
        if level is not None:
            self.level = level

    @traitlets.observe("supplier", "model")
    def _on_model_change(self, _change: Any) -> None:
        self._refresh_levels()

    def set_model(self, supplier: str, model: str) -> None:
        """Switch supplier and model together (one recomputation, no in-between state)."""
        with self.hold_trait_notifications():
            self.supplier = supplier
            self.model = model

    def _refresh_levels(self) -> None:
        capability = get_model_thinking_capability(self.supplier, self.model)
        with self.hold_sync():
            self.set_trait("levels", list(capability.levels))
            if self.level not in capability.levels:
                self.level = capability.default_level

    @traitlets.validate("level")
    def _validate_level(self, proposal: Any) -> str:
        value = str(proposal["value"])
        if self.levels and value not in self.levels:
            raise traitlets.TraitError(
                f"level {value!r} is not supported by {self.supplier}:{self.model}; "
                f"choose one of {', '.join(self.levels)}")
        return value

    def on_change(self, callback: Callable[[str], None]) -> Callable[[], None]:
        """Call ``callback(level)`` whenever the level changes (from the view or from
        Python). Returns a function that removes the callback."""

        def observer(change: Any) -> None:
            callback(change["new"])

        self.observe(observer, names="level")

        def remove() -> None:
            self.unobserve(observer, names="level")

        return remove

    def __repr__(self) -> str:
        return f"ThinkingLevelSelector({self.level} of {'/'.join(self.levels)})"

    def _fallback_text(self) -> str:
        return f"{t('thinking_level', self.lang)}: {t(f'level_{self.level}', self.lang)}"

    def _fallback_html(self) -> str:
        return (f'<span style="font-family:system-ui,sans-serif;font-size:12px">'
                f"{html.escape(self._fallback_text())}</span>")
