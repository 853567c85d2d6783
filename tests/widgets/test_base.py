"""The shared widget base: bundle, language, request/reply messages, mimebundle."""

from __future__ import annotations

import json
import re

import pytest
import traitlets

from neta_nb.widgets import SkillCard, ThinkingBlock, TodoCard, TokenStats, ToolCard
from neta_nb.widgets._base import STATIC_DIR, code_span, escape_markdown, fenced, literal_markdown

from .conftest import SentMessages

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


def test_public_names() -> None:
    import neta_nb.widgets as widgets

    assert widgets.__all__ == sorted(widgets.__all__)
    assert {"SkillCard", "ThinkingBlock", "ThinkingLevelSelector", "TodoCard", "TokenStats",
            "ToolCard"} <= set(widgets.__all__)
    assert all(hasattr(widgets, name) for name in widgets.__all__)


def test_every_widget_carries_the_small_loader_and_names_one_shared_bundle() -> None:
    bundle = (STATIC_DIR / "widgets.js").read_text()
    loader = (STATIC_DIR / "loader.js").read_text()
    cards = [TodoCard(), ToolCard(name="x"), TokenStats()]
    states = [card.get_state() for card in cards]
    for state in states:
        assert state["_esm"] == loader
        assert "_css" not in state  # the loader adds the styles, once per page
        assert len(json.dumps(state)) < 5 * 1024
    # All of them reference the same model, which holds the code once.
    references = {state["_bundle"] for state in states}
    assert len(references) == 1
    (reference,) = references
    shared = cards[0]._bundle
    assert reference == f"IPY_MODEL_{shared.model_id}"
    assert shared.code == bundle
    assert shared.css == (STATIC_DIR / "widgets.css").read_text()
    # The bundle exports the plain components for views that compose them.
    for name in ("createTodoCard", "createToolCard", "createSkillCard", "createThinkingBlock",
                 "createTokenStats", "createThinkingLevelSelector", "widgetRenderers"):
        assert re.search(rf"\b{name}\b", bundle), name


@pytest.mark.parametrize(("widget", "component"), [
    (TodoCard, "todo-card"), (ToolCard, "tool-card"), (SkillCard, "skill-card"),
    (ThinkingBlock, "thinking-block"), (TokenStats, "token-stats"),
])
def test_component_names_match_the_js_renderers(widget: type[TodoCard], component: str) -> None:
    assert widget()._component == component
    assert f'"{component}"' in (STATIC_DIR / "widgets.js").read_text()


def test_lang_accepts_en_and_zh_cn_only() -> None:
    card = TodoCard()
    assert card.lang == "en"
    card.lang = "zh-CN"
    with pytest.raises(traitlets.TraitError):
        card.lang = "fr"


def test_mimebundle_is_the_widget_view_with_a_one_line_text() -> None:
    card = ToolCard(name="search", status="done", result="ok " * 1000)
    bundle = card._repr_mimebundle_()
    assert bundle is not None
    data, _metadata = bundle
    assert data[WIDGET_VIEW]["model_id"] == card.model_id
    # The static form is an output of its own (one rich form, see test_static_form.py).
    assert set(data) == {WIDGET_VIEW, "text/plain"}
    assert len(data["text/plain"]) <= 121


def test_unknown_request_kind_gets_an_error_reply(sent: SentMessages) -> None:
    card = TodoCard()
    card._on_custom_message(card, {"kind": "nope", "id": "r1"}, [])
    assert sent == [{"kind": "reply", "id": "r1", "ok": False,
                     "error": "unknown request kind 'nope'"}]


def test_messages_without_kind_and_id_are_ignored(sent: SentMessages) -> None:
    card = TodoCard()
    card._on_custom_message(card, {"kind": "snapshot"}, [])
    card._on_custom_message(card, "text", [])
    assert sent == []


def test_escape_markdown_keeps_markup_as_text() -> None:
    assert escape_markdown("<img src=x onerror=a()> *b* [c](javascript:d)") == (
        r"&lt;img src=x onerror=a\(\)\> \*b\* \[c\]\(javascript:d\)")


def test_literal_markdown_keeps_lines_and_loads_no_image() -> None:
    text = "# Title\n\n![x](http://host.example/?d=secret)\n<img src=http://host.example/>"
    assert literal_markdown(text) == (
        "\\# Title  \n  \n\\!\\[x\\]\\(http://host\\.example/?d=secret\\)  \n"
        "&lt;img src=http://host\\.example/\\>")


def test_code_span_outlasts_backticks_inside() -> None:
    assert code_span("ask_user") == "`ask_user`"
    assert code_span("a`b") == "``a`b``"
    assert code_span("`![](http://x/)`") == "`` `![](http://x/)` ``"


def test_fenced_outlasts_backticks_inside() -> None:
    assert fenced("a ``` b") == "````\na ``` b\n````"
    assert fenced("x", "json") == "```json\nx\n```"
