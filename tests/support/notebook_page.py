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
        self.executing: list[str] = []
        self.chat_cell_id: str | None = None
        self.active_cell_id: str | None = None
        """The cell the user last focused (``@this``); the extension leaves the chat's out."""
        self.kernel_id = "k-1"
        self.restores = 0
        """How many ``restore`` requests were made (each one undo step on a real page)."""
        self.restarts: list[int] = []
        self.interrupts = 0
        self.others: dict[str, list[dict[str, Any]]] = {}
        """Other notebooks open on the page, by path (``read`` with ``path``)."""
        self.files: dict[str, dict[str, Any]] = {}
        """Files on the server, by path: ``create`` writes here and refuses one that is."""
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
        handler = getattr(self, f"_op_{op}", None)
        if handler is None:
            raise NotebookError("unknown_op", op)
        answer: dict[str, Any] = await handler(args)
        return answer

    async def _op_read(self, args: dict[str, Any]) -> dict[str, Any]:
        path = args.get("path")
        if path is not None and path != self.path:
            if path not in self.others:
                open_paths = ", ".join(f'"{p}"' for p in [self.path, *self.others])
                raise NotebookError("not_open", f'no notebook is open at "{path}"; the '
                                                   f"open notebooks: {open_paths}")
            return {"path": path, "dirty": False, "own": False, "chat_cell_id": None,
                    "cells": copy.deepcopy(self.others[path])}
        return {"path": self.path, "dirty": self.dirty, "cells": copy.deepcopy(self.cells),
                "chat_cell_id": self.chat_cell_id, "active_cell_id": self.active_cell_id,
                "own": True}

    async def _op_notebooks(self, args: dict[str, Any]) -> dict[str, Any]:
        kernel = {"id": self.kernel_id, "name": "python3", "status": "idle"}
        return {"notebooks": [
            {"path": self.path, "name": self.path.rsplit("/", 1)[-1], "own": True,
             "chat": True, "dirty": self.dirty, "kernel": kernel},
            *({"path": path, "name": path.rsplit("/", 1)[-1], "own": False, "chat": False,
               "dirty": False, "kernel": None} for path in self.others)]}

    async def _op_create(self, args: dict[str, Any]) -> dict[str, Any]:
        path = args["path"]
        if path in self.files:
            raise NotebookError("exists", f'there is already a file at "{path}"')
        self.files[path] = copy.deepcopy(args["notebook"])
        return {"path": path}

    async def _op_edit(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        if cell["source"] != args["expected"]:
            raise NotebookError("changed", "the cell changed")
        cell["source"] = args["source"]
        self.dirty = True
        return {"cell_id": cell["id"], "source": cell["source"]}

    async def _op_insert(self, args: dict[str, Any]) -> dict[str, Any]:
        new = {"id": next(self._ids), "cell_type": args["cell_type"],
               "source": args["source"], "outputs": [], "execution_count": None}
        after = args.get("after_cell_id")
        index = (len(self.cells) if after is None
                 else self.cells.index(self.cell(after)) + 1)
        self.cells.insert(index, new)
        self.dirty = True
        return {"cell_id": new["id"]}

    async def _op_run(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        if args.get("wait") is False:  # started: it runs until the test ends it (end_run)
            if cell["cell_type"] != "code":
                raise NotebookError("not_code", f"cell {cell['id']} is not a code cell")
            cell["execution_count"], cell["outputs"] = None, []
            self.executing.append(cell["id"])
            return {"cell_id": cell["id"], "state": "running", "execution_count": None}
        cell["execution_count"] = next(self._count)
        cell["outputs"] = self.run_outputs.get(cell["id"], [])
        return {"cell_id": cell["id"], "execution_count": cell["execution_count"],
                "outputs": cell["outputs"], "status": "ok"}

    def end_run(self, cell_id: str) -> None:
        """The started run of ``cell_id`` ends, with its ``run_outputs``."""
        self.executing.remove(cell_id)
        cell = self.cell(cell_id)
        cell["execution_count"] = next(self._count)
        cell["outputs"] = self.run_outputs.get(cell_id, [])

    async def _op_cell_status(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        if cell["cell_type"] != "code":
            raise NotebookError("not_code", f"cell {cell['id']} is not a code cell")
        outputs = cell["outputs"]
        if cell["id"] in self.executing:
            state = "running"
        elif cell["execution_count"] is None and not outputs:
            state = "idle"
        else:
            failed = any(o.get("output_type") == "error" for o in outputs)
            state = "error" if failed else "done"
        return {"cell_id": cell["id"], "state": state,
                "execution_count": cell["execution_count"], "outputs": copy.deepcopy(outputs)}

    async def _op_set_outputs(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        cell["outputs"] = args["outputs"]
        cell["execution_count"] = args["execution_count"]
        return {}

    async def _op_delete(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        if cell["source"] != args["expected"]:
            raise NotebookError("changed", "the cell changed")
        self.cells.remove(cell)
        self.dirty = True
        return {"cell_id": cell["id"]}

    async def _op_move(self, args: dict[str, Any]) -> dict[str, Any]:
        cell = self.cell(args["cell_id"])
        if cell["source"] != args["expected"] or self.cells.index(cell) != args["from_index"]:
            raise NotebookError("changed", "the cell changed or moved")
        if not 0 <= args["to_index"] < len(self.cells):
            raise NotebookError("bad_request", "'to_index' is out of range")
        self.cells.remove(cell)
        self.cells.insert(args["to_index"], cell)
        self.dirty = True
        return {"cell_id": cell["id"]}

    async def _op_apply_changes(self, args: dict[str, Any]) -> dict[str, Any]:
        """Changes made together, as the extension makes them: all checked on a copy
        first (none is made when one cannot be), then made as one step."""
        trial = copy.deepcopy(self.cells)
        results = []
        for change in args["changes"]:
            results.append(self._change(trial, change))
        self.cells = trial
        self.dirty = True
        return {"results": results}

    def _change(self, cells: list[dict[str, Any]], change: dict[str, Any]) -> dict[str, Any]:
        op = change["op"]
        if op == "insert":
            after = change.get("after_cell_id")
            index = len(cells)
            if after is not None:
                found = [n for n, c in enumerate(cells) if c["id"] == after]
                if not found:
                    raise NotebookError("no_cell", f"no cell {after!r}")
                index = found[0] + 1
            new = {"id": next(self._ids), "cell_type": change["cell_type"],
                   "source": change["source"], "outputs": [], "execution_count": None}
            cells.insert(index, new)
            return {"cell_id": new["id"]}
        found = [n for n, c in enumerate(cells) if c["id"] == change["cell_id"]]
        if not found:
            raise NotebookError("no_cell", f"no cell {change['cell_id']!r}")
        index = found[0]
        if cells[index]["source"] != change["expected"]:
            raise NotebookError("changed", "the cell changed")
        if op == "edit":
            cells[index]["source"] = change["source"]
        elif op == "delete":
            del cells[index]
        else:
            cells.insert(min(change["to_index"], len(cells) - 1), cells.pop(index))
        return {"cell_id": change["cell_id"]}

    async def _op_clear_outputs(self, args: dict[str, Any]) -> dict[str, Any]:
        chosen = ([self.cell(args["cell_id"])] if args.get("cell_id") is not None
                  else [c for c in self.cells
                        if c["cell_type"] == "code" and c["id"] != self.chat_cell_id])
        for cell in chosen:
            cell["outputs"], cell["execution_count"] = [], None
        return {"cleared": [cell["id"] for cell in chosen]}

    async def _op_run_all(self, args: dict[str, Any]) -> dict[str, Any]:
        results = []
        for cell_id in args["cell_ids"]:
            result = await self._op_run({"cell_id": cell_id})
            failed = any(o.get("output_type") == "error" for o in result["outputs"])
            results.append({**result, "status": "error" if failed else "ok"})
            if failed:
                break
        return {"results": results}

    async def _op_kernel(self, args: dict[str, Any]) -> dict[str, Any]:
        return {"kernel_id": self.kernel_id, "status": "busy" if self.executing else "idle",
                "executing": list(self.executing)}

    async def _op_interrupt(self, args: dict[str, Any]) -> dict[str, Any]:
        self.interrupts += 1
        return {"kernel_id": self.kernel_id, "executing": list(self.executing)}

    async def _op_restart(self, args: dict[str, Any]) -> dict[str, Any]:
        self.restarts.append(args["after_ms"])
        return {"kernel_id": self.kernel_id}

    async def _op_restore(self, args: dict[str, Any]) -> dict[str, Any]:
        """As the extension's ``restore``: every operation checked against the cells first
        (``changed`` and nothing done when one does not hold), then all made."""
        cells = [dict(cell) for cell in self.cells]
        for operation in args["operations"]:
            ids = [cell["id"] for cell in cells]
            op, cell_id = operation["op"], operation["cell_id"]
            if op == "insert":
                if cell_id in ids or not 0 <= operation["index"] <= len(cells):
                    raise NotebookError("changed", f"cell {cell_id} cannot go back")
                cells.insert(operation["index"], {
                    "id": cell_id, "cell_type": operation["cell_type"],
                    "source": operation["source"], "outputs": [], "execution_count": None})
                continue
            if cell_id not in ids:
                raise NotebookError("changed", f"no cell {cell_id}")
            index = ids.index(cell_id)
            if op == "move":
                if index != operation["from_index"]:
                    raise NotebookError("changed", f"cell {cell_id} moved")
                cells.insert(operation["to_index"], cells.pop(index))
            elif cells[index]["source"] != operation["expected"]:
                raise NotebookError("changed", f"cell {cell_id} changed")
            elif op == "delete":
                del cells[index]
            else:
                cells[index]["source"] = operation["source"]
        self.cells = cells
        self.dirty = True
        self.restores += 1
        return {"applied": len(args["operations"])}
