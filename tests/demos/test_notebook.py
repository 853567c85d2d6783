"""The offline notebook demo plays its loop from what the tools returned: the failing cell
and its text come from read_notebook, the decision from edit_cell, the output from
run_cell — and where no page answers, it says so and shows the fix instead."""

from __future__ import annotations

import sys
import traceback
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pandas as pd  # type: ignore[import-untyped]
import pytest

from neta_nb import AgentSession
from neta_nb.demos.notebook import FIX_PROMPT, TIDY_PROMPT, demo_notebook_agent
from neta_nb.providers.scripted.demo_notebook_script import failing_cell, proposed_fix
from neta_nb.tools.notebook import kernel
from neta_nb.tools.notebook.reading import CellRange, render_notebook

from ..support.notebook_page import FakeNotebookPage

DATA = Path(__file__).parents[2] / "notebooks" / "data" / "sales.csv"
CAST = 'ratings = sales["customer_rating"].astype(int)\nratings.value_counts().sort_index()'


def _error_of(source: str) -> dict[str, Any]:
    try:
        exec(source, {"sales": pd.read_csv(DATA)})
    except Exception as error:
        return {"output_type": "error", "ename": type(error).__name__, "evalue": str(error),
                "traceback": traceback.format_exception(error)}
    raise AssertionError("the demo cell is meant to fail")


def _page() -> FakeNotebookPage:
    page = FakeNotebookPage([
        {"id": "load", "source": "import pandas as pd\nsales = pd.read_csv('data/sales.csv')"},
        {"id": "cast", "source": CAST, "outputs": [_error_of(CAST)], "execution_count": 2},
        {"id": "notes", "cell_type": "markdown", "source": "Ratings"},
    ])
    page.run_outputs["cast"] = [{"output_type": "execute_result",
                                 "data": {"text/plain": "customer_rating\n1    9\n5    7"}}]
    return page


def test_the_failing_cell_and_its_fix_are_read_from_the_notebook() -> None:
    page = _page()
    read = render_notebook({"cells": page.cells}, CellRange())
    cell_id, source, error = failing_cell(read) or ("", "", "")
    assert (cell_id, source) == ("cast", CAST)
    assert error.startswith("IntCastingNaNError: Cannot convert non-finite values")
    fixed = proposed_fix(source)
    assert fixed == CAST.replace(".astype(int)", ".dropna().astype(int)")
    exec(fixed, {"sales": pd.read_csv(DATA)})
    assert proposed_fix("x = 1") is None
    assert failing_cell(render_notebook({"cells": page.cells[:1]}, CellRange())) is None


async def test_accepted_the_fix_lands_and_the_cell_runs() -> None:
    page = _page()
    session = AgentSession(demo_notebook_agent(), approval_policy="allow")
    session.notebook_page = page
    await session.run(FIX_PROMPT)
    assert page.cell("cast")["source"] == proposed_fix(CAST)
    assert ("run", {"cell_id": "cast"}) in page.requests
    assert "It runs now" in session.messages[-1].text and "1    9" in session.messages[-1].text


async def test_rejected_nothing_changes_and_the_agent_says_so() -> None:
    page = _page()
    session = AgentSession(demo_notebook_agent())  # no one to ask: the policy rejects
    session.notebook_page = page
    await session.run(FIX_PROMPT)
    assert page.cell("cast")["source"] == CAST
    assert {op for op, _ in page.requests} == {"read"}  # read, never edited or run
    assert "stays as it was" in session.messages[-1].text


async def test_without_a_page_the_demo_reads_the_kernel_history_and_shows_the_fix(
        monkeypatch: pytest.MonkeyPatch) -> None:
    session = AgentSession(demo_notebook_agent(), approval_policy="allow")
    session.namespace.update({"In": ["", "sales = ...", CAST], "Out": {}})
    # As IPython runs cell 2: its compiler maps the cell's file name to its number.
    cell_file = "/tmp/ipykernel_1/2.py"
    shell = SimpleNamespace(compile=SimpleNamespace(_filename_map={cell_file: 2}))
    monkeypatch.setattr(kernel, "_shell", lambda: shell)
    try:
        exec(compile(CAST, cell_file, "exec"), {"sales": pd.read_csv(DATA)})
    except Exception as raised:  # as IPython records the last error
        monkeypatch.setattr(sys, "last_value", raised, raising=False)
        monkeypatch.setattr(sys, "last_exc", raised, raising=False)
    await session.run(FIX_PROMPT)
    answer = session.messages[-1].text
    assert "could not change the notebook" in answer
    assert ".dropna().astype(int)" in answer


async def test_tidy_proposes_three_changes_in_one_answer_and_counts_what_was_made() -> None:
    page = _page()
    page.cells[0]["source"] = ("import pandas as pd\nsales = pd.read_csv('data/sales.csv')\n"
                               "sales.head(3)")
    session = AgentSession(demo_notebook_agent(), approval_policy="allow")
    session.notebook_page = page
    await session.run(TIDY_PROMPT)
    [proposing] = [m for m in session.messages if len(m.tool_calls) > 1]
    assert [c.name for c in proposing.tool_calls] == ["edit_cell", "insert_cell", "insert_cell"]
    assert page.cell("load")["source"] == (
        "import pandas as pd\nsales = pd.read_csv('data/sales.csv')\n"
        "print(f\"{len(sales)} orders, {sales['customer_rating'].isna().sum()} without a "
        "rating\")\nsales.head(3)")
    kinds = [(c.get("cell_type", "code"), c["source"][:12]) for c in page.cells]
    assert kinds[1] == ("markdown", "**The data:*")  # the note, right after the load
    assert page.cells[-1]["source"].startswith('sales.groupby("region")')
    # What the demo proposes runs on the demo's data.
    namespace: dict[str, Any] = {"pd": pd}
    exec(page.cell("load")["source"].replace("data/sales.csv", str(DATA)), namespace)
    exec(page.cells[-1]["source"], namespace)
    assert session.messages[-1].text.startswith("3 of 3 changes made.")


async def test_tidy_rejected_leaves_the_notebook_and_says_none_were_made() -> None:
    page = _page()
    before = [dict(cell) for cell in page.cells]
    session = AgentSession(demo_notebook_agent())  # no one to ask: the policy rejects
    session.notebook_page = page
    await session.run(TIDY_PROMPT)
    assert page.cells == before
    assert session.messages[-1].text == "0 of 3 changes made: the notebook is as it was."


async def test_tidy_without_a_page_says_where_to_review_it() -> None:
    session = AgentSession(demo_notebook_agent(), approval_policy="allow")
    session.namespace.update({"In": ["", "import pandas as pd\nsales = pd.read_csv('x.csv')"],
                              "Out": {}})
    await session.run(TIDY_PROMPT)
    answer = session.messages[-1].text
    assert "could not change the notebook" in answer and "Notebook 7" in answer
