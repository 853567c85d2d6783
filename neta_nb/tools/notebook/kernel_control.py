"""``run_all``, ``interrupt_kernel`` and ``restart_kernel``: the notebook's kernel, as the
user's Run All, Interrupt and Restart reach it — through the page, with approval. Each
approval says what will happen: the cells ``run_all`` runs, in order; the cell an
interrupt stops; what a restart loses.

The agent runs in the kernel it would interrupt or restart:

* An interrupt stops the cell executing now. A turn awaited in that cell
  (``await session.run(...)``) would stop with it, so the tool refuses there; with no cell
  executing there is nothing to interrupt, and the interrupt would reach this turn (Kernel
  ▸ Interrupt stops a chat's turn), so it refuses too.
* A restart loses everything the kernel holds, this turn among it: the page restarts the
  kernel a moment after it answered, so the result reaches the model and the
  conversation's store first; the turn ends with the kernel, and the conversation is
  resumed after the restart.
* ``run_all`` runs the cells on the page, which cannot run one while the kernel executes
  the cell this turn is awaited in: it refuses there (``run_cell`` runs one cell in the
  kernel directly).
"""

from __future__ import annotations

from typing import Any

from ...events import ApprovalPreview
from ..base import ToolContext, ToolFailure, tool
from ..builtin.variables import user_variables
from ..rich import RichResult
from . import kernel
from .editing import live_page, preview_page
from .page import NotebookAccess, NotebookError
from .reading import UNTRUSTED, notebook_cells, render_outputs, shown_name
from .reading_running import RUN_WAIT
from .structure import code_cells, preview_cells

__all__ = ["RESTART_DELAY_MS", "interrupt_kernel", "restart_kernel", "run_all"]

RESTART_DELAY_MS = 1500
"""Milliseconds the page waits between answering ``restart`` and restarting the kernel:
time for the result to reach the model's history and the store."""
_NAMED_VARIABLES = 12
"""Variables a restart's approval names (the rest are counted)."""


def _left_out(notebook: dict[str, Any]) -> str:
    """Which cell ``run_all`` leaves out, named as the notebook shows it (``[1]``)."""
    chat = notebook.get("chat_cell_id")
    for position, cell in enumerate(notebook_cells(notebook), 1):
        if isinstance(chat, str) and cell.get("id") == chat:
            return f" (not cell {shown_name(cell, position)}, which shows this chat)"
    return ""


# --- run_all -------------------------------------------------------------------------

async def _run_all_preview(ctx: ToolContext, _: dict[str, Any]) -> ApprovalPreview | None:
    page = preview_page(ctx)
    if page is None:
        return None
    notebook = await page.request("read", {})
    code = code_cells(notebook)
    summary = (f"It runs {len(code)} code cell{'s' if len(code) != 1 else ''}"
               f"{_left_out(notebook)}, in this order, and stops at the first that raises "
               "an error:")
    return ApprovalPreview(summary=summary, cells=preview_cells(code))


@tool(category="notebook", label="Run all cells", requires_approval=True, timeout=RUN_WAIT,
      approval_preview=_run_all_preview)
async def run_all(ctx: ToolContext) -> RichResult:
    """Run every code cell of the notebook in order, as the user's Run All does, stopping
    at the first that raises an error (not the cell that shows this chat). Needs the
    user's approval, which lists the cells.
    Returns what became of each cell and the error, if one was raised; read_notebook
    shows the outputs.
    """
    access = live_page(ctx)
    assert access.page is not None
    if access.in_cell():
        raise ToolFailure("The kernel is busy with the cell this turn runs in, so the page "
                          "cannot run cells until it ends. run_cell runs one cell at a "
                          "time in the kernel directly.")
    try:
        notebook = await access.page.request("read", {})
        ids = [str(cell.get("id", "")) for _, cell in code_cells(notebook)]
        answer = await access.page.request("run_all", {"cell_ids": ids}, wait=RUN_WAIT)
    except NotebookError as error:
        raise ToolFailure(f"The cells could not be run: {error}") from error
    results = answer.get("results")
    ran = [item for item in results if isinstance(item, dict)] if isinstance(results,
                                                                              list) else []
    lines = [f"Ran {len(ran)} of {len(ids)} code cells in order{_left_out(notebook)}:"]
    failed: dict[str, Any] | None = None
    for item in ran:
        status = "raised an error" if item.get("status") == "error" else "ran"
        lines.append(f"- cell {item.get('cell_id')} {status} (execution count "
                     f"{item.get('execution_count')})")
        if item.get("status") == "error":
            failed = item
    if len(ran) < len(ids):
        rest = ids[len(ran):]
        lines.append(f"Not run (the run stopped at the error): {', '.join(rest)}")
    if failed is not None:
        outputs = failed.get("outputs")
        lines += [f"Cell {failed.get('cell_id')}'s outputs:", UNTRUSTED,
                  render_outputs(outputs if isinstance(outputs, list) else [])]
    else:
        lines.append("read_notebook shows their outputs.")
    return RichResult(text="\n".join(lines))


