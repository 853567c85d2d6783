"""Re-execute notebooks and store their outputs as nbval compares them.

Usage: ``.venv/bin/python scripts/refresh_notebooks.py notebooks/01_quickstart.ipynb …``

nbval compares each cell's outputs as first displayed and ignores display updates, while
nbclient applies them (a chat's static form is updated in place when its turn ends): so
updates are dropped here, and widget state is not stored — except in a cell tagged
``nbval-ignore-output`` (nbval does not compare it): there the outputs are stored as the
run left them, which is what a reader of the committed notebook should see (a chat with its
whole transcript, not "Run this cell…"; a batch run's grid finished, not "Not started").
The demo notebooks tag each cell that displays a chat or a card that changes later.
"""
import copy
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

UNCOMPARED = "nbval-ignore-output"
_apply_update = NotebookClient._update_display_id


def _update_uncompared_cells(self: NotebookClient, display_id: str, msg: dict) -> None:
    """Display updates as nbval sees them (ignored), but in cells nbval does not compare."""
    targets = self._display_id_map.get(display_id, {})
    kept = {index: outputs for index, outputs in targets.items()
            if UNCOMPARED in self.nb.cells[index].metadata.get("tags", [])}
    if kept:
        self._display_id_map[display_id] = kept
        try:
            _apply_update(self, display_id, msg)
        finally:
            self._display_id_map[display_id] = targets


NotebookClient._update_display_id = _update_uncompared_cells
for path in sys.argv[1:]:
    path = Path(path)
    nb = nbformat.read(path, as_version=4)
    run = copy.deepcopy(nb)
    NotebookClient(run, kernel_name="python3", timeout=300, store_widget_state=False,
                   resources={"metadata": {"path": str(path.parent)}}).execute()
    for cell, done in zip(nb.cells, run.cells, strict=True):
        if cell.cell_type == "code":
            cell.outputs = done.outputs
            cell.execution_count = done.execution_count
            cell.metadata.pop("execution", None)
    nb.metadata.pop("widgets", None)
    nbformat.write(nb, path)
    print("wrote", path)
