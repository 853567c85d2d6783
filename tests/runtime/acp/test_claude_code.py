"""A real outside agent: Claude Code over the Agent Client Protocol
(``@zed-industries/claude-agent-acp``, locked in tests/fixtures/acp_agents: ``npm ci``
there, as scripts/test.sh does), driven by ``AgentSession(AcpAgent(...))``. Its model is
the local stand-in for the Messages API (tests/providers/sse_server.py) answering with
what each test scripts — a plan, thinking, a file written, a command — so nothing leaves
127.0.0.1 and the agent really runs its own tools in a temporary folder.

Without the locked agent (or Node.js) the tests skip, saying so; under ``CI`` they fail
instead: the CI installs the fixture, so they must run there.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from neta_nb import AcpAgent, AgentSession, SessionNotResumableError, SessionStore
from neta_nb.events import ApprovalDecision, Event
from neta_nb.runtime.acp.turns import AcpTurns
from neta_nb.runtime.projection import ConversationProjection, NullSink

from ...providers.sse_server import (
    AnthropicStream,
    ScriptedHTTPResponse,
    SSEServer,
)
from ...support.claude_script import ModelScript, text, tool_use
from ...support.notebook_page import FakeNotebookPage
from ...support.outside_agents import BIN, gone, require_locked

CLAUDE = BIN / "claude-agent-acp"


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_locked(CLAUDE, "the locked Claude Code agent")


@pytest.fixture
def claude(model: tuple[SSEServer, ModelScript], tmp_path: Path) -> Callable[..., AcpAgent]:
    """Makes Claude Code agents that talk to the local model and work in ``tmp_path/work``."""
    server, _ = model
    home = tmp_path / "home"
    home.mkdir()
    (tmp_path / "work").mkdir()
    # Claude Code fails to open a session when IS_SANDBOX is set (as in some containers):
    # left out of its environment.
    env: dict[str, str | None] = {
        "IS_SANDBOX": None,
        "ANTHROPIC_BASE_URL": server.base_url, "ANTHROPIC_API_KEY": "test-key",
        "HOME": str(home), "CLAUDE_CONFIG_DIR": str(home / ".claude"),
        "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1", "DISABLE_AUTOUPDATER": "1"}
    return lambda mode=None: AcpAgent.claude_code(search=BIN, env=env, cwd=tmp_path / "work",
                                                  mode=mode)


@pytest.fixture
async def sessions(claude: Callable[..., AcpAgent]
                   ) -> AsyncIterator[Callable[..., AgentSession]]:
    """Makes sessions of Claude Code agents; each agent's process is ended and reaped
    after the test."""
    made: list[AgentSession] = []

    def make(mode: str | None = None, store: SessionStore | None = None) -> AgentSession:
        session = AgentSession(claude(mode), store=store)
        made.append(session)
        return session

    yield make
    for session in made:
        session.close()
        outside = session.deps.outside
        assert isinstance(outside, AcpTurns)
        await outside.aclose()


class Recorder:
    """A session's events, with approvals answered as the test says."""

    def __init__(self, session: AgentSession,
                 decision: ApprovalDecision | None = "allow_once") -> None:
        self.events: list[Event] = []
        self.decision = decision
        self.session = session
        self.asked = asyncio.Event()
        session.attach_approver()
        session.subscribe(self._on_event)

    def _on_event(self, event: Event) -> None:
        self.events.append(event)
        if event.type == "approval_request":
            self.asked.set()
            decision = self.decision
            if decision is not None:
                asyncio.get_running_loop().call_soon(
                    lambda: self.session.approve(event.id, decision))

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


def projected(events: list[Event]) -> ConversationProjection:
    projection = ConversationProjection()
    for event in events:
        projection.apply(event, NullSink())
    return projection


