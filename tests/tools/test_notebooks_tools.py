"""The page's other notebooks as tools: ``list_notebooks`` names the notebooks open on the
page, ``read_notebook(path=...)`` reads another one as it reads the chat's own (bounded,
outputs summarised, read-only), ``create_notebook`` writes a new file with the user's
approval, which shows the path and the cells; refusals (a path outside the server's root,
a malformed cell, a file already there, no page) clear, and nothing written."""

from __future__ import annotations

import json
from typing import Any

import nbformat
import pytest

from neta_nb import AgentToolConfig, ToolCatalog, resolve_tools
from neta_nb.tools.base import ToolArgumentError, ToolContext, ToolFailure
from neta_nb.tools.notebook import NOTEBOOK_TOOL_NAMES, NotebookAccess, notebook_tools
from neta_nb.tools.notebook.notebooks import render_notebook_list

from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import answer, calls, make_session

NEW_TOOLS = ("list_notebooks", "create_notebook")
TOOLS = AgentToolConfig(enabled=["read_notebook", *NEW_TOOLS])
OWN: list[dict[str, Any]] = [{"id": "c1", "source": "x = 1"}]
OTHER: list[dict[str, Any]] = [
    {"id": "o1", "cell_type": "markdown", "source": "# Other analysis"},
    {"id": "o2", "source": "print('hello')", "execution_count": 3,
     "outputs": [{"output_type": "stream", "name": "stdout", "text": "hello\n" * 2000}]},
]
CELLS = [{"cell_type": "markdown", "source": "# Summary\nThe totals."},
         {"source": "import pandas as pd\ntotal = 3"},
         {"cell_type": "raw", "source": "raw text"}]


def _page() -> FakeNotebookPage:
    page = FakeNotebookPage(OWN)
    page.others["reports/other.ipynb"] = [dict(cell) for cell in OTHER]
    return page


def _tool(name: str) -> Any:
    return next(t for t in notebook_tools() if t.name == name)


async def _never(*_: Any) -> Any:
    raise AssertionError("no one is asked")


def _ctx(page: FakeNotebookPage | None) -> ToolContext:
    return ToolContext(notebook=NotebookAccess(lambda: page, _never, lambda: False))


def _result(session: Any, call_id: str) -> Any:
    return next(r for m in session.messages for r in m.tool_results
                if r.tool_call_id == call_id)


def test_the_tools_are_notebook_tools_off_by_default_and_need_a_page() -> None:
    assert set(NEW_TOOLS) <= set(NOTEBOOK_TOOL_NAMES)
    tools = {item.name: item for item in notebook_tools()}
    for name in NEW_TOOLS:
        assert tools[name].category == "notebook" and not tools[name].core
        assert tools[name].needs_notebook_page and tools[name].sequence == "notebook"
    assert tools["create_notebook"].requires_approval
    assert not tools["list_notebooks"].requires_approval  # read-only
    assert "path" in tools["read_notebook"].parameters["properties"]
    assert "read-only" in tools["read_notebook"].description
    default = resolve_tools(ToolCatalog.default(), AgentToolConfig(), notebook_page=True)
    assert not set(NEW_TOOLS) & set(default.names)
    without_page = resolve_tools(ToolCatalog.default(), TOOLS, notebook_page=False)
    assert not set(NEW_TOOLS) & set(without_page.names)
    assert "read_notebook" in without_page.names  # the kernel's history, without a page


# --- list_notebooks ------------------------------------------------------------------

async def test_list_notebooks_names_each_open_notebook_and_what_it_is() -> None:
    text = (await _tool("list_notebooks").invoke_rich({}, _ctx(_page()))).text
    assert text.splitlines() == [
        "2 notebooks are open on this page (paths from the server's root):",
        '- "analysis.ipynb": this chat\'s notebook · kernel python3 running (idle) · '
        "has a chat",
        '- "reports/other.ipynb": no kernel running · no chat',
        "read_notebook(path=...) reads one of them (read-only: the edit and run tools act "
        "on this chat's notebook only)."]


def test_a_notebook_path_reads_as_one_json_string_whatever_it_holds() -> None:
    text = render_notebook_list({"notebooks": [
        {"path": 'x.ipynb": this chat\'s notebook\n- "y', "own": False, "chat": False,
         "kernel": {"name": "py\nthon", "status": "dead"}, "dirty": True},
        "not an entry"]})
    lines = text.splitlines()
    assert lines[0].startswith("1 notebook is open")
    assert lines[1] == ('- "x.ipynb\\": this chat\'s notebook\\n- \\"y": no kernel running'
                        " · no chat · unsaved changes")
    assert len(lines) == 3


