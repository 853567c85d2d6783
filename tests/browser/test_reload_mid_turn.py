"""A page reloaded while its kernel runs keeps the saved transcript true (issue 48, item 5).

* A chat's static form is updated by display id, which only the page that ran the cell
  maps. A turn that ends after a reload still reaches the saved notebook: saved then, its
  static form ends with the last answer. So does one that ends while no page is open.
* A notebook saved, then run again in a new kernel and reloaded unsaved, shows the chat as
  saved (its model is gone). The cell's live chat is offered above it; taken, the cell
  shows the live chat, and saved, the notebook holds it. Run again in the same kernel, the
  older chat shows live, with the newer one offered above it.
"""

from __future__ import annotations

from html.parser import HTMLParser
from pathlib import Path
from typing import Any

import nbformat
import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

GATED_CHAT = """
gate = asyncio.Event()
provider = FakeProvider([[TextDelta("Reading the table first. "), gate.wait,
                          TextDelta("The busiest month was March, with 412 orders."),
                          StreamDone("end_turn")]], context_window=200_000)
session = AgentSession(Agent("analyst", model=provider))
chat = ChatView(session, height="360px")
chat
""".strip()
LAST_ANSWER = "Reading the table first. The busiest month was March, with 412 orders."
RUNNING = "() => document.querySelector('.neta-chat-view')?.classList.contains('neta-is-running')"
IDLE = ("() => { const view = document.querySelector('.neta-chat-view');"
        " return view && !view.classList.contains('neta-is-running'); }")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
SAVE = "async () => { await window.jupyterapp.commands.execute('docmanager:save'); }"


RUN_CHAT = """
import os
RUN = globals().get("RUN", 0) + 1
provider = ScriptedProvider([[{"text": f"Answer from kernel {os.getpid()}, run {RUN}."}]])
session = AgentSession(Agent("analyst", model=provider))
chat = ChatView(session, height="300px")
chat
""".strip()
OFFER = ".neta-nb-reattach"
# The first widget view output of the notebook drawn again as the widget manager's renderer
# draws it once it has the view (after its model came, or the kernel's models were
# restored): it empties the output node and adds the view.
REDRAW_VIEW = f"""async () => {{
  const panel = window.jupyterapp.shell.currentWidget;
  for (const cell of panel.content.widgets) {{
    if (cell.model.type !== "code") continue;
    const outputs = cell.model.outputs;
    for (let index = 0; index < outputs.length; index++) {{
      const data = outputs.get(index).data["{WIDGET_VIEW}"];
      if (!data) continue;
      const renderer = cell.outputArea.widgets[index].widgets
        .find((widget) => widget.node.classList.contains("jp-OutputArea-output"));
      const manager = await renderer._manager.promise;
      const view = await manager.create_view(await manager.get_model(data.model_id));
      renderer.node.textContent = "";
      renderer.addWidget(view.luminoWidget);
      return;
    }}
  }}
  throw new Error("no widget view output");
}}"""
MODEL_NOT_FOUND = "widget model not found"


def _form_shows(lab: LabSession, words: str) -> None:
    """Wait until the page's static form holds ``words``."""
    lab.page.wait_for_function(
        "(words) => document.querySelector('.neta-static-form')?.textContent.includes(words)",
        arg=words, timeout=10_000)


def _offer_unchanged_at_two_widths(lab: LabSession, screenshot_dir: Path, name: str) -> Any:
    """An offer stands and has not changed the notebook: the chat cell, shot at 800 and
    380 pixels (``<name>-800``, ``<name>-380``), then back at 800; returns the cell's
    locator."""
    assert not lab.page.evaluate(
        "() => window.jupyterapp.shell.currentWidget.context.model.dirty")
    cell = lab.page.locator(".jp-CodeCell").nth(1)
    lab.set_left_area(collapsed=True)
    for width in (800, 380):
        lab.set_viewport_size({"width": width, "height": 900})
        lab.screenshot_themes(cell, screenshot_dir, f"{name}-{width}")
    lab.set_viewport_size({"width": 800, "height": 900})
    return cell


