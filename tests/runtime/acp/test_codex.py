"""A real outside agent: Codex over the Agent Client Protocol (``@zed-industries/codex-acp``,
locked in tests/fixtures/acp_agents: ``npm ci`` there, as scripts/test.sh does), driven
by ``AgentSession(AcpAgent.codex(...))``. Its model is a local stand-in for the Responses
API (a model provider of its ``config.toml``) that answers with what the test scripts.

Without the locked agent (or Node.js) the tests skip, saying so; under ``CI`` they fail
instead: the CI installs the fixture, so they must run there.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from neta_nb import AcpAgent, AgentSession
from neta_nb.events import Event

from ...support.asgi_server import served
from ...support.notebook_page import FakeNotebookPage
from ...support.outside_agents import BIN, driven, gone, require_locked
from ...support.responses_model import ResponsesModel


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_locked(BIN / "codex-acp", "the locked Codex agent")


@pytest.fixture
def responses() -> Iterator[ResponsesModel]:
    model = ResponsesModel()
    with served(model.app()) as model.port:
        yield model


@pytest.fixture
def codex(responses: ResponsesModel, tmp_path: Path) -> AcpAgent:
    home = tmp_path / "codex"
    home.mkdir()
    (home / "config.toml").write_text(f"""
model = "gpt-5"
model_provider = "stand-in"
check_for_update_on_startup = false

[model_providers.stand-in]
name = "stand-in"
base_url = "http://127.0.0.1:{responses.port}/v1"
wire_api = "responses"
env_key = "STAND_IN_MODEL_KEY"
""")
    work = tmp_path / "work"
    work.mkdir()
    return AcpAgent.codex(search=BIN, cwd=work,
                          env={"CODEX_HOME": str(home), "STAND_IN_MODEL_KEY": "test-key"})


async def test_codex_plans_answers_and_leaves_no_process(responses: ResponsesModel,
                                                        codex: AcpAgent) -> None:
    plan = [{"step": "Read the data", "status": "completed"},
            {"step": "Fit the model", "status": "in_progress"},
            {"step": "Plot it", "status": "pending"}]
    responses.turns = [{"call": "update_plan", "args": {"plan": plan}},
                       {"text": "Planned and done."}]
    session = AgentSession(codex)
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session) as outside:
        answer = await asyncio.wait_for(session.run("Make a plan."), 120)
        assert answer is not None
        assert answer.text == "Planned and done."
        # (Codex may say first that it knows nothing of the stand-in model's metadata.)
        assert "".join(e.text for e in events if e.type == "token").endswith(
            "Planned and done.")
        [update] = [e for e in events if e.type == "todo_update"]
        assert [(t["content"], t["status"]) for t in update.todos] == [
            ("Read the data", "completed"), ("Fit the model", "in_progress"),
            ("Plot it", "pending")]
        assert events[-1].type == "done"
        # Codex's native program runs below the npm wrapper: all of it ends with the session.
        pid = outside.pid
        assert pid is not None
        tree = [pid, *(p.pid for p in psutil.Process(pid).children(recursive=True))]
        assert len(tree) >= 2
    assert all(gone(member, 5.0) for member in tree)


async def test_codex_edits_the_notebook_its_chat_is_on_under_review(
        responses: ResponsesModel, codex: AcpAgent) -> None:
    responses.namespace = "mcp__neta_notebook"
    responses.turns = [{"call": "edit_cell", "args": {"cell_id": "c1", "source": "x = 42"}},
                       {"text": "The cell now holds 42."}]
    page = FakeNotebookPage([{"id": "c1", "source": "x = 41 + 1"}])
    session = AgentSession(codex, notebook_page=page)
    session.attach_approver()
    events: list[Event] = []

    def on_event(event: Event) -> None:
        events.append(event)
        if event.type == "approval_request":
            asyncio.get_running_loop().call_soon(
                lambda: session.approve(event.id, "allow_once"))

    session.subscribe(on_event)
    async with driven(session):
        answer = await asyncio.wait_for(session.run("Make x 42."), 120)
    assert answer is not None and answer.text.endswith("The cell now holds 42.")
    assert page.cell("c1")["source"] == "x = 42"
    # One question, the notebook's proposal (Codex's own permission request for the call
    # of the notebook's server is not asked again), on the card of Codex's own call.
    [asked] = [e for e in events if e.type == "approval_request"]
    assert asked.name == "edit_cell" and asked.proposal is not None
    assert asked.id == "call_1"
    cards = [e for m in session.messages for e in m.metadata.tool_executions]
    assert [(c.id, c.name, c.status) for c in cards] == [(asked.id, "edit_cell", "done")]
