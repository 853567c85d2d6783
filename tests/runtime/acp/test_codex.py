"""A real outside agent: Codex over the Agent Client Protocol (``@zed-industries/codex-acp``,
locked in tests/fixtures/acp_agents: ``npm ci`` there, as scripts/test.sh does), driven
by ``AgentSession(AcpAgent.codex(...))``. Its model is a local stand-in for the Responses
API (a model provider of its ``config.toml``) that answers with what the test scripts.

Without the locked agent (or Node.js) the tests skip, saying so; under ``CI`` they fail
instead: the CI installs the fixture, so they must run there.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import psutil
import pytest
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse
from starlette.routing import Route

from neta_nb import AcpAgent, AgentSession
from neta_nb.events import Event

from ...support.asgi_server import served
from ...support.outside_agents import BIN, driven, gone, require_locked


@pytest.fixture(autouse=True)
def _installed() -> None:
    require_locked(BIN / "codex-acp", "the locked Codex agent")


class Responses:
    """The Responses API as Codex streams it: each request gets the next of ``turns`` —
    ``{"call": name, "args": {...}}`` or ``{"text": ...}`` — streamed in pieces."""

    def __init__(self) -> None:
        self.turns: list[dict[str, Any]] = []
        self.requests: list[dict[str, Any]] = []
        self.port = 0

    async def respond(self, request: Request) -> Response:
        body = await request.json()
        self.requests.append(body)
        turn = self.turns.pop(0) if self.turns else {"text": "Nothing more."}
        number = len(self.requests)
        events: list[dict[str, Any]] = [
            {"type": "response.created", "response": {"id": f"resp_{number}"}}]
        if "call" in turn:
            item: dict[str, Any] = {
                "type": "function_call", "id": f"fc_{number}", "call_id": f"call_{number}",
                "name": turn["call"], "arguments": json.dumps(turn.get("args", {}))}
        else:
            item = {"type": "message", "role": "assistant", "id": f"msg_{number}",
                    "content": [{"type": "output_text", "text": turn["text"]}]}
            events += [{"type": "response.output_item.added", "output_index": 0,
                        "item": {**item, "content": []}}]
            events += [{"type": "response.output_text.delta", "item_id": item["id"],
                        "output_index": 0, "content_index": 0, "delta": piece}
                       for piece in re.findall(r"\S+\s*", turn["text"])]
        events += [
            {"type": "response.output_item.done", "output_index": 0, "item": item},
            {"type": "response.completed", "response": {
                "id": f"resp_{number}",
                "usage": {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}}}]

        async def stream() -> AsyncIterator[str]:
            for event in events:
                yield f"event: {event['type']}\ndata: {json.dumps(event)}\n\n"

        return StreamingResponse(stream(), media_type="text/event-stream")


@pytest.fixture
def responses() -> Iterator[Responses]:
    model = Responses()
    app = Starlette(routes=[
        Route("/v1/responses", model.respond, methods=["POST"]),
        Route("/v1/models", lambda _r: JSONResponse({"object": "list", "data": []}))])
    with served(app) as model.port:
        yield model


@pytest.fixture
def codex(responses: Responses, tmp_path: Path) -> AcpAgent:
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


async def test_codex_plans_answers_and_leaves_no_process(responses: Responses,
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
