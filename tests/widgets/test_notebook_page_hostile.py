"""The page bridge and the chat view against a flaky page: a view scrolled off the page for
a moment, replies lost, repeated, late or malformed, two chat views of one session, and a
sub-agent's proposal decided from the parent's chat."""

from __future__ import annotations

from neta_nb import Agent, AgentSession
from neta_nb.widgets import ChatView

from ..support.delegation import crew_catalog, delegations
from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import FakeProvider, answer, assert_valid_history, calls
from ..support.timing import wait_until
from ..tools.test_notebook_tools import CELLS, NOTEBOOK_TOOLS
from .conftest import SentMessages


async def test_a_subagents_proposal_is_decided_from_the_parents_chat(
        sent: SentMessages) -> None:
    page = FakeNotebookPage(CELLS)
    fixer = Agent("fixer", model=FakeProvider([
        calls(("e", "edit_cell", {"cell_id": "c1", "source": "x = 1"})), answer("fixed")]),
        description="fixes cells", tools=NOTEBOOK_TOOLS)
    planner = Agent("planner", model=FakeProvider([delegations(("d1", "fixer", "fix c1")),
                                                   answer("done")]), subagents=[fixer])
    session = AgentSession(planner, crew_catalog())
    view = ChatView(session)
    session.notebook_page = page  # the page the view is on
    view._presence.opened("v")  # a view is shown: it answers the approvals
    task = session.start("go")
    await wait_until(lambda: bool(view.approvals) or task.done())
    [approval] = view.approvals
    assert approval["path"] == ["d1"] and approval["proposal"]["after"] == "x = 1"
    view._on_custom_message(view, {"kind": "command", "id": "c", "command": {
        "type": "approve", "id": "e", "decision": "allow_once", "subagent": ["d1"],
        "text": "x = 1  # reviewed"}}, [])
    await task
    assert page.cell("c1")["source"] == "x = 1  # reviewed"
    assert view.approvals == []
    assert_valid_history(session.subagents["d1"].messages)
