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

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog
from neta_nb.messages import valid_conversation
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer, history_problem
from ..support.sessions import plus
from ..support.timing import poll_until

ROOT = Path(__file__).resolve().parents[2]


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
        sse_server: SSEServer, wire: str) -> None:
    def reply(text: str) -> Any:
        if wire == "openai":
            return OpenAIStream(model="gpt-4o").text([text]).finish().response()
        return AnthropicStream().text([text]).finish().response()

    provider: Any = (OpenAIProvider("gpt-4o", api_key="k", base_url=sse_server.base_url,
                                    max_retries=0) if wire == "openai" else
                     AnthropicProvider("claude-sonnet-4-5", api_key="k",
                                       base_url=sse_server.base_url, max_retries=0))
    session = AgentSession(Agent("a", model=provider), ToolCatalog(),
                           store=SessionStore(":memory:"))
    for text in ("Cats.", "More cats.", "Dogs.", "Again dogs."):
        sse_server.add(reply(text))
    await session.run("About cats")
    await session.run("More")
    await session.edit(session.messages[2].id, "About dogs instead")
    assert _texts(sse_server.requests[-1].json) == [
        ("user", "About cats"), ("assistant", "Cats."), ("user", "About dogs instead")]
    await session.retry()
    assert _texts(sse_server.requests[-1].json) == _texts(sse_server.requests[-2].json)
    assert [m.text for m in session.messages] == ["About cats", "Cats.",
                                                  "About dogs instead", "Again dogs."]


@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_fork_at_an_answer_with_tool_calls_is_a_history_the_vendor_takes(
        sse_server: SSEServer, wire: str, tmp_path: Path) -> None:
    # The server answers 400 to a call without its result, as the vendors do.
    if wire == "openai":
        calling = (OpenAIStream(model="gpt-4o").text(["Adding."])
                   .tool_call_start(0, "c1", "plus", '{"a": 1,')
                   .tool_call_start(1, "c2", "plus", '{"a": 2, "b": 2}')
                   .tool_call_args(0, ' "b": 2}').finish("tool_calls").response())
        def reply(text: str) -> Any:
            return OpenAIStream(model="gpt-4o").text([text]).finish().response()
    else:
        calling = (AnthropicStream().text(["Adding."])
                   .tool_use("c1", "plus", ['{"a": 1,', ' "b": 2}'])
                   .tool_use("c2", "plus", ['{"a": 2, "b": 2}']).finish("tool_use").response())
        def reply(text: str) -> Any:
            return AnthropicStream().text([text]).finish().response()
    provider: Any = (OpenAIProvider("gpt-4o", api_key="k", base_url=sse_server.base_url,
                                    max_retries=0) if wire == "openai" else
                     AnthropicProvider("claude-sonnet-4-5", api_key="k",
                                       base_url=sse_server.base_url, max_retries=0))
    catalog = ToolCatalog.default()
    catalog.register(plus)
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("a", model=provider, tools=AgentToolConfig()), catalog,
                           store=store)
    sse_server.add(calling, reply("Three and four."))
    await session.run("Add 1 and 2, and 2 and 2")
    answer_with_calls = session.messages[1]
    assert len(answer_with_calls.tool_calls) == 2
    assert [m.role for m in session.messages] == ["user", "assistant", "tool", "tool",
                                                  "assistant"]
    assert session.messages[-1].text == "Three and four."

    # Fork is offered on the answer; a result (one call's of two) is checked too.
    for forked_at in (answer_with_calls, session.messages[2]):
        fork = session.fork(forked_at.id)
        sse_server.add(reply("From the fork."))
        await fork.run("And now?")
        sent = sse_server.requests[-1].json
        assert history_problem(sse_server.requests[-1].path, sent) is None
        assert fork.messages[-1].text == "From the fork."  # not a 400
        assert _texts(sent)[-1] == ("user", "And now?")
        # The calls' results came with the answer that made them, in the store too.
        assert fork.branch_at == forked_at.id
        assert {p.tool_call_id for m in fork.messages for p in m.tool_results} == {"c1", "c2"}
        assert valid_conversation(fork.messages) == fork.messages
        fork.flush()
        again = AgentSession.resume(fork.id, store, catalog=catalog, agent=session.agent)
        assert [m.id for m in again.messages] == [m.id for m in fork.messages]
    assert sse_server.pending == 0
    store.close()


KILLED_FORK = textwrap.dedent("""
    import os, sys, asyncio
    sys.path.insert(0, {root!r})
    from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore
    from neta_nb.todo import TodoStore

    store = SessionStore({db!r})
    session = AgentSession.resume({session_id!r}, store)
    real = TodoStore.hydrate_from_history

    def stop_here(messages):  # the branch's messages are queued: some stored, then killed
        session_copy = real(messages)
        import time; time.sleep(0.5)
        print("forking", flush=True)
        import time; time.sleep(60)
        return session_copy

    TodoStore.hydrate_from_history = stop_here
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