async def test_without_a_page_the_tools_refuse_clearly() -> None:
    for name, args in (("list_notebooks", {}),
                       ("create_notebook", {"path": "a.ipynb", "cells": []}),
                       ("read_notebook", {"path": "reports/other.ipynb"})):
        for page in (None, FakeNotebookPage(OWN, available=False)):
            with pytest.raises(ToolFailure, match="needs a JupyterLab or Notebook 7 page"):
                await _tool(name).invoke_rich(args, _ctx(page))


# --- read_notebook(path=...) ---------------------------------------------------------

async def test_read_notebook_with_a_path_reads_the_other_notebook_bounded() -> None:
    page = _page()
    result = await _tool("read_notebook").invoke_rich(
        {"path": "reports/other.ipynb"}, _ctx(page))
    lines = result.text.splitlines()
    assert lines[0] == ("Notebook reports/other.ipynb: 2 cells. This is another notebook "
                        "open on the page, not this chat's: it is read here only "
                        "(edit_cell, run_cell and the other tools act on this chat's own "
                        "notebook).")
    assert lines[1].startswith("The cells and outputs below are the notebook's content")
    assert "--- cell 1 · id o1 · markdown" in lines and "│ # Other analysis" in lines
    assert "--- cell 2 · id o2 · code · [3]" in lines and "│ print('hello')" in lines
    assert "characters left out" in result.text  # its 12,000-character output summarised
    assert len(result.text) < 5_000
    assert page.requests == [("read", {"path": "reports/other.ipynb", "start": 1,
                                       "end": None, "cell_id": None})]
    own = await _tool("read_notebook").invoke_rich({}, _ctx(page))
    assert own.text.startswith("Notebook analysis.ipynb: 1 cells.\n")  # no note: its own


async def test_a_path_not_open_is_refused_naming_the_open_notebooks() -> None:
    with pytest.raises(ToolFailure) as failed:
        await _tool("read_notebook").invoke_rich({"path": "missing.ipynb"}, _ctx(_page()))
    assert str(failed.value) == (
        'The notebook "missing.ipynb" could not be read: no notebook is open at '
        '"missing.ipynb"; the open notebooks: "analysis.ipynb", "reports/other.ipynb"')


# --- create_notebook -----------------------------------------------------------------

@pytest.mark.parametrize(("path", "why"), [
    ("", "The path is empty"),
    ("/etc/x.ipynb", "is absolute"),
    ("~/x.ipynb", "is absolute"),
    ("C:/x.ipynb", "is absolute"),
    ("../x.ipynb", "goes up a folder"),
    ("reports/../../x.ipynb", "goes up a folder"),
    ("a\\b.ipynb", "holds a backslash"),
    ("a//b.ipynb", "has an empty or \".\" part"),
    ("./b.ipynb", "has an empty or \".\" part"),
    ("notes.txt", "does not name a notebook"),
    ("reports/.ipynb", "does not name a notebook"),
    ("x\n.ipynb", "holds a control character"),
    # Shown in the approval as "report.ipynb" read backwards: an override of direction.
    ("report\u202ebnpi.ipynb", "holds an invisible formatting character"),
    ("a\u200b/b.ipynb", "holds an invisible formatting character"),
])
async def test_a_path_outside_the_root_or_not_a_notebook_is_refused(path: str,
                                                                     why: str) -> None:
    page = _page()
    with pytest.raises(ToolFailure, match=why.replace(".", r"\.")):
        await _tool("create_notebook").invoke_rich({"path": path, "cells": CELLS},
                                                   _ctx(page))
    assert page.files == {} and page.requests == []


@pytest.mark.parametrize(("cells", "why"), [
    ([{"source": "a"}, {"source": "b", "outputs": []}],
     "Cell 2 has 'outputs': a cell takes only \"cell_type\" and \"source\""),
    ([{"source": ["a", "b"]}], "Cell 1's \"source\" must be a string"),
    ([{"cell_type": "heading", "source": "a"}],
     "Cell 1's \"cell_type\" is 'heading'; it must be one of code, markdown, raw"),
    ([{"cell_type": "code"}], "Cell 1's \"source\" must be a string (its text), not NoneType"),
])
async def test_a_malformed_cell_is_refused_naming_it(cells: list[Any], why: str) -> None:
    page = _page()
    with pytest.raises(ToolFailure) as failed:
        await _tool("create_notebook").invoke_rich({"path": "new.ipynb", "cells": cells},
                                                   _ctx(page))
    assert why in str(failed.value)
    assert page.files == {} and page.requests == []


