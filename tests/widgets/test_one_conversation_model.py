"""One model of a conversation at the chat's edges: the same conversation drawn live (a
chat view following the session's events) and stored (a chat view showing it read-only
from the store) is the same — the projection each draws from (its plan, its sub-agent
runs with their plans, figures and transcripts) and the state the views receive (the
traits and the ``sync`` snapshot). And the turn's state has one owner each: approvals
waiting when a view binds mid-turn come from the session that asked, the ``running``
trait has one writer, and a plan card reads the turn from the session's projection."""

from __future__ import annotations

import ast
import asyncio
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore
from neta_nb.runtime.projection import ConversationProjection
from neta_nb.widgets import ChatView, TodoCard
from neta_nb.widgets.chat.stored_session import StoredSession

from ..support.delegation import crew_catalog, delegations
from ..support.notebook_page import FakeNotebookPage
from ..support.sessions import FakeProvider, answer, calls, make_session
from ..support.timing import wait_until
from ..tools.test_notebook_tools import CELLS
from .conftest import SentMessages
from .test_notebook_page_hostile import cell_fixing_crew

PLAN = {"todos": [{"id": "1", "content": "Add", "status": "completed"},
                  {"id": "2", "content": "Count", "status": "in_progress"}]}
CHILD_PLAN = {"todos": [{"id": "a", "content": "Look", "status": "completed"},
                        {"id": "b", "content": "Tell", "status": "pending"},
                        {"id": "c", "content": "Stop", "status": "cancelled"}]}


def crew_session(store: SessionStore) -> AgentSession:
    """A parent with a plan and a tool call that delegates to a child with a plan of
    its own, which delegates once more."""
    leaf = Agent("leaf", model=FakeProvider([answer("Leaf fact.", thinking="hmm")]))
    child = Agent("child", model=FakeProvider([
        calls(("t1", "todo", CHILD_PLAN)), delegations(("g1", "leaf", "go deeper")),
        answer("Child done.", thinking="planned")]), subagents=[leaf])
    top = FakeProvider([calls(("t0", "todo", PLAN), ("p0", "plus", {"a": 1, "b": 2})),
                        delegations(("d1", "child", "look and tell")),
                        answer("All done.")])
    return AgentSession(Agent("top", model=top, subagents=[child]), crew_catalog(), store)


def run_state(run: ConversationProjection) -> dict[str, Any]:
    return {"path": run.path, "agent": run.agent, "task": run.task, "status": run.status,
            "plan": run.plan, "todos": run.todos, "running": run.running,
            "tokens": (run.usage.input_tokens, run.usage.output_tokens, run.usage.api_calls),
            "messages": [m.model_dump(mode="json") for m in run.messages]}


def projection_state(chat: ChatView, shown: Any) -> dict[str, Any]:
    """What the projection a view draws from holds, its sub-agent runs at every depth."""
    projection: ConversationProjection = shown.projection
    runs: list[dict[str, Any]] = []
    pending = [projection]
    while pending:
        parent = pending.pop(0)
        for message in parent.messages:
            for execution in message.metadata.tool_executions:
                run = shown.subagents.run(parent, execution)
                if run is not None:
                    runs.append(run_state(run))
                    pending.append(run)
    return {"todos": projection.todos, "plan": projection.plan,
            "running": projection.running, "approvals": projection.approvals,
            "live": projection.live, "runs": runs}


def view_state(chat: ChatView) -> dict[str, Any]:
    """What the views receive: the traits, and the snapshot a view asks for."""
    snapshot = chat._sync({})
    # The token line and the thinking-level selector: the input bar's, not shown read-only.
    for key in ("seq", "current", "context", "think_level"):
        snapshot.pop(key)  # type: ignore[misc]
    return {"messages": chat.messages, "has_older": chat.has_older, "todos": chat.todos,
            "running": chat.running, "approvals": chat.approvals,
            "session_id": chat.session_id, "snapshot": snapshot}


