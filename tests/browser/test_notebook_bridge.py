"""The notebook bridge (js/labextension), installed with the package, in real JupyterLab and
Notebook 7: what a chat view on the page can read and change in the notebook that holds it.

The tests dispatch the bridge's ``neta-nb-notebook`` event from an element inside a
notebook's output area, as the chat view's relay does, and check what the user sees:

* the extension is loaded (the server lists it, the page carries its mark);
* ``read`` returns the live notebook: a cell the user typed into without saving, an error
  output, the cells' nbformat ids;
* ``edit`` changes a cell as one undo step (the cell editor's Ctrl+Z restores the text
  before, and not the user's typing before that); a stale ``expected`` is refused and
  leaves the cell and the saved file as they were;
* ``insert`` / ``delete``, ``run`` (the cell runs as the user's Run does, with its
  execution count), ``set_outputs``, and the errors;
* end to end through a chat view: ``view_opened`` says the bridge is there, and a
  ``notebook_request`` from the kernel comes back as one ``notebook_reply``, once.
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

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = "neta-nb-notebook-bridge"

# The notebook panel open at `path`, in JupyterLab and in Notebook 7.
_FIND_PANEL = ("((path) => Array.from(window.jupyterapp.shell.widgets('main'))"
               ".find((w) => w.context?.path === path))")

# Dispatches the bridge's event from the first output of the notebook at `path` (or from
# <body>, outside every notebook) and resolves with the reply; {unhandled: true} when no
# listener took it.
BRIDGE_JS = """
async ([path, op, args, outside]) => {
  const panel = FIND_PANEL(path);
  if (!panel) throw new Error('notebook not open: ' + path);
  const target = outside ? document.body
    : panel.content.node.querySelector('.jp-OutputArea-output');
  if (!target) throw new Error('no output to dispatch from in ' + path);
  return await new Promise((resolve) => {
    const detail = { op, args, handled: false, respond: (reply) => resolve(reply) };
    const init = { detail, bubbles: true, composed: true };
    target.dispatchEvent(new CustomEvent('neta-nb-notebook', init));
    if (!detail.handled) resolve({ unhandled: true });
  });
}
"""

# What the notebook at `path` shows: each cell's source as its editor holds it, its prompt,
# and whether the document has unsaved changes.
SHOWN_JS = """
(path) => {
  const panel = FIND_PANEL(path);
  return {
    dirty: panel.context.model.dirty,
    cells: panel.content.widgets.map((cell) => ({
      id: cell.model.id,
      source: cell.editor ? cell.editor.model.sharedModel.getSource() : null,
      text: cell.node.querySelector('.cm-content')?.textContent ?? null,
      prompt: cell.node.querySelector('.jp-InputPrompt')?.textContent.trim() ?? '',
      output: cell.node.querySelector('.jp-OutputArea')?.textContent ?? '',
    })),
  };
}
"""

SAVE_JS = """
async (path) => {
  const panel = FIND_PANEL(path);
  await panel.context.save();
  return panel.context.model.dirty;
}
"""

BRIDGE_JS, SHOWN_JS, SAVE_JS = (snippet.replace("FIND_PANEL", _FIND_PANEL)
                                for snippet in (BRIDGE_JS, SHOWN_JS, SAVE_JS))


def bridge(page: Any, path: str, op: str, args: dict[str, Any] | None = None, *,
           outside: bool = False) -> dict[str, Any]:
    return dict(page.evaluate(BRIDGE_JS, [path, op, args or {}, outside]))


def result(reply: dict[str, Any]) -> dict[str, Any]:
    assert reply.get("ok") is True, reply
    return dict(reply["result"])


def error_code(reply: dict[str, Any]) -> str:
    assert reply.get("ok") is False, reply
    return str(reply["error"]["code"])


def shown(page: Any, path: str) -> dict[str, Any]:
    return dict(page.evaluate(SHOWN_JS, path))


def file_ids(root: Path, path: str) -> list[str]:
    return [cell.id for cell in nbformat.read(root / path, as_version=4).cells]


def type_at_end(page: Any, cell_index: int, text: str) -> None:
    """The user clicks into a cell's editor and types at its end."""
    editor = page.locator(".jp-Notebook .jp-Cell").nth(cell_index).locator(".cm-content")
    editor.click()
    page.keyboard.press("Control+End")
    page.keyboard.type(text)


