"""The static form: one output per displayed widget, kept current as the widget settles;
and the shared bundle model every widget names."""

from __future__ import annotations

from typing import Any

import ipywidgets  # type: ignore[import-untyped]  # no stubs or py.typed (as in neta_nb)
import pytest

from neta_nb.widgets import TodoCard, ToolCard
from neta_nb.widgets.bundle import WidgetBundle, shared_bundle
from neta_nb.widgets.static_form import PLAIN_CHARS, StaticForm, form_display_id

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"


class ManualTimer:
    def __init__(self) -> None:
        self.pending: list[Any] = []

    def __call__(self, delay: float, callback: Any) -> Any:
        self.pending.append(callback)
        return self

    def cancel(self) -> None:
        self.pending.clear()

    def fire(self) -> None:
        pending, self.pending = self.pending, []
        for callback in pending:
            callback()


@pytest.fixture
def updates(monkeypatch: pytest.MonkeyPatch) -> list[tuple[dict[str, str], str]]:
    seen: list[tuple[dict[str, str], str]] = []
    monkeypatch.setattr("neta_nb.widgets.static_form.send_update",
                        lambda data, display_id: seen.append((data, display_id)))
    return seen


def test_displaying_a_widget_makes_its_view_and_one_static_form(
        monkeypatch: pytest.MonkeyPatch) -> None:
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **options: shown.append((data, options)))
    card = ToolCard(name="search", label="Web search", status="done", result="<b>3 hits</b>")
    card._ipython_display_()
    (view, view_options), (form, form_options) = shown
    assert set(view) == {WIDGET_VIEW, "text/plain"} and view_options["raw"] is True
    # The form carries the words: a viewer that draws no view (GitHub) shows them once.
    assert view["text/plain"] == ""
    assert set(form) == {"text/html", "text/plain"}
    assert form_options["display_id"] == card._static_form.display_ids[0]
    assert "&lt;b&gt;3 hits&lt;/b&gt;" in form["text/html"] and "<b>3 hits" not in form["text/html"]
    # The form's HTML holds nothing random: an executed notebook compares equal (nbval).
    assert form == card._static_form.bundle()


def test_a_forms_display_id_names_the_view_it_follows(monkeypatch: pytest.MonkeyPatch) -> None:
    # A page that lost its display ids (reloaded while the kernel ran) finds the form's
    # output by the view before it (js/labextension/src/static-forms.ts).
    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **options: shown.append((data, options)))
    card = ToolCard(name="search", status="done")
    card._ipython_display_()
    card._ipython_display_()
    (view, _), (_, first), (_, _), (_, second) = shown
    assert view[WIDGET_VIEW]["model_id"] == card.model_id
    for options in (first, second):
        assert options["display_id"].startswith(f"neta-form:{card.model_id}:")
    assert first["display_id"] != second["display_id"]
    assert card._static_form.display_ids == [first["display_id"], second["display_id"]]
    # A form shown after no view names none.
    assert ":" not in form_display_id(None)


async def test_a_chat_view_opened_on_a_page_with_the_bridge_sends_its_form_again(
        updates: list[tuple[dict[str, str], str]]) -> None:
    from neta_nb import Agent, AgentSession, ScriptedProvider
    from neta_nb.widgets import ChatView

    session = AgentSession(Agent("analyst", model=ScriptedProvider([[{"text": "Hi."}]])))
    await session.run("Hello")
    chat = ChatView(session)
    chat._static_form.display_ids = ["d1"]  # as _ipython_display_ leaves it
    chat._view_opened({"view_id": "v1"})  # a page without the bridge: nothing to write it
    chat._static_form.flush()
    assert updates == []
    # A view drawn on a reloaded page: its form goes out again, for the bridge to write.
    chat._view_opened({"view_id": "v2", "notebook_bridge": True})
    chat._static_form.flush()
    assert [display_id for _, display_id in updates] == ["d1"]
    assert "Hi." in updates[0][0]["text/html"]
    chat.close()


