"""A stand-in for a notebook page, for the notebook tools' unit and session tests.

It keeps cells in memory and answers the operations the page's extension answers, with
its error codes, so the tools' logic (proposals, decisions, refusals, bounds) is tested
without a browser. The real page — the extension on JupyterLab and Notebook 7 — is
driven by tests/browser/test_notebook_bridge.py and tests/browser/test_notebook_agent.py.
"""

from __future__ import annotations

import copy
import itertools
from typing import Any

from neta_nb.tools.notebook import NotebookError


class FakeNotebookPage:
    def __init__(self, cells: list[dict[str, Any]], *, path: str = "analysis.ipynb",
                 available: bool = True) -> None:
        self.cells = [{"outputs": [], "execution_count": None, "cell_type": "code", **cell}
                      for cell in cells]
        self.path = path
        self.available = available
        self.dirty = False
        self.requests: list[tuple[str, dict[str, Any]]] = []
        self.run_outputs: dict[str, list[dict[str, Any]]] = {}
        self._ids = (f"new-{n}" for n in itertools.count(1))
        self._count = itertools.count(1)

    def cell(self, cell_id: str) -> dict[str, Any]:
        for cell in self.cells:
            if cell["id"] == cell_id:
                return cell
        raise NotebookError("no_cell", f"no cell {cell_id!r}")

    async def request(self, op: str, args: dict[str, Any], *,
                      wait: float | None = None) -> dict[str, Any]:
        if not self.available:
            raise NotebookError("no_bridge", "no chat view on a notebook page")
        self.requests.append((op, copy.deepcopy(args)))
        if op == "read":
            return {"path": self.path, "dirty": self.dirty, "cells": copy.deepcopy(self.cells)}
        if op == "edit":
            cell = self.cell(args["cell_id"])
            if cell["source"] != args["expected"]:
                raise NotebookError("changed", "the cell changed")
            cell["source"] = args["source"]
            self.dirty = True
            return {"cell_id": cell["id"], "source": cell["source"]}
        if op == "insert":
            new = {"id": next(self._ids), "cell_type": args["cell_type"],
                   "source": args["source"], "outputs": [], "execution_count": None}
            after = args.get("after_cell_id")
            index = (len(self.cells) if after is None
                     else self.cells.index(self.cell(after)) + 1)
            self.cells.insert(index, new)
            self.dirty = True
            return {"cell_id": new["id"]}
        if op == "run":
            cell = self.cell(args["cell_id"])
            cell["execution_count"] = next(self._count)
            cell["outputs"] = self.run_outputs.get(cell["id"], [])
            return {"cell_id": cell["id"], "execution_count": cell["execution_count"],
                    "outputs": cell["outputs"], "status": "ok"}
        if op == "set_outputs":
            cell = self.cell(args["cell_id"])
            cell["outputs"] = args["outputs"]
            cell["execution_count"] = args["execution_count"]
            return {}
        raise NotebookError("unknown_op", op)
