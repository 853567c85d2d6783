"""Re-execute notebooks and store their outputs as nbval compares them.

Usage: ``.venv/bin/python scripts/refresh_notebooks.py notebooks/01_quickstart.ipynb …``

nbval compares each cell's outputs as first displayed and ignores display updates, while
nbclient applies them (a chat's static form is updated in place when its turn ends): so
updates are dropped here, and widget state is not stored.
"""
import copy
import sys
from pathlib import Path

import nbformat
from nbclient import NotebookClient

NotebookClient._update_display_id = lambda self, display_id, msg: None  # as nbval: ignored
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
