"""ToolCard and SkillCard: events in, traits, reprs and fallbacks."""

from __future__ import annotations

import pytest
import traitlets

from neta_nb.events import (
    ProgressEvent,
    SkillEndEvent,
    SkillStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from neta_nb.widgets import SkillCard, ToolCard


def test_tool_card_from_call_then_result() -> None:
    card = ToolCard.from_event(ToolCallEvent(id="t1", name="search", label="Web search",
                                             args={"q": "x"}))
    assert (card.name, card.label, card.status, card.args, card.result) == (
        "search", "Web search", "running", {"q": "x"}, None)
    assert repr(card) == "ToolCard(search: running)"
    card.apply(ToolResultEvent(id="t1", name="search", result="3 hits"))
    assert (card.status, card.result) == ("done", "3 hits")
    card.apply(ToolResultEvent(id="t1", name="search", result="boom", is_error=True))
    assert repr(card) == "ToolCard(search: error)"


def test_tool_card_status_is_checked() -> None:
    with pytest.raises(traitlets.TraitError):
        ToolCard(status="finished")


def test_tool_card_fallbacks() -> None:
    card = ToolCard(name="read_file", label="Read file", status="done",
                    args={"path": "a.csv"}, result="<script>x</script>")
    assert card._fallback_text() == (
        'Read file · Done\nArguments: {"path": "a.csv"}\nResult: <script>x</script>')
    assert "&lt;script&gt;x&lt;/script&gt;" in card._fallback_html()
    assert "<script>" not in card._fallback_html()


def test_skill_card_follows_its_events() -> None:
    card = SkillCard.from_event(SkillStartEvent(id="s1", name="report", label="Report"))
    assert repr(card) == "SkillCard(report: running 0%)"
    card.apply(ProgressEvent(id="s1", percent=42.4, step="Charts"))
    assert (card.percent, card.step, card.detail) == (42.4, "Charts", None)
    assert repr(card) == "SkillCard(report: running 42%)"
    assert card._fallback_text() == "Report · 42% · Charts"
    card.apply(ProgressEvent(id="s1", percent=140))
    assert card.percent == 100
    card.apply(SkillEndEvent(id="s1", name="report", status="done", result="**saved**"))
    assert (card.status, card.percent, card.result) == ("done", 100, "**saved**")
    assert repr(card) == "SkillCard(report: done)"
    assert card._fallback_text() == "Report · Done\n**saved**"
    card.lang = "zh-CN"
    assert card._fallback_text().splitlines()[0] == "Report · 完成"


def test_skill_card_error_fallback_html_is_escaped() -> None:
    card = SkillCard(name="x", status="error", result="<img src=x onerror=alert(1)>")
    html = card._fallback_html()
    assert "&lt;img src=x onerror=alert(1)&gt;" in html
    assert "<img" not in html
    assert "#d32f2f" in html