async def test_one_conversation_drawn_live_and_stored_is_the_same(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = crew_session(store)
    live = ChatView(session)
    await session.run("go")
    session.flush()
    stored = ChatView()
    stored.show_stored(StoredSession.read(store, session.id))

    live_projection = projection_state(live, live._live)
    stored_projection = projection_state(stored, stored._read_only)
    assert live_projection == stored_projection
    # What is compared is all there: the plans, both runs with their transcripts.
    assert live_projection["plan"] == (1, 2)
    assert [(run["agent"], run["plan"], run["status"]) for run in live_projection["runs"]] == [
        ("child", (1, 3), "done"), ("leaf", None, "done")]
    assert all(run["messages"] and run["tokens"][2] > 0 for run in live_projection["runs"])

    live_view, stored_view = view_state(live), view_state(stored)
    assert live_view == stored_view
    [card] = [card for item in live_view["messages"] if item["role"] == "assistant"
              for card in item["cards"] if card["kind"] == "subagent"]
    part = card["subagent"]
    assert part["plan"] == {"done": 1, "total": 3} and part["status"] == "done"
    [nested] = [inner for item in part["messages"] for inner in item["cards"]
                if inner["kind"] == "subagent"]
    assert nested["subagent"]["messages"][-1]["text"] == "Leaf fact."
    assert live_view["todos"] == PLAN["todos"]
    live.close()
    stored.close()


async def test_a_view_bound_mid_turn_shows_the_approvals_their_sessions_wait_for(
        sent: SentMessages) -> None:
    """A sub-agent's proposed edit waits for the user; the chat shows another session
    and comes back: the approval it shows again is the one the child's session holds,
    with its proposal, its path and the agent that asks."""
    page = FakeNotebookPage(CELLS)
    session = cell_fixing_crew()
    other, _, _ = make_session([])
    view = ChatView(session)
    session.notebook_page = page
    view._presence.opened("v")
    task = session.start("go")
    await wait_until(lambda: bool(view.approvals) or task.done())
    asked = list(view.approvals)
    view.bind(other)
    view.bind(session)
    session.notebook_page = page  # the page the view is on
    assert view.approvals == asked
    [approval] = view.approvals
    assert approval["path"] == ["d1"] and approval["agent"] == "fixer"
    assert approval["proposal"]["after"] == "x = 1"
    assert [request.id for request in session.subagents["d1"].pending_approvals()] == ["e"]
    assert session.pending_approvals() == []
    view._command({"command": {"type": "approve", "id": "e", "decision": "allow_once",
                               "subagent": ["d1"]}})
    await task
    assert page.cell("c1")["source"] == "x = 1" and view.approvals == []
    assert session.subagents["d1"].pending_approvals() == []
    view.close()


def test_the_running_trait_has_one_writer() -> None:
    """Whether a turn runs is written to the chat's trait in one place, from the
    projection shown (live or stored)."""
    chat = Path(__file__).parents[2] / "neta_nb" / "widgets" / "chat"
    writers = []
    for path in sorted(chat.glob("*.py")):
        tree = ast.parse(path.read_text())
        for node in ast.walk(tree):
            if not isinstance(node, ast.Assign | ast.AugAssign | ast.AnnAssign):
                continue
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            writers += [f"{path.name}:{node.lineno}" for target in targets
                        if isinstance(target, ast.Attribute) and target.attr == "running"]
    assert len(writers) == 1, writers


async def test_a_plan_card_reads_the_turn_from_the_sessions_projection() -> None:
    hold = asyncio.Event()
    session, _, _ = make_session([calls(("t1", "todo", PLAN)), [hold.wait, *answer("ok")]])
    card = TodoCard(session)
    task = session.start("go")
    await wait_until(lambda: bool(card.todos))
    assert card.working is True and card.paused is False
    with pytest.raises(AttributeError, match="follows a session"):
        card.working = False  # the session's turns say it, not a setter
    hold.set()
    await task
    assert card.working is False and card.paused is True