# --- the tests ----------------------------------------------------------------------------
async def test_a_plan_is_one_todo_card_updated_in_place(
        model: tuple[SSEServer, ModelScript],
        sessions: Callable[[], AgentSession]) -> None:
    _, script = model
    todos = [{"content": "Read the data", "activeForm": "Reading", "status": "in_progress"},
             {"content": "Fit the model", "activeForm": "Fitting", "status": "pending"},
             {"content": "Plot it", "activeForm": "Plotting", "status": "pending"}]
    later = [dict(todos[0], status="completed"), dict(todos[1], status="in_progress"),
             todos[2]]
    script.scripts["plan"] = [tool_use("tu_plan1", "TodoWrite", {"todos": todos}),
                              tool_use("tu_plan2", "TodoWrite", {"todos": later}),
                              text("Planned.")]
    session = sessions()
    recorder = Recorder(session)
    answer = await session.run("SCRIPT:plan Make a plan.")
    assert answer is not None and answer.text == "Planned."
    updates = recorder.of("todo_update")
    assert [[t["status"] for t in u.todos] for u in updates] == [
        ["in_progress", "pending", "pending"], ["completed", "in_progress", "pending"]]
    assert [t["content"] for t in updates[-1].todos] == ["Read the data", "Fit the model",
                                                         "Plot it"]
    assert [t.status for t in session.todo.read()] == ["completed", "in_progress", "pending"]
    # One plan, changed in place: the plan is no tool card.
    assert not recorder.of("tool_call")
    view = projected(recorder.events)
    assert [t["status"] for t in view.todos] == ["completed", "in_progress", "pending"]
    assert view.plan == (1, 3)
    # The history keeps the plan as a native one: a view of the stored history shows it.
    stored = ConversationProjection.from_history(session.messages)
    assert stored.todos == view.todos
    assert not any(m.metadata.tool_executions for m in session.messages)
    assert recorder.of("done")[-1].stop_reason == "end_turn"


async def test_thinking_streams_and_a_write_changes_the_file_on_its_card(
        model: tuple[SSEServer, ModelScript], sessions: Callable[[], AgentSession],
        tmp_path: Path) -> None:
    _, script = model
    target = tmp_path / "work" / "hello.py"
    script.scripts["write"] = [
        tool_use("tu_w", "Write", {"file_path": str(target), "content": "print('hi')\n"},
                 thinking=["Let me ", "write ", "it."]),
        text("Written ", "it.")]
    session = sessions()
    recorder = Recorder(session, "allow_once")
    answer = await session.run("SCRIPT:write Write hello.py.")
    assert target.read_text() == "print('hi')\n"
    # Streamed as it came (the agent may join pieces that arrive together).
    thought = [e.text for e in recorder.of("thinking_delta")]
    assert "".join(thought) == "Let me write it." and len(thought) >= 2
    assert recorder.of("thinking_done")
    assert "".join(e.text for e in recorder.of("token")) == "Written it."
    assert answer is not None and answer.text == "Written it."
    # The call is a tool card the user approved, with the diff and the agent's output.
    [call] = recorder.of("tool_call")
    assert call.name == "Write"
    [asked] = recorder.of("approval_request")
    assert asked.id == call.id
    assert asked.args == {"file_path": str(target), "content": "print('hi')\n"}
    [result] = recorder.of("tool_result")
    assert not result.is_error
    assert f"+++ {target}" in result.result and "+print('hi')" in result.result
    card_message = next(m for m in session.messages if m.tool_calls)
    assert card_message.thinking == "Let me write it."
    [card] = card_message.metadata.tool_executions
    assert card.status == "done"
    assert card.label == "Write hello.py"
    assert card.args["file_path"] == str(target)
    # The history is valid: the call has its result right after its message.
    index = session.messages.index(card_message)
    assert session.messages[index + 1].tool_results[0].tool_call_id == call.id
    # Usage reached the token line: two model calls, as the server reported them.
    figures = recorder.of("token_update")[-1].current
    assert (figures.input_tokens, figures.output_tokens) == (2 * 25, 2 * 42)
    assert session.usage.input_tokens == 50
    # The commands Claude Code announces (once it has asked its own engine) are known.
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    deadline = time.monotonic() + 10
    while "init" not in outside.commands:
        assert time.monotonic() < deadline, outside.commands
        await asyncio.sleep(0.05)


async def test_a_rejected_command_never_runs(
        model: tuple[SSEServer, ModelScript], sessions: Callable[[], AgentSession],
        tmp_path: Path) -> None:
    _, script = model
    marker = tmp_path / "work" / "ran"
    script.scripts["reject"] = [
        tool_use("tu_b", "Bash", {"command": f"touch {marker}", "description": "Touch"}),
        text("Understood.")]
    session = sessions()
    recorder = Recorder(session, "reject")
    await session.run("SCRIPT:reject Touch the file.")
    assert recorder.of("approval_request")
    assert not marker.exists()
    [result] = recorder.of("tool_result")
    assert result.is_error
    card = next(e for m in session.messages for e in m.metadata.tool_executions)
    assert card.status == "rejected"
    assert recorder.of("done")[-1].stop_reason == "end_turn"


def _sleeping(pid: int) -> list[psutil.Process]:
    try:
        return [p for p in psutil.Process(pid).children(recursive=True)
                if "sleep" in " ".join(p.cmdline())]
    except psutil.Error:
        return []


