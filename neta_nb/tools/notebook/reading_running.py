"""``read_notebook`` and ``run_cell``: the notebook's cells as the model reads them, and
running one of them where the user sees it run.

``read_notebook`` reads the live notebook of the page the chat is on (unsaved edits
included); with no page it reads the kernel's own history and says so
(:mod:`.kernel`). ``run_cell`` executes code, so it asks for approval like ``python``.
On a page it runs the cell as the user's Shift+Enter would (execution count, outputs in
the cell) and returns the outputs. When the turn itself runs inside a cell
(``await session.run(...)``) the kernel's shell is busy with that cell, and a run asked
of the page would wait behind the turn while the turn waits for it. Then the cell's code
runs in the kernel directly (as the ``python`` tool runs code: the notebook's namespace,
output captured; IPython's magics and shell escapes as IPython runs them) and its outputs
are written into the cell, without an execution count. ``run_cell(wait=False)`` does not
hold the turn (:mod:`.background`).
"""

from __future__ import annotations

import asyncio
from typing import Any

from ...events import ApprovalPreview
from ...messages import DisplayItem
from ..base import ToolContext, ToolFailure, tool
from ..builtin.python_exec import CodeRun, run_python_parts
from ..rich import MODEL_IMAGE_TYPES, RichResult
from . import kernel
from .background import start_run
from .editing import cell_source, find_cell, live_page, preview_page
from .page import PAGE_NEEDED, NotebookError, NotebookPage
from .reading import (
    UNTRUSTED,
    CellRange,
    json_label,
    model_images,
    notebook_cells,
    render_notebook,
    render_outputs,
    shown_name,
)

__all__ = ["read_notebook", "run_cell"]

RUN_WAIT = 3600.0
"""Seconds a cell may run before ``run_cell`` stops waiting for it."""


@tool(category="notebook", label="Read notebook")
async def read_notebook(ctx: ToolContext, start: int = 1, end: int | None = None,
                        cell_id: str | None = None, path: str | None = None) -> RichResult:
    """Read the notebook this chat is in: its cells in order with their ids, types,
    execution counts, sources and outputs (summarised), errors with their tracebacks.
    Long notebooks are cut and the answer says which cells were left out. With a path,
    reads another notebook open on this page (list_notebooks names them) the same way,
    read-only: the edit, run and other notebook tools act on this chat's notebook only.

    Args:
        start: The first cell to show (1 is the first).
        end: The last cell to show; none: to the end (as far as fits).
        cell_id: Show only this cell, in full.
        path: Another open notebook to read, as list_notebooks shows its path; none:
            this chat's notebook.
    """
    access = ctx.notebook
    page = access.page if access is not None else None
    notebook: dict[str, Any] | None = None
    chosen = CellRange(start, end, cell_id)
    if path is not None:
        return _answer(await _other_notebook(page, path, start, end, cell_id), chosen)
    if page is not None:
        # A bound chat view: its page may still be drawing it (Run All), so it is asked
        # even when no view has said so yet; with no page answering, the kernel's history.
        try:
            # The range goes along: the page spends its output budget on it first.
            notebook = await page.request("read", {"start": start, "end": end,
                                                   "cell_id": cell_id})
        except NotebookError as error:
            if error.code != "no_bridge":
                raise ToolFailure(f"The notebook could not be read: {error}") from error
    if notebook is not None:
        return _answer(notebook, chosen)
    # The kernel's history: describing its values runs their classes' code (a frame's
    # rows), which may take long. Only the cells shown are described, on a worker thread,
    # so the loop keeps serving Stop and the widgets meanwhile.
    if ctx.threads is not None:
        answer: RichResult = await ctx.threads.run(_kernel_answer, ctx.namespace, chosen)
    else:
        answer = await asyncio.to_thread(_kernel_answer, ctx.namespace, chosen)
    return answer


async def _other_notebook(page: NotebookPage | None, path: str, start: int, end: int | None,
                          cell_id: str | None) -> dict[str, Any]:
    """Another notebook open on the chat's page, as the page reads it."""
    needs = (f"Reading another notebook {PAGE_NEEDED} with the chat open on it (the "
             "notebooks open there are the ones it reads).")
    if page is None:
        raise ToolFailure(needs)
    try:
        return await page.request("read", {"path": path, "start": start, "end": end,
                                           "cell_id": cell_id})
    except NotebookError as error:
        if error.code == "no_bridge":
            raise ToolFailure(needs) from error
        raise ToolFailure(f"The notebook {json_label(path)} could not be read: "
                          f"{error}") from error


def _kernel_answer(namespace: dict[str, Any], chosen: CellRange) -> RichResult:
    return _answer(kernel.kernel_history(namespace), chosen)


def _answer(notebook: dict[str, Any], chosen: CellRange) -> RichResult:
    shown: list[int] = []
    text = render_notebook(notebook, chosen, shown)
    # Images of the cells the text shows only (not of those left out to stay short).
    return RichResult(text=text, items=model_images(notebook, chosen, set(shown)))


