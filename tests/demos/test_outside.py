"""The offline outside-agent demo: its local Messages API, read by the real ``anthropic``
SDK (each step of the demo turn streamed as the API streams it, and the short answers to
whatever else a client asks), and the real Claude Code (``claude-agent-acp``, locked in
tests/fixtures/acp_agents) playing the whole turn against it through ``AcpAgent`` and
``AgentSession``: a three-item plan ticked off in place, thinking, an approval, the file
really written."""

from __future__ import annotations

import asyncio
import http.client
import json
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any, cast

import anthropic
import pytest

from neta_nb import AgentSession
from neta_nb.demos import (
    OUTSIDE_PROMPT,
    DemoModelServer,
    demo_model_server,
    demo_outside_agent,
)
from neta_nb.providers.scripted.demo_outside_script import NOTE_NAME, PLAN
from neta_nb.runtime.acp import AgentNotInstalledError

from ..support.outside_agents import BIN, driven, require_locked
from ..support.sessions import Recorder

TOOLS = [{"name": name, "description": name, "input_schema": {"type": "object"}}
         for name in ("TodoWrite", "Write", "Bash")]
SYSTEM = "You are Claude Code.\nPrimary working directory: /work/here\n"


@pytest.fixture
def server() -> Iterator[DemoModelServer]:
    running = demo_model_server()
    yield running
    running.stop()


def _streamed(client: anthropic.Anthropic, messages: list[dict[str, Any]]
              ) -> tuple[anthropic.types.Message, list[str]]:
    kinds: list[str] = []
    with client.messages.stream(model="claude-sonnet-4-5", max_tokens=1000, system=SYSTEM,
                                tools=TOOLS, messages=messages) as stream:  # type: ignore[arg-type]
        for event in stream:
            if event.type == "content_block_delta":
                kinds.append(event.delta.type)
        return stream.get_final_message(), kinds


def _result(tool_use: Any, *, is_error: bool = False) -> dict[str, Any]:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": tool_use.id,
                                         "content": "refused" if is_error else "ok",
                                         "is_error": is_error}]}


def _todos(call: Any) -> list[dict[str, str]]:
    return cast(list[dict[str, str]], call.input["todos"])


def _assistant(message: anthropic.types.Message) -> dict[str, Any]:
    return {"role": "assistant", "content": [block.model_dump(exclude_none=True)
                                             for block in message.content]}


def test_the_server_streams_the_demo_turn_step_by_step(server: DemoModelServer) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="offline-demo", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": OUTSIDE_PROMPT}]

    plan, kinds = _streamed(client, messages)
    assert plan.stop_reason == "tool_use"
    thinking, call = plan.content
    assert thinking.type == "thinking" and thinking.signature
    assert thinking.thinking.startswith("The user wants a short note in a file. I will plan")
    assert thinking.thinking.endswith(" then write the file in my working directory.")
    # Streamed in pieces: several thinking deltas, then the call's input as partial JSON.
    assert kinds.count("thinking_delta") >= 3 and "input_json_delta" in kinds
    assert call.type == "tool_use" and call.name == "TodoWrite"
    assert [(t["content"], t["status"]) for t in _todos(call)] == list(
        zip(PLAN, ["in_progress", "pending", "pending"], strict=True))
    assert plan.usage.input_tokens > 0 and plan.usage.output_tokens > 0

    messages += [_assistant(plan), _result(call)]
    write, _ = _streamed(client, messages)
    [thought, call] = write.content
    assert thought.type == "thinking" and call.type == "tool_use"
    # In the working directory the system prompt names.
    assert call.name == "Write" and call.input["file_path"] == f"/work/here/{NOTE_NAME}"
    assert str(call.input["content"]).startswith("# Notes\n")

    messages += [_assistant(write), _result(call)]
    done, _ = _streamed(client, messages)
    [call] = done.content
    assert call.type == "tool_use" and call.name == "TodoWrite"
    assert [t["status"] for t in _todos(call)] == ["completed"] * 3

    messages += [_assistant(done), _result(call)]
    answer, kinds = _streamed(client, messages)
    assert answer.stop_reason == "end_turn" and set(kinds) == {"text_delta"}
    assert answer.content[0].type == "text"
    # The pieces streamed make up the text exactly (nothing added between or after them).
    assert answer.content[0].text == (f"Done: `{NOTE_NAME}` is in my working directory with "
                                      "a three-line note, and the plan is ticked off.")

    # A new prompt starts the demo again.
    again, _ = _streamed(client, [*messages, _assistant(answer),
                                  {"role": "user", "content": "Once more."}])
    assert [b.type for b in again.content] == ["thinking", "tool_use"]
    assert server.model_calls == 5


