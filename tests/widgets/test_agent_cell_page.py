"""An ``%%agent`` cell run from a notebook page — a fake one: the cell id it sends with
each run and the cells' metadata it keeps, reached through the cell's chat view (a fake
view here, with the page as its bridge). The cell shows its chat and returns at once, the
turn going on; ``-o`` is set when it ends; a run of the same cell again — edited or not —
asks again in the same session, the earlier turn kept as a branch; the session's id is
kept in the cell's metadata, and a reopened notebook (a new kernel) goes on with it."""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
from neta_nb.messages import Message
from neta_nb.tools.notebook.page import NotebookError
from neta_nb.widgets.agent_cell import AgentCells
from neta_nb.widgets.chat.view import ChatView

from ..support.timing import wait_until


def _echo(messages: Sequence[Message]) -> list[dict[str, str]]:
    return [{"text": f"You said: {messages[-1].text}"}]


class _Page:
    """The notebook page: each cell's metadata, read and written as the extension does."""

    def __init__(self) -> None:
        self.metadata: dict[str, dict[str, Any]] = {}
        self.answers = True
        self.available = True

    async def request(self, op: str, args: dict[str, Any], *,
                      wait: float | None = None) -> dict[str, Any]:
        if not self.answers:
            raise NotebookError("no_page", "no view with the notebook extension is open")
        assert op == "cell_metadata" and args["key"] == "neta_nb"
        cell = self.metadata.setdefault(args["cell_id"], {})
        if "value" in args:
            cell[args["key"]] = args["value"]
        return {"value": cell.get(args["key"])}


class _Kernel:
    def __init__(self) -> None:
        self.cell_id = "cell-1"

    def get_parent(self) -> dict[str, Any]:
        return {"header": {"msg_type": "execute_request"},
                "metadata": {"cellId": self.cell_id}}


class _Shell:
    def __init__(self) -> None:
        self.kernel = _Kernel()
        self.user_ns: dict[str, Any] = {
            "analyst": Agent("analyst", model=ScriptedProvider(
                {"responses": [_echo], "on_exhausted": "cycle"})),
            "slow": Agent("slow", model=ScriptedProvider(
                {"responses": [_echo], "on_exhausted": "cycle"}, chars_per_second=20))}


@pytest.fixture
def page(monkeypatch: pytest.MonkeyPatch) -> tuple[_Page, list[Any]]:
    """The page, and the chat views the cells showed on it."""
    the_page, shown = _Page(), list[Any]()

    class View:  # the chat view: its bridge is the page
        def __init__(self, session: AgentSession) -> None:
            self.notices: list[str] = []
            self.bind(session)

        def bind(self, session: AgentSession) -> None:
            self.session = session
            session.notebook_page = the_page

        def show_notice(self, text: str, *, tone: str = "error") -> None:
            self.notices.append(text)

    monkeypatch.setattr("neta_nb.widgets.agent_cell.cell.ChatView", View)
    monkeypatch.setattr("neta_nb.widgets.agent_cell.cell.display", shown.append)
    return the_page, shown


async def _answer(shell: _Shell, name: str) -> Any:
    await wait_until(lambda: name in shell.user_ns, within=20)
    await asyncio.sleep(0.05)  # the metadata is written just after
    return shell.user_ns.pop(name)


def _kept(page: _Page, cell_id: str) -> dict[str, Any]:
    return dict(page.metadata[cell_id]["neta_nb"]["agent_cell"])


def _prompts(session: AgentSession) -> list[str]:
    return [m.text for m in session.messages if m.role == "user"]


async def test_a_page_cell_shows_its_chat_keeps_its_session_and_a_rerun_is_a_retry(
        tmp_path: Path, page: tuple[_Page, list[Any]]) -> None:
    the_page, shown = page
    the_page.metadata["cell-1"] = {"neta_nb": {"other": 1}}
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    cells = AgentCells(shell, store=lambda: store)

    await cells.run("-a analyst -o answer", "Hello")
    assert len(shown) == 1  # the cell returned at once, its chat shown
    assert "answer" not in shell.user_ns
    assert await _answer(shell, "answer") == "You said: Hello"
    session = shown[0].session
    assert session.store is store
    assert session.agent is not shell.user_ns["analyst"]  # the cell's own copy
    assert _kept(the_page, "cell-1") == {"session_id": session.id,
                                          "prompt_id": session.messages[0].id}
    assert the_page.metadata["cell-1"]["neta_nb"]["other"] == 1  # the rest is kept

    # The same cell again, its text edited: the same session asks anew, in the same chat
    # view shown again.
    await cells.run("-a analyst -o answer", "Hello again")
    assert await _answer(shell, "answer") == "You said: Hello again"
    assert shown[1] is shown[0] and shown[1].session is session
    assert _prompts(session) == ["Hello again"]
    assert _kept(the_page, "cell-1")["prompt_id"] == session.messages[0].id
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
    assert _kept(the_page, "cell-2")["session_id"] == shown[2].session.id


