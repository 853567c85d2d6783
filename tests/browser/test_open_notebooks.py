"""The page's other notebooks as tools, on a real JupyterLab page with two notebooks open:
the chat's own and another one.

1. ``list_notebooks`` lists both, the chat's own marked so; ``read_notebook(path=...)``
   of the other returns its cells and its output, said to be read-only; a path not open
   is refused naming the open ones, and the chat's own notebook still reads after it.
2. ``create_notebook``: its approval shows the path and the cells' sources; allowed, the
   file in the server's root holds exactly those cells; rejected, no file is made; a
   path that holds a file is refused and the file left byte for byte as it was; so is a
   path into a folder that does not exist.

The kernel side is test_notebook_agent.py's (a scripted model the test sets before each
turn), with these tools switched on. Pictures (Light and Dark): the create approval.
"""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest

from .harness import LabSession
from .test_notebook_agent import APPROVAL, CHAT, TOOLS
from .test_notebook_structure import Notebook, pictures

pytestmark = pytest.mark.browser

OWN_TOOLS = ["read_notebook", "list_notebooks", "create_notebook"]
NOTEBOOKS_CHAT = CHAT.replace(repr(TOOLS), repr(OWN_TOOLS))
assert NOTEBOOKS_CHAT != CHAT

OTHER_MARKDOWN = "# Quarterly figures\nFrom the other notebook."
OTHER_CODE = "q3 = 1_234\nprint('q3 total', q3)"
NEW_CELLS = [{"cell_type": "markdown", "source": "# Summary\nWritten by the agent."},
             {"source": "import math\nprint(math.pi)"},
             {"cell_type": "raw", "source": "raw: kept as it is"}]


def _other_notebook(root: Path, name: str) -> None:
    notebook = nbformat.v4.new_notebook()
    code = nbformat.v4.new_code_cell(OTHER_CODE, id="q3")
    code.outputs = [nbformat.v4.new_output("stream", name="stdout", text="q3 total 1234\n")]
    code.execution_count = 7
    notebook.cells = [nbformat.v4.new_markdown_cell(OTHER_MARKDOWN, id="intro"), code]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    (root / name).parent.mkdir(parents=True, exist_ok=True)
    nbformat.write(notebook, root / name)


def _both_open(lab: LabSession, chat_name: str) -> Notebook:
    """The other notebook opened first, then the chat's (run, its chat bound)."""
    other = "figures/quarterly.ipynb"
    _other_notebook(lab.server.root_dir, other)
    lab.open_notebook(other)
    lab.page.wait_for_function(
        "(path) => window.jupyterapp.shell.currentWidget?.context?.path === path", arg=other)
    return Notebook(lab, chat_name, chat=NOTEBOOKS_CHAT)


def test_list_notebooks_lists_both_and_read_notebook_reads_the_other(
        lab: LabSession) -> None:
    notebook = _both_open(lab, "open_list.ipynb")
    notebook.play("What else is open?", [
        {"name": "list_notebooks", "args": {}},
        {"name": "read_notebook", "args": {"path": "figures/quarterly.ipynb"}},
        {"name": "read_notebook", "args": {"path": "figures/missing.ipynb"}},
        {"name": "read_notebook", "args": {}}],
        "Read it.")
    notebook.wait_for_text("Read it.")
    [listed] = notebook.results("list_notebooks")
    lines = listed.splitlines()
    assert lines[0] == "2 notebooks are open on this page (paths from the server's root):"
    assert lines[1].startswith('- "open_list.ipynb": this chat\'s notebook · kernel python3 '
                               "running (")
    assert " · has a chat" in lines[1]
    assert lines[2].startswith('- "figures/quarterly.ipynb": kernel python3 running (')
    assert " · no chat" in lines[2]
    other, missing, own = notebook.results("read_notebook")
    # Unsaved changes: the kernel's language_info, set once it started.
    assert other.startswith("Notebook figures/quarterly.ipynb (unsaved changes included): 2 "
                            "cells. This is another notebook open on the page, not this "
                            "chat's")
    for line in ("--- cell 1 · id intro · markdown", "│ # Quarterly figures",
                 "│ From the other notebook.", "--- cell 2 · id q3 · code · [7]",
                 "│ q3 = 1_234", "│ print('q3 total', q3)", "··· stdout:",
                 "│ q3 total 1234"):
        assert line in other.splitlines(), line
    assert missing == ('The notebook "figures/missing.ipynb" could not be read: no notebook '
                       'is open at "figures/missing.ipynb"; the open notebooks: '
                       '"open_list.ipynb", "figures/quarterly.ipynb"')
    # The refusal left the chat's view answering: its own notebook reads after it.
    assert own.startswith("Notebook open_list.ipynb")