async def test_stop_ends_the_turn_cancelled_and_leaves_no_process(
        model: tuple[SSEServer, ModelScript],
        sessions: Callable[[], AgentSession]) -> None:
    server, script = model
    script.scripts["stop"] = [
        tool_use("tu_s", "Bash", {"command": "sleep 120", "description": "Wait"},
                 thinking=["Waiting."]),
        text("Never.")]
    script.scripts["after"] = [text("Back again.")]
    session = sessions()
    recorder = Recorder(session, "allow_once")
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    task = session.start("SCRIPT:stop Wait a while.")
    deadline = time.monotonic() + 60
    while not (outside.pid and _sleeping(outside.pid)):
        assert time.monotonic() < deadline, "the command never started"
        assert not task.done(), recorder.events
        await asyncio.sleep(0.1)
    agent_pid = outside.pid
    assert agent_pid is not None
    sleeper = _sleeping(agent_pid)[0]
    stopped = time.monotonic()
    assert session.cancel()
    await asyncio.wait_for(task, 10)
    assert time.monotonic() - stopped < 5
    assert recorder.of("done")[-1].stop_reason == "cancelled"
    assert gone(agent_pid)
    assert gone(sleeper.pid)
    card = next(e for m in session.messages for e in m.metadata.tool_executions)
    assert card.status == "cancelled"
    # The thinking that streamed is kept; the history is valid for the next turn.
    assert any(m.thinking == "Waiting." for m in session.messages)
    assert not session.running
    # The next turn starts the agent again.
    answer = await asyncio.wait_for(session.run("SCRIPT:after And now?"), 60)
    assert answer is not None and answer.text == "Back again."
    assert outside.pid not in (None, agent_pid)
    # It continued the agent's own session (session/load): the model read the first turn.
    assert "SCRIPT:stop" in json.dumps(server.requests[-1].json["messages"])


async def test_stop_keeps_the_partial_answer(
        model: tuple[SSEServer, ModelScript], sessions: Callable[..., AgentSession],
        tmp_path: Path) -> None:
    _, script = model
    hold = asyncio.Event()

    def partial() -> ScriptedHTTPResponse:
        response = AnthropicStream().text(["Half ", "an ", "answer"]).finish().response()
        response.hold_open = hold  # the stream stops before its end until the test says
        return response

    script.scripts["partial"] = [partial]
    store = SessionStore(tmp_path / "sessions.db")
    session = sessions(store=store)
    recorder = Recorder(session)
    try:
        task = session.start("SCRIPT:partial Say something long.")
        deadline = time.monotonic() + 60
        while not "".join(e.text for e in recorder.of("token")).startswith("Half an"):
            assert time.monotonic() < deadline and not task.done(), recorder.events
            await asyncio.sleep(0.05)
        # What streamed is checkpointed as it streams: a dying kernel would keep it.
        while (draft := store.load_draft(session.id)) is None:
            assert time.monotonic() < deadline, "no checkpoint of the streamed answer"
            await asyncio.sleep(0.1)
        assert draft.text.startswith("Half an")
        session.cancel()
        await asyncio.wait_for(task, 10)
    finally:
        hold.set()
    assert session.flush(10)
    assert store.load_draft(session.id) is None  # the answer is a message now
    store.close()
    assert recorder.of("done")[-1].stop_reason == "cancelled"
    last = session.messages[-1]
    assert last.role == "assistant"
    assert last.text.startswith("Half an")
    assert last.metadata.interrupted == "cancelled"


async def test_two_sessions_at_once_never_cross(
        model: tuple[SSEServer, ModelScript],
        sessions: Callable[[], AgentSession]) -> None:
    _, script = model
    script.scripts["alpha"] = [text("Alpha ", "answer.")]
    script.scripts["beta"] = [text("Beta ", "answer.")]
    first, second = sessions(), sessions()
    one, two = Recorder(first), Recorder(second)
    answers = await asyncio.gather(first.run("SCRIPT:alpha First."),
                                   second.run("SCRIPT:beta Second."))
    assert [a.text if a else None for a in answers] == ["Alpha answer.", "Beta answer."]
    assert "".join(e.text for e in one.of("token")) == "Alpha answer."
    assert "".join(e.text for e in two.of("token")) == "Beta answer."
    assert [m.text for m in first.messages] == ["SCRIPT:alpha First.", "Alpha answer."]
    assert [m.text for m in second.messages] == ["SCRIPT:beta Second.", "Beta answer."]


