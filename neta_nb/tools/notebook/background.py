"""Long cells without holding the turn: ``run_cell(cell_id, wait=False)`` and
``cell_status``.

The agent runs in the kernel that would run the cell, on the kernel's one thread: while a
cell's synchronous code runs (``time.sleep(30)``), nothing else in the kernel runs — no
tool call, no model request, no chat. A run started at once would stop the turn that
asked for it until the cell ended. So a run the model does not wait for starts on the
page when the turn that asked for it has ended (at once where no turn runs); the turn
ends with its answer, and the page shows the cell running (``[*]``) as a run of the
user's would. Until then the cell is ``queued``.

Stopping the turn does not stop the cell: the user allowed the run, and a run queued by
a stopped turn still starts. ``interrupt_kernel`` (or Kernel ▸ Interrupt) stops it.

``cell_status`` reads a cell's state as the page shows it (``idle``, ``queued``,
``running``, ``done``, ``error``), its execution count and its outputs so far, bounded as
``read_notebook`` bounds them. It runs in the kernel too: while a synchronous cell runs,
a turn that asks waits for the cell to end.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable
from dataclasses import dataclass, field
from typing import Any

from ..base import ToolContext, ToolFailure, tool
from ..rich import RichResult
from .editing import find_cell, live_page
from .page import NotebookAccess, NotebookError, NotebookPage
from .reading import UNTRUSTED, CellRange, model_images, render_outputs

__all__ = ["CELL_STATES", "cell_status", "start_run"]

log = logging.getLogger(__name__)

START_WAIT = 3600.0
"""Seconds a queued start waits for the page's answer (a cell that ran before the answer
was read holds the kernel while it runs)."""

CELL_STATES = ("idle", "queued", "running", "done", "error")
"""A cell's states as ``cell_status`` names them."""


@dataclass
class _Queued:
    """A run asked for and not yet started on the page (its turn has not ended)."""

    page: NotebookPage
    task: asyncio.Task[None] | None = None
    failure: str | None = field(default=None)
    """Why the page did not start it, once it refused."""


_starting: set[asyncio.Task[None]] = set()
"""The waiting starts, held until they end (the loop holds its tasks weakly)."""
_queued: dict[str, _Queued] = {}
"""Runs waiting for their turn to end, by cell id; a start the page refused stays until
the next ``cell_status`` or run of that cell reports it."""


async def start_run(ctx: ToolContext, cell_id: str) -> RichResult:
    """``run_cell(cell_id, wait=False)``: the cell's run, started when the turn ends."""
    access = live_page(ctx)
    page = access.page
    assert page is not None
    cell = await find_cell(access, cell_id)
    if cell.get("cell_type") != "code":
        raise ToolFailure(f"Cell {cell_id} is a {cell.get('cell_type')} cell; only code "
                          "cells run.")
    waiting = _queued.get(cell_id)
    if waiting is not None and waiting.page is page and waiting.task is not None \
            and not waiting.task.done():
        # One run per request to run: a second would run the cell twice, one after the other.
        return RichResult(text=(
            f"Cell {cell_id} is already queued by an earlier run_cell(wait=False) of this "
            "turn: it starts once, when this turn ends. Nothing more was queued."))
    turn_end = access.turn_end()
    if turn_end is None:
        answer = await _start(page, cell_id)
        state = answer.get("state", "queued")
        return RichResult(text=(f"Cell {cell_id} was started in the notebook (state now: "
                                f"{state}). Use cell_status to see its state and output; "
                                "interrupt_kernel stops it."))
    queued = _queued[cell_id] = _Queued(page)
    queued.task = asyncio.get_running_loop().create_task(
        _start_after(turn_end, queued, cell_id), name=f"neta_nb start cell {cell_id}")
    _starting.add(queued.task)
    queued.task.add_done_callback(_starting.discard)
    return RichResult(text=(
        f"Cell {cell_id} is queued (state: queued): it starts running in the notebook when "
        "this turn ends, because the kernel runs one thing at a time and its code would "
        "hold this turn until it finished. End your turn to let it run; use cell_status "
        "in a later turn to see its state and output. Stopping the turn does not stop "
        "the cell (interrupt_kernel does)."))


async def _start(page: NotebookPage, cell_id: str) -> dict[str, Any]:
    try:
        return await page.request("run", {"cell_id": cell_id, "wait": False})
    except NotebookError as error:
        raise ToolFailure(f"Cell {cell_id} could not be started: {error}") from error


async def _start_after(turn_end: Awaitable[None], queued: _Queued, cell_id: str) -> None:
    await turn_end
    try:
        # The page answers before it starts the cell; should the cell still run first,
        # its code holds the kernel, and the answer is read only when it has ended.
        await queued.page.request("run", {"cell_id": cell_id, "wait": False}, wait=START_WAIT)
    except NotebookError as error:
        if error.code != "no_answer":  # not answered: the page's state tells the rest
            queued.failure = str(error)
            log.warning("cell %s could not be started: %s", cell_id, error)
            return
    if _queued.get(cell_id) is queued:
        del _queued[cell_id]


@tool(category="notebook", label="Cell status")
async def cell_status(ctx: ToolContext, cell_id: str) -> RichResult:
    """The state of a code cell of the notebook: idle (not run), queued, running, done or
    error, its execution count and its outputs so far (bounded). For a cell started with
    run_cell(wait=False).

    Args:
        cell_id: The cell's id, as read_notebook shows it.
    """
    access = live_page(ctx)
    queued = _queued.get(cell_id)
    if queued is not None and queued.page is access.page:
        if queued.failure is None:
            return RichResult(text=(f"Cell {cell_id}: queued. It starts running when the "
                                    "turn that asked for it ends."))
        del _queued[cell_id]
        raise ToolFailure(f"Cell {cell_id} was queued to run but could not be started: "
                          f"{queued.failure}")
    return await _page_status(access, cell_id)


async def _page_status(access: NotebookAccess, cell_id: str) -> RichResult:
    assert access.page is not None
    try:
        answer = await access.page.request("cell_status", {"cell_id": cell_id})
    except NotebookError as error:
        raise ToolFailure(f"The state of cell {cell_id} could not be read: {error}") from error
    state = answer.get("state")
    if state not in CELL_STATES:
        raise ToolFailure(f"The page gave cell {cell_id} an unknown state {state!r}.")
    raw = answer.get("outputs")
    outputs: list[Any] = raw if isinstance(raw, list) else []
    count = answer.get("execution_count")
    counted = f", execution count {count}" if isinstance(count, int) else ""
    ended = {"done": " It has ended and did not fail.",
             "error": " It has ended and failed (raised an error).",
             "running": " It has not ended yet.",
             "queued": " It waits for the kernel and has not started yet.",
             "idle": " It is not running and has not run."}[state]
    so_far = " so far" if state in ("running", "queued") else ""
    failure = answer.get("failure")
    if isinstance(failure, str) and failure:
        ended += f" The run started without waiting for it did not run: {failure}."
    text = (f"Cell {cell_id}: {state}{counted}.{ended} Its outputs{so_far}:\n{UNTRUSTED}\n"
            f"{render_outputs(outputs)}")
    cells = {"cells": [{"id": cell_id, "outputs": outputs}]}
    return RichResult(text=text, items=model_images(cells, CellRange(cell_id=cell_id)))
