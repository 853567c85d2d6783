"""The shared widget base: bundle, language, request/reply messages, mimebundle."""

from __future__ import annotations

import gzip
import json
import re
from collections.abc import Callable
from typing import Any

import pytest
import traitlets
from ipywidgets.widgets.widget import _remove_buffers  # type: ignore[import-untyped]

from neta_nb.widgets import SkillCard, ThinkingBlock, TodoCard, TokenStats, ToolCard
from neta_nb.widgets import bundle as _bundle
from neta_nb.widgets.base import (
    STATIC_DIR,
    NetaWidget,
    code_span,
    escape_markdown,
    fenced,
    literal_markdown,
)
from neta_nb.widgets.bundle import MISSING_BUNDLE_ESM, WidgetBundle, loader_source

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
    # Compressed (binary buffers on the wire, a quarter of the text), the same files.
    assert gzip.decompress(shared.code).decode() == bundle
    assert gzip.decompress(shared.css).decode() == (STATIC_DIR / "widgets.css").read_text()
    assert len(shared.code) < len(bundle) / 2
    state, buffer_paths, _ = _remove_buffers(shared.get_state())
    assert {tuple(path) for path in buffer_paths} == {("code",), ("css",)}
    assert "code" not in state and "css" not in state
    # The bundle exports the plain components for views that compose them.
    for name in ("createTodoCard", "createToolCard", "createSkillCard", "createThinkingBlock",
                 "createTokenStats", "createThinkingLevelSelector", "widgetRenderers"):
        assert re.search(rf"\b{name}\b", bundle), name


@pytest.mark.parametrize("contents", [None, "", "\n  \n"])
def test_a_missing_or_empty_bundle_file_draws_what_to_do(
        tmp_path: Any, monkeypatch: pytest.MonkeyPatch, contents: str | None) -> None:
    # An interrupted build can leave an empty file: the cards then say the build is
    # missing instead of failing with "cannot read properties of undefined".
    for name in ("BUNDLE_FILE", "LOADER_FILE"):
        path = tmp_path / f"{name}.js"
        if contents is not None:
            path.write_text(contents)
        monkeypatch.setattr(_bundle, name, path)
    assert gzip.decompress(WidgetBundle.from_static_files().code).decode() == MISSING_BUNDLE_ESM
    assert loader_source() == MISSING_BUNDLE_ESM


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


@pytest.fixture
def opened(monkeypatch: pytest.MonkeyPatch) -> list[tuple[str, str, dict[str, Any]]]:
    """Every comm message the widgets publish, as ``(msg_type, comm_id, data)``: the
    kernel side of what a page would receive."""
    import comm
    from comm.base_comm import BaseComm

    published: list[tuple[str, str, dict[str, Any]]] = []

    class RecordingComm(BaseComm):
        def publish_msg(self, msg_type: str, data: Any = None, metadata: Any = None,
                        buffers: Any = None, **keys: Any) -> None:
            published.append((msg_type, self.comm_id, data or {}))

    monkeypatch.setattr(comm, "create_comm", lambda **kwargs: RecordingComm(**kwargs))
    return published


@pytest.mark.parametrize("build", [TodoCard, TokenStats, lambda: ToolCard(name="x"),
                                   lambda: SkillCard(name="x"), ThinkingBlock])
def test_a_card_opens_no_layout_model_until_its_layout_is_used(
        opened: list[tuple[str, str, dict[str, Any]]], build: Callable[[], NetaWidget]) -> None:
    card = build()
    layouts = [data for kind, _, data in opened
               if kind == "comm_open" and data["state"].get("_model_name") == "LayoutModel"]
    assert layouts == []
    (state,) = [data["state"] for kind, comm_id, data in opened
                if kind == "comm_open" and comm_id == card.comm.comm_id]
    assert "layout" not in state and not card.has_layout

    # The first use creates the model and tells the view, before the change itself.
    card.layout.width = "50%"
    after = opened[-3:]
    assert [kind for kind, _, _ in after] == ["comm_open", "comm_msg", "comm_msg"]
    layout_id = after[0][1]
    assert after[0][2]["state"]["_model_name"] == "LayoutModel"
    assert after[1][1] == card.comm.comm_id
    assert after[1][2]["state"] == {"layout": f"IPY_MODEL_{layout_id}"}
    assert (after[2][1], after[2][2]["state"]) == (layout_id, {"width": "50%"})
    assert card.get_state()["layout"] == f"IPY_MODEL_{layout_id}"


def test_a_layout_given_at_construction_is_sent_with_the_widget(
        opened: list[tuple[str, str, dict[str, Any]]]) -> None:
    card = TodoCard(layout={"width": "300px"})
    state = next(data["state"] for kind, comm_id, data in opened
                 if kind == "comm_open" and comm_id == card.comm.comm_id)
    assert state["layout"] == f"IPY_MODEL_{card.layout.model_id}"
    assert card.layout.width == "300px"


def test_an_opening_leaves_out_dom_options_at_the_frontends_defaults(
        opened: list[tuple[str, str, dict[str, Any]]]) -> None:
    card = TodoCard(tooltip="the plan")
    state = next(data["state"] for kind, comm_id, data in opened
                 if kind == "comm_open" and comm_id == card.comm.comm_id)
    assert state["tooltip"] == "the plan"
    assert not {"_dom_classes", "tabbable", "_view_count"} & set(state)
    card.add_class("wide")  # changed later: sent as any change
    assert opened[-1][2]["state"] == {"_dom_classes": ("wide",)}
    assert card.get_state("tabbable") == {"tabbable": None}  # asked by name: given
    with card.hold_sync():  # a change back to the default is a change too
        card.tooltip = None
    assert opened[-1][2]["state"] == {"tooltip": None}
