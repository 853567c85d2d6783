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

import sys
from typing import Any

__all__ = ["cell_code", "cell_running", "kernel_history", "watch_cells"]

_state = {"running": False, "watched": None}


def _pre_run(*_: Any) -> None:
    _state["running"] = True


def _post_run(*_: Any) -> None:
    _state["running"] = False


def watch_cells() -> None:
    """Follow the running shell's cells from now on (once per shell). Called from a
    cell — a chat view is bound in one — so that cell counts as running until it ends."""
    shell = _shell()
    if shell is None or _state["watched"] is shell:
        return
    shell.events.register("pre_run_cell", _pre_run)
    shell.events.register("post_run_cell", _post_run)
    _state["watched"] = shell
    _state["running"] = True


def cell_running() -> bool:
    """The kernel is executing a cell now (as far as :func:`watch_cells` has seen)."""
    return bool(_state["running"]) and _state["watched"] is not None


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
    ``{"source": "kernel", "cells": [...]}`` with ids ``In[n]``, each cell's source, its
    value (``Out[n]``) as a ``text/plain`` output and, on the last cell that raised, the
    error."""
    inputs = namespace.get("In")
    outputs = namespace.get("Out")
    cells: list[dict[str, Any]] = []
    if isinstance(inputs, list):
        for number, source in enumerate(inputs):
            if number == 0 or not isinstance(source, str) or not source.strip():
                continue
            cell: dict[str, Any] = {"id": f"In[{number}]", "cell_type": "code",
                                    "execution_count": number, "source": source,
                                    "outputs": []}
            if isinstance(outputs, dict) and number in outputs:
                cell["outputs"].append({"output_type": "execute_result",
                                        "data": {"text/plain": _plain(outputs[number])}})
            cells.append(cell)
    error = last_error()
    if error is not None and cells:
        cells[-1]["outputs"].append(error)
    return {"source": "kernel", "cells": cells}


def last_error() -> dict[str, Any] | None:
    """The last uncaught exception (IPython records it as Python does), as an nbformat
    ``error`` output; ``None`` if there was none."""
    value = getattr(sys, "last_exc", None) or getattr(sys, "last_value", None)
    if not isinstance(value, BaseException):
        return None
    import traceback

    lines = traceback.format_exception(type(value), value, value.__traceback__)
    return {"output_type": "error", "ename": type(value).__name__,
            "evalue": str(value), "traceback": "".join(lines).splitlines()}


def _plain(value: Any) -> str:
    """A value's repr, bounded; a repr that raises costs only itself."""
    try:
        text = repr(value)
    except Exception as exc:
        text = f"<repr failed: {type(exc).__name__}>"
    return text if len(text) <= 4_000 else text[:4_000] + " …"
