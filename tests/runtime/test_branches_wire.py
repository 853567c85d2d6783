"""Branches against real SDKs and real signals: after an edit (or a retry), the next
request the OpenAI and Anthropic SDKs send holds exactly the chosen branch, then the new
prompt; a kernel SIGKILLed in the middle of a fork leaves the parent as it was and the
branch either absent or whole enough to resume."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog
from neta_nb.messages import valid_conversation
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
from ..support.timing import poll_until

ROOT = Path(__file__).resolve().parents[2]


@pytest.fixture
async def server() -> Any:
    async with SSEServer() as running:
        yield running


def _texts(request_json: dict[str, Any]) -> list[tuple[str, str]]:
    """(role, text) of each message a request carried (either wire format)."""
    found = []
    for message in request_json["messages"]:
        content = message["content"]
        if isinstance(content, list):
            content = "".join(block.get("text", "") for block in content
                              if block.get("type") == "text")
        found.append((message["role"], content))
    return [item for item in found if item[0] != "system"]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_after_an_edit_the_next_request_is_exactly_the_chosen_branch(
        server: SSEServer, wire: str) -> None:
    def reply(text: str) -> Any:
        if wire == "openai":
            return OpenAIStream(model="gpt-4o").text([text]).finish().response()
        return AnthropicStream().text([text]).finish().response()

    provider: Any = (OpenAIProvider("gpt-4o", api_key="k", base_url=server.base_url,
                                    max_retries=0) if wire == "openai" else
                     AnthropicProvider("claude-sonnet-4-5", api_key="k",
                                       base_url=server.base_url, max_retries=0))
    session = AgentSession(Agent("a", model=provider), ToolCatalog(),
                           store=SessionStore(":memory:"))
    for text in ("Cats.", "More cats.", "Dogs.", "Again dogs."):
        server.add(reply(text))
    await session.run("About cats")
    await session.run("More")
    await session.edit(session.messages[2].id, "About dogs instead")
    assert _texts(server.requests[-1].json) == [
        ("user", "About cats"), ("assistant", "Cats."), ("user", "About dogs instead")]
    await session.retry()
    assert _texts(server.requests[-1].json) == _texts(server.requests[-2].json)
    assert [m.text for m in session.messages] == ["About cats", "Cats.",
                                                  "About dogs instead", "Again dogs."]


KILLED_FORK = textwrap.dedent("""
    import os, sys, asyncio
    sys.path.insert(0, {root!r})
    from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
    from neta_nb.runtime import branches

    store = SessionStore({db!r})
    session = AgentSession.resume({session_id!r}, store)
    real = branches.TodoStore.hydrate_from_history

    def stop_here(messages):  # the branch's messages are queued: some stored, then killed
        session_copy = real(messages)
        import time; time.sleep(0.5)
        print("forking", flush=True)
        import time; time.sleep(60)
        return session_copy

    branches.TodoStore.hydrate_from_history = stop_here
    session.fork(session.messages[-1].id)
""")


def test_a_kernel_killed_mid_fork_leaves_both_sessions_valid(tmp_path: Path) -> None:
    db = tmp_path / "s.db"
    store = SessionStore(db)
    session = AgentSession(Agent("a", model=None), store=store)
    import asyncio

    for n in range(40):
        asyncio.run(session.run(f"question {n}"))
    session.flush()
    before = [m.model_dump_json() for m in store.load_messages(session.id)]
    store.close()
    child = subprocess.Popen([sys.executable, "-c", KILLED_FORK.format(
        root=str(ROOT), db=str(db), session_id=session.id)], stdout=subprocess.PIPE,
        text=True, start_new_session=True)
    try:
        assert child.stdout is not None and child.stdout.readline().strip() == "forking"
        os.killpg(child.pid, signal.SIGKILL)
    finally:
        child.wait(30)
        if child.stdout is not None:
            child.stdout.close()
    store = SessionStore(db)
    poll_until(lambda: store.get_session(session.id) is not None, 10, "the store")
    assert [m.model_dump_json() for m in store.load_messages(session.id)] == before
    parent = AgentSession.resume(session.id, store)
    assert [m.model_dump_json() for m in parent.messages] == before
    others = [record for record in store.list_sessions() if record.id != session.id]
    assert others  # the fork had begun storing the branch
    for record in others:  # what the killed fork stored, a branch from its first write
        assert record.branch_of == session.id
        branch = AgentSession.resume(record.id, store)
        assert valid_conversation(branch.messages) == branch.messages
        texts = [m.text for m in branch.messages]
        assert texts == [m.text for m in parent.messages][: len(texts)]