def undo_in_editor(page: Any, cell_index: int) -> None:
    """The user presses Ctrl+Z in a cell's editor."""
    page.locator(".jp-Notebook .jp-Cell").nth(cell_index).locator(".cm-content").click()
    page.keyboard.press("Control+z")


def test_the_extension_is_installed_and_active(lab: LabSession) -> None:
    version = json.loads((ROOT / "neta_nb" / "labextension" / "package.json").read_text())[
        "version"]
    page = lab.page
    assert page.evaluate("() => document.body.dataset.netaNbNotebookBridge") == version
    federated = page.evaluate("() => JSON.parse(document.getElementById('jupyter-config-data')"
                              ".textContent).federated_extensions.map((e) => e.name)")
    assert EXTENSION in federated


def test_read_sees_unsaved_typing_and_error_outputs(lab: LabSession) -> None:
    path = lab.run_notebook("bridge_read.ipynb", ['print("anchor")', "x = 1", "1 / 0"])
    page = lab.page
    type_at_end(page, 1, " + 41")
    page.wait_for_function(f"(path) => ({SHOWN_JS})(path).dirty", arg=path)

    notebook = result(bridge(page, path, "read"))
    assert notebook["path"] == path
    assert notebook["dirty"] is True
    cells = notebook["cells"]
    assert [c["id"] for c in cells] == file_ids(lab.server.root_dir, path)
    assert [c["source"] for c in cells] == ['print("anchor")', "x = 1 + 41", "1 / 0"]
    assert cells[0]["outputs"] == [{"output_type": "stream", "name": "stdout",
                                    "text": "anchor\n"}]
    counts = [c["execution_count"] for c in cells]
    assert all(isinstance(n, int) for n in counts) and counts == sorted(counts)
    error = cells[2]["outputs"][0]
    assert error["output_type"] == "error" and error["ename"] == "ZeroDivisionError"
    assert any("ZeroDivisionError" in line for line in error["traceback"])
    # The file on disk still has what was saved: the read saw the page, not the disk.
    assert nbformat.read(lab.server.root_dir / path, as_version=4).cells[1].source == "x = 1"


def test_read_and_run_send_megabytes_of_output_bounded(lab: LabSession) -> None:
    # 400 KB printed, a 2 MB "image" and a small one (under the server's output rate): the
    # reply stays small, the text keeps its head and tail, the large image is named, the
    # small one comes whole.
    big_image = ("from IPython.display import display\n"
                 "display({'image/png': 'A' * 2_100_000, 'text/plain': '<big>'}, raw=True)\n"
                 "display({'image/png': 'iVBORw0KGgo=', 'text/plain': '<small>'}, raw=True)")
    path = lab.run_notebook("bridge_big.ipynb", ["print('head' + 'x' * 400_000 + 'tail')",
                                                  big_image])
    page = lab.page
    reply = bridge(page, path, "read")
    assert len(json.dumps(reply)) < 200_000
    text_cell, image_cell = result(reply)["cells"]
    printed = text_cell["outputs"][0]["text"]
    assert printed.startswith("headxxx") and printed.rstrip().endswith("xxxtail")
    assert "characters left out by the page" in printed
    large, small = image_cell["outputs"]
    assert large["data"] == {"text/plain": "<big>\n[image/png, 1,538 KB: left out by the page]"}
    assert small["data"]["image/png"] == "iVBORw0KGgo="
    ran = result(bridge(page, path, "run", {"cell_id": text_cell["id"]}))
    assert len(json.dumps(ran)) < 200_000 and "left out by the page" in ran["outputs"][0]["text"]


