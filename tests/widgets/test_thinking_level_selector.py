"""ThinkingLevelSelector: levels from the capability table, fallback, on_change."""

from __future__ import annotations

import pytest
import traitlets

from neta_nb.thinking import get_model_thinking_capability
from neta_nb.widgets import ThinkingLevelSelector


def test_levels_come_from_the_model_capability() -> None:
    selector = ThinkingLevelSelector("openai", "gpt-5")
    capability = get_model_thinking_capability("openai", "gpt-5")
    assert selector.levels == list(capability.levels)
    assert selector.level == capability.default_level


def test_an_unsupported_level_falls_back_to_the_model_default() -> None:
    selector = ThinkingLevelSelector("anthropic", "claude-sonnet-4-6", level="minimal")
    assert selector.level == "minimal"
    selector.set_model("deepseek", "deepseek-reasoner")
    deepseek = get_model_thinking_capability("deepseek", "deepseek-reasoner")
    assert "minimal" not in deepseek.levels
    assert selector.level == deepseek.default_level
    selector.level = "high"
    selector.model = "deepseek-chat"  # no thinking at all
    assert (selector.levels, selector.level) == (["off"], "off")


def test_a_supported_level_survives_a_model_change() -> None:
    selector = ThinkingLevelSelector("openai", "gpt-5", level="high")
    selector.set_model("deepseek", "deepseek-reasoner")
    assert selector.level == "high"


def test_setting_an_unsupported_level_is_an_error() -> None:
    selector = ThinkingLevelSelector("deepseek", "deepseek-reasoner")
    with pytest.raises(traitlets.TraitError, match="not supported"):
        selector.level = "adaptive"


def test_levels_are_read_only() -> None:
    selector = ThinkingLevelSelector("openai", "gpt-5")
    with pytest.raises(traitlets.TraitError):
        selector.levels = ["high"]


def test_on_change_and_remove() -> None:
    selector = ThinkingLevelSelector("openai", "gpt-5")
    seen: list[str] = []
    remove = selector.on_change(seen.append)
    selector.level = "low"
    selector.set_model("openai", "gpt-4o")
    remove()
    selector.set_model("openai", "gpt-5")
    assert seen == ["low", "off"]


def test_disabled_repr_and_fallbacks() -> None:
    selector = ThinkingLevelSelector("deepseek", "deepseek-reasoner", disabled=True)
    assert selector.disabled
    assert repr(selector) == "ThinkingLevelSelector(medium of off/low/medium/high)"
    assert selector._fallback_text() == "Thinking level: Medium"
    selector.lang = "zh-CN"
    assert selector._fallback_text() == "思考级别: 中等"