class _Messages(HTMLParser):
    """The words of each message of a static form (``neta-static-user`` and
    ``neta-static-assistant`` blocks), in order."""

    def __init__(self) -> None:
        super().__init__()
        self.messages: list[tuple[str, list[str]]] = []
        self._depth = 0  # open tags inside the message being read

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        if self._depth:
            self._depth += 1
            return
        classes = (dict(attrs).get("class") or "").split()
        role = next((c[len("neta-static-"):] for c in classes
                     if c in ("neta-static-user", "neta-static-assistant")), None)
        if role:
            self.messages.append((role, []))
            self._depth = 1

    def handle_endtag(self, tag: str) -> None:
        if self._depth:
            self._depth -= 1

    def handle_data(self, data: str) -> None:
        if self._depth:
            self.messages[-1][1].append(data)


def _messages(html: str) -> list[tuple[str, str]]:
    parser = _Messages()
    parser.feed(html)
    return [(role, " ".join(" ".join(parts).split())) for role, parts in parser.messages]


def _saved_messages(lab: LabSession, path: str) -> list[tuple[str, str]]:
    """The messages of the chat's static form in the saved file: (role, words)."""
    notebook = nbformat.read(lab.server.root_dir / path, as_version=4)
    forms = [output["data"]["text/html"] for cell in notebook.cells if cell.cell_type == "code"
             for output in cell.outputs
             if "neta-static-form" in output.get("data", {}).get("text/html", "")]
    assert len(forms) == 1, forms
    return _messages(forms[0])


