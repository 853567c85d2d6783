"""What an outside agent sends, as the session's own events and history: every kind of
update and request of the Agent Client Protocol, played by a scripted agent
(``scripted_agent.py``: JSON-RPC over stdio, no model), so each mapping is checked
exactly — and a view built from the events equals one built from the stored history."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AcpAgent, AgentSession, ModelPrice, SessionStore
from neta_nb.events import ApprovalDecision, Event
from neta_nb.runtime.acp.turns import AcpTurns
from neta_nb.runtime.projection import ConversationProjection, NullSink
from neta_nb.widgets import ChatView
from neta_nb.widgets.chat.drawing.render import render_message

from ...support.outside_agents import driven

AGENT = Path(__file__).with_name("scripted_agent.py")
OPTIONS = [{"optionId": "a1", "name": "Allow", "kind": "allow_once"},
           {"optionId": "a2", "name": "Always", "kind": "allow_always"},
           {"optionId": "r1", "name": "Reject", "kind": "reject_once"}]


def text(kind: str, value: str) -> dict[str, Any]:
    return {"update": {"sessionUpdate": kind, "content": {"type": "text", "text": value}}}


def scripted(tmp_path: Path, steps: list[dict[str, Any]], **script: Any) -> AcpAgent:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": steps, **script}))
    return AcpAgent("scripted", [sys.executable, str(AGENT), str(path)], cwd=tmp_path)


def answers(tmp_path: Path) -> list[Any]:
    path = tmp_path / "script.json.answers"
    return [json.loads(line) for line in path.read_text().splitlines()] if path.exists() else []


class Follower:
    def __init__(self, session: AgentSession, decisions: dict[str, ApprovalDecision]) -> None:
        self.events: list[Event] = []
        self.session = session
        self.decisions = decisions
        session.attach_approver()
        session.subscribe(self.on_event)

    def on_event(self, event: Event) -> None:
        self.events.append(event)
        if event.type == "approval_request":
            decision = self.decisions[event.id]
            call_id = event.id
            asyncio.get_running_loop().call_soon(
                lambda: self.session.approve(call_id, decision))

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]


STEPS: list[dict[str, Any]] = [
    {"update": {"sessionUpdate": "available_commands_update", "availableCommands": [
        {"name": "review", "description": "Review the changes"},
        {"name": "init", "description": "Write AGENTS.md"}]}},
    {"update": {"sessionUpdate": "current_mode_update", "currentModeId": "plan"}},
    text("agent_thought_chunk", "I should "),
    text("agent_thought_chunk", "plan."),
    {"update": {"sessionUpdate": "plan", "entries": [
        {"content": "Edit a.py", "priority": "high", "status": "in_progress"},
        {"content": "Run it", "priority": "medium", "status": "pending"}]}},
    text("agent_message_chunk", "Editing "),
    text("agent_message_chunk", "now."),
    {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.py",
                "kind": "edit", "status": "pending",
                "rawInput": {"path": "a.py"},
                "locations": [{"path": "/w/a.py", "line": 3}, {"path": "a.py"},
                              {"path": "/w/a.py", "line": 3}, {"path": "/w/b.py"}]}},
    {"permission": {"toolCall": {"toolCallId": "t1"}, "options": OPTIONS}},
    {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "status": "in_progress",
                "content": [{"type": "diff", "path": "a.py", "oldText": "x = 1\n",
                             "newText": "x = 2\n"}]}},
    {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t1",
                "status": "completed"}},
    # A permission request with no tool_call before it (Gemini CLI's way).
    {"permission": {"toolCall": {"toolCallId": "t2", "title": "rm -rf build",
                                 "kind": "execute", "rawInput": {"command": "rm -rf build"}},
                    "options": OPTIONS}},
    {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t2",
                "status": "failed", "content": [{"type": "content", "content": {
                    "type": "text", "text": "The user refused."}}]}},
    # A call reported by its updates alone, that fails.
    {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "t3", "title": "Read b.py",
                "kind": "read", "status": "failed", "rawOutput": {"error": "no such file"}}},
    {"update": {"sessionUpdate": "plan", "entries": [
        {"content": "Edit a.py", "priority": "high", "status": "completed"},
        {"content": "Run it", "priority": "medium", "status": "in_progress"}]}},
    {"update": {"sessionUpdate": "agent_message_chunk",
                "content": {"type": "image", "mimeType": "image/png", "data": "AAAA"}}},
    text("agent_message_chunk", "Done."),
]


async def test_every_update_becomes_the_sessions_own(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(scripted(tmp_path, STEPS, usage={
        "totalTokens": 150, "inputTokens": 100, "outputTokens": 50,
        "cachedReadTokens": 20}), store=store)
    follower = Follower(session, {"t1": "allow_always", "t2": "reject"})
    async with driven(session) as outside:
        answer = await asyncio.wait_for(session.run("go"), 30)
    assert answer is not None and answer.text == "Done."
    assert outside.commands == {"review": "Review the changes", "init": "Write AGENTS.md"}
    assert outside.mode == "plan"
    # Options chosen by kind, never by position or id.
    assert answers(tmp_path) == [{"outcome": "selected", "optionId": "a2"},
                                 {"outcome": "selected", "optionId": "r1"}]
    assert [e.text for e in follower.of("thinking_delta")] == ["I should ", "plan."]
    assert [e.text for e in follower.of("token")] == ["Editing ", "now.", "Done."]
    assert [[t["status"] for t in e.todos] for e in follower.of("todo_update")] == [
        ["in_progress", "pending"], ["completed", "in_progress"]]
    assert [(e.id, e.name) for e in follower.of("tool_call")] == [
        ("t1", "edit"), ("t2", "execute"), ("t3", "read")]
    results = {e.id: e for e in follower.of("tool_result")}
    assert not results["t1"].is_error
    assert "-x = 1\n+x = 2" in results["t1"].result
    assert results["t2"].is_error and "The user refused." in results["t2"].result
    assert results["t3"].is_error and "no such file" in results["t3"].result
    cards = {e.id: e for m in session.messages for e in m.metadata.tool_executions}
    assert {k: c.status for k, c in cards.items()} == {
        "t1": "done", "t2": "rejected", "t3": "error"}
    assert cards["t1"].label == "Edit a.py" and cards["t1"].args == {"path": "a.py"}
    # The files it names, each once; a relative path (the protocol's are absolute)
    # cannot be placed, so it is not linked.
    assert [(f.path, f.line) for f in cards["t1"].locations] == [("/w/a.py", 3),
                                                                 ("/w/b.py", None)]
    assert not cards["t2"].locations
    assert cards["t2"].args == {"command": "rm -rf build"}
    # Responses are cut where a native turn's are: the thinking and the plan (an
    # internal todo call: no card), the text and the calls, the answer after them.
    plan, edit = [m for m in session.messages if m.tool_calls][:2]
    assert (plan.thinking, [c.name for c in plan.tool_calls]) == ("I should plan.", ["todo"])
    assert not plan.metadata.tool_executions
    assert (edit.text, [c.id for c in edit.tool_calls]) == ("Editing now.", ["t1"])
    assert session.messages[-1].text == "Done."
    figures = follower.of("token_update")[-1].current
    assert (figures.input_tokens, figures.output_tokens) == (100, 50)
    assert follower.of("done")[-1].stop_reason == "end_turn"
    # The chat drawn from the events is the one drawn from the stored history.
    live = ConversationProjection()
    for event in follower.events:
        live.apply(event, NullSink())
    assert session.flush(10)
    stored = store.load_messages(session.id)
    again = ConversationProjection.from_history(stored)
    assert [m.model_dump() for m in again.messages] == [m.model_dump() for m in live.messages]
    assert again.todos == live.todos
    assert [render_message(m, n) for n, m in enumerate(again.messages)] == [
        render_message(m, n) for n, m in enumerate(live.messages)]
    store.close()


async def test_stop_answers_the_open_request_cancelled(tmp_path: Path) -> None:
    steps = [text("agent_message_chunk", "Let me ask."),
             {"permission": {"toolCall": {"toolCallId": "t9", "title": "Deploy",
                                          "kind": "execute"}, "options": OPTIONS}},
             {"sleep": 30}]
    session = AgentSession(scripted(tmp_path, steps))
    session.attach_approver()
    events: list[Event] = []
    session.subscribe(events.append)
    outside = session.deps.outside
    assert isinstance(outside, AcpTurns)
    task = session.start("go")
    for _ in range(300):
        if any(e.type == "approval_request" for e in events):
            break
        await asyncio.sleep(0.05)
    assert session.pending_approvals()
    assert session.cancel()
    await asyncio.wait_for(task, 10)
    await outside.aclose()
    assert events[-1].type == "done"
    assert events[-1].stop_reason == "cancelled"
    assert answers(tmp_path) == [{"outcome": "cancelled"}]
    [asked] = [m for m in session.messages if m.metadata.tool_executions]
    assert asked.metadata.tool_executions[0].status == "cancelled"
    assert (asked.text, asked.metadata.interrupted) == ("Let me ask.", "cancelled")
    assert not session.pending_approvals()
    # The history stays valid: the call has its result.
    assert session.messages[-1].tool_results[0].tool_call_id == "t9"


async def test_an_approval_shows_the_change_or_the_command(tmp_path: Path) -> None:
    """What an asked call will do, as its approval shows it: a Write's or an Edit's diff
    (unified, every file it reports), a command as the command — its arguments' JSON
    only for a call that reports neither."""
    steps: list[dict[str, Any]] = [
        {"permission": {"toolCall": {
            "toolCallId": "w1", "title": "Write notes.md", "kind": "edit",
            "rawInput": {"file_path": "/w/notes.md", "content": "one\ntwo\n"},
            "content": [{"type": "diff", "path": "/w/notes.md", "oldText": None,
                         "newText": "one\ntwo\n"},
                        {"type": "diff", "path": "/w/a.py", "oldText": "x = 1\n",
                         "newText": "x = 2\n"}]}, "options": OPTIONS}},
        {"permission": {"toolCall": {"toolCallId": "c1", "title": "rm -rf build",
                                     "kind": "execute",
                                     "rawInput": {"command": ["rm", "-rf", "my build"]}},
                        "options": OPTIONS}},
        {"permission": {"toolCall": {"toolCallId": "f1", "title": "Fetch",
                                     "kind": "fetch", "rawInput": {"url": "http://x"}},
                        "options": OPTIONS}},
    ]
    session = AgentSession(scripted(tmp_path, steps))
    follower = Follower(session, {"w1": "allow_once", "c1": "reject", "f1": "reject"})
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    asked = {e.id: e.preview for e in follower.of("approval_request")}
    write, command, other = asked["w1"], asked["c1"], asked["f1"]
    assert write is not None and write.language == "diff"
    assert write.code.splitlines() == [
        "--- /dev/null", "+++ /w/notes.md", "@@ -0,0 +1,2 @@", "+one", "+two",
        "--- /w/a.py", "+++ /w/a.py", "@@ -1 +1 @@", "-x = 1", "+x = 2"]
    assert command is not None
    assert (command.code, command.language) == ("rm -rf 'my build'", "bash")
    assert other is None
    assert answers(tmp_path) == [{"outcome": "selected", "optionId": "a1"},
                                 {"outcome": "selected", "optionId": "r1"},
                                 {"outcome": "selected", "optionId": "r1"}]


@pytest.mark.parametrize("policy", ["allow", "reject"])
async def test_with_no_one_to_ask_the_policy_decides(tmp_path: Path, policy: str) -> None:
    steps = [{"permission": {"toolCall": {"toolCallId": "t1", "title": "Write"},
                             "options": OPTIONS}}]
    session = AgentSession(scripted(tmp_path, steps), approval_policy=policy)  # type: ignore[arg-type]
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    assert answers(tmp_path) == [{"outcome": "selected",
                                  "optionId": "a1" if policy == "allow" else "r1"}]


async def test_a_chat_view_shows_an_outside_agents_session(tmp_path: Path) -> None:
    steps = [text("agent_message_chunk", "Hi there."),
             {"update": {"sessionUpdate": "tool_call", "toolCallId": "t1", "title": "Edit a.py",
                         "kind": "edit", "status": "completed"}}]
    session = AgentSession(scripted(tmp_path, steps))
    view = ChatView(session)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    state = view.get_state()
    assert state["agent"] == {"name": "scripted", "model": "acp:scripted"}
    assert state["levels"] == ["off"]  # no thinking levels to choose for an outside agent
    [message] = [m for m in session.messages if m.metadata.tool_executions]
    drawn = render_message(message, session.messages.index(message))
    assert drawn["text"] == "Hi there."
    assert [(c["name"], c["label"], c["status"]) for c in drawn["cards"]] == [
        ("edit", "Edit a.py", "done")]


async def test_with_a_price_the_reported_usage_has_a_cost(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": [text("agent_message_chunk", "Hi.")], "usage": {
        "totalTokens": 3_000_000, "inputTokens": 2_000_000, "outputTokens": 1_000_000}}))
    agent = AcpAgent("priced", [sys.executable, str(AGENT), str(path)], cwd=tmp_path,
                     price=ModelPrice(input=3.0, output=15.0))
    session = AgentSession(agent)
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    [update] = [e for e in events if e.type == "token_update"]
    assert update.current.cost_usd == pytest.approx(2 * 3.0 + 15.0)
    assert session.cost_usd == pytest.approx(21.0)
    assert session.messages[-1].metadata.cost_usd == pytest.approx(21.0)


async def test_an_agent_that_cannot_continue_its_session_starts_afresh_saying_so(
        tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"can_load": True, "by_prompt": {
        "first": [text("agent_message_chunk", "Working."), {"sleep": 30}],
        "second": [text("agent_message_chunk", "Fresh.")]}}))
    session = AgentSession(AcpAgent("forgetful", [sys.executable, str(AGENT), str(path)],
                                    cwd=tmp_path))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        task = session.start("first")
        for _ in range(300):
            if any(e.type == "token" for e in events):
                break
            await asyncio.sleep(0.05)
        session.cancel()  # the agent's process ends: the next turn starts it again
        await asyncio.wait_for(task, 10)
        events.clear()
        answer = await asyncio.wait_for(session.run("second"), 30)
    assert answer is not None and answer.text == "Fresh."
    [warning] = [e for e in events if e.type == "warning"]
    assert warning.message.startswith("forgetful started a new session of its own (it could "
                                      "not continue its session:")
    assert "Resource not found" in warning.message
    assert warning.message.endswith("does not remember the earlier turns of this chat.")
    methods = (tmp_path / "script.json.calls").read_text().split()
    assert methods.count("session/new") == 2 and methods.count("session/load") == 1


async def test_after_a_rewind_the_agent_starts_a_session_of_its_own(tmp_path: Path) -> None:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"can_load": True, "by_prompt": {
        "one": [text("agent_message_chunk", "First.")],
        "two": [text("agent_message_chunk", "Second.")],
        "three": [text("agent_message_chunk", "Third.")]}}))
    session = AgentSession(AcpAgent("scripted", [sys.executable, str(AGENT), str(path)],
                                    cwd=tmp_path))
    events: list[Event] = []
    session.subscribe(events.append)
    async with driven(session):
        await session.run("one")
        await session.run("two")
        assert not [e for e in events if e.type == "warning"]
        second = next(m for m in session.messages if m.text == "two")
        session.rewind(second.id)
        events.clear()
        answer = await asyncio.wait_for(session.run("three"), 30)
    assert answer is not None and answer.text == "Third."
    [warning] = [e for e in events if e.type == "warning"]
    assert "(this chat went back to an earlier message)" in warning.message
    methods = (tmp_path / "script.json.calls").read_text().split()
    assert methods.count("session/new") == 2 and "session/load" not in methods


def test_a_card_links_its_files_with_the_kernels_notebook(monkeypatch: pytest.MonkeyPatch
                                                          ) -> None:
    """The files a call names reach the card with the absolute path of the kernel's
    notebook (by which the page places them under the folder it serves); a kernel the
    Jupyter server did not start for a notebook gives the paths alone."""
    from neta_nb.messages import FileLocation, Message, ToolCallPart, ToolExecution

    message = Message.assistant([ToolCallPart(id="t1", name="Write", args={})])
    message.metadata.tool_executions.append(ToolExecution(
        id="t1", name="Write", label="Write notes.md", status="done", locations=[
            FileLocation(path="/srv/work/notes.md", line=3),
            FileLocation(path="/srv/data/a.csv")]))
    monkeypatch.setenv("JPY_SESSION_NAME", "/srv/work/analysis.ipynb")
    [card] = render_message(message, 0)["cards"]
    assert card.get("locations") == [
        {"path": "/srv/work/notes.md", "line": 3, "notebook": "/srv/work/analysis.ipynb"},
        {"path": "/srv/data/a.csv", "line": None, "notebook": "/srv/work/analysis.ipynb"}]
    for unusable in ("", "work/analysis.ipynb"):  # unset, or not absolute
        monkeypatch.setenv("JPY_SESSION_NAME", unusable)
        [card] = render_message(message, 0)["cards"]
        assert [loc.get("notebook") for loc in card.get("locations", [])] == [None] * 2
    # A card without files carries no field for them (every card is in the widget state).
    message.metadata.tool_executions[0].locations = []
    [card] = render_message(message, 0)["cards"]
    assert "locations" not in card


async def test_a_change_too_long_to_compare_is_said_not_compared(tmp_path: Path) -> None:
    """Comparing costs the kernel's loop about the square of the lines: a Write of a
    long file is named, with its sizes, instead of being compared on the loop (in its
    approval and in its card)."""
    before = "".join(f"line {n}\n" for n in range(20_000))
    after = "".join(f"line {n}{' changed' if n % 2 else ''}\n" for n in range(20_000))
    diff = {"type": "diff", "path": "/w/big.txt", "oldText": before, "newText": after}
    steps: list[dict[str, Any]] = [
        {"update": {"sessionUpdate": "tool_call", "toolCallId": "w1", "title": "Write",
                    "kind": "edit", "status": "pending", "content": [diff]}},
        {"permission": {"toolCall": {"toolCallId": "w1"}, "options": OPTIONS}},
        {"update": {"sessionUpdate": "tool_call_update", "toolCallId": "w1",
                    "status": "completed"}}]
    session = AgentSession(scripted(tmp_path, steps))
    follower = Follower(session, {"w1": "allow_once"})
    async with driven(session):
        await asyncio.wait_for(session.run("go"), 30)
    [asked] = follower.of("approval_request")
    said = "(too long to compare here: 20,000 lines before, 20,000 after)"
    assert asked.preview is not None
    assert asked.preview.code.splitlines() == ["--- /w/big.txt", "+++ /w/big.txt", said]
    [result] = follower.of("tool_result")
    assert said in result.result