def test_create_notebook_writes_exactly_the_cells_once_allowed_and_never_overwrites(
        lab: LabSession, screenshot_dir: Path) -> None:
    notebook = _both_open(lab, "open_create.ipynb")
    root = notebook.root
    (root / "made").mkdir(exist_ok=True)
    create = {"name": "create_notebook",
              "args": {"path": "made/summary.ipynb", "cells": NEW_CELLS}}

    notebook.play("Write a summary notebook", [create], "Created it.")
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for()
    what = approval.locator(".neta-chat-approval-what").text_content() or ""
    assert what == ('It creates the notebook "made/summary.ipynb" (from the server\'s '
                    "root) with 3 cells, shown below; the file is not opened. If a file is "
                    "at that path already, nothing is written.")
    code = approval.locator(".neta-chat-approval-code").text_content() or ""
    assert code == ("# %% [markdown]\n# Summary\nWritten by the agent.\n\n"
                    "# %%\nimport math\nprint(math.pi)\n\n# %% [raw]\nraw: kept as it is")
    pictures(lab, approval, screenshot_dir, "create-approval")
    approval.locator("button[data-decision=allow_once]").click()
    notebook.wait_for_text("Created it.")
    written = nbformat.read(root / "made/summary.ipynb", as_version=4)
    nbformat.validate(written)
    assert [(cell.cell_type, cell.source) for cell in written.cells] == [
        ("markdown", NEW_CELLS[0]["source"]), ("code", NEW_CELLS[1]["source"]),
        ("raw", NEW_CELLS[2]["source"])]
    assert written.metadata["kernelspec"]["name"] == "python3"  # the chat's notebook's
    assert notebook.results("create_notebook") == [
        'Created the notebook "made/summary.ipynb" with 3 cells. It is not open: the user '
        "opens it from the file browser; once it is, read_notebook(path=...) reads it."]
    saved = (root / "made/summary.ipynb").read_bytes()

    # The same path again, allowed: refused, the file as it was.
    notebook.play("Write it again", [create], "Did not overwrite.")
    notebook.page.locator(f"{APPROVAL} button[data-decision=allow_once]").click()
    notebook.wait_for_text("Did not overwrite.")
    assert notebook.results("create_notebook")[-1] == (
        'Nothing was created: there is already a notebook at "made/summary.ipynb". '
        "create_notebook never overwrites a file; choose another path.")
    assert (root / "made/summary.ipynb").read_bytes() == saved

    # Rejected: nothing is made.
    other = json.loads(json.dumps(create))
    other["args"]["path"] = "made/rejected.ipynb"
    notebook.play("Write another", [other], "Made nothing.")
    notebook.page.locator(f"{APPROVAL} button[data-decision=reject]").click()
    notebook.wait_for_text("Made nothing.")
    assert not (root / "made/rejected.ipynb").exists()
    assert [path.name for path in (root / "made").glob("*.ipynb")] == ["summary.ipynb"]
    assert notebook.results("create_notebook")[-1] == (
        "The user did not allow 'create_notebook' to run.")

    # Allowed, into a folder that does not exist: refused, no folder made.
    other["args"]["path"] = "nowhere/summary.ipynb"
    notebook.play("Write it elsewhere", [other], "No such folder.")
    notebook.page.locator(f"{APPROVAL} button[data-decision=allow_once]").click()
    notebook.wait_for_text("No such folder.")
    assert notebook.results("create_notebook")[-1] == (
        'The notebook "nowhere/summary.ipynb" could not be created: there is no folder '
        '"nowhere" (a new notebook goes into a folder that exists)')
    assert not (root / "nowhere").exists()