def test_a_turn_that_ends_after_a_reload_reaches_the_saved_form(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("reload_mid_turn.ipynb", [chat_cells.IMPORTS, GATED_CHAT])
    page = lab.page
    lab.send_in_chat("Which month was busiest?")
    page.locator(".neta-chat-text", has_text="Reading the table first.").wait_for()
    page.wait_for_function(RUNNING)
    page.evaluate(SAVE)

    lab.reload()
    view = page.locator(".neta-chat-view")
    view.locator(".neta-chat-text", has_text="Reading the table first.").wait_for(timeout=60_000)
    lab.execute(path, "gate.set()")
    view.locator(".neta-chat-text", has_text="412 orders").wait_for(timeout=30_000)
    page.wait_for_function(IDLE)
    lab.wait_for_kernel_value(path, "session.messages[-1].text.endswith('412 orders.')", "True")
    # The form follows the turn's end on the reloaded page too: saved, it ends with it.
    _form_shows(lab, "412 orders")
    page.evaluate(SAVE)
    assert _saved_messages(lab, path) == [("user", "You Which month was busiest?"),
                                          ("assistant", f"analyst {LAST_ANSWER}")]


def test_a_turn_that_ends_while_no_page_is_open_reaches_the_saved_form(
        lab: LabSession) -> None:
    path = lab.run_notebook("page_away.ipynb", [chat_cells.IMPORTS, GATED_CHAT])
    page = lab.page
    lab.send_in_chat("Which month was busiest?")
    page.locator(".neta-chat-text", has_text="Reading the table first.").wait_for()
    page.evaluate(SAVE)
    # The turn ends while the page is away: nothing hears its form then.
    lab.execute(path, "asyncio.get_running_loop().call_later(0.5, gate.set)")
    page.goto("about:blank")
    page.wait_for_timeout(2_000)
    lab.goto()
    lab.open_notebook(path)  # restored by the workspace: waits for its kernel
    assert lab.execute(path, "print(session.messages[-1].text)").strip().endswith("412 orders.")
    # The view drawn anew sends the form again, and the page writes it after the view.
    page.locator(".neta-chat-view .neta-chat-text", has_text="412 orders").wait_for(
        timeout=60_000)
    _form_shows(lab, "412 orders")
    page.evaluate(SAVE)
    assert _saved_messages(lab, path) == [("user", "You Which month was busiest?"),
                                          ("assistant", f"analyst {LAST_ANSWER}")]


def _send_and_wait(lab: LabSession, text: str) -> None:
    lab.send_in_chat(text)
    lab.page.locator(".neta-chat-bubble", has_text=text).wait_for()
    lab.page.wait_for_function(IDLE)


def _saved_view_model(lab: LabSession, path: str) -> str:
    notebook = nbformat.read(lab.server.root_dir / path, as_version=4)
    (model_id,) = [output["data"][WIDGET_VIEW]["model_id"] for cell in notebook.cells
                   if cell.cell_type == "code" for output in cell.outputs
                   if WIDGET_VIEW in output.get("data", {})]
    return str(model_id)


def test_a_reloaded_unsaved_notebook_offers_the_live_chat_in_place_of_the_saved_one(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("reattach.ipynb", [chat_cells.IMPORTS, RUN_CHAT])
    page = lab.page
    _send_and_wait(lab, "First question")
    saved_answer = lab.execute(path, "print(session.messages[-1].text)").strip()
    page.evaluate(SAVE)
    lab.close_all()  # the kernel that held the saved chat ends

    # Run again in a new kernel and chatted on, but not saved; then the page reloads.
    lab.open_notebook(path)
    lab.run_all(path)
    _send_and_wait(lab, "Second question")
    live_answer = lab.execute(path, "print(session.messages[-1].text)").strip()
    live_model = lab.execute(path, "print(chat.model_id)").strip()
    assert live_answer != saved_answer
    lab.reload()

    # The saved chat shows (its model is gone), with the live one offered above it.
    form = page.locator(".jp-OutputArea-child:has(.neta-static-form)")
    offer = form.locator(OFFER)
    offer.wait_for(timeout=60_000)
    assert saved_answer in (form.text_content() or "")
    assert page.locator(".neta-chat-view").count() == 0
    assert "The kernel still has the live chat" in (offer.text_content() or "")
    cell = _offer_unchanged_at_two_widths(lab, screenshot_dir, "reattach-offer")

    # Taken: the cell shows the live chat, and its form follows it.
    offer.locator("button", has_text="Show the live chat").click()
    view = page.locator(".neta-chat-view")
    view.locator(".neta-chat-text", has_text=live_answer).wait_for(timeout=30_000)
    assert page.locator(OFFER).count() == 0
    _form_shows(lab, live_answer)
    lab.screenshot_themes(cell, screenshot_dir, "reattached-800")
    page.evaluate(SAVE)
    assert _saved_view_model(lab, path) == live_model
    assert _saved_messages(lab, path)[-1] == ("assistant", f"analyst {live_answer}")
    # The widget manager logged that it could not draw the saved model: the expected
    # outcome for a model the kernel no longer has, not an error of the page.
    lab.console_errors[:] = [error for error in lab.console_errors
                             if MODEL_NOT_FOUND not in error.text]


def test_a_reloaded_unsaved_notebook_offers_the_newer_chat_over_an_older_live_one(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("newer_chat.ipynb", [chat_cells.IMPORTS, RUN_CHAT])
    page = lab.page
    _send_and_wait(lab, "First question")
    older_model = lab.execute(path, "print(chat.model_id)").strip()
    page.evaluate(SAVE)
    # The chat cell runs again in the same kernel (the older chat lives on there), and the
    # newer chat is used; then the page reloads unsaved.
    lab.run_all(path)
    assert lab.wait_for_kernel_value(path, f"chat.model_id != {older_model!r}", "True") == "True"
    page.wait_for_function("() => document.querySelectorAll('.neta-chat-view').length === 1"
                           " && !document.querySelector('.neta-chat-bubble')")
    _send_and_wait(lab, "Second question")
    newer_answer = lab.execute(path, "print(session.messages[-1].text)").strip()
    newer_model = lab.execute(path, "print(chat.model_id)").strip()
    assert newer_answer.endswith("run 2.")
    lab.reload()

    # The file's chat is the older one, live; the newer one is offered above it.
    view = page.locator(".neta-chat-view")
    view.locator(".neta-chat-text", has_text="run 1.").wait_for(timeout=60_000)
    offer = page.locator(OFFER)
    offer.wait_for(timeout=30_000)
    assert "This cell showed a newer chat since" in (offer.text_content() or "")
    # The widget manager draws the view after the offer was made (its model, or the
    # kernel's models restored, came later): its renderer empties the output, and the
    # offer stands again above the view drawn.
    page.evaluate(REDRAW_VIEW)
    view.locator(".neta-chat-text", has_text="run 1.").wait_for(timeout=30_000)
    offer.wait_for(timeout=10_000)
    _offer_unchanged_at_two_widths(lab, screenshot_dir, "newer-chat-offer")

    offer.locator("button", has_text="Show the newer chat").click()
    view.locator(".neta-chat-text", has_text=newer_answer).wait_for(timeout=30_000)
    assert view.locator(".neta-chat-text", has_text="run 1.").count() == 0
    assert page.locator(OFFER).count() == 0
    _form_shows(lab, newer_answer)
    page.evaluate(SAVE)
    assert _saved_view_model(lab, path) == newer_model
    assert _saved_messages(lab, path)[-1] == ("assistant", f"analyst {newer_answer}")
