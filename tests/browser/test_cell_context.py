""""This cell" as context, in real JupyterLab (the chip's first test in Notebook 7 too): the
chip above the chat input follows the cell the user puts the focus on (not the chat's own
cell, where typing the prompt puts it); sent with the chip, the model's request holds the
cell's live text — typed, not saved — line for line and whole; ``@cells[1:3]`` sends the
second and third cells; the chip's × removes it until the focus moves; pinned, it stays
on its cell while the focus moves; ``await session.run("… @this")`` in the kernel reads
the active cell from the page too. Pictures of the chip (JupyterLab's), light and dark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from neta_nb.escaping import unquoted

from . import chat_cells
from .harness import LabSession
from .test_notebook_bridge import _FIND_PANEL, type_at_end
from .test_notebook_structure import page_on

pytestmark = pytest.mark.browser

CHAT = """
from tests.support.sessions import answer
provider = FakeProvider([answer(f"Answer {n}.") for n in range(1, 7)])
session = AgentSession(Agent("analyst", model=provider))
chat = ChatView(session, height="420px")
chat
""".strip()

DATA = ["rows = [3, 1, 2]", "total = sum(rows)\nprint(total)", "mean = total / len(rows)"]
TYPED = "\n\t# typed, not saved: ünïcode ✓   "

SOURCES_JS = f"""
(path) => {_FIND_PANEL}(path).content.widgets.map((cell) => ({{
  id: cell.model.id, source: cell.model.sharedModel.getSource() }}))
"""

# What the model received in request `n`: the prompt and its mention blocks.
SENT = """
import json
_m = provider.requests[{n}].messages[-1]
print(json.dumps({{"text": _m.text, "parts": [[p.mention, p.text] for p in _m.parts
                                            if p.type == "mention"]}}))
"""


def _sources(lab: LabSession, path: str) -> list[dict[str, str]]:
    return list(lab.page.evaluate(SOURCES_JS, path))


def _source_in(block: str, cell_id: str) -> str:
    """The source lines of cell ``cell_id`` in a mention block, unquoted and joined."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if f"· id {cell_id} ·" in line)
    body = []
    for line in lines[start + 1:]:
        text = unquoted(line)
        if text is None:
            break
        body.append(text)
    return "\n".join(body)


def _send(lab: LabSession, path: str, chat: Any, n: int, text: str) -> dict[str, Any]:
    """Type ``text`` in the chat's input (the focus leaves the notebook's cells), send it,
    and return what the model received."""
    box = chat.locator("textarea.neta-chat-textarea")
    box.click()
    box.fill(text)
    box.press("Enter")
    chat.locator(".neta-chat-assistant", has_text=f"Answer {n + 1}.").wait_for()
    return dict(json.loads(lab.execute(path, SENT.format(n=n))))


def _focus(page: Any, index: int) -> None:
    page.locator(".jp-Notebook .jp-Cell").nth(index).locator(".jp-InputPrompt").click()


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_the_chip_sends_the_live_cell_and_follows_removes_and_pins(
        front: str, lab: LabSession, screenshot_dir: Path,
        request: pytest.FixtureRequest) -> None:
    path = "cell_context.ipynb"
    with page_on(front, lab, request, path, [chat_cells.IMPORTS, CHAT, *DATA]) as tab:
        _the_chip(tab, path, screenshot_dir if front == "lab" else None)


