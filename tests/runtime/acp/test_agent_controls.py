"""An outside agent's ``/`` commands and session modes in the chat view: the view's traits
follow what the scripted agent says (``scripted_agent.py``), a mode chosen in the selector
is asked of the agent with ``session/set_mode`` and its ``current_mode_update`` followed,
a refused one is said and the shown mode stays the agent's."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AcpAgent, Agent, AgentSession, ModelPrice
from neta_nb.widgets import ChatView
from neta_nb.widgets.base import NetaWidget

from ...support.outside_agents import driven

AGENT = Path(__file__).with_name("scripted_agent.py")
MODES = {"currentModeId": "default", "availableModes": [
    {"id": "default", "name": "Default", "description": "Ask before edits"},
    {"id": "acceptEdits", "name": "Accept edits"},
    {"id": "plan", "name": "Plan", "description": "No changes"}]}
COMMANDS = [{"name": "review", "description": "Review the changes"},
            {"name": "init", "description": "Write AGENTS.md"}]
SAID = [{"update": {"sessionUpdate": "agent_message_chunk",
                    "content": {"type": "text", "text": "Done."}}}]


def scripted(tmp_path: Path, **script: Any) -> AcpAgent:
    path = tmp_path / "script.json"
    path.write_text(json.dumps({"steps": SAID, **script}))
    return AcpAgent("scripted", [sys.executable, str(AGENT), str(path)], cwd=tmp_path,
                    price=ModelPrice(input=1, output=1))


def calls(tmp_path: Path) -> list[str]:
    return (tmp_path / "script.json.calls").read_text().splitlines()


class Asker:
    """Requests as a view sends them; the replies the widget sends back."""

    def __init__(self, chat: ChatView, sent: list[dict[str, Any]]) -> None:
        self.chat, self.sent = chat, sent

    def __call__(self, kind: str, **payload: Any) -> dict[str, Any]:
        request_id = f"r{len(self.sent)}"
        self.chat._on_custom_message(self.chat, {"kind": kind, "id": request_id, **payload},
                                     [])
        (reply,) = [m for m in self.sent
                    if m.get("kind") == "reply" and m["id"] == request_id]
        return reply


async def until(check: Any, within: float = 10) -> None:
    deadline = asyncio.get_running_loop().time() + within
    while not check():
        assert asyncio.get_running_loop().time() < deadline, "never happened"
        await asyncio.sleep(0.02)


@pytest.fixture
def sent(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = []
    monkeypatch.setattr(NetaWidget, "send",
                        lambda self, content, buffers=None: messages.append(content))
    return messages


async def test_commands_and_modes_reach_the_view_and_a_chosen_mode_is_set(
        tmp_path: Path, sent: list[dict[str, Any]]) -> None:
    session = AgentSession(scripted(tmp_path, modes=MODES, commands=COMMANDS, by_prompt={
        "go": SAID, "switch": [{"update": {"sessionUpdate": "current_mode_update",
                                           "currentModeId": "acceptEdits"}}, *SAID],
        "back": [{"update": {"sessionUpdate": "current_mode_update",
                             "currentModeId": "default"}}, *SAID]}))
    chat = ChatView(session)
    ask = Asker(chat, sent)
    assert (chat.agent_commands, chat.agent_modes, chat.agent_mode) == ([], [], "")
    async with driven(session) as outside:
        await asyncio.wait_for(session.run("go"), 30)
        # Said as the session opened: commands after the answer to session/new.
        await until(lambda: len(chat.agent_commands) == 2)
        assert chat.agent_commands == [
            {"name": "review", "description": "Review the changes"},
            {"name": "init", "description": "Write AGENTS.md"}]
        assert chat.agent_modes == [
            {"id": "default", "name": "Default", "description": "Ask before edits"},
            {"id": "acceptEdits", "name": "Accept edits", "description": ""},
            {"id": "plan", "name": "Plan", "description": "No changes"}]
        assert chat.agent_mode == "default"
        assert ask("set_mode", mode="plan")["result"] == {"mode": "plan"}
        await until(lambda: chat.agent_mode == "plan")
        assert "session/set_mode" in calls(tmp_path)
        assert chat.mode_error == ""
        # The agent's own change of mode (its current_mode_update) is followed too.
        await asyncio.wait_for(session.run("switch"), 30)
        assert chat.agent_mode == "acceptEdits"
        # A mode the agent does not offer is refused before it is asked.
        assert "unknown mode 'yolo'" in ask("set_mode", mode="yolo")["error"]
        # Another session shown: its agent's (none); the first one's changes stay there.
        chat.bind(AgentSession(Agent("native", model="scripted")))
        assert (chat.agent_commands, chat.agent_modes, chat.agent_mode) == ([], [], "")
        await asyncio.wait_for(session.run("back"), 30)
        assert chat.agent_mode == "" and outside.mode == "default"
        chat.bind(session)
        assert chat.agent_mode == "default" and len(chat.agent_commands) == 2
    chat.close()


async def test_a_refused_mode_is_said_and_the_shown_mode_stays(
        tmp_path: Path, sent: list[dict[str, Any]]) -> None:
    session = AgentSession(scripted(tmp_path, modes=MODES, refuse_modes=["plan"]))
    chat = ChatView(session)
    ask = Asker(chat, sent)
    async with driven(session) as outside:
        await asyncio.wait_for(session.run("go"), 30)
        assert chat.agent_mode == "default"
        assert ask("set_mode", mode="plan")["result"] == {"mode": "plan"}
        await until(lambda: chat.mode_error != "")
        assert "'plan'" in chat.mode_error and "not allowed now" in chat.mode_error
        assert chat.agent_mode == "default"
        assert outside.mode == "default"
        # The next choice starts clean.
        ask("set_mode", mode="acceptEdits")
        await until(lambda: chat.agent_mode == "acceptEdits")
        assert chat.mode_error == ""
    chat.close()


async def test_a_mode_chosen_is_asked_for_again_when_the_agent_starts_anew(
        tmp_path: Path, sent: list[dict[str, Any]]) -> None:
    session = AgentSession(scripted(tmp_path, modes=MODES))
    chat = ChatView(session)
    ask = Asker(chat, sent)
    async with driven(session) as outside:
        await asyncio.wait_for(session.run("go"), 30)
        ask("set_mode", mode="plan")
        await until(lambda: chat.agent_mode == "plan")
        await outside.aclose()  # as after a Stop: the next turn starts the agent again
        (tmp_path / "script.json.calls").write_text("")
        await asyncio.wait_for(session.run("again"), 30)
        assert calls(tmp_path)[:3] == ["initialize", "session/new", "session/set_mode"]
        assert chat.agent_mode == "plan"
    chat.close()


async def test_a_native_agents_chat_has_no_commands_or_modes(
        sent: list[dict[str, Any]]) -> None:
    chat = ChatView(AgentSession(Agent("native", model="scripted")))
    ask = Asker(chat, sent)
    assert (chat.agent_commands, chat.agent_modes, chat.agent_mode) == ([], [], "")
    assert "offers no session modes" in ask("set_mode", mode="plan")["error"]
    chat.close()