def test_a_read_spends_the_output_budget_on_the_cells_it_asks_for_first(
        lab: LabSession) -> None:
    # Three cells each holding a 1.9 MB image (sent whole: under the image bound) pass the
    # page's 4 M budget: a read of the whole notebook leaves out the last; a read of the
    # last cell, by id or by range, gets it whole and leaves out one it did not ask for.
    path = lab.run_notebook("bridge_budget.ipynb", ["print(1)", "b = 2", "c = 3"])
    page = lab.page
    ids = file_ids(lab.server.root_dir, path)
    image = "A" * 1_900_000
    for cell_id in ids:
        result(bridge(page, path, "set_outputs", {
            "cell_id": cell_id, "execution_count": None,
            "outputs": [{"output_type": "display_data", "metadata": {},
                         "data": {"image/png": image, "text/plain": "<image>"}}]}))

    def whole(reply: dict[str, Any]) -> list[bool]:
        return [cell["outputs"][0].get("data", {}).get("image/png") == image
                for cell in result(reply)["cells"]]

    assert whole(bridge(page, path, "read")) == [True, True, False]
    assert whole(bridge(page, path, "read", {"cell_id": ids[2], "start": 1, "end": None})) \
        == [True, False, True]
    assert whole(bridge(page, path, "read", {"start": 2, "end": 3, "cell_id": None})) \
        == [False, True, True]
    left_out = result(bridge(page, path, "read", {"start": 3}))["cells"][1]["outputs"][0]
    assert left_out["output_type"] == "stream" and "passed its limit" in left_out["text"]


def test_edit_is_one_undo_step_and_a_stale_edit_changes_nothing(lab: LabSession) -> None:
    path = lab.run_notebook("bridge_edit.ipynb", ['print("anchor")', "x = 1", "y = 2"])
    page = lab.page
    root = lab.server.root_dir
    x_id = file_ids(root, path)[1]

    # The user types, and the edit comes at once (within Yjs' half second of merging).
    type_at_end(page, 1, "0")
    edited = result(bridge(page, path, "edit", {"cell_id": x_id, "source": "x = 'changed'",
                                                 "expected": "x = 10"}))
    assert edited == {"cell_id": x_id, "source": "x = 'changed'"}
    after = shown(page, path)
    assert after["dirty"] is True
    assert after["cells"][1]["source"] == "x = 'changed'"
    page.wait_for_function("(text) => [...document.querySelectorAll('.jp-Notebook .cm-content')]"
                           ".some((n) => n.textContent === text)", arg="x = 'changed'")
    # Ctrl+Z in the cell takes back the edit alone; once more, the user's typing.
    undo_in_editor(page, 1)
    page.wait_for_function(f"(path) => ({SHOWN_JS})(path).cells[1].source === 'x = 10'", arg=path)
    undo_in_editor(page, 1)
    page.wait_for_function(f"(path) => ({SHOWN_JS})(path).cells[1].source === 'x = 1'", arg=path)

    # Saved, then an edit from a stale read: refused; the cell, the model and the file stay.
    assert page.evaluate(SAVE_JS, path) is False
    saved = (root / path).read_bytes()
    refused = bridge(page, path, "edit", {"cell_id": x_id, "source": "x = 3",
                                          "expected": "x = 2"})
    assert error_code(refused) == "changed"
    assert "read the notebook again" in refused["error"]["message"]
    now = shown(page, path)
    assert now["dirty"] is False
    assert now["cells"][1]["source"] == "x = 1"
    time.sleep(0.5)
    assert (root / path).read_bytes() == saved
    # Saving again writes the same bytes: nothing changed in the model either.
    assert page.evaluate(SAVE_JS, path) is False
    assert (root / path).read_bytes() == saved

    # `undo` of an edit: only while the cell still holds what the edit wrote.
    result(bridge(page, path, "edit", {"cell_id": x_id, "source": "x = 5", "expected": "x = 1"}))
    assert error_code(bridge(page, path, "undo", {"cell_id": x_id, "before": "x = 1",
                                                  "after": "x = 6"})) == "changed"
    undone = result(bridge(page, path, "undo", {"cell_id": x_id, "before": "x = 1",
                                                "after": "x = 5"}))
    # The cell did not run since the edit: its outputs are the old code's and stay.
    assert undone == {"cell_id": x_id, "source": "x = 1", "outputs_cleared": False}
    assert error_code(bridge(page, path, "edit", {"cell_id": "nope", "source": "",
                                                  "expected": ""})) == "no_cell"


