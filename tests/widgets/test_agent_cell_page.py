"""An ``%%agent`` cell run from a notebook page (a fake one: the page's part is the cell id
it sends with each run): the cell shows its session's chat view and returns at once, the
turn going on; ``-o`` is set when it ends; a run of the same cell again — its text edited
or not — asks again in the same session, the earlier turn kept as a branch."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from neta_nb import Agent, ScriptedProvider, SessionStore
from neta_nb.messages import Message
from neta_nb.widgets.agent_cell import AgentCells
from neta_nb.widgets.chat.view import ChatView


def _echo(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"text": f"You said: {messages[-1].text}"}]


class _Kernel:
    def __init__(self) -> None:
        self.cell_id = "cell-1"

    def get_parent(self) -> dict[str, Any]:
        return {"header": {"msg_type": "execute_request"},
                "metadata": {"cellId": self.cell_id}}


class _Shell:
    def __init__(self) -> None:
        self.kernel = _Kernel()
        self.user_ns: dict[str, Any] = {"analyst": Agent("analyst", model=ScriptedProvider(
            {"responses": [_echo], "on_exhausted": "cycle"}))}


async def _answer(shell: _Shell, name: str) -> Any:
    for _ in range(500):
        if name in shell.user_ns:
            return shell.user_ns.pop(name)
        await asyncio.sleep(0.01)
    raise AssertionError(f"{name} was never set")


async def test_a_page_cell_shows_its_chat_and_a_rerun_is_a_retry(tmp_path: Path,
                                                                monkeypatch: Any) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("neta_nb.widgets.agent_cell.cell.display", shown.append)
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    cells = AgentCells(shell, store=lambda: store)

    await cells.run("-a analyst -o answer", "Hello")
    (view,) = shown
    assert isinstance(view, ChatView)
    session = view.session
    assert session is not None and session.running  # the cell returned, the turn runs on
    assert await _answer(shell, "answer") == "You said: Hello"
    assert session.agent is not shell.user_ns["analyst"]  # the cell's own copy

    # The same cell again, its text edited: the same session asks anew.
    await cells.run("-a analyst -o answer", "Hello again")
    assert await _answer(shell, "answer") == "You said: Hello again"
    assert shown[1].session is session
    assert [m.text for m in session.messages if m.role == "user"] == ["Hello again"]
    session.flush(10)
    records = store.list_sessions()
    assert sorted(r.branch_of or "" for r in records) == ["", session.id]
    (branch,) = [r for r in records if r.branch_of == session.id]
    assert [m.text for m in store.load_messages(branch.id)] == ["Hello", "You said: Hello"]

    # Another cell: a session of its own.
    shell.kernel.cell_id = "cell-2"
    await cells.run("-a analyst -o other", "Hi")
    assert await _answer(shell, "other") == "You said: Hi"
    assert shown[2].session is not session


async def test_a_rerun_while_the_turn_runs_stops_it_first(tmp_path: Path,
                                                          monkeypatch: Any) -> None:
    shown: list[Any] = []
    monkeypatch.setattr("neta_nb.widgets.agent_cell.cell.display", shown.append)
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    shell.user_ns["slow"] = Agent("slow", model=ScriptedProvider(
        {"responses": [_echo], "on_exhausted": "cycle"}, chars_per_second=20))
    cells = AgentCells(shell, store=lambda: store)
    await cells.run("-a slow", "A long question")
    session = shown[0].session
    await asyncio.sleep(0.2)
    assert session.running
    await cells.run("-a slow -o answer", "Short")
    assert await _answer(shell, "answer") == "You said: Short"
    assert [m.text for m in session.messages if m.role == "user"] == ["Short"]
