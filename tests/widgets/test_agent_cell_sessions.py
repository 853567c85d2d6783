"""Which session an ``%%agent`` cell's turn goes to, run in-process without a page (the
headless path, as nbclient runs it): ``-s`` naming a session variable or a stored id, a
policy function deciding approvals, and the session's own settings given back after the
cell's turn."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, ScriptedProvider, SessionStore
from neta_nb.messages import Message
from neta_nb.providers.prices import ModelPrice
from neta_nb.widgets.agent_cell import AgentCells

from ..support.timing import wait_until


def _echo(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"text": f"You said: {messages[-1].text}"}]


def _agent(name: str = "echo") -> Agent:
    return Agent(name, model=ScriptedProvider({"responses": [_echo], "on_exhausted": "cycle"}))


class _Shell:  # no kernel: no page, as under nbclient
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.user_ns = namespace


def _prompts(session: AgentSession) -> list[str]:
    return [m.text for m in session.messages if m.role == "user"]


async def test_cells_naming_a_session_variable_add_turns_to_it(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    chat = AgentSession(_agent(), store=store)
    shell = _Shell({"chat": chat})
    cells = AgentCells(shell, store=lambda: store)
    await cells.run("-s chat -o a", "One")
    await cells.run("-s chat -o b", "Two")
    assert _prompts(chat) == ["One", "Two"]
    assert (shell.user_ns["a"], shell.user_ns["b"]) == ("You said: One", "You said: Two")
    # The first cell again: its turn is asked again, what followed kept as a branch.
    await cells.run("-s chat -o a", "One")
    assert _prompts(chat) == ["One"]
    chat.flush(10)
    (branch,) = [r for r in store.list_sessions() if r.branch_of == chat.id]
    assert [m.text for m in store.load_messages(branch.id) if m.role == "user"] == [
        "One", "Two"]


async def test_a_stored_session_id_is_made_then_continued(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell({"echo": _agent()})
    await AgentCells(shell, store=lambda: store).run("-a echo -s s_report01", "First")
    # Another kernel: the id names the stored session, resumed.
    await AgentCells(shell, store=lambda: store).run("-a echo -s s_report01 -o x", "Second")
    assert shell.user_ns["x"] == "You said: Second"
    assert [m.text for m in store.load_messages("s_report01") if m.role == "user"] == [
        "First", "Second"]


async def test_a_policy_function_decides_and_the_session_gets_its_settings_back(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    agent = Agent("gated", model=ScriptedProvider([
        [{"tool_call": {"name": "python", "args": {"code": "1 + 1"}}}],
        [{"text": "Done."}]]), tools=AgentToolConfig(enabled=["python"]))
    chat = AgentSession(agent, store=store, namespace={})
    asked: list[tuple[str, dict[str, Any]]] = []

    async def judge(name: str, args: dict[str, Any]) -> bool:
        asked.append((name, args))
        return True

    shell = _Shell({"chat": chat, "judge": judge})
    cells = AgentCells(shell, store=lambda: store)
    # A budget needs a price: refused before the turn, the session as it was.
    with pytest.raises(ValueError, match="a budget needs the model's price"):
        await cells.run("-s chat --approve judge --budget 5", "Add")
    assert (chat.messages, chat.approval_policy, agent.turn_budget_usd) == ([], "reject", None)
    chat.provider.price = ModelPrice(input=1.0, output=1.0)
    await cells.run("-s chat --approve judge --budget 5", "Add")
    assert asked == [("python", {"code": "1 + 1"})]
    assert "Allowed 'python' without asking (--approve judge)." in capsys.readouterr().out
    assert chat.approval_policy == "reject"  # the session's own, back
    assert agent.turn_budget_usd is None


async def test_an_interrupted_cell_stops_its_turn(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "sessions.db")
    slow = Agent("slow", model=ScriptedProvider({"responses": [_echo],
                                                 "on_exhausted": "cycle"}, chars_per_second=5))
    chat = AgentSession(slow, store=store)
    cell = asyncio.ensure_future(AgentCells(_Shell({"chat": chat}), store=lambda: store).run(
        "-s chat", "A question that takes a while to answer"))
    await wait_until(lambda: chat.running, within=10)
    await asyncio.sleep(0.3)
    cell.cancel()  # what an interrupt of the awaiting cell does
    with pytest.raises(asyncio.CancelledError):
        await cell
    await asyncio.sleep(0.05)
    assert not chat.running
    assert chat.messages[-1].role == "assistant"
    assert chat.messages[-1].metadata.interrupted == "cancelled"


async def test_a_cell_run_again_after_its_agent_was_defined_anew_goes_on_in_its_session(
        tmp_path: Path) -> None:
    # Run All runs the cell that makes the agent again: the same -a name holds a new
    # Agent. The cell asks again in its session (with the agent as now defined), as it
    # does in a reopened notebook; only another name starts a session of its own.
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell({"echo": _agent()})
    cells = AgentCells(shell, store=lambda: store)
    await cells.run("-a echo -o x", "Hello")
    shell.user_ns["echo"] = Agent("echo", model=ScriptedProvider(
        {"responses": [[{"text": "Defined anew."}]], "on_exhausted": "cycle"}))
    await cells.run("-a echo -o x", "Hello")
    assert shell.user_ns["x"] == "Defined anew."
    records = store.list_sessions()
    (main,) = [r for r in records if r.branch_of is None]
    assert [r.branch_of for r in records if r.branch_of is not None] == [main.id]
    assert [m.text for m in store.load_messages(main.id)] == ["Hello", "Defined anew."]

    shell.user_ns["other"] = _agent("other")
    await cells.run("-a other -o x", "Hello")
    assert len([r for r in store.list_sessions() if r.branch_of is None]) == 2