async def test_the_session_is_stored_and_resumes_through_the_agent(
        model: tuple[SSEServer, ModelScript], claude: Callable[..., AcpAgent],
        tmp_path: Path) -> None:
    server, script = model
    script.scripts["first"] = [text("First ", "answer.")]
    script.scripts["second"] = [text("Second ", "answer.")]
    store = SessionStore(tmp_path / "sessions.db")
    session = AgentSession(claude(), store=store)
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    await session.run("SCRIPT:first Begin.")
    assert session.flush(10)
    await outside.aclose()
    record = store.get_session(session.id)
    assert record is not None
    assert record.agent["outside"] == {"protocol": "acp", "session_id": outside.session_id}
    # Claude Code says what its session cost (from its own prices): with no price of
    # ours, that is the turn's cost.
    first_cost = session.cost_usd
    assert first_cost is not None and first_cost > 0
    assert record.agent["provider"]["command"] == [str(BIN / "claude-agent-acp")]
    assert "test-key" not in json.dumps(record.model_dump(mode="json"))
    with pytest.raises(SessionNotResumableError, match=r"agent=AcpAgent"):
        AgentSession.resume(session.id, store)

    resumed = AgentSession.resume(session.id, store, agent=claude())
    again = resumed.deps.outside
    assert isinstance(again, AcpTurns)
    try:
        assert [m.text for m in resumed.messages] == ["SCRIPT:first Begin.", "First answer."]
        answer = await resumed.run("SCRIPT:second Go on.")
        assert answer is not None and answer.text == "Second answer."
        # The agent continued its own session (session/load): the model read the first turn.
        assert again.session_id == outside.session_id
        assert "First answer." in json.dumps(server.requests[-1].json["messages"])
        # Its total starts again in the new process (it continues the session, not its
        # total): the second turn costs all it says, added to the first's.
        second_cost = resumed.messages[-1].metadata.cost_usd
        assert second_cost is not None and second_cost > 0
        assert resumed.cost_usd == pytest.approx(first_cost + second_cost)
    finally:
        await again.aclose()
        assert resumed.flush(10)
        store.close()


async def test_a_mode_of_the_agent_is_set_for_its_session(
        model: tuple[SSEServer, ModelScript], sessions: Callable[..., AgentSession],
        tmp_path: Path) -> None:
    _, script = model
    target = tmp_path / "work" / "auto.txt"
    script.scripts["auto"] = [
        tool_use("tu_a", "Write", {"file_path": str(target), "content": "auto\n"}),
        text("Done.")]
    session = sessions("acceptEdits")
    recorder = Recorder(session, None)  # nobody answers: the mode must not ask
    await asyncio.wait_for(session.run("SCRIPT:auto Write it."), 60)
    assert target.read_text() == "auto\n"
    assert not recorder.of("approval_request")

    wrong = sessions("yolo")
    failed = Recorder(wrong)
    await wrong.run("SCRIPT:auto Write it.")
    [error] = failed.of("error")
    assert "has no mode 'yolo'" in error.message and "acceptEdits" in error.message


async def test_its_modes_and_commands_are_offered_and_a_mode_chosen_is_set(
        model: tuple[SSEServer, ModelScript], sessions: Callable[..., AgentSession],
        tmp_path: Path) -> None:
    _, script = model
    target = tmp_path / "work" / "chosen.txt"
    script.scripts["hello"] = [text("Hello.")]
    script.scripts["write"] = [
        tool_use("tu_c", "Write", {"file_path": str(target), "content": "chosen\n"}),
        text("Written.")]
    session = sessions()
    await asyncio.wait_for(session.run("SCRIPT:hello Hi."), 60)
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    controls = outside.controls
    offered = [mode["id"] for mode in controls.modes]
    assert {"default", "acceptEdits", "plan"} <= set(offered), offered
    assert controls.mode == "default"
    deadline = time.monotonic() + 10
    while "init" not in controls.commands:
        assert time.monotonic() < deadline, controls.commands
        await asyncio.sleep(0.05)
    # Chosen between turns (as the chat's selector does): the agent takes it at once and
    # the next turn's edit needs no approval.
    changed: list[str | None] = []
    controls.listen(lambda: changed.append(controls.mode))
    await asyncio.wait_for(controls.choose("acceptEdits"), 30)
    assert controls.mode == "acceptEdits" and "acceptEdits" in changed
    recorder = Recorder(session, None)  # nobody answers: the mode must not ask
    await asyncio.wait_for(session.run("SCRIPT:write Write it."), 60)
    assert target.read_text() == "chosen\n"
    assert not recorder.of("approval_request")
    assert controls.mode == "acceptEdits"


