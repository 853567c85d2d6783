"""TokenStats: the token_update shape, formatting, colour levels, reprs, fallbacks."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pydantic
import pytest

from neta_nb.events import ContextUsage, TokenUpdateEvent, TurnUsage
from neta_nb.widgets import TokenStats
from neta_nb.widgets.cards.token_stats import (
    context_level,
    format_context_share,
    format_reported,
    format_tokens,
    reported_share,
)

EVENT: dict[str, dict[str, float]] = {
    "current": {"input_tokens": 1234, "output_tokens": 340, "total_tokens": 1574,
                "api_calls": 3},
    "context": {"used_tokens": 64000, "max_tokens": 200000, "percent": 32.0}}


@pytest.mark.parametrize(("value", "text"), [
    (0, "0"), (999, "999"), (1000, "1K"), (1234, "1.2K"), (12345, "12.3K"),
    (999_949, "999.9K"), (999_950, "1M"), (1_200_000, "1.2M"), (2_500_000_000, "2.5B"),
])
def test_format_tokens(value: int, text: str) -> None:
    assert format_tokens(value) == text


@pytest.mark.parametrize(("percent", "level"), [
    (0, "ok"), (50, "ok"), (50.1, "warn"), (80, "warn"), (80.5, "high"), (100, "high")])
def test_context_level(percent: float, level: str) -> None:
    assert context_level(percent) == level


# The cases js/test/token-stats.test.ts checks the JS component with: both sides show the
# same text for the same numbers.
SHARED_CASES = json.loads((Path(__file__).parents[1] / "fixtures" / "token_format.json")
                          .read_text())


@pytest.mark.parametrize(("value", "text"), SHARED_CASES["format_tokens"])
def test_format_tokens_agrees_with_the_js_component(value: float, text: str) -> None:
    assert format_tokens(value) == text


@pytest.mark.parametrize(("percent", "level"), SHARED_CASES["context_level"])
def test_context_level_agrees_with_the_js_component(percent: float, level: str) -> None:
    assert context_level(percent) == level


@pytest.mark.parametrize(("usage", "up", "down"), SHARED_CASES["reported_figures"])
def test_unreported_figures_agree_with_the_js_component(usage: dict[str, int], up: str,
                                                        down: str) -> None:
    reported = reported_share(usage)
    assert f"↑{format_reported(usage['input_tokens'], reported)}" == up
    assert f"↓{format_reported(usage['output_tokens'], reported)}" == down


@pytest.mark.parametrize(("context", "text"), SHARED_CASES["context_share"])
def test_context_share_agrees_with_the_js_component(context: dict[str, object],
                                                    text: str) -> None:
    assert format_context_share(context) == text


JS = Path(__file__).parents[2] / "js"


@pytest.mark.skipif(not (JS / "node_modules" / "esbuild").is_dir() or not shutil.which("node"),
                    reason="needs Node.js and `npm ci` in js/ (scripts/test.sh does both)")
def test_the_js_side_passes_the_same_cases() -> None:
    # Runs the JS test over the shared cases, so a Python-only run still notices the two
    # sides drifting apart.
    result = subprocess.run(["node", "test.mjs", "--test-name-pattern", "shared case"],
                            cwd=JS, capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    assert "# pass 2" in result.stdout, result.stdout


def test_state_is_the_token_update_shape() -> None:
    stats = TokenStats(EVENT, running=True)
    # An older sender's event: the added fields take their "reported, known" defaults.
    assert stats.current == {**EVENT["current"], "unreported_calls": 0, "cost_usd": None,
                             "cost_split": None, "session_cost_usd": None}
    assert stats.context == {**EVENT["context"], "estimate": None, "window_assumed": False}
    assert repr(stats) == "TokenStats(↑1.2K ↓340 · 3 calls | Context 32%)"
    # After the turn its figures stay (the last turn's); before any call only the share.
    stats.running = False
    assert repr(stats) == "TokenStats(↑1.2K ↓340 · 3 calls | Context 32%)"
    assert repr(TokenStats(context=EVENT["context"])) == "TokenStats(Context 32%)"


def test_usage_the_server_did_not_report_is_unknown_not_zero() -> None:
    stats = TokenStats({"current": {"input_tokens": 0, "output_tokens": 0, "total_tokens": 0,
                                    "api_calls": 2, "unreported_calls": 2},
                        "context": {"used_tokens": 900, "max_tokens": 4096, "percent": 22.0,
                                    "estimate": "unreported"}})
    assert stats._fallback_text() == "↑? ↓? · 2 calls | Context ~22% 🟢"
    html = stats._fallback_html()
    assert "No usage from the server: 2 of 2 calls" in html
    assert "the server reported no usage" in html
    assert "context ~900/4,096" in html


def test_estimate_after_compaction_and_assumed_window_say_so() -> None:
    stats = TokenStats({"current": TurnUsage().model_dump(),
                        "context": {"used_tokens": 500, "max_tokens": 128_000, "percent": 0.4,
                                    "estimate": "compaction", "window_assumed": True}},
                       lang="zh-CN")
    assert stats._fallback_text() == "上下文 ~<1% 🟢"
    html = stats._fallback_html()
    assert "压缩后的估算值" in html and "上下文窗口为假定值" in html


def test_apply_accepts_the_event_model() -> None:
    stats = TokenStats()
    assert stats.current == TurnUsage().model_dump()
    stats.apply(TokenUpdateEvent(current=TurnUsage(input_tokens=5, api_calls=1),
                                 context=ContextUsage(used_tokens=9, max_tokens=10,
                                                      percent=90)))
    assert stats.current["input_tokens"] == 5
    assert stats.context["percent"] == 90


def test_malformed_usage_is_refused() -> None:
    stats = TokenStats()
    with pytest.raises(pydantic.ValidationError):
        stats.current = {"input_tokens": "many"}


def test_fallbacks() -> None:
    stats = TokenStats(EVENT, running=True, lang="zh-CN")
    assert stats._fallback_text() == "↑1.2K ↓340 · 3次 | 上下文 32% 🟢"
    html = stats._fallback_html()
    assert 'title="in 1,234 · out 340 · total 1,574 · calls 3 · context 64,000/200,000"' in html


def test_one_call_is_singular() -> None:
    def stats(calls: int) -> str:
        return TokenStats(current={"input_tokens": 1, "output_tokens": 1, "total_tokens": 2,
                                   "api_calls": calls},
                          context={"used_tokens": 1, "max_tokens": 10, "percent": 10.0},
                          running=True)._fallback_text()

    assert "· 1 call |" in stats(1)
    assert "· 2 calls |" in stats(2)
