"""``@`` mentions in the chat input, in real JupyterLab: typing ``@`` opens a popup listing
what the notebook holds (a DataFrame defined in a cell, with its type and shape; ↑/↓,
Enter, Tab, Escape and the mouse); choosing one makes a chip whose block is exactly what
the model is sent; an unknown ``@nosuch`` is flagged and the prompt is not sent; the prompt
sent carries each chip's block. Pictures of the popup and the chips, light and dark."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

NOTEBOOK = """
import pandas as pd
from pathlib import Path
from tests.support.sessions import answer
sales = pd.DataFrame({"region": ["north", "south", "east", "west", "north", "south"],
                      "amount": [120.0, 80.5, 64.0, 99.9, 42.0, 18.25]})
sales_target = 500
Path("notes.md").write_text("# Notes\\nNorth sells most.\\n")
provider = FakeProvider([answer("North sold the most."), answer("Done.")])
session = AgentSession(Agent("analyst", model=provider), store=SessionStore(":memory:"))
chat = ChatView(session, height="600px")
chat
""".strip()

FAILING = 'sales["profit"]  # a KeyError: what @error shows'


def _chip(page: Any, name: str) -> Any:
    return page.locator(f'.neta-mention-chip[data-mention="{name}"]')


def test_the_popup_lists_notebook_variables_and_chips_show_what_is_sent(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = lab.run_notebook("mentions.ipynb", [chat_cells.IMPORTS, NOTEBOOK, FAILING])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    box = chat.locator("textarea.neta-chat-textarea")
    box.wait_for()
    popup = chat.locator(".neta-mention-popup")

    # Typing @ at a word start opens the popup with the kernel's candidates.
    box.click()
    page.keyboard.type("Which region sells most in @sa")
    options = popup.locator(".neta-mention-option")
    # The list for "@sa" (under load, one for an earlier prefix may show first).
    wanted = ["@sales\npandas.DataFrame, shape 6×2", "@sales_target\nint"]
    page.wait_for_function("(wanted) => JSON.stringify([...document.querySelectorAll("
                           "'.neta-mention-popup .neta-mention-option')].map((n) => n.innerText))"
                           " === JSON.stringify(wanted)", arg=wanted)
    assert options.all_inner_texts() == wanted
    assert box.get_attribute("aria-expanded") == "true"
    assert options.first.get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowDown")
    assert options.nth(1).get_attribute("aria-selected") == "true"
    page.keyboard.press("ArrowUp")
    for dark in (False, True):
        lab.set_theme(dark=dark)
        box.focus()
        page.keyboard.press("End")  # the caret back in the mention: the popup is open
        popup.locator(".neta-mention-option").first.wait_for()
        lab.wait_for_transitions(chat)
        lab.screenshot(chat, screenshot_dir / f"mentions-popup-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)
    box.focus()
    page.keyboard.press("End")
    popup.locator(".neta-mention-option").first.wait_for()

    # Enter chooses: the mention is written out and becomes a chip.
    page.keyboard.press("Enter")
    assert box.input_value() == "Which region sells most in @sales "
    assert popup.is_hidden()
    chip = _chip(page, "@sales")
    chip.locator(".neta-mention-chip-summary", has_text="pandas.DataFrame, shape 6×2").wait_for()

    # The mouse chooses too: the last exception, and a file through its folder.
    page.keyboard.type("and why @er")
    popup.locator(".neta-mention-option", has_text="@error").click()
    page.keyboard.type("read @fi")
    popup.locator(".neta-mention-option", has_text="@file:").wait_for()
    page.keyboard.press("Tab")  # `file:` leads to the files: the popup stays open
    assert box.input_value().endswith("read @file:")
    popup.locator(".neta-mention-option").first.wait_for()
    # The server's folder holds every notebook this run wrote (more than the popup
    # lists): typing narrows the list to the file wanted.
    page.keyboard.type("no")
    popup.locator(".neta-mention-option", has_text="@file:notes.md").click()
    # Escape closes the popup; the unknown mention is flagged and nothing is sent.
    page.keyboard.type("ask @nosuch")
    popup.locator(".neta-mention-empty", has_text="Nothing to mention matches @nosuch").wait_for()
    page.keyboard.press("Escape")
    assert popup.is_hidden()
    page.keyboard.press("Enter")
    error = chat.locator(".neta-chat-input .neta-inline-error")
    error.wait_for()
    assert error.inner_text().endswith(
        "Unknown mentions: @nosuch. Correct or remove them before sending.")
    unknown = _chip(page, "@nosuch")
    assert "neta-is-unknown" in (unknown.get_attribute("class") or "")
    assert unknown.get_attribute("title") == "no variable named nosuch in the notebook"
    assert box.input_value().endswith("ask @nosuch")  # kept for the user to correct
    assert lab.execute(path, "print(len(provider.requests), len(session.messages))"
                       ).strip() == "0 0"
    summaries = chat.locator(".neta-mention-chip-summary").all_inner_texts()
    assert summaries == ["pandas.DataFrame, shape 6×2", "KeyError: 'profit'",
                         "text/markdown, 26 B", "unknown"]

    # A chip opens the block the model reads: the kernel's rendering, character for character.
    chip.click()
    block = chat.locator(".neta-mention-block-text")
    block.wait_for()
    expected = lab.execute(path, (
        "from neta_nb.runtime.mentions.mentions import preview_mention\n"
        "print(preview_mention('@sales', namespace=session.namespace, working_dir="
        "session.working_dir, capabilities=frozenset(), model='m')['rendering'], end='')"))
    assert block.text_content() == expected
    assert expected.startswith('<mention name="@sales">\nsales: pandas.DataFrame, shape 6×2')
    page.mouse.move(0, 0)
    for dark in (False, True):
        lab.set_theme(dark=dark)
        lab.wait_for_transitions(chat)
        lab.screenshot(chat, screenshot_dir / f"mentions-chips-{'dark' if dark else 'light'}.png")
    lab.set_theme(dark=False)

    # Corrected, the prompt goes with each chip's block.
    shown = {name: _chip(page, name) for name in ("@sales", "@error", "@file:notes.md")}
    chipped = chat.locator(".neta-cell-chip-text").get_attribute("title")
    assert chipped
    # The caret after a space: no mention is being typed, so no popup can take the Enter
    # (one that opened for "@file:notes.md" would choose it instead of sending).
    box.fill("Which region sells most in @sales, and why @error? Read @file:notes.md ")
    box.press("Enter")
    chat.locator(".neta-chat-assistant", has_text="North sold the most.").wait_for()
    assert chat.locator(".neta-chat-user .neta-chat-bubble").inner_text().startswith(
        "Which region sells most in @sales, and why @error? Read @file:notes.md")
    sent = lab.execute(path, (
        "import json\n"
        "parts = provider.requests[0].messages[-1].parts\n"
        "print(json.dumps([getattr(p, 'mention', getattr(p, 'name', None)) "
        "for p in parts[1:]]))"))
    # The chip of the cell the notebook's focus was last on (not the chat's own) goes
    # along too (tests/browser/test_cell_context.py).
    assert sent.strip() == f'["@sales", "@error", "@cell:{chipped}", "notes.md"]'
    for name in shown:
        assert lab.execute(path, (
            f"from neta_nb.runtime.mentions.mentions import preview_mention\n"
            f"p = preview_mention({name!r}, namespace=session.namespace, working_dir="
            "session.working_dir, capabilities=frozenset(), model='m')['rendering']\n"
            "sent = [q.prompt_text() for q in provider.requests[0].messages[-1].parts[1:]]\n"
            "print(p in sent)")).strip() == "True", name
    assert chat.locator(".neta-mention-chip").count() == 0  # the box is empty again

    # The page's cells are offered too: `@this`, and `@cells[` whose slice is typed next
    # and closed by the popup's row.
    box.click()
    page.keyboard.type("compare @this")
    popup.locator(".neta-mention-option", has_text="@this").wait_for()
    page.keyboard.press("Enter")
    page.keyboard.type("with @cel")
    popup.locator(".neta-mention-option", has_text="@cells[").wait_for()
    page.keyboard.press("Tab")  # the slice comes next: the popup stays open
    assert box.input_value() == "compare @this with @cells["
    page.keyboard.type("0:2")
    popup.locator(".neta-mention-option", has_text="@cells[0:2]").wait_for()
    page.keyboard.press("Enter")
    assert box.input_value() == "compare @this with @cells[0:2] "
    assert popup.is_hidden()
    box.fill("")