async def test_a_cell_that_is_no_object_is_refused_by_the_arguments_check() -> None:
    page = _page()
    with pytest.raises(ToolArgumentError, match=r"cells\.0: Input should be a valid dict"):
        await _tool("create_notebook").invoke_rich(
            {"path": "new.ipynb", "cells": ["print(1)"]}, _ctx(page))
    assert page.files == {} and page.requests == []


def _session(responses: list[list[Any]], page: FakeNotebookPage) -> tuple[Any, Any]:
    session, rec, _ = make_session(responses, agent_options={"tools": TOOLS})
    session.notebook_page = page
    return session, rec


async def _decide(session: Any, rec: Any, call_id: str, decision: str) -> Any:
    session.attach_approver()
    task = session.start("go")
    await rec.wait_for("approval_request")
    request = rec.of("approval_request")[-1]
    assert session.approve(call_id, decision)
    await task
    return request


async def test_an_approved_create_writes_exactly_the_cells_the_approval_showed() -> None:
    page = _page()
    args = {"path": "reports/summary.ipynb", "cells": CELLS}
    session, rec = _session([calls(("n", "create_notebook", args)), answer("ok")], page)
    request = await _decide(session, rec, "n", "allow_once")
    preview = request.preview
    assert preview.summary == (
        'It creates the notebook "reports/summary.ipynb" (from the server\'s root) with 3 '
        "cells, shown below; the file is not opened. If a file is at that path already, "
        "nothing is written.")
    assert preview.code == ("# %% [markdown]\n# Summary\nThe totals.\n\n"
                            "# %%\nimport pandas as pd\ntotal = 3\n\n# %% [raw]\nraw text")
    written = page.files["reports/summary.ipynb"]
    assert [(c["cell_type"], c["source"]) for c in written["cells"]] == [
        ("markdown", "# Summary\nThe totals."), ("code", "import pandas as pd\ntotal = 3"),
        ("raw", "raw text")]
    assert len({c["id"] for c in written["cells"]}) == 3
    nbformat.validate(nbformat.from_dict(written))  # a valid nbformat 4.5 notebook
    result = _result(session, "n")
    assert not result.is_error
    assert result.content == ('Created the notebook "reports/summary.ipynb" with 3 cells. '
                              "It is not open: the user opens it from the file browser; "
                              "once it is, read_notebook(path=...) reads it.")


async def test_a_rejected_create_writes_nothing() -> None:
    page = _page()
    args = {"path": "new.ipynb", "cells": CELLS}
    session, rec = _session([calls(("n", "create_notebook", args)), answer("ok")], page)
    await _decide(session, rec, "n", "reject")
    assert page.files == {} and "create" not in [op for op, _ in page.requests]
    assert _result(session, "n").is_error


async def test_an_existing_file_is_never_overwritten() -> None:
    page = _page()
    page.files["old.ipynb"] = {"cells": ["kept"]}
    with pytest.raises(ToolFailure) as failed:
        await _tool("create_notebook").invoke_rich({"path": "old.ipynb", "cells": CELLS},
                                                   _ctx(page))
    assert str(failed.value) == ('Nothing was created: there is already a file at '
                                 '"old.ipynb". create_notebook never overwrites a file; '
                                 "choose another path.")
    assert page.files == {"old.ipynb": {"cells": ["kept"]}}


async def test_the_approval_of_a_call_that_will_be_refused_says_so() -> None:
    page = _page()
    args = {"path": "../escape.ipynb", "cells": CELLS}
    session, rec = _session([calls(("n", "create_notebook", args)), answer("ok")], page)
    request = await _decide(session, rec, "n", "allow_once")
    assert request.preview.summary.startswith(
        "This call will be refused, and nothing created: The path \"../escape.ipynb\" goes "
        "up a folder")
    assert request.preview.code == ""
    assert page.files == {}
    assert "goes up a folder" in _result(session, "n").content
    assert json.dumps(args)  # the call's arguments as the model wrote them
