"""The kernel's side of the notebook: whether a cell is executing, and its history.

Where no page answers (nbclient, VS Code, Colab, plain IPython), ``read_notebook`` reads
what the kernel itself remembers: the cells it executed (IPython's ``In`` and ``Out``) and
the last exception (``sys.last_value``). That is the kernel's history, not the document —
cells never run, and the order they were run in — and the tool says so.

A turn awaited in a cell (``await session.run(...)``) keeps the kernel's shell busy until
it ends; a page asked to run another cell would queue it behind the turn while the turn
waits for it. :func:`cell_running` tells the tools when that is the case.
"""

from __future__ import annotations

import contextvars
import os
import sys
import threading
import time
from collections.abc import Callable
from functools import partial
from typing import Any

from ...daemon_threads import DaemonThreads
from ..builtin.variables import type_name
from .texts import error_text, last_exception, variable_text

__all__ = ["DESCRIBE_WAIT", "cell_code", "cell_running", "kernel_history",
           "raising_cell", "started_in_running_cell", "watch_cells"]

DESCRIBE_WAIT = 10.0
"""Seconds one read of the history waits, in all, for the descriptions of the values it
shows; a value not described by then is said to be so."""
_DESCRIBE_GRACE = 0.2
"""Seconds a description is waited for even past :data:`DESCRIBE_WAIT` (one that never
ends costs the values after it no more than this each)."""

_state: dict[str, Any] = {"running": False, "watched": None, "cell": None}

_started_in: contextvars.ContextVar[object | None] = contextvars.ContextVar(
    "neta_nb_started_in_cell", default=None)
"""The run of a cell the current code started in: set when the cell begins, in the
cell's own context, so a task the cell's code creates (a turn awaited there) inherits it,
and a task started elsewhere (the chat's Send) does not."""


def _pre_run(*_: Any) -> None:
    run = object()  # this run of a cell, and no other
    _state["running"] = True
    _state["cell"] = run
    _started_in.set(run)


def _post_run(*_: Any) -> None:
    _state["running"] = False
    _state["cell"] = None


def watch_cells() -> None:
    """Follow the running shell's cells from now on (once per shell). Called from a
    cell — a chat view is bound in one — so that cell counts as running until it ends."""
    shell = _shell()
    if shell is None or _state["watched"] is shell:
        return
    shell.events.register("pre_run_cell", _pre_run)
    shell.events.register("post_run_cell", _post_run)
    _state["watched"] = shell
    _pre_run()  # the cell calling this is running, and was not seen beginning


def cell_running() -> bool:
    """The kernel is executing a cell now (as far as :func:`watch_cells` has seen)."""
    return bool(_state["running"]) and _state["watched"] is not None


def started_in_running_cell() -> bool:
    """The code asking was started by the cell executing now: a turn awaited in a cell
    (``await session.run(...)``), whose cell an interrupt or a restart would stop. A turn
    started from the chat, or by ``session.start`` in a cell that has since ended, was
    not."""
    run = _state["cell"]
    return run is not None and _started_in.get() is run and cell_running()


def cell_code(source: str) -> str:
    """A cell's source as IPython runs it: magics (``%matplotlib inline``) and shell
    escapes (``!pip install``) made the calls they stand for. Unchanged outside IPython,
    or when IPython cannot transform it (the run then reports the error)."""
    transform = getattr(_shell(), "transform_cell", None)
    if transform is None:
        return source
    try:
        code = transform(source)
    except Exception:
        return source
    return code if isinstance(code, str) else source


def _shell() -> Any:
    ipython = sys.modules.get("IPython")
    if ipython is None:
        return None
    try:
        return ipython.get_ipython()
    except Exception:
        return None


def kernel_history(namespace: dict[str, Any]) -> dict[str, Any]:
    """The cells the kernel executed, as ``read_notebook`` reads a page's notebook:
    ``{"source": "kernel", "cells": [...]}`` with ids ``In[n]``, each cell's source and its
    value (``Out[n]``, described as ``list_variables`` describes a variable: bounded, no
    code of a class the notebook defined runs) as a ``text/plain`` output. The last
    uncaught exception goes on the cell that raised it; where that cell is not known it is
    ``"error"``, apart from the cells.

    Describing a value runs its class's code (a frame's rows), which may take long, and a
    notebook may hold many: a cell with a value gets its outputs as a function that makes
    them (:func:`~.reading.cell_outputs`), called only for a cell that is shown. Each
    description runs on a thread of its own (:func:`_described`); the read waits
    :data:`DESCRIBE_WAIT` seconds for them in all. ``In`` and ``Out`` are read as they are
    now (copied), so cells the user runs meanwhile change nothing here."""
    inputs = namespace.get("In")
    outputs = namespace.get("Out")
    values = dict(outputs) if isinstance(outputs, dict) else {}
    exception = last_exception()
    error = error_output(exception) if exception is not None else None
    raised_in = raising_cell(exception) if exception is not None else None
    deadline = time.monotonic() + DESCRIBE_WAIT
    cells: list[dict[str, Any]] = []
    for number, source in enumerate(list(inputs) if isinstance(inputs, list) else []):
        if number == 0 or not isinstance(source, str) or not source.strip():
            continue
        after = [error] if error is not None and number == raised_in else []
        cells.append({"id": f"In[{number}]", "cell_type": "code", "execution_count": number,
                      "source": source,
                      "outputs": (partial(_with_value, variable_text, number, values[number],
                                          after, deadline) if number in values else after)})
    history: dict[str, Any] = {"source": "kernel", "cells": cells}
    if error is not None and not any(cell["execution_count"] == raised_in for cell in cells):
        history["error"] = error
    return history


