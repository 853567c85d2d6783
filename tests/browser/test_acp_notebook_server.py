"""An outside agent works in the notebook its chat is on, in real JupyterLab: the chat of
an ``AcpAgent`` session gives the agent (the scripted agent of tests/runtime/acp, an MCP
client over HTTP) the notebook's MCP server, and the agent's ``edit_cell`` is the diff
card in that same chat — Reject leaves the cell and the agent reads "rejected", Accept
changes it. Pictures of the agent's proposal, light and dark."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import nbformat
import pytest

from . import chat_cells
from .harness import LabSession
from .test_notebook_bridge import SHOWN_JS

pytestmark = pytest.mark.browser

AGENT = Path(__file__).resolve().parents[1] / "runtime" / "acp" / "scripted_agent.py"
PROPOSAL = ".neta-chat-approval.neta-is-proposal"
CELL_IDS = ["imports", "target", "chat"]
TARGET = "x = 1\ny = x + 1"
EDITED = "x = 1\ny = 2"


def _edit(call_id: str) -> list[dict[str, Any]]:
    """The agent reports its call of the notebook's ``edit_cell``, makes it, and says the
    result."""
    edit = {"cell_id": "target", "source": EDITED}
    meta = {"claudeCode": {"toolName": "mcp__neta-notebook__edit_cell"}}
    return [
        {"update": {"sessionUpdate": "tool_call", "toolCallId": call_id, "title": "edit_cell",
                    "kind": "edit", "status": "pending", "rawInput": edit, "_meta": meta}},
        {"mcp": {"server": "neta-notebook", "tool": "edit_cell", "arguments": edit}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": call_id,
                    "status": "completed"}},
        {"update": {"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": f"Done with {call_id}."}}}]


SCRIPT = {"mcp_http": True, "by_prompt": {"Make y two": _edit("t1"), "Again": _edit("t2")}}

CHAT = f"""
import json, sys
from pathlib import Path
from neta_nb import AcpAgent
Path("agent-script.json").write_text({json.dumps(SCRIPT)!r})
agent = AcpAgent("scripted", [sys.executable, {str(AGENT)!r},
                              str(Path("agent-script.json").resolve())])
session = AgentSession(agent)
chat = ChatView(session, height="560px")
chat
""".strip()


def _source(lab: LabSession, path: str) -> str:
    return str(lab.page.evaluate(SHOWN_JS, path)["cells"][CELL_IDS.index("target")]["source"])


def test_the_agents_edit_of_the_notebook_is_decided_in_its_chat(
        lab: LabSession, screenshot_dir: Path) -> None:
    path = "acp-notebook.ipynb"
    notebook = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source, id=cell_id) for cell_id, source
                      in zip(CELL_IDS, [chat_cells.IMPORTS, TARGET, CHAT], strict=True)]
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3",
                                       "language": "python"}
    nbformat.write(notebook, lab.server.root_dir / path)
    lab.open_notebook(path)
    lab.run_all(path)
    page = lab.page
    chat = page.locator(".neta-chat-view")
    box = chat.locator("textarea.neta-chat-textarea")
    box.wait_for()
    lab.wait_for_kernel_value(path, "session.notebook_page is not None and "
                              "session.notebook_page.available", "True")
    try:
        # The agent's edit is this chat's proposal; Reject leaves the cell.
        box.fill("Make y two")
        box.press("Enter")
        card = chat.locator(PROPOSAL)
        card.wait_for(timeout=60_000)
        assert card.locator(".neta-cell-edit").get_attribute("data-decision") == "pending"
        for dark in (False, True):
            lab.set_theme(dark=dark)
            lab.wait_for_transitions(chat)
            lab.screenshot(chat, screenshot_dir /
                           f"agent-notebook-edit-{'dark' if dark else 'light'}.png")
        lab.set_theme(dark=False)
        card.locator("button[data-decision=reject]").click()
        chat.locator(".neta-chat-list", has_text="Done with t1.").wait_for(timeout=60_000)
        assert _source(lab, path) == TARGET
        # Accept changes it.
        box.fill("Again")
        box.press("Enter")
        chat.locator(f"{PROPOSAL} button[data-decision=accept]").click(timeout=60_000)
        chat.locator(".neta-chat-list", has_text="Done with t2.").wait_for(timeout=60_000)
        page.wait_for_function(
            f"([path, i, s]) => ({SHOWN_JS})(path).cells[i].source === s",
            arg=[path, CELL_IDS.index("target"), EDITED])
        said = [json.loads(line) for line in lab.execute(
            path, "print(Path('agent-script.json.mcp').read_text())").split("\n") if line]
        assert [item["is_error"] for item in said] == [True, False]
        assert "reject" in said[0]["text"].lower()
        # One card per call: the agent's own report of it is the notebook tool's card.
        cards = json.loads(lab.execute(path, "print(json.dumps([(e.id, e.name, e.status) "
                                             "for m in session.messages "
                                             "for e in m.metadata.tool_executions]))"))
        assert cards == [["t1", "edit_cell", "rejected"], ["t2", "edit_cell", "done"]]
    finally:
        lab.execute(path, "session.close()")  # the agent's process ends with the test
