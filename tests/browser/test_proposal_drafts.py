"""A proposed notebook edit the user is changing ("Edit first") keeps what they typed when
the chat's list of approvals changes around it: two sub-agents propose at once, the user
starts changing one proposal and rejects the other, then accepts the first with the text
they typed. (The chat redraws its approvals whenever the list changes.)

The notebook here is a stand-in page in the kernel (tests/support/notebook_page.py): what
is tested is the chat view's cards, not the notebook extension."""

from __future__ import annotations

import pytest

from . import chat_cells
from .harness import LabSession

pytestmark = pytest.mark.browser

SETUP = """
from tests.support.notebook_page import FakeNotebookPage

TOOLS = AgentToolConfig(enabled=["read_notebook", "edit_cell", "insert_cell", "run_cell"])

def fixer(name, cell_id, text):
    model = ScriptedProvider([
        [{"tool_call": {"name": "edit_cell", "args": {"cell_id": cell_id, "source": text}}}],
        [{"text": f"{name} done"}]])
    return Agent(name, model=model, description=f"fixes {cell_id}", tools=TOOLS)

planner = ScriptedProvider([
    [{"tool_call": {"name": "delegate", "args": {"agent": "first", "task": "fix c1"}}},
     {"tool_call": {"name": "delegate", "args": {"agent": "second", "task": "fix c2"}}}],
    [{"text": "Both done."}]])
agent = Agent("planner", model=planner,
              subagents=[fixer("first", "c1", "x = 1"), fixer("second", "c2", "y = 2")])
session = AgentSession(agent)
chat = ChatView(session)
chat
""".strip()

START = """
page = FakeNotebookPage([{"id": "c1", "source": "x = 0"}, {"id": "c2", "source": "y = 0"}])
session.notebook_page = page
turn = session.start("fix both")
""".strip()

PROPOSALS = ".neta-chat-approval.neta-is-proposal"


def test_what_the_user_typed_into_a_proposal_survives_a_change_of_the_approvals(
        lab: LabSession) -> None:
    path = lab.run_notebook("proposal_drafts.ipynb", [chat_cells.IMPORTS, SETUP])
    page = lab.page
    lab.execute(path, START)
    page.locator(PROPOSALS).nth(1).wait_for()
    first = page.locator(PROPOSALS, has=page.locator("[data-cell-id='c1']"))
    second = page.locator(PROPOSALS, has=page.locator("[data-cell-id='c2']"))
    first.locator("button[data-decision='edit']").click()
    editor = first.locator("textarea")
    editor.fill("x = 1  # checked by hand")
    second.locator("button[data-decision='reject']").click()
    page.wait_for_function(f"() => document.querySelectorAll({PROPOSALS!r}).length === 1")
    lab.wait_for_frames()
    assert editor.is_visible() and editor.input_value() == "x = 1  # checked by hand"
    first.locator("button[data-decision='accept']").click()
    assert lab.wait_for_kernel_value(
        path, "page.cell('c1')['source']", "x = 1  # checked by hand") == (
        "x = 1  # checked by hand")
    assert lab.execute(path, "print(page.cell('c2')['source'])").strip() == "y = 0"