@pytest.mark.parametrize("decision", ["allow_once", "reject"])
async def test_its_edit_of_the_notebook_is_a_diff_card_decided_in_its_chat(
        model: tuple[SSEServer, ModelScript], claude: Callable[..., AcpAgent],
        decision: ApprovalDecision) -> None:
    _, script = model
    edit = {"cell_id": "c2", "source": "y = 2"}
    script.scripts["cell"] = [tool_use("tu_nb", "mcp__neta-notebook__edit_cell", edit),
                              text("Proposed.")]
    page = FakeNotebookPage([{"id": "c1", "source": "x = 1"},
                             {"id": "c2", "source": "y = x + 1"}])
    session = AgentSession(claude(), notebook_page=page)
    recorder = Recorder(session, decision)
    try:
        answer = await asyncio.wait_for(session.run("SCRIPT:cell Make y two."), 120)
    finally:
        outside = session.deps.outside
        assert isinstance(outside, AcpTurns)
        await outside.aclose()
    assert answer is not None and answer.text == "Proposed."
    # One card, the notebook tool's, whose proposal was asked in this chat (the agent's
    # own permission request for it was not asked again).
    [asked] = recorder.of("approval_request")
    assert asked.name == "edit_cell" and asked.proposal is not None
    assert asked.proposal["cell_id"] == "c2"
    [card] = [e for m in session.messages for e in m.metadata.tool_executions]
    assert card.id == asked.id and card.name == "edit_cell"
    if decision == "allow_once":
        assert page.cell("c2")["source"] == "y = 2" and card.status == "done"
    else:
        assert page.cell("c2")["source"] == "y = x + 1" and card.status == "rejected"
    results = [p for m in session.messages for p in m.tool_results]
    assert [p.tool_call_id for p in results] == [card.id]


async def test_a_mention_and_an_image_reach_its_model(
        model: tuple[SSEServer, ModelScript], sessions: Callable[[], AgentSession]) -> None:
    """What a prompt carries besides its text — a mention's block, an attached image
    (once Claude Code said it takes images) — reaches the model behind the agent."""
    import io

    from PIL import Image

    from neta_nb.runtime.mentions.attachments import Attachment

    server, script = model
    script.scripts["hello"] = [text("Hello.")]
    script.scripts["look"] = [text("A red dot.")]
    session = sessions()
    session.namespace["answer_value"] = 4242
    await session.run("SCRIPT:hello Hi.")
    assert "vision" in session.provider.info.capabilities
    picture = io.BytesIO()
    Image.new("RGB", (4, 3), "red").save(picture, "PNG")
    answer = await session.run("SCRIPT:look What is in @answer_value and the picture?",
                               [Attachment(picture.getvalue(), "image/png", "dot.png")])
    assert answer is not None and answer.text == "A red dot."
    asked = json.dumps(server.requests[-1].json["messages"][-1])
    assert "4242" in asked and "@answer_value" in asked
    assert '"type": "image"' in asked and '"media_type": "image/png"' in asked


async def test_a_fork_of_the_whole_chat_remembers_it(
        model: tuple[SSEServer, ModelScript], sessions: Callable[[], AgentSession]) -> None:
    """A fork of the whole chat copies Claude Code's session (``session/fork``): the
    model of the fork's first turn reads the chat it was forked from."""
    server, script = model
    script.scripts["first"] = [text("The secret is 7.")]
    script.scripts["later"] = [text("Now the secret is 9.")]
    script.scripts["again"] = [text("You asked me before.")]
    session = sessions()
    await session.run("SCRIPT:first Remember a number.")
    fork = session.fork(session.messages[-1].id)
    # The chat forked from goes on first: its new turn is not the fork's.
    await session.run("SCRIPT:later Change it.")
    try:
        events: list[Event] = []
        fork.subscribe(events.append)
        answer = await fork.run("SCRIPT:again What was it?")
        assert answer is not None and answer.text == "You asked me before."
        asked = json.dumps(server.requests[-1].json["messages"])
        assert "The secret is 7." in asked and "Remember a number." in asked
        assert "Now the secret is 9." not in asked and "Change it." not in asked
        assert not [e for e in events if e.type == "warning"]
        forked = fork.deps.outside
        assert isinstance(forked, AcpTurns)
        original = session.deps.outside
        assert isinstance(original, AcpTurns)
        assert forked.session_id not in (None, original.session_id)
    finally:
        fork.close()
        forked_turns = fork.deps.outside
        assert isinstance(forked_turns, AcpTurns)
        await forked_turns.aclose()
