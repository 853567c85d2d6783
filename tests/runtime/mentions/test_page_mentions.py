"""Cell mentions — ``@this``, ``@cells[3:5]``, ``@cell:<id>`` — and the chat's context
chip: parsed, read from the page when the prompt is sent (the live text, whole), the model
given each cell as read_notebook shows it, and every way they fail named before anything
is sent or stored."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neta_nb.escaping import unquoted
from neta_nb.messages import MentionPart
from neta_nb.runtime.mentions.mentions import (
    MentionError,
    cells_slice,
    find_mentions,
    preview_mention,
)
from neta_nb.runtime.mentions.page_mentions import page_mention_parts

from ...support.notebook_page import FakeNotebookPage
from ...support.sessions import answer, make_session

LIVE = "x = 1\r\n  # tabs\tand ünïcode ✓\n\nprint(x)   \n"
CELLS: list[dict[str, Any]] = [
    {"id": "a1", "source": "import pandas as pd"},
    {"id": "b2", "source": LIVE, "execution_count": 3,
     "outputs": [{"output_type": "stream", "name": "stdout", "text": "1\n"}]},
    {"id": "c3", "source": "1/0", "execution_count": 4,
     "outputs": [{"output_type": "error", "ename": "ZeroDivisionError",
                  "evalue": "division by zero", "traceback": ["Traceback…", "ZeroDivision"]}]},
    {"id": "d4", "cell_type": "markdown", "source": "# Notes"},
    {"id": "e5", "source": ""},
]


def page(**options: Any) -> FakeNotebookPage:
    notebook = FakeNotebookPage(CELLS, **options)
    notebook.dirty = True
    return notebook


def source_of(block: str, cell_id: str) -> str:
    """The source lines of cell ``cell_id`` in a block, unquoted, joined."""
    lines = block.splitlines()
    start = next(i for i, line in enumerate(lines) if f"· id {cell_id} ·" in line)
    body = []
    for line in lines[start + 1:]:
        text = unquoted(line)
        if text is None:
            break
        body.append(text)
    return "\n".join(body)


# --- parsing ---------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "names"), [
    ("fix @this please", ["@this"]),
    ("see @cells[3:5] and @cells[ -2 : ]", ["@cells[3:5]", "@cells[-2:]"]),
    ("compare @cell:b2, then @cell:c3.", ["@cell:b2", "@cell:c3"]),
    ("@thisvar and @cells and @cell", ["@thisvar", "@cells", "@cell"]),
    ("`@this` is code, a@this is text", []),
    ("@cell: nothing yet", []),
])
def test_cell_mentions_are_found_by_the_shared_rules(text: str, names: list[str]) -> None:
    assert [m.name for m in find_mentions(text)] == names
    assert all(m.kind == "notebook" for m in find_mentions(text) if m.name.startswith(
        ("@this", "@cells[", "@cell:")) and m.name != "@thisvar")


@pytest.mark.parametrize(("target", "expected"), [
    ("cells[3:5]", slice(3, 5)), ("cells[:2]", slice(None, 2)), ("cells[-2:]", slice(-2, None)),
    ("cells[::2]", slice(None, None, 2)), ("cells[3]", None), ("cells[a:b]", None),
    ("cells[1:2:0]", None), ("cells[]", None),
])
def test_a_cells_slice_is_read_as_python_reads_one(target: str, expected: slice | None) -> None:
    assert cells_slice(target) == expected


# --- resolution through the page ---------------------------------------------------------------

async def test_this_is_the_active_cell_its_live_text_whole_as_read_notebook_shows_it() -> None:
    notebook = page()
    notebook.active_cell_id = "b2"
    [part] = await page_mention_parts("why @this?", notebook)
    assert part.mention == "@this"
    assert "--- cell 2 · id b2 · code · [3]" in part.text
    assert "(unsaved changes included)" in part.text
    assert source_of(part.text, "b2") == LIVE.replace("\r\n", "\n").removesuffix("\n")
    assert "··· stdout:" in part.text  # its outputs, summarised
    assert [op for op, _ in notebook.requests] == ["read"]  # one read, at send time


async def test_a_long_source_goes_whole_where_read_notebook_cuts_a_range() -> None:
    long = "\n".join(f"line_{n} = {n}" for n in range(1200))  # ~16 000 characters
    notebook = FakeNotebookPage([{"id": "big", "source": long}])
    [part] = await page_mention_parts("@cell:big", notebook)
    assert source_of(part.text, "big") == long


async def test_cells_slice_by_python_rules_numbered_as_read_notebook_numbers_them() -> None:
    [part] = await page_mention_parts("@cells[1:3]", page())
    headers = [line for line in part.text.splitlines() if line.startswith("--- cell")]
    assert [h.split(" · ")[1] for h in headers] == ["id b2", "id c3"]
    assert headers[0].startswith("--- cell 2 ")
    assert "··· error: ZeroDivisionError: division by zero" in part.text
    [last] = await page_mention_parts("@cells[-1:]", page())
    assert "id e5" in last.text and "(empty)" in last.text


async def test_the_chip_cells_come_after_the_typed_mentions_once_each() -> None:
    notebook = page()
    notebook.active_cell_id = "a1"
    parts = await page_mention_parts("@this and @cell:c3", notebook, ["c3", "d4"])
    assert [p.mention for p in parts] == ["@this", "@cell:c3", "@cell:d4"]


@pytest.mark.parametrize(("text", "code_words"), [
    ("@cells[3]", "is not a slice of cells"),
    ("@cells[1:2:0]", "is not a slice of cells"),
    ("@cells[9:]", "selects no cell (the notebook has 5)"),
    ("@cell:nope", "no cell has the id nope"),
    ("@this", "no cell of the notebook is active"),
])
async def test_a_cell_mention_that_names_nothing_is_refused_saying_why(
        text: str, code_words: str) -> None:
    with pytest.raises(MentionError) as refused:
        await page_mention_parts(text, page())
    assert code_words in str(refused.value)
    assert text in str(refused.value)


async def test_a_chip_pinned_to_a_deleted_cell_says_what_to_do_with_the_chip() -> None:
    with pytest.raises(MentionError) as refused:
        await page_mention_parts("Why?", page(), ["gone"])
    assert "the context chip's cell gone is no longer in the notebook: remove the chip" \
        in str(refused.value)
    # Typed, the same id is the user's mention, and named as one.
    with pytest.raises(MentionError) as typed:
        await page_mention_parts("Why @cell:gone?", page(), ["gone"])
    assert "no cell has the id gone" in str(typed.value)


async def test_without_a_page_a_cell_mention_says_it_needs_one() -> None:
    for absent in (None, page(available=False)):
        with pytest.raises(MentionError) as refused:
            await page_mention_parts("@this and @cells[0:1]", absent)
        message = str(refused.value)
        assert "@this" in message and "@cells[0:1]" in message
        assert "no page answers here" in message


def test_the_chat_input_chip_previews_a_cell_mention_and_names_a_bad_slice() -> None:
    preview = preview_mention("@this", namespace={}, working_dir=Path("."),
                              capabilities=frozenset(), model="m")
    assert preview["ok"] and preview["summary"] == "read from the notebook when sent"
    bad = preview_mention("@cells[x]", namespace={}, working_dir=Path("."),
                          capabilities=frozenset(), model="m")
    assert not bad["ok"] and "is not a slice of cells" in bad["problem"]


# --- a session's prompt ----------------------------------------------------------------------

async def test_session_run_sends_the_live_cell_read_when_the_prompt_is_sent() -> None:
    notebook = page()
    notebook.active_cell_id = "a1"
    session, _recorder, provider = make_session([answer("ok"), answer("ok")])
    session.notebook_page = notebook
    notebook.cell("a1")["source"] = "import polars as pl  # typed, not saved"
    await session.run("what does @this import?")
    [prompt] = [m for m in provider.requests[0].messages if m.role == "user"]
    [part] = [p for p in prompt.parts if isinstance(p, MentionPart)]
    assert source_of(part.text, "a1") == "import polars as pl  # typed, not saved"
    assert prompt.text == "what does @this import?"


async def test_a_refused_cell_mention_sends_and_stores_nothing() -> None:
    session, _recorder, provider = make_session([answer("ok")])
    with pytest.raises(MentionError, match="no page answers here"):
        await session.run("explain @cell:b2")
    session.notebook_page = page()
    with pytest.raises(MentionError, match="no cell has the id zz"):
        await session.run("explain @cell:zz")
    with pytest.raises(MentionError, match="no page answers here"):
        session.start("explain @this")  # start cannot await the page
    assert provider.requests == [] and session.messages == []
