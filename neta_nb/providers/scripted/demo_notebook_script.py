"""The offline model's notebook demos. Asked :data:`FIX_PROMPT`: a cell raised an error,
and the agent reads the notebook, proposes a fix as a diff, and once the user accepts it
runs the cell. Asked :data:`TIDY_PROMPT`: it reads the notebook and proposes several
changes in one answer — reviewed together, as one Changes card — and says what became of
each.

Only the wording is canned. Which cell failed, its text and its error are read from the
``read_notebook`` result in the conversation; the fix is a rule of the demo (a column of
whole numbers with gaps cannot become ``int``: drop the gaps first), applied to the text
the notebook really holds; what the user decided and what the run printed are read from
the tool results. Where the notebook cannot be edited (no JupyterLab or Notebook 7 page),
the answer says so and shows the fix instead.
"""

from __future__ import annotations

import re
from collections.abc import Sequence

from ...escaping import unquoted
from ...messages import Message, ToolResultPart
from .demo_script import _turn_results
from .script_format import (
    Script,
    ScriptedResponse,
    ScriptToolCall,
    TextStep,
    ThinkingStep,
    ToolCallStep,
    current_turn,
)

__all__ = ["FIX_PROMPT", "NOTEBOOK_FIX_SCRIPT", "TIDY_PROMPT", "failing_cell",
           "proposed_fix", "tidy_changes"]

FIX_PROMPT = "The cell above fails. Why? Fix it."
"""The prompt the notebook demo is written for."""

TIDY_PROMPT = "Tidy the notebook up: say what the data is, and end with a summary."
"""The prompt of the demo's several changes at once."""

_CELL = re.compile(r"^--- cell \d+ · id (?P<id>\S+) · (?P<type>\w+)")
_CAST = re.compile(r"(?P<column>\w+\[[\"'][^\"']+[\"']\])\.astype\((?P<kind>int|\"int\"|'int')\)")


def failing_cell(read: str) -> tuple[str, str, str] | None:
    """(id, source, error line) of the last cell with an error in a ``read_notebook``
    answer, or ``None``."""
    found: tuple[str, str, str] | None = None
    cell_id, error = "", ""
    lines: list[str] = []
    for line in [*read.splitlines(), "--- cell 0 · id end · code"]:
        start = _CELL.match(line)
        if start:
            if cell_id and error:
                found = (cell_id, "\n".join(lines), error)
            cell_id, lines, error, in_source = start["id"], [], "", True
            continue
        if line.startswith("··· "):
            in_source = False
            if line.startswith("··· error: "):
                error = line.removeprefix("··· error: ")
            continue
        text = unquoted(line)  # the source's lines are quoted; others are the tool's
        if cell_id and in_source and not error and text is not None:
            lines.append(text)
    return found


def proposed_fix(source: str) -> str | None:
    """The demo's fix: ``column.astype(int)`` becomes ``column.dropna().astype(int)``."""
    fixed, count = _CAST.subn(lambda m: f"{m['column']}.dropna().astype({m['kind']})", source)
    return fixed if count else None


def _read(messages: Sequence[Message]) -> ScriptedResponse:
    if _tidying(messages):
        return ScriptedResponse(steps=[
            ThinkingStep(thinking=(
                "To tidy the notebook up I need to know what is in it: its cells in order.")),
            TextStep(text="Reading the notebook first.\n"),
            ToolCallStep(tool_call=ScriptToolCall(name="read_notebook", args={})),
        ])
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=(
            "The user says a cell fails. Before guessing I should read the notebook: the "
            "cells, their outputs and the error the user just hit.")),
        TextStep(text="Let me look at the notebook first.\n"),
        ToolCallStep(tool_call=ScriptToolCall(name="read_notebook", args={})),
    ])


def _result_of(messages: Sequence[Message], tool: str) -> tuple[dict[str, object],
                                                               ToolResultPart] | None:
    found = [(args, result) for name, args, result in _turn_results(messages) if name == tool]
    return found[-1] if found else None