async def test_a_reopened_notebook_goes_on_with_the_cells_session(
        tmp_path: Path, page: tuple[_Page, list[Any]]) -> None:
    _, shown = page
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    await AgentCells(shell, store=lambda: store).run("-a analyst -o answer", "Hello")
    assert await _answer(shell, "answer") == "You said: Hello"
    first = shown[0].session
    first.flush(10)

    # A new kernel (the notebook reopened): the page still has the cell's metadata.
    shell = _Shell()
    await AgentCells(shell, store=lambda: store).run("-a analyst -o answer", "Hello again")
    assert await _answer(shell, "answer") == "You said: Hello again"
    resumed = shown[1].session
    assert resumed.id == first.id and resumed is not first
    assert _prompts(resumed) == ["Hello again"]
    resumed.flush(10)
    records = store.list_sessions()
    assert sorted(r.branch_of or "" for r in records) == ["", first.id]


async def test_without_an_answer_from_the_page_the_cell_starts_a_session(
        tmp_path: Path, page: tuple[_Page, list[Any]]) -> None:
    the_page, shown = page
    the_page.answers = False
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    await AgentCells(shell, store=lambda: store).run("-a analyst -o answer", "Hello")
    assert await _answer(shell, "answer") == "You said: Hello"
    assert shown[0].session.store is store
    assert the_page.metadata == {}


async def test_a_rerun_while_the_turn_runs_stops_it_first(
        tmp_path: Path, page: tuple[_Page, list[Any]]) -> None:
    _, shown = page
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    cells = AgentCells(shell, store=lambda: store)
    await cells.run("-a slow", "A long question")
    await wait_until(lambda: shown[0].session.running, within=10)
    session = shown[0].session
    assert session.running
    await cells.run("-a slow -o answer", "Short")
    assert await _answer(shell, "answer") == "You said: Short"
    assert _prompts(session) == ["Short"]


async def test_the_real_chat_view_with_no_view_open_on_the_page(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # The chat view itself (not the fake above): no view of it opens here, so its bridge
    # gives up after its grace and the cell starts a session of its own; a rerun shows the
    # same widget again.
    shown: list[Any] = []
    monkeypatch.setattr("neta_nb.widgets.agent_cell.cell.display", shown.append)
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    cells = AgentCells(shell, store=lambda: store)
    await cells.run("-a analyst -o answer", "Hello")
    await wait_until(lambda: "answer" in shell.user_ns, within=30)
    assert shell.user_ns.pop("answer") == "You said: Hello"
    (view,) = shown
    assert isinstance(view, ChatView) and view.session is not None
    assert view.session.store is store
    await cells.run("-a analyst -o answer", "Again")
    assert await _answer(shell, "answer") == "You said: Again"
    assert shown == [view, view]
    view.close()


async def test_a_turn_stopped_on_the_page_sets_no_answer(
        tmp_path: Path, page: tuple[_Page, list[Any]]) -> None:
    # The chat's Stop mid-answer: what streamed is kept in the chat, but it is no answer.
    _, shown = page
    store = SessionStore(tmp_path / "sessions.db")
    shell = _Shell()
    await AgentCells(shell, store=lambda: store).run("-a slow -o answer", "A long question")
    await wait_until(lambda: (shown[0].session.streaming_message is not None
                              and shown[0].session.streaming_message.text), within=20)
    session = shown[0].session
    assert session.streaming_message is not None and session.streaming_message.text
    session.cancel()
    assert await _answer(shell, "answer") is None
    assert session.messages[-1].metadata.interrupted == "cancelled"
    assert session.messages[-1].text  # kept in the chat
