"""A long cell run without holding the turn, on a real JupyterLab page and in Notebook 7.

The notebook holds a cell ``import time; time.sleep(30); x = 1``. The scripted model
calls ``run_cell(slow, wait=False)``, then ``cell_status(slow)``, then answers. The turn
ends with the cell queued (the kernel runs one thing at a time: started at once, the
cell's ``time.sleep`` would hold the turn — its answer streams for seconds — for 30 s);
the page then shows the cell running
(``[*]``) while the chat is idle. Once it has ended, ``cell_status`` in the next turn says
``done`` with its execution count, and the cell's variable is set.

The cell sleeps the full 30 s of the issue's check, on each front: each run lasts those
30 s plus the notebook's setup and the streamed answers (a minute, give or take, on a
loaded machine).

The kernel side is test_notebook_agent.py's (a scripted model the test sets before each
turn), with ``run_cell`` and ``cell_status`` switched on.
"""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import nbformat
import pytest

from ..support.timing import poll_until
from .harness import JupyterLabServer, LabSession
from .test_notebook_agent import APPROVAL, CHAT, IDLE, TOOLS, ChatNotebook
from .test_notebook_bridge import _FIND_PANEL
from .test_notebook_structure import close_page, open_page

pytestmark = pytest.mark.browser

SLEEP = 30
SLOW = f"import time; time.sleep({SLEEP}); x = 1"
ANSWER = "It runs in the notebook; I will look at it later."
OWN_TOOLS = ["read_notebook", "run_cell", "cell_status"]
BACKGROUND_CHAT = CHAT.replace(repr(TOOLS), repr(OWN_TOOLS))
assert BACKGROUND_CHAT != CHAT

_RUN_CHAT_JS = f"""
async (path) => {{
  const app = window.jupyterapp;
  const panel = {_FIND_PANEL}(path);
  await panel.context.ready;
  await panel.sessionContext.ready;
  app.shell.activateById(panel.id);
  panel.content.activeCellIndex = 0;
  await app.commands.execute('notebook:run-cell');
  return true;
}}
"""
# The slow cell as the page shows it: its prompt ("[*]:" while it runs) and its count.
_SLOW_JS = f"""
(path) => {{
  const panel = {_FIND_PANEL}(path);
  const cell = panel.content.widgets.find((w) => w.model.id === 'slow');
  return {{prompt: cell.node.querySelector('.jp-InputPrompt').textContent.trim(),
           count: cell.model.executionCount ?? null}};
}}
"""


class Notebook(ChatNotebook):
    """The chat cell and the slow cell, in JupyterLab or Notebook 7; only the chat cell
    run."""

    def __init__(self, lab: LabSession, name: str,
                 notebook7: JupyterLabServer | None = None) -> None:
        """In JupyterLab (``lab``'s page), or in a tab of its own on ``notebook7``."""
        self.server = notebook7 or lab.server
        self.in_notebook7 = notebook7 is not None
        self.path = name
        notebook = nbformat.v4.new_notebook()
        notebook.cells = [nbformat.v4.new_code_cell(BACKGROUND_CHAT, id="chat"),
                          nbformat.v4.new_code_cell(SLOW, id="slow")]
        notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                           "language": "python"}
        nbformat.write(notebook, self.root / name)
        self.lab = open_page(lab, name, notebook7)
        self.page.evaluate(_RUN_CHAT_JS, name)
        self.page.locator(".neta-chat-view").wait_for(timeout=60_000)
        poll_until(lambda: self.execute("print(session.notebook_page.available)") == "True",
                   within=20, what="the chat view found the notebook bridge")

    def close_tab(self) -> None:
        """Notebook 7's tab closed (see :func:`close_page`); JupyterLab's notebook is
        closed by the ``lab`` fixture."""
        if self.in_notebook7:
            close_page(self.lab)

    @property
    def page(self) -> Any:
        return self.lab.page

    @property
    def root(self) -> Path:
        return self.server.root_dir

    def execute(self, code: str) -> str:
        return self.lab.execute(self.path, code).strip()

    def play(self, prompt: str, script: list[list[dict[str, Any]]]) -> None:
        self.execute(f"play({prompt!r}, json.loads({json.dumps(script)!r}))")

    def slow(self) -> dict[str, Any]:
        return dict(self.page.evaluate(_SLOW_JS, self.path))


@pytest.mark.parametrize("front", ["lab", "notebook7"])
def test_a_long_cell_runs_on_after_the_turn_that_started_it_has_ended(
        front: str, lab: LabSession, request: pytest.FixtureRequest) -> None:
    notebook7 = request.getfixturevalue("notebook7") if front == "notebook7" else None
    notebook = Notebook(lab, "background_run.ipynb", notebook7)
    try:
        _run_in_the_background(notebook)
    finally:
        notebook.close_tab()


def _run_in_the_background(notebook: Notebook) -> None:
    assert notebook.slow() == {"prompt": "[ ]:", "count": None}
    # The answer after the calls streams for seconds, as a real model's does: a cell
    # started while it streams would hold the rest of the turn until it ended.
    notebook.execute("model.chars_per_second = 20")
    notebook.play("Run the slow cell", [
        [{"tool_call": {"name": "run_cell", "args": {"cell_id": "slow", "wait": False}}}],
        [{"tool_call": {"name": "cell_status", "args": {"cell_id": "slow"}}}],
        [{"text": ANSWER}]])
    approval = notebook.page.locator(APPROVAL)
    approval.wait_for()
    assert SLOW in (approval.text_content() or "")  # the approval shows the code
    approval.locator("button[data-decision=allow_once]").click()
    allowed = time.monotonic()

    # The turn ends; the cell then runs, the chat idle meanwhile.
    notebook.wait_for_text(ANSWER)
    notebook.page.wait_for_function(
        f"(path) => ({_SLOW_JS})(path).prompt === '[*]:'", arg=notebook.path,
        timeout=10_000, polling=100)
    assert notebook.page.evaluate(IDLE)
    assert notebook.slow()["count"] is None
    assert time.monotonic() - allowed < SLEEP - 5, "the turn waited for the cell"
    card = notebook.page.locator(".neta-tool-card", has_text="Run cell").first
    # Its result is in the folded body, built when the card is opened (as a user does).
    card.locator(".neta-tool-header").click()
    card.locator(".neta-tool-body:not(.neta-is-closed) .neta-tool-result").wait_for()
    assert "queued" in (card.text_content() or "")

    # It ends: done, with its execution count, and its variable set.
    notebook.page.wait_for_function(f"(path) => ({_SLOW_JS})(path).count !== null",
                                    arg=notebook.path, timeout=(SLEEP + 15) * 1000,
                                    polling=200)
    assert time.monotonic() - allowed >= SLEEP
    count = notebook.slow()["count"]
    [queued] = notebook.results("run_cell")
    assert queued.startswith("Cell slow is queued (state: queued): it starts running in "
                             "the notebook when this turn ends")
    [during] = notebook.results("cell_status")
    assert during.startswith("Cell slow: queued.")
    notebook.play("Has it finished?", [
        [{"tool_call": {"name": "cell_status", "args": {"cell_id": "slow"}}}],
        [{"text": "It has finished."}]])
    notebook.wait_for_text("It has finished.")
    after = notebook.results("cell_status")[-1]
    assert after.startswith(f"Cell slow: done, execution count {count}. It has ended and "
                            "did not fail."), after
    assert notebook.execute("print(x)") == "1"