def _tidying(messages: Sequence[Message]) -> bool:
    prompt, _ = current_turn(messages)
    return prompt is not None and prompt.text.strip() == TIDY_PROMPT


def _cells(read: str) -> list[tuple[str, str, str]]:
    """(id, type, source) of every cell of a ``read_notebook`` answer, in order."""
    cells: list[tuple[str, str, list[str]]] = []
    in_source = False
    for line in read.splitlines():
        start = _CELL.match(line)
        if start:
            cells.append((start["id"], start["type"], []))
            in_source = True
            continue
        if line.startswith("··· "):
            in_source = False
            continue
        text = unquoted(line)
        if cells and in_source and text is not None:
            cells[-1][2].append(text)
    return [(cell_id, kind, "\n".join(lines)) for cell_id, kind, lines in cells]


_SUMMARY = ('sales.groupby("region")["customer_rating"].agg(["mean", "count"]).round(2)')
_ABOUT = ("**The data:** one row per order — its date, region, product, units and revenue, "
          "and the customer's rating from 1 to 5 (blank where the customer gave none).")


def tidy_changes(read: str) -> list[ScriptToolCall]:
    """The tidy demo's changes to the notebook ``read`` shows: the cell that loads the
    sales says how many orders lack a rating, a note after it says what the data is, and
    a summary by region ends the notebook (none when no cell loads ``sales``)."""
    cells = _cells(read)
    load = next((cell for cell in cells
                 if cell[1] == "code" and "sales = pd.read_csv(" in cell[2]), None)
    if load is None:
        return []
    cell_id, _, source = load
    counted = ('print(f"{len(sales)} orders, '
               '{sales[\'customer_rating\'].isna().sum()} without a rating")')
    lines = source.splitlines()
    at = next((i + 1 for i, line in enumerate(lines) if "pd.read_csv(" in line), len(lines))
    edited = "\n".join([*lines[:at], counted, *lines[at:]])
    return [
        ScriptToolCall(name="edit_cell", args={"cell_id": cell_id, "source": edited}),
        ScriptToolCall(name="insert_cell", args={"source": _ABOUT, "cell_type": "markdown",
                                                 "after_cell_id": cell_id}),
        ScriptToolCall(name="insert_cell", args={"source": _SUMMARY}),
    ]


def _propose_tidy(messages: Sequence[Message]) -> ScriptedResponse:
    read = _result_of(messages, "read_notebook")
    changes = tidy_changes(read[1].content) if read and not read[1].is_error else []
    if not changes:
        return ScriptedResponse(steps=[TextStep(text=(
            "I read the notebook and found no cell that loads the sales data. I am the "
            "offline demo model: I tidy up this demo's notebook only."))])
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=(
            "Three changes: count the missing ratings where the data is loaded, a note on "
            "what each column means after that cell, and a summary by region at the end. "
            "I propose them together; the user reviews them as one.")),
        TextStep(text=("Three changes, for you to review together: the loading cell counts "
                       "the orders without a rating, a note says what the data is, and a "
                       "summary by region ends the notebook.\n")),
        *(ToolCallStep(tool_call=call) for call in changes),
    ])


def _report_tidy(messages: Sequence[Message]) -> ScriptedResponse:
    results = [result for name, _, result in _turn_results(messages)
               if name in ("edit_cell", "insert_cell")]
    # Decided changes say the notebook is unchanged when they were not made (rejected, or
    # accepted but no longer fitting); a call that could not be asked at all does not.
    unchanged = ["unchanged" in r.content or "not made" in r.content for r in results]
    if results and all(r.is_error for r in results) and not any(unchanged):
        return ScriptedResponse(steps=[TextStep(text=(
            f"I could not change the notebook from here ({results[0].content}) Open "
            "this notebook in JupyterLab or Notebook 7 with the chat shown to review the "
            "changes."))])
    made = sum(1 for r, kept in zip(results, unchanged, strict=True) if not (r.is_error or kept))
    if made == 0:
        return ScriptedResponse(steps=[TextStep(text=(
            f"0 of {len(results)} changes made: the notebook is as it was."))])
    return ScriptedResponse(steps=[TextStep(text=(
        f"{made} of {len(results)} changes made. Rewind on your prompt, with its box "
        "ticked, takes them back out of the notebook again."))])


