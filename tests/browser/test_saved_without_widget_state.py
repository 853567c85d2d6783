"""A notebook saved with JupyterLab's defaults keeps its outputs but no widget state;
reopened (a new kernel, which has none of the widgets), the widget manager has no model
for a widget output and writes "Error displaying widget: model not found" in it. Before a
neta_nb widget's static form (the output after its view) the extension hides that error,
so the form shows alone, drawn (js/labextension/src/missing-widgets.ts); another widget's
error (an ipywidgets slider's) stays where it is. Opened with no kernel, the widget manager
writes "Loading widget..." there for good: hidden the same way before a static form."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import nbformat
import pytest

from . import chat_cells
from .harness import JupyterLabServer, LabSession

pytestmark = pytest.mark.browser

NOTEBOOKS = Path(__file__).resolve().parents[2] / "notebooks"
ERROR = "Error displaying widget"
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

# What the notebook shows of its widget outputs: the visible ones' text, and the static
# forms' count and visibility.
SHOWN_JS = """() => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  if (!panel) return { widgets: [], forms: [] };
  const visible = (n) => n.getClientRects().length > 0;
  // The widget manager's renderer is the output node, classed so only with an error.
  const widgets = Array.from(panel.querySelectorAll('.jp-OutputArea-output.jupyter-widgets'));
  const forms = Array.from(panel.querySelectorAll('.neta-static-form'));
  return {
    widgets: widgets.map((n) => ({ text: n.textContent.trim(), visible: visible(n) })),
    forms: forms.map((n) => ({ visible: visible(n), height: n.getBoundingClientRect().height })),
  };
}"""


CELLS = [
    chat_cells.IMPORTS,
    """
import ipywidgets
from neta_nb.widgets import TodoCard
session = AgentSession(Agent("analyst", model=ScriptedProvider(chars_per_second=4000)))
await session.run("Profile the sample sales data and tell me what stands out.")
chat = ChatView(session, height="420px")
chat
""".strip(),
    "TodoCard(session)",
    "ipywidgets.IntSlider(3)",
]

# Save the notebook as JupyterLab does by default (no widget state), close it and shut
# its kernel down.
SAVE_AND_CLOSE_JS = """async (path) => {
  const app = window.jupyterapp;
  const widget = Array.from(app.shell.widgets('main')).find((w) => w.context?.path === path);
  await widget.context.save();
  await widget.sessionContext.shutdown();
  widget.dispose();
  return true;
}"""


def saved_and_reopened(lab: LabSession, name: str) -> None:
    """The notebook run, saved with JupyterLab's defaults, closed, and opened again (a new
    kernel, which has none of the widgets)."""
    path = lab.run_notebook(name, CELLS, timeout=120)
    lab.page.locator(".neta-chat-view").wait_for()
    lab.page.evaluate(SAVE_AND_CLOSE_JS, path)
    saved = nbformat.read(lab.server.root_dir / path, as_version=4)
    assert "widgets" not in saved.metadata  # no widget state
    assert any(WIDGET_VIEW in o.get("data", {}) for o in saved.cells[1].outputs)
    lab.open_notebook(path)


# Opens the notebook without starting a kernel.
OPEN_WITHOUT_KERNEL_JS = """async (path) => {
  const widget = await window.jupyterapp.commands.execute('docmanager:open', {
    path, factory: 'Notebook', kernelPreference: { shouldStart: false, canStart: false }});
  await widget.context.ready;
  await widget.sessionContext.ready;
  await widget.revealed;
  return widget.sessionContext.session?.kernel?.id ?? null;
}"""
LOADING = "Loading widget..."
# Whether each of the widget manager's waiting lines shows.
LOADING_JS = f"""() => {{
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  return Array.from(panel?.querySelectorAll('.jp-OutputArea-output') ?? [])
    .filter((n) => n.textContent.trim() === '{LOADING}')
    .map((n) => n.getClientRects().length > 0);
}}"""
# JupyterLab's widget manager on a notebook opened without a kernel: it fails reading the
# kernel it has not (an uncaught error), not neta_nb.
KERNEL_LESS_WIDGET_MANAGER = "Cannot read properties of null (reading 'kernel')"


def wait_for_errors(page: Any, count: int) -> dict[str, Any]:
    """Wait until the widget manager has given up on `count` widget outputs."""
    page.wait_for_function(
        f"(n) => ({SHOWN_JS})().widgets.filter((w) => w.text.startsWith('{ERROR}')).length"
        " === n", arg=count, timeout=60_000)
    return dict(page.evaluate(SHOWN_JS))


def notebook_top(page: Any, path: Path) -> None:
    """A picture of the notebook from the chat's cell on: its code, then the saved form."""
    cell = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell").nth(1)
    cell.evaluate("node => node.scrollIntoView({block: 'start'})")
    page.wait_for_timeout(200)
    box = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook").bounding_box()
    assert box is not None
    page.screenshot(path=str(path), clip=box, animations="disabled")


