"""A real outside agent: Gemini CLI over the Agent Client Protocol (``@google/gemini-cli``
``--acp``, locked in tests/fixtures/acp_agents: ``npm ci`` there, as scripts/test.sh
does), driven by ``AgentSession(AcpAgent.gemini(...))``. Its model is the local stand-in
server (tests/providers/sse_server.py) answering Gemini's ``streamGenerateContent`` with
what the test scripts.

Without the locked agent (or Node.js) the tests skip, saying so; under ``CI`` they fail
instead: the CI installs the fixture, so they must run there.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AcpAgent, AgentSession
from neta_nb.events import Event

from ...providers.sse_server import RecordedRequest, ScriptedHTTPResponse, SSEServer
from ...support.outside_agents import BIN, driven, require_locked


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_locked(BIN / "gemini", "the locked Gemini CLI")


def _gemini(parts: list[dict[str, Any]]) -> ScriptedHTTPResponse:
    data = {"candidates": [{"content": {"parts": parts, "role": "model"},
                            "finishReason": "STOP", "index": 0}],
            "usageMetadata": {"promptTokenCount": 30, "candidatesTokenCount": 7,
                              "totalTokenCount": 37}}
    return ScriptedHTTPResponse(status=200, headers={"Content-Type": "text/event-stream"},
                                chunks=[f"data: {json.dumps(data)}\n\n".encode()])


class WriteScript:
    """Asks to write ``target`` once, then answers in words; other calls get a word."""

    def __init__(self, target: Path) -> None:
        self.target = target

    def __call__(self, request: RecordedRequest) -> ScriptedHTTPResponse:
        body = request.json
        contents = body.get("contents", []) if isinstance(body, dict) else []
        answered = any("functionResponse" in part for content in contents
                       for part in content.get("parts", []))
        if "SCRIPT:write" in json.dumps(contents) and not answered:
            return _gemini([{"functionCall": {"name": "write_file", "args": {
                "file_path": str(self.target), "content": "x = 1\n"}}}])
        return _gemini([{"text": "Written."}])


@pytest.fixture
async def server() -> AsyncIterator[SSEServer]:
    async with SSEServer() as server:
        server.check_history = False
        yield server


async def test_gemini_writes_a_file_after_the_users_approval(server: SSEServer,
                                                             tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    target = work / "x.py"
    server.responder = WriteScript(target)
    agent = AcpAgent.gemini(search=BIN, cwd=work, env={
        "GEMINI_API_KEY": "test-key", "GOOGLE_GEMINI_BASE_URL": server.base_url,
        "HOME": str(tmp_path / "home")})
    session = AgentSession(agent)
    session.attach_approver()
    events: list[Event] = []

    def follow(event: Event) -> None:
        events.append(event)
        if event.type == "approval_request":
            call_id = event.id
            asyncio.get_running_loop().call_soon(
                lambda: session.approve(call_id, "allow_once"))

    session.subscribe(follow)
    async with driven(session):
        answer = await asyncio.wait_for(session.run("SCRIPT:write Write x.py."), 120)
    assert target.read_text() == "x = 1\n"
    assert answer is not None and answer.text.endswith("Written.")
    [asked] = [e for e in events if e.type == "approval_request"]
    # A card for the call, whether or not a tool_call came before the request.
    card = next(e for m in session.messages for e in m.metadata.tool_executions
                if e.id == asked.id)
    assert card.status == "done"
    assert [e.id for e in events if e.type == "tool_call"] == [asked.id]