def _with_value(describe: Callable[[str, Any], str], number: int, value: Any,
                after: list[dict[str, Any]], deadline: float) -> list[dict[str, Any]]:
    """A cell's outputs: its value (``Out[number]``), described, then ``after``."""
    name = f"Out[{number}]"
    text = _described(describe, name, value, deadline)
    if text is None:
        text = (f"{name}: {type_name(type(value))} (not described: describing it took longer "
                f"than a read waits, {DESCRIBE_WAIT:g} s; it goes on in the background, and "
                "a later read shows it once done)")
    return [{"output_type": "execute_result", "data": {"text/plain": text}}, *after]


class _Description:
    """One value's description, made on a thread of :data:`_describers`."""

    def __init__(self, value: Any) -> None:
        self.value = value  # held while it runs: no other value gets its id meanwhile
        self.done = threading.Event()
        self.text: str | None = None


_describers = DaemonThreads("neta_nb describe", idle_timeout=30.0)
_running: dict[tuple[int, str], _Description] = {}
"""Descriptions still running, by their value's id and name: one that outlasted a read is
waited for by the next, not started again (a thread cannot be stopped: each start of a
description that never ends would keep one more)."""
_running_lock = threading.Lock()


def _after_fork_in_child() -> None:
    """A forked kernel has none of its parent's threads: their descriptions never end
    there, and its lock may have been held by one of them."""
    global _running_lock
    _running.clear()
    _running_lock = threading.Lock()


os.register_at_fork(after_in_child=_after_fork_in_child)


def _described(describe: Callable[[str, Any], str], name: str, value: Any,
               deadline: float) -> str | None:
    """``describe(name, value)`` made on a thread of its own, waited for until
    ``deadline`` (``time.monotonic``; :data:`_DESCRIBE_GRACE` at least); ``None`` when it
    has not finished by then."""
    key = (id(value), name)
    with _running_lock:
        description = _running.get(key)
        start = description is None
        if description is None:
            description = _running[key] = _Description(value)

    def job() -> Callable[[], None]:
        try:
            description.text = describe(name, value)
        except BaseException as error:  # describe catches all but the user's interrupt
            description.text = (f"{name}: {type_name(type(value))} (not described: "
                                f"{type(error).__name__})")
        with _running_lock:
            _running.pop(key, None)
        return description.done.set

    if start:
        try:
            _describers.submit(job)
        except RuntimeError:  # no thread can be started: described here, as before
            job()()
    wait = max(_DESCRIBE_GRACE, deadline - time.monotonic())
    return description.text if description.done.wait(wait) else None



def error_output(exception: BaseException) -> dict[str, Any]:
    """``exception`` as an nbformat ``error`` output, made as an ``@error`` mention's text
    is: no ``__str__`` of a class the notebook defined runs, the traceback bounded."""
    lines = error_text(exception).splitlines()
    name = type_name(type(exception))
    last = lines[-1] if lines else name
    value = last[len(name) + 2:] if last.startswith(f"{name}: ") else ""
    return {"output_type": "error", "ename": name, "evalue": value, "traceback": lines}


def raising_cell(exception: BaseException) -> int | None:
    """The execution count of the cell whose code raised ``exception`` (the outermost
    frame of a cell in its traceback), as IPython's compiler maps the cells' file names;
    ``None`` when no frame is a cell's."""
    cells = getattr(getattr(_shell(), "compile", None), "_filename_map", None)
    if not isinstance(cells, dict):
        return None
    # As BaseException stores it: a class of the notebook may make it a property (its code).
    slot: Any = vars(BaseException)["__traceback__"]
    frames = slot.__get__(exception)
    while frames is not None:
        number = cells.get(frames.tb_frame.f_code.co_filename)
        if isinstance(number, int):
            return number
        frames = frames.tb_next
    return None