def test_a_refused_write_is_said_in_the_answer(server: DemoModelServer) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="offline-demo", max_retries=0)
    messages: list[dict[str, Any]] = [{"role": "user", "content": OUTSIDE_PROMPT}]
    for refused in (False, True, False):
        step, _ = _streamed(client, messages)
        messages += [_assistant(step), _result(step.content[-1], is_error=refused)]
    answer, _ = _streamed(client, messages)
    assert answer.content[0].type == "text"
    assert answer.content[0].text.startswith(f"I did not write `{NOTE_NAME}`")
    assert "refused" in answer.content[0].text


def test_other_requests_get_short_valid_answers(server: DemoModelServer) -> None:
    client = anthropic.Anthropic(base_url=server.url, api_key="offline-demo", max_retries=0)
    # A call without the demo's tools (a title): a short text; not streamed: whole.
    title = client.messages.create(model="claude-haiku-4-5", max_tokens=20,
                                   messages=[{"role": "user", "content": "Name this chat"}])
    assert title.model == "claude-haiku-4-5"
    assert [(b.type, getattr(b, "text", None)) for b in title.content] == [
        ("text", "Offline demo")]
    # Streamed, the pieces make up the same text.
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=20, messages=[
            {"role": "user", "content": "Name this chat"}]) as stream:
        assert stream.get_final_text() == "Offline demo"
    counted = client.messages.count_tokens(model="claude-sonnet-4-5",
                                           messages=[{"role": "user", "content": "hello"}])
    assert counted.input_tokens > 0
    assert [m.id for m in client.models.list()] == ["claude-sonnet-4-5"]
    host, port = server.url.removeprefix("http://").split(":")
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("HEAD", "/")
    assert connection.getresponse().status == 200
    connection.close()
    with pytest.raises(anthropic.NotFoundError, match="the offline demo has no /v1/files"):
        client.get("/v1/files", cast_to=object)
    connection = http.client.HTTPConnection(host, int(port), timeout=10)
    connection.request("POST", "/v1/messages", body=b"[not json",
                       headers={"Content-Type": "application/json"})
    response = connection.getresponse()
    assert response.status == 400
    assert json.loads(response.read())["error"]["message"] == "the body is not a JSON object"
    connection.close()


def test_stop_frees_the_port() -> None:
    server = demo_model_server()
    port = int(server.url.rsplit(":", 1)[1])
    assert server.running and repr(server) == f"DemoModelServer(serving {server.url})"
    server.stop()
    server.stop()  # again: nothing
    assert repr(server) == "DemoModelServer(stopped)"
    with socket.socket() as probe:
        assert probe.connect_ex(("127.0.0.1", port)) != 0
    with pytest.raises(ValueError, match="the demo model server is stopped"):
        demo_outside_agent(server=server, search=BIN)


def test_a_missing_agent_is_said_with_how_to_install_it(tmp_path: Path) -> None:
    with pytest.raises(AgentNotInstalledError,
                       match=r"npm install -g @zed-industries/claude-agent-acp@0\.23\.1"):
        demo_outside_agent(tmp_path / "work", search=tmp_path)
    # Nothing was made for it.
    assert not (tmp_path / "work").exists()


async def test_claude_code_plays_the_demo_turn(tmp_path: Path) -> None:
    require_locked(BIN / "claude-agent-acp", "the locked Claude Code agent")
    server = demo_model_server()
    work = tmp_path / "work"
    try:
        session = AgentSession(demo_outside_agent(work, server=server, search=BIN))
        recorder = Recorder()
        session.subscribe(recorder)
        session.attach_approver()
        asked: list[Any] = []

        def allow(event: Any) -> None:
            if event.type == "approval_request":
                asked.append(event)
                asyncio.get_running_loop().call_soon(
                    lambda: session.approve(event.id, "allow_once"))

        session.subscribe(allow)
        async with driven(session):
            answer = await asyncio.wait_for(session.run(OUTSIDE_PROMPT), 120)
    finally:
        server.stop()
    # The file is really written, in the agent's working directory.
    assert (work / NOTE_NAME).read_text().startswith("# Notes\n")
    assert answer is not None and answer.text.startswith(f"Done: `{NOTE_NAME}`")
    # One plan of three items, updated in place to all done.
    updates = recorder.of("todo_update")
    assert [[t["status"] for t in u.todos] for u in updates] == [
        ["in_progress", "pending", "pending"], ["completed", "completed", "completed"]]
    assert [t["content"] for t in updates[-1].todos] == PLAN
    # Thinking streamed, twice (before the plan, before the write).
    assert len(recorder.of("thinking_done")) == 2
    thought = "".join(e.text for e in recorder.of("thinking_delta"))
    assert "plan the three steps" in thought and "needs the user's permission" in thought
    # The write was the one call asked about, and its card shows the diff.
    [call] = recorder.of("tool_call")
    assert call.name == "Write"
    assert [e.id for e in asked] == [call.id]
    assert asked[0].args["file_path"] == str(work / NOTE_NAME)
    [result] = recorder.of("tool_result")
    assert not result.is_error and f"+++ {work / NOTE_NAME}" in result.result
    assert recorder.of("done")[-1].stop_reason == "end_turn"