# --- interrupt_kernel ----------------------------------------------------------------

def _interrupt_refusal(access: NotebookAccess) -> str | None:
    if kernel.started_in_running_cell():
        return ("This turn runs inside the cell the kernel is executing (an awaited "
                "session.run): an interrupt would stop this turn itself. The user can "
                "interrupt it (Kernel ▸ Interrupt).")
    if not access.in_cell():
        return ("No cell is executing: there is nothing to interrupt (an interrupt now "
                "would stop this turn).")
    return None


async def _interrupt_preview(ctx: ToolContext, _: dict[str, Any]) -> ApprovalPreview | None:
    page = preview_page(ctx)
    if page is None:
        return None
    status = await page.request("kernel", {})
    executing = status.get("executing")
    running = set(executing) if isinstance(executing, list) else set()
    cells = [(position, cell) for position, cell in
             enumerate(notebook_cells(await page.request("read", {})), 1)
             if cell.get("id") in running]
    summary = ("It interrupts the kernel: the cell executing now stops (KeyboardInterrupt) "
               "and cells queued after it do not run. What it computed and did not keep "
               "is lost; variables it set stay.")
    return ApprovalPreview(summary=summary, cells=preview_cells(cells))


@tool(category="notebook", label="Interrupt kernel", requires_approval=True,
      approval_preview=_interrupt_preview)
async def interrupt_kernel(ctx: ToolContext) -> RichResult:
    """Interrupt the notebook's kernel, as Kernel ▸ Interrupt does: the cell executing now
    stops with KeyboardInterrupt. Needs the user's approval. Refused when no cell is
    executing, or when this turn itself runs in the executing cell.
    """
    access = live_page(ctx)
    refusal = _interrupt_refusal(access)
    if refusal is not None:
        raise ToolFailure(refusal)
    assert access.page is not None
    try:
        answer = await access.page.request("interrupt", {})
    except NotebookError as error:
        raise ToolFailure(f"The kernel could not be interrupted: {error}") from error
    executing = answer.get("executing")
    which = (f" Cells executing then: {', '.join(map(str, executing))}."
             if isinstance(executing, list) and executing else "")
    return RichResult(text=f"The kernel was interrupted.{which} read_notebook shows where "
                           "the cell stopped.")


# --- restart_kernel ------------------------------------------------------------------

def _lost(namespace: dict[str, Any]) -> str:
    names = user_variables(namespace)
    if not names:
        held = "no variables of the user's"
    else:
        shown = ", ".join(names[:_NAMED_VARIABLES])
        more = f" and {len(names) - _NAMED_VARIABLES} more" if len(names) > _NAMED_VARIABLES \
            else ""
        held = f"{len(names)} variable{'s' if len(names) != 1 else ''} ({shown}{more})"
    return (f"Restarting the kernel loses everything it holds in memory: {held}, imported "
            "modules, open files and connections, and whatever runs in it now. This chat's "
            "turn ends with it (the conversation is saved: reopen it after the restart). "
            "The cells keep their text and outputs.")


async def _restart_preview(ctx: ToolContext, _: dict[str, Any]) -> ApprovalPreview | None:
    return ApprovalPreview(summary=_lost(ctx.namespace))


@tool(category="notebook", label="Restart kernel", requires_approval=True,
      approval_preview=_restart_preview)
async def restart_kernel(ctx: ToolContext) -> RichResult:
    """Restart the notebook's kernel, as Kernel ▸ Restart does: every variable, import
    and running computation is lost, and this turn ends with the kernel. Needs the user's
    approval, which says what is lost. Say what you did in one short sentence at most:
    the kernel restarts a moment after this call returns.
    """
    access = live_page(ctx)
    assert access.page is not None
    lost = _lost(ctx.namespace)
    try:
        answer = await access.page.request("restart", {"after_ms": RESTART_DELAY_MS})
    except NotebookError as error:
        raise ToolFailure(f"The kernel could not be restarted: {error}") from error
    return RichResult(text=(f"The kernel (id {answer.get('kernel_id')}) restarts in "
                            f"{RESTART_DELAY_MS / 1000:g} s. {lost}"))