def test_a_widget_names_the_cells_that_displayed_it(monkeypatch: pytest.MonkeyPatch) -> None:
    # A page reloaded from a notebook saved before these runs offers this live chat where
    # the cell shows the saved one, or an older one (js/labextension/src/reattach.ts).
    from neta_nb.widgets import ChatView
    from neta_nb.widgets.static_form import CellRun

    monkeypatch.setattr("IPython.display.display", lambda data, **options: None)
    runs = iter([CellRun("cell-a", 3), CellRun("cell-b", 4), CellRun("cell-a", 7), None])
    monkeypatch.setattr("neta_nb.widgets.base.running_cell", lambda: next(runs))
    chat = ChatView()
    assert chat._shown_in == {}
    chat._ipython_display_()
    chat._ipython_display_()
    assert chat._shown_in == {"model_id": chat.model_id, "cells": {"cell-a": 3, "cell-b": 4}}
    chat._ipython_display_()  # cell-a ran again: its newest run counts
    assert chat._shown_in["cells"] == {"cell-b": 4, "cell-a": 7}
    chat._ipython_display_()  # displayed outside a cell run: nothing to name
    assert chat._shown_in["cells"] == {"cell-b": 4, "cell-a": 7}
    assert chat.get_state()["_shown_in"] == chat._shown_in  # on the page with the model
    chat.close()


def test_a_run_is_numbered_once_for_all_it_displays(monkeypatch: pytest.MonkeyPatch) -> None:
    from ipykernel.kernelbase import Kernel

    from neta_nb.widgets.static_form import running_cell

    assert running_cell() is None  # no kernel here
    parents = iter([("c1", "r1"), ("c1", "r1"), ("c2", "r2"), ("c1", "r3")])

    class FakeKernel:
        def get_parent(self) -> dict[str, Any]:
            cell, request = next(parents)
            return {"header": {"msg_id": request}, "metadata": {"cellId": cell}}

    monkeypatch.setattr(Kernel, "initialized", classmethod(lambda cls: True))
    monkeypatch.setattr(Kernel, "instance", classmethod(lambda cls: FakeKernel()))
    first, again, other, later = (running_cell() for _ in range(4))
    assert first == again and first is not None and other is not None and later is not None
    assert first.cell == "c1" and first.run < other.run < later.run and later.cell == "c1"


def test_a_card_updates_its_form_when_it_settles_at_most_once_per_interval(
        updates: list[tuple[dict[str, str], str]]) -> None:
    card = TodoCard(todos=[{"id": "1", "content": "Load", "status": "in_progress"}])
    timer = ManualTimer()
    card._static_form = StaticForm(card._static_parts, schedule=timer, clock=lambda: 10.0)
    card._static_form.refresh()
    assert updates == []  # never displayed: nothing to update
    card._static_form.display_ids = ["d1", "d2"]
    card.todos = [{"id": "1", "content": "Load", "status": "completed"}]
    assert [display_id for _, display_id in updates] == ["d1", "d2"]  # the first at once
    card.todos = [{"id": "1", "content": "Load", "status": "completed"},
                  {"id": "2", "content": "Fit", "status": "pending"}]
    card.todos = [{"id": "1", "content": "Load", "status": "completed"},
                  {"id": "2", "content": "Fit", "status": "in_progress"}]
    assert len(updates) == 2  # within the interval: waits for the trailing update
    timer.fire()
    assert len(updates) == 4
    assert "Fit (In progress)" in updates[-1][0]["text/plain"]


def test_the_plain_text_is_short() -> None:
    card = ToolCard(name="dump", status="done", result="x" * 5_000)
    plain = card._static_form.bundle()["text/plain"]
    assert len(plain) <= PLAIN_CHARS + 1 and plain.endswith("…")