def _the_chip(lab: LabSession, path: str, pictures: Path | None) -> None:
    """The chip's whole story on ``lab``'s page; Light and Dark pictures of it in
    ``pictures`` (JupyterLab's; none of Notebook 7)."""
    page = lab.page
    chat = page.locator(".neta-chat-view")
    chip = chat.locator(".neta-cell-chip")
    chat.locator("textarea.neta-chat-textarea").wait_for()

    # The user types in the third data cell and does not save: the chip names that cell.
    type_at_end(page, 3, TYPED)
    chip.locator(".neta-cell-chip-text", has_text="In [4] · total = sum(rows)").wait_for()
    cells = _sources(lab, path)
    live = cells[3]["source"]
    assert live == DATA[1] + TYPED
    if pictures is not None:
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.wait_for_transitions(chat)
            lab.screenshot(chat, pictures / f"cell-chip-{'dark' if dark else 'light'}.png")
        lab.set_theme(dark=False)

    # Sent with the chip: the chat's cell became active as the prompt was typed, and the
    # chip stayed; the request holds the cell's live text, whole.
    sent = _send(lab, path, chat, 0, "What does this compute?")
    assert sent["text"] == "What does this compute?"
    [(name, block)] = sent["parts"]
    assert name == f"@cell:{cells[3]['id']}"
    assert _source_in(block, cells[3]["id"]) == live.rstrip("\n")
    assert "(unsaved changes included)" in block and "··· stdout:" in block

    # @cells[1:3]: the second and third cells by Python's rules, then the chip's cell.
    sent = _send(lab, path, chat, 1, "Compare @cells[1:3] with it")
    assert [name for name, _ in sent["parts"]] == ["@cells[1:3]", f"@cell:{cells[3]['id']}"]
    assert [_source_in(sent["parts"][0][1], cells[i]["id"]) for i in (1, 2)] == [
        cells[1]["source"], cells[2]["source"]]

    # ×: no chip, nothing attached; the focus on another cell brings it back for that one.
    chip.locator(".neta-cell-chip-remove").click()
    chip.wait_for(state="hidden")
    assert _send(lab, path, chat, 2, "Just a question")["parts"] == []
    _focus(page, 4)
    chip.locator(".neta-cell-chip-text", has_text="In [5] · mean = total / len(rows)").wait_for()

    # Pinned, it stays on its cell while the focus moves, and that cell is sent.
    pin = chip.locator(".neta-cell-chip-pin")
    pin.focus()
    page.keyboard.press("Enter")  # keyboard reachable
    assert pin.get_attribute("aria-pressed") == "true"
    _focus(page, 2)
    page.wait_for_timeout(600)  # longer than the extension's debounce
    assert "mean = total / len(rows)" in chip.locator(".neta-cell-chip-text").inner_text()
    sent = _send(lab, path, chat, 3, "And this one?")
    assert [name for name, _ in sent["parts"]] == [f"@cell:{cells[4]['id']}"]
    # Unpinned, it follows the focus again.
    pin.click()
    _focus(page, 2)
    chip.locator(".neta-cell-chip-text", has_text="In [3] · rows = [3, 1, 2]").wait_for()

    # `await session.run(...)` in the kernel reads `@this` from the page the same way.
    type_at_end(page, 2, "  # edited")
    page.wait_for_timeout(600)
    lab.execute(path, "await session.run('Why @this?')")
    sent = json.loads(lab.execute(path, SENT.format(n=4)))
    [(name, block)] = sent["parts"]
    assert name == "@this"
    assert _source_in(block, cells[2]["id"]) == "rows = [3, 1, 2]  # edited"

    # A click on a cell and straight into the chat, quicker than the chip is told: the
    # prompt still goes with that cell.
    _focus(page, 4)
    sent = _send(lab, path, chat, 5, "And now?")
    assert [name for name, _ in sent["parts"]] == [f"@cell:{cells[4]['id']}"]


def test_a_selection_of_more_cells_than_a_prompt_carries_is_named_and_refused_before_sending(
        lab: LabSession, screenshot_dir: Path) -> None:
    many = [f"n{i} = {i}" for i in range(55)]
    path = lab.run_notebook("cell_context_many.ipynb", [chat_cells.IMPORTS, CHAT, *many])
    page = lab.page
    chat = page.locator(".neta-chat-view")
    chip = chat.locator(".neta-cell-chip")
    box = chat.locator("textarea.neta-chat-textarea")
    box.wait_for()

    # Every cell selected (Ctrl+A in command mode): the chip says there are too many.
    _focus(page, 3)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+a")
    text = chip.locator(".neta-cell-chip-text", has_text="too many to send (at most 50)")
    text.wait_for()
    assert "neta-is-over" in (chip.get_attribute("class") or "")
    count = int(text.inner_text().split()[0])
    assert count > 50
    lab.wait_for_transitions(chat)
    lab.screenshot(chip, screenshot_dir / "cell-chip-too-many-light.png")

    # A Send says why and what to do; nothing goes and the text stays.
    box.click()
    box.fill("Summarise these")
    box.press("Enter")
    error = chat.locator(".neta-chat-input .neta-inline-error")
    error.wait_for()
    assert (f"{count} cells are selected, and at most 50 go with a prompt. Select fewer "
            "cells, or remove the context chip (×).") in error.inner_text()
    assert box.input_value() == "Summarise these"
    assert lab.execute(path, "print(len(provider.requests))").strip() == "0"

    # Removed, the prompt goes.
    chip.locator(".neta-cell-chip-remove").click()
    chip.wait_for(state="hidden")
    box.press("Enter")
    chat.locator(".neta-chat-assistant", has_text="Answer 1.").wait_for()
    assert json.loads(lab.execute(path, SENT.format(n=0)))["parts"] == []