def test_insert_delete_and_the_errors(lab: LabSession) -> None:
    path = lab.run_notebook("bridge_insert.ipynb", ['print("anchor")', "x = 1"])
    page = lab.page
    first, second = file_ids(lab.server.root_dir, path)

    title = result(bridge(page, path, "insert", {"source": "# Title", "cell_type": "markdown",
                                                 "after_cell_id": first}))["cell_id"]
    last = result(bridge(page, path, "insert", {"source": "z = 3", "cell_type": "code",
                                                "after_cell_id": None}))["cell_id"]
    cells = result(bridge(page, path, "read"))["cells"]
    assert [c["id"] for c in cells] == [first, title, second, last]
    assert cells[1] == {"id": title, "cell_type": "markdown", "source": "# Title"}
    assert cells[3] == {"id": last, "cell_type": "code", "source": "z = 3",
                        "execution_count": None, "outputs": []}
    assert [c["id"] for c in shown(page, path)["cells"]] == [first, title, second, last]
    assert error_code(bridge(page, path, "insert", {"source": "", "cell_type": "code",
                                                    "after_cell_id": "nope"})) == "no_cell"

    # A delete takes back an insert, only while the cell holds what was inserted.
    assert error_code(bridge(page, path, "delete", {"cell_id": last,
                                                    "expected": "z = 4"})) == "changed"
    assert result(bridge(page, path, "delete", {"cell_id": last, "expected": "z = 3"})) == {
        "cell_id": last}
    assert [c["id"] for c in shown(page, path)["cells"]] == [first, title, second]

    assert error_code(bridge(page, path, "run", {"cell_id": title})) == "not_code"
    assert error_code(bridge(page, path, "launch")) == "unknown_op"
    assert error_code(bridge(page, path, "read", outside=True)) == "no_notebook"
    assert error_code(bridge(page, path, "edit", {"cell_id": first})) == "bad_request"