def _propose(messages: Sequence[Message]) -> ScriptedResponse:
    if _tidying(messages):
        return _propose_tidy(messages)
    read = _result_of(messages, "read_notebook")
    failing = failing_cell(read[1].content) if read and not read[1].is_error else None
    fix = proposed_fix(failing[1]) if failing else None
    if failing is None or fix is None:
        what = ("no cell with an error" if failing is None
                else f"cell {failing[0]} fails with {failing[2]}, which this demo has no fix for")
        return ScriptedResponse(steps=[TextStep(text=(
            f"I read the notebook and found {what}. I am the offline demo model: I can fix "
            "one kind of error — a column with missing values cast to `int`."))])
    cell_id, _, error = failing
    error_name = error.split(":", 1)[0]
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=(
            f"Cell {cell_id} raises {error} The column has missing values (NaN), and NaN "
            "has no integer form, so the cast fails. Dropping the gaps before the cast "
            "keeps every real value. I'll propose that edit; the user decides.")),
        TextStep(text=(f"Cell `{cell_id}` fails with **{error_name}**: the column has missing "
                       "values, and a missing value cannot become an `int`. I propose to "
                       "drop the gaps before the cast:\n")),
        ToolCallStep(tool_call=ScriptToolCall(name="edit_cell",
                                              args={"cell_id": cell_id, "source": fix})),
    ])


def _run_or_stop(messages: Sequence[Message]) -> ScriptedResponse:
    if _tidying(messages):
        return _report_tidy(messages)
    edit = _result_of(messages, "edit_cell")
    if edit is None:
        return ScriptedResponse(steps=[TextStep(text="Nothing was proposed.")])
    args, result = edit
    if "unchanged" in result.content:  # rejected (by the user, or no one was there)
        return ScriptedResponse(steps=[TextStep(text=(
            "Understood: the cell stays as it was. Tell me if you want another fix."))])
    if result.is_error:
        fix = str(args.get("source", ""))
        return ScriptedResponse(steps=[TextStep(text=(
            f"I could not change the notebook from here ({result.content}) Here is the "
            f"fixed cell to paste yourself:\n\n```python\n{fix}\n```\n"))])
    return ScriptedResponse(steps=[
        ThinkingStep(thinking="The fix is in the notebook; running the cell shows it works."),
        TextStep(text="Thanks — the fix is in. Running the cell to check it:\n"),
        ToolCallStep(tool_call=ScriptToolCall(name="run_cell",
                                              args={"cell_id": str(args.get("cell_id"))})),
    ])


def _report(messages: Sequence[Message]) -> ScriptedResponse:
    run = _result_of(messages, "run_cell")
    if run is None or run[1].is_error:
        why = run[1].content if run else "it did not run"
        return ScriptedResponse(steps=[TextStep(text=f"The cell was not run: {why}")])
    lines = run[1].content.splitlines()[2:]  # after "Cell … ran" and the untrusted note
    failed = any(line.startswith("··· error:") for line in lines)
    outputs = "\n".join(text for text in map(unquoted, lines) if text is not None).strip()
    verdict = ("It still fails; the output above says why." if failed else
               "It runs now: the missing ratings are left out, every other one is counted.")
    return ScriptedResponse(steps=[TextStep(text=f"{verdict}\n\n```\n{outputs[:1200]}\n```\n")])


NOTEBOOK_FIX_SCRIPT = Script(responses=[_read, _propose, _run_or_stop, _report])
"""The notebook demo's script: read, propose, run, report (asked :data:`TIDY_PROMPT`:
read, propose the changes, report)."""