def assert_forms_alone(shown: dict[str, Any]) -> None:
    # The chat's and the todo card's errors are hidden, the slider's is not.
    errors = [w for w in shown["widgets"] if w["text"].startswith(ERROR)]
    assert len(errors) == 3, shown
    assert [w["visible"] for w in errors] == [False, False, True], shown
    assert len(shown["forms"]) == 2 and all(f["visible"] and f["height"] > 40
                                             for f in shown["forms"]), shown


def test_reopened_without_widget_state_shows_the_static_forms_alone(
        lab: LabSession, screenshot_dir: Path) -> None:
    saved_and_reopened(lab, "saved_no_state.ipynb")
    page = lab.page
    assert_forms_alone(wait_for_errors(page, 3))
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    assert panel.locator(".jp-Notebook").inner_text().count(ERROR) == 1  # the slider's
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        notebook_top(page, screenshot_dir / f"saved-no-widget-state-{theme}.png")
    # JupyterLab's widget manager logs each missing model itself (console.error).
    lab.console_errors[:] = [e for e in lab.console_errors
                             if not e.text.startswith("Error: widget model not found")]


def test_opened_without_a_kernel_shows_the_static_forms_alone(
        lab: LabSession, screenshot_dir: Path) -> None:
    page = lab.page
    path = lab.run_notebook("saved_no_kernel.ipynb", CELLS, timeout=120)
    page.locator(".neta-chat-view").wait_for()
    page.evaluate(SAVE_AND_CLOSE_JS, path)
    assert page.evaluate(OPEN_WITHOUT_KERNEL_JS, path) is None
    # The chat's and the todo card's waiting lines are hidden, the slider's is not.
    page.wait_for_function(f"() => JSON.stringify(({LOADING_JS})()) === "
                           "JSON.stringify([false, false, true])", timeout=30_000)
    page.wait_for_timeout(1_000)  # and they stay so
    assert page.evaluate(LOADING_JS) == [False, False, True]
    shown = page.evaluate(SHOWN_JS)
    assert len(shown["forms"]) == 2 and all(f["visible"] and f["height"] > 40
                                            for f in shown["forms"]), shown
    panel = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    assert panel.locator(".jp-Notebook").inner_text().count(LOADING) == 1  # the slider's
    for theme in ("light", "dark"):
        lab.set_theme(dark=theme == "dark")
        notebook_top(page, screenshot_dir / f"saved-no-kernel-{theme}.png")
    lab.set_theme(dark=False)
    # JupyterLab's widget manager, not neta_nb, on a notebook opened without a kernel.
    lab.console_errors[:] = [e for e in lab.console_errors
                             if not e.text.startswith("Error: widget model not found")
                             and e.text != KERNEL_LESS_WIDGET_MANAGER]


def test_in_notebook_7(notebook7: JupyterLabServer, lab_session: LabSession,
                       screenshot_dir: Path) -> None:
    name = "nb7_saved.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source) for source in CELLS]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, notebook7.root_dir / name)
    page = lab_session.page.context.new_page()
    url = f"{notebook7.url}/notebooks/{name}?token={notebook7.token}"
    try:
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        page.evaluate("""async () => {
          const app = window.jupyterapp;
          await app.started; await app.restored;
          const panel = app.shell.currentWidget;
          await panel.context.ready; await panel.sessionContext.ready;
          await app.commands.execute('notebook:run-all-cells');
        }""")
        page.locator(".neta-chat-view").wait_for(timeout=120_000)
        page.wait_for_function("() => window.jupyterapp.shell.currentWidget.sessionContext"
                               ".session?.kernel?.status === 'idle'", timeout=60_000)
        page.evaluate(SAVE_AND_CLOSE_JS, name)
        page.goto(url, wait_until="domcontentloaded")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        assert_forms_alone(wait_for_errors(page, 3))
        notebook_top(page, screenshot_dir / "saved-no-widget-state-notebook7-light.png")
    finally:
        page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                      " if (!p) return; p.context.model.dirty = false;"
                      " await p.sessionContext.shutdown(); }")
        page.close()