def test_run_executes_like_the_user_and_set_outputs_writes_outputs(lab: LabSession) -> None:
    path = lab.run_notebook("bridge_run.ipynb", ['print("anchor")'])
    page = lab.page
    anchor = file_ids(lab.server.root_dir, path)[0]
    cell = result(bridge(page, path, "insert", {"source": "print(6 * 7)", "cell_type": "code",
                                                "after_cell_id": anchor}))["cell_id"]
    before = result(bridge(page, path, "read"))["cells"][0]["execution_count"]
    # The user is typing in another cell meanwhile: the run leaves the focus there.
    page.locator(".jp-Notebook .jp-Cell").nth(0).locator(".cm-content").click()

    ran = result(bridge(page, path, "run", {"cell_id": cell}))
    assert ran["status"] == "ok" and ran["cell_id"] == cell
    assert ran["outputs"] == [{"output_type": "stream", "name": "stdout", "text": "42\n"}]
    assert ran["execution_count"] == before + 1
    # The user sees it as a run of theirs: its prompt and output in the notebook.
    view = shown(page, path)["cells"][1]
    assert view["prompt"] == f"[{before + 1}]:" and view["output"].strip() == "42"
    assert page.evaluate("() => !!document.activeElement.closest('.jp-Cell .cm-editor') && "
                         "document.querySelectorAll('.jp-Notebook .jp-Cell')[0]"
                         ".contains(document.activeElement)")
    assert page.evaluate(f"(path) => ({_FIND_PANEL})(path).content.mode", path) == "edit"
    # The kernel ran it as an input of its history, as a cell the user runs.
    assert lab.execute(path, f"print(In[{before + 1}])").strip() == "print(6 * 7)"

    failing = result(bridge(page, path, "insert", {"source": "raise ValueError('no')",
                                                   "cell_type": "code",
                                                   "after_cell_id": cell}))["cell_id"]
    failed = result(bridge(page, path, "run", {"cell_id": failing}))
    assert failed["status"] == "error"
    assert failed["outputs"][0]["ename"] == "ValueError"

    # Outputs the kernel produced itself (its shell was busy) go into the cell as they are.
    outputs = [{"output_type": "stream", "name": "stdout", "text": "from the kernel\n"}]
    written = result(bridge(page, path, "set_outputs", {"cell_id": cell, "outputs": outputs,
                                                        "execution_count": 99}))
    assert written["outputs"] == outputs and written["execution_count"] == 99
    page.wait_for_function(f"(path) => ({SHOWN_JS})(path).cells[1].output.includes("
                           "'from the kernel')", arg=path)
    assert shown(page, path)["cells"][1]["prompt"] == "[99]:"


CHAT_CELL = """
import sys
sys.path.insert(0, REPO)
from neta_nb import Agent, AgentSession, ScriptedProvider
from neta_nb.widgets import ChatView

heard = []
chat = ChatView(AgentSession(Agent("analyst", model=ScriptedProvider())))
chat.on_msg(lambda widget, content, buffers: heard.append(content))
chat
"""

# The messages the chat widget heard of one kind, as JSON.
HEARD = "import json; print(json.dumps([m for m in heard if m.get('kind') == {kind!r}]))"


def test_a_kernel_request_reaches_the_notebook_through_the_chat_view(lab: LabSession) -> None:
    path = lab.run_notebook("bridge_chat.ipynb", [
        CHAT_CELL.replace("REPO", repr(str(ROOT))).strip(), "counter = 0"])
    counter_id = file_ids(lab.server.root_dir, path)[1]
    lab.page.locator(".neta-chat-view").wait_for()

    def heard(kind: str) -> list[dict[str, Any]]:
        return list(json.loads(lab.execute(path, HEARD.format(kind=kind))))

    poll_until(lambda: heard("view_opened"), within=10, what="view_opened")
    opened = heard("view_opened")
    assert len(opened) == 1 and opened[0]["notebook_bridge"] is True
    view_id = opened[0]["view_id"]

    def ask(request_id: str, op: str, args: dict[str, Any], to: str = view_id,
            times: int = 1) -> None:
        message = {"kind": "notebook_request", "id": request_id, "view_id": to, "op": op,
                   "args": args}
        lab.execute(path, f"for _ in range({times}):\n    chat.send({message!r})")

    def replies(request_id: str) -> list[dict[str, Any]]:
        return [r for r in heard("notebook_reply") if r["request_id"] == request_id]

    ask("k1", "read", {})
    poll_until(lambda: replies("k1"), within=10, what="the reply to k1")
    reply = replies("k1")[0]
    assert reply["ok"] is True
    assert [c["id"] for c in reply["result"]["cells"]][1] == counter_id

    # Another view's request is not this view's to answer.
    ask("k2", "read", {}, to="view-elsewhere")

    # A run asked twice (the kernel did not hear back in time) runs once: the repeat while
    # it runs is ignored; a repeat once the kernel acknowledged the reply (one it sent
    # before the reply reached it) is neither run nor answered, and the view keeps no
    # copy of the reply (a read's holds the whole notebook).
    ask("k3", "edit", {"cell_id": counter_id, "source": "counter += 1\nprint(counter)",
                       "expected": "counter = 0"})
    poll_until(lambda: replies("k3"), within=10, what="the reply to k3")
    assert replies("k3")[0]["ok"] is True
    ask("k4", "run", {"cell_id": counter_id}, times=2)
    poll_until(lambda: replies("k4"), within=30, what="the reply to k4")
    ask("k4", "run", {"cell_id": counter_id})
    ask("k5", "read", {})  # answered after k4's repeat, had that been answered
    poll_until(lambda: replies("k5"), within=10, what="the reply to k5")
    [first] = replies("k4")
    assert first["ok"] is True and first["result"]["outputs"][0]["text"] == "1\n"
    assert lab.execute(path, "print(counter)").strip() == "1"
    assert replies("k2") == []