async def _cell_preview(ctx: ToolContext, args: dict[str, Any]) -> ApprovalPreview | None:
    """The cell a ``run_cell`` call will run, for its approval: its code as it is now on
    the page, and its name as the notebook shows it."""
    cell_id = args.get("cell_id")
    page = preview_page(ctx)
    if not isinstance(cell_id, str) or page is None:
        return None
    notebook = await page.request("read", {"cell_id": cell_id})
    for position, cell in enumerate(notebook_cells(notebook), start=1):
        if cell.get("id") == cell_id:
            return ApprovalPreview(code=cell_source(cell), cell_id=cell_id,
                                   cell_label=shown_name(cell, position))
    return None


@tool(category="notebook", label="Run cell", requires_approval=True, timeout=RUN_WAIT,
      approval_preview=_cell_preview)
async def run_cell(ctx: ToolContext, cell_id: str, wait: bool = True) -> RichResult:
    """Run a code cell of the notebook, as the user would, and return its outputs.
    With wait=False, for a long cell: return at once, the cell queued to run in the
    notebook when this turn ends; cell_status tells its state and output later.

    Args:
        cell_id: The cell's id, as read_notebook shows it.
        wait: Wait for the cell to end and return its outputs (the default); false:
            do not hold the turn.
    """
    if not wait:
        return await start_run(ctx, cell_id)
    access = live_page(ctx)
    assert access.page is not None
    if access.in_cell():
        return await _run_in_kernel(ctx, cell_id)
    try:
        answer = await access.page.request("run", {"cell_id": cell_id}, wait=RUN_WAIT)
    except NotebookError as error:
        raise ToolFailure(f"Cell {cell_id} could not be run: {error}") from error
    raw = answer.get("outputs")
    outputs: list[Any] = raw if isinstance(raw, list) else []
    count = answer.get("execution_count")
    status = "raised an error" if answer.get("status") == "error" else "ran"
    text = (f"Cell {cell_id} {status} (execution count {count}). Its outputs:\n"
            f"{UNTRUSTED}\n{render_outputs(outputs)}")
    cells = {"cells": [{"id": cell_id, "outputs": outputs}]}
    return RichResult(text=text, items=model_images(cells, CellRange(cell_id=cell_id)))


async def _run_in_kernel(ctx: ToolContext, cell_id: str) -> RichResult:
    access = live_page(ctx)
    assert access.page is not None
    cell = await find_cell(access, cell_id)
    if cell.get("cell_type") != "code":
        raise ToolFailure(f"Cell {cell_id} is a {cell.get('cell_type')} cell; only code "
                          "cells run.")
    # As IPython runs the cell: its magics and shell escapes too.
    run = await run_python_parts(kernel.cell_code(cell_source(cell)), ctx.namespace)
    result = run.result
    outputs = nbformat_outputs(run)
    written = "its outputs were written into the cell"
    try:
        await access.page.request("set_outputs", {"cell_id": cell_id, "outputs": outputs,
                                                   "execution_count": None})
    except NotebookError as error:
        written = f"its outputs could not be written into the cell ({error})"
    # Its outputs as a run on the page returns them (the cell's own, quoted).
    text = (f"The kernel is busy with the cell that runs this turn, so cell {cell_id}'s "
            f"code ran in the kernel directly, with no execution count; {written}. "
            f"Its outputs:\n{UNTRUSTED}\n{render_outputs(outputs)}")
    # Images go to the card and a vision model; HTML a cell displayed stays in the cell
    # (its output is the notebook's content: never drawn inside a card).
    images = [item for item in result.items if item.media_type in MODEL_IMAGE_TYPES]
    return RichResult(text=text, items=images, dropped=result.dropped)


def nbformat_outputs(run: CodeRun) -> list[dict[str, Any]]:
    """What a direct run printed, displayed, returned and raised, as the cell's nbformat
    outputs: as the cell shows them when it runs itself (not the ``python`` tool's text,
    with its headings, which is the model's)."""
    outputs: list[dict[str, Any]] = []
    if run.printed:
        outputs.append({"output_type": "stream", "name": "stdout", "text": run.printed})
    items = run.result.items
    for item in items[:run.displayed]:
        data = _bundle(item)
        if data:
            outputs.append({"output_type": "display_data", "data": data, "metadata": {}})
    if run.value is not None:
        value: dict[str, str] = {"text/plain": run.value}
        for item in items[run.displayed:]:
            value.update(_bundle(item))
        outputs.append({"output_type": "execute_result", "execution_count": None,
                        "data": value, "metadata": {}})
    if run.error is not None:
        outputs.append(_error(run.error, run.error_text or ""))
    return outputs


def _error(error: BaseException, text: str) -> dict[str, Any]:
    """An nbformat ``error`` output of what a direct run raised (its traceback as the
    ``python`` tool words it, without the tool's own frames)."""
    lines = text.rstrip("\n").splitlines()
    name = type(error).__name__
    last = lines[-1] if lines else name
    # The last line is "Name: value" (a class outside builtins with its module first).
    value = last.partition(": ")[2] if name in last.partition(": ")[0] else ""
    return {"output_type": "error", "ename": name, "evalue": value, "traceback": lines}


def _bundle(item: DisplayItem) -> dict[str, str]:
    if item.media_type.startswith("image/") and item.media_type != "image/svg+xml":
        return {item.media_type: item.data} if item.data else {}
    return {item.media_type: item.text} if item.text else {}