def test_one_bundle_model_per_kernel_opened_again_after_close_all() -> None:
    first = shared_bundle()
    assert TodoCard()._bundle is first and ToolCard()._bundle is first
    assert isinstance(first, WidgetBundle) and first.hash and first.code
    state = first.get_state()
    assert (state["_model_name"], state["_model_module"]) == ("WidgetModel",
                                                              "@jupyter-widgets/base")
    ipywidgets.Widget.close_all()
    again = TodoCard()._bundle
    assert again is not first and again.comm is not None and again.hash == first.hash


def test_side_by_side_shows_one_row_of_its_childrens_forms_kept_current_with_them(
        monkeypatch: pytest.MonkeyPatch, updates: list[tuple[dict[str, str], str]]) -> None:
    from neta_nb.widgets import SideBySide

    shown: list[tuple[dict[str, Any], dict[str, Any]]] = []
    monkeypatch.setattr("IPython.display.display",
                        lambda data, **options: shown.append((data, options)))
    plan = TodoCard(todos=[{"id": "1", "content": "Load", "status": "in_progress"}])
    tool = ToolCard(name="search", label="Web search", status="running",
                    layout={"width": "300px"})
    row = SideBySide(tool, plan, ipywidgets.Label("a plain widget"))
    row._ipython_display_()
    (view, _), (form, form_options) = shown
    assert set(view) == {WIDGET_VIEW, "text/plain"} and view["text/plain"] == ""
    html = form["text/html"]
    # The children's own forms, in the row's order; a fixed live width stays fixed.
    assert html.index("Web search") < html.index("Load") < html.index("a plain widget")
    assert 'style="flex:0 0 300px;min-width:0"' in html
    assert form["text/plain"].startswith(tool._static_parts()[1])
    assert form_options["display_id"] == row._static_form.display_ids[0]
    # A child settling updates the row's form too (the child itself was not displayed).
    row._static_form._clock = lambda: 100.0
    plan.todos = [{"id": "1", "content": "Load", "status": "completed"}]
    assert [display_id for _, display_id in updates] == row._static_form.display_ids
    assert "0/1 done" in form["text/plain"]
    assert "Plan · 1/1 done\n[x] Load" in updates[-1][0]["text/plain"]


def test_side_by_side_follows_its_present_children_and_a_rerun_replaces_the_old_row(
        monkeypatch: pytest.MonkeyPatch, updates: list[tuple[dict[str, str], str]]) -> None:
    from neta_nb.widgets import SideBySide

    monkeypatch.setattr("IPython.display.display", lambda data, **options: None)
    plan = TodoCard(todos=[{"id": "1", "content": "Load", "status": "in_progress"}])
    tool = ToolCard(name="search", label="Web search", status="running")
    old = SideBySide(children=[plan, tool])  # the usual HBox call works too
    old._ipython_display_()
    new = SideBySide(plan, tool)  # the same cell run again: the old row stays open
    new._ipython_display_()
    for row in (old, new):
        row._static_form._clock = lambda: 100.0
    plan.todos = [{"id": "1", "content": "Load", "status": "completed"}]
    # Only the newest row's display is updated (the old one was replaced in the cell).
    assert {display_id for _, display_id in updates} == set(new._static_form.display_ids)

    # Children set later are followed, the ones taken out no longer.
    updates.clear()
    other = TodoCard(todos=[{"id": "2", "content": "Fit", "status": "pending"}])
    new.children = [tool, other]
    assert "Fit" in updates[-1][0]["text/plain"] and "Load" not in updates[-1][0]["text/plain"]
    updates.clear()
    new._static_form._clock = lambda: 200.0  # past the interval: the next change goes at once
    plan.todos = []
    assert updates == []
    other.todos = [{"id": "2", "content": "Fit", "status": "completed"}]
    assert len(updates) == 1
    # Closed, it follows nothing.
    updates.clear()
    new.close()
    other.todos = []
    assert updates == []