def test_the_bridge_in_notebook_7(notebook7: JupyterLabServer, lab: LabSession) -> None:
    name = "bridge_nb7.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(s) for s in ('print("anchor")', "x = 1")]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, notebook7.root_dir / name)
    anchor, x_id = file_ids(notebook7.root_dir, name)
    page = lab.page.context.new_page()
    try:
        errors: list[str] = []
        page.on("pageerror", lambda error: errors.append(f"{error}\n{error.stack}"))
        page.goto(f"{notebook7.url}/notebooks/{name}?token={notebook7.token}",
                  wait_until="domcontentloaded")
        page.wait_for_function("window.jupyterapp !== undefined", timeout=60_000)
        page.evaluate("""async () => {
          const app = window.jupyterapp;
          await app.started; await app.restored;
          const panel = app.shell.currentWidget;
          await panel.context.ready; await panel.sessionContext.ready;
          await app.commands.execute('notebook:run-all-cells');
        }""")
        page.wait_for_function("""() => {
          const panel = window.jupyterapp.shell.currentWidget;
          return panel.sessionContext.session?.kernel?.status === 'idle'
            && [...panel.content.model.cells].every((c) => c.executionCount !== null);
        }""", timeout=60_000)
        assert page.evaluate("() => window.jupyterapp.name") == "Jupyter Notebook"
        assert page.evaluate("() => document.body.dataset.netaNbNotebookBridge")

        type_at_end(page, 1, "0")
        cells = result(bridge(page, name, "read"))["cells"]
        assert [c["source"] for c in cells] == ['print("anchor")', "x = 10"]
        assert cells[0]["outputs"][0]["text"] == "anchor\n"

        result(bridge(page, name, "edit", {"cell_id": x_id, "source": "print(x * 2)",
                                           "expected": "x = 10"}))
        undo_in_editor(page, 1)
        page.wait_for_function(f"(path) => ({SHOWN_JS})(path).cells[1].source === 'x = 10'",
                               arg=name)
        result(bridge(page, name, "edit", {"cell_id": x_id, "source": "print(x * 2)",
                                           "expected": "x = 10"}))
        ran = result(bridge(page, name, "run", {"cell_id": x_id}))
        # x is still 1 in the kernel: the typed "x = 10" never ran.
        assert ran["status"] == "ok" and ran["outputs"][0]["text"] == "2\n"
        assert shown(page, name)["cells"][1]["prompt"] == f"[{ran['execution_count']}]:"
        assert error_code(bridge(page, name, "run", {"cell_id": "nope"})) == "no_cell"
        assert anchor in [c["id"] for c in result(bridge(page, name, "read"))["cells"]]
        # Notebook 7 on a fresh profile reports one error of its own (a settings schema it
        # looks up); only errors from elsewhere are ours.
        assert [e for e in errors if "/static/notebook/" not in e] == []
    finally:
        page.evaluate("async () => { const p = window.jupyterapp.shell.currentWidget;"
                      " p.context.model.dirty = false; await p.sessionContext.shutdown(); }")
        page.close()
