"""A session run in a child process that the test interrupts with a real SIGINT.

``python -m tests.support.interrupt_child MODE WORKDIR`` runs one turn that blocks in a known place
(``MODE``: ``python-tool`` — the `python` tool stuck in ``time.sleep`` on the main thread;
``worker-tool`` — a sync tool in a worker thread; ``streaming`` — mid-answer), writes
``WORKDIR/started`` once it is blocked, and waits for the parent's SIGINT. Then it runs a
second turn and prints one JSON report of what the parent asserts on. Running in a child
keeps a regression from interrupting the test run itself.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time
import traceback
from pathlib import Path
from typing import Any

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore, ToolCatalog, tool
from neta_nb.messages import Message, SkillExecution, ToolExecution
from neta_nb.providers.base import TextDelta

from .sessions import FakeProvider, Recorder, answer, assert_valid_history, calls


def history_problem(messages: list[Any]) -> str | None:
    """Why ``messages`` is not a history a provider accepts, or ``None``."""
    try:
        assert_valid_history(messages)
    except AssertionError as problem:
        return str(problem)
    return None


def _cards(message: Message) -> list[ToolExecution | SkillExecution]:
    return [*message.metadata.tool_executions, *message.metadata.skill_executions]


def main(mode: str, workdir: Path) -> dict[str, Any]:
    started = workdir / "started"

    @tool
    def stall() -> str:
        """Block in a worker thread."""
        started.write_text("worker")
        time.sleep(3)
        return "woke up"

    async def mark_and_wait() -> None:
        started.write_text("streaming")
        await asyncio.sleep(30)

    first: list[Any]
    if mode == "python-tool":
        code = (f"open({str(started)!r}, 'w').write('python')\n"
                "import time\ntime.sleep(30)")
        first = calls(("p1", "python", {"code": code}))
    elif mode == "worker-tool":
        first = calls(("w1", "stall", {}))
    else:
        first = [TextDelta("The first half of the answer, "), mark_and_wait]
    provider = FakeProvider([first, answer("after the interrupt"), answer("next turn")])
    catalog = ToolCatalog.default()
    catalog.register(stall)
    store = SessionStore(workdir / "sessions.sqlite3")
    agent = Agent("a", tools=AgentToolConfig(enabled=["python", "stall"]))
    session = AgentSession(agent, catalog, store, provider=provider,
                           approval_policy="allow", working_dir=workdir)
    recorder = Recorder()
    session.subscribe(recorder)

    outcome = "returned"
    try:
        asyncio.run(session.run("go"))
    except KeyboardInterrupt:
        outcome = "KeyboardInterrupt"
    # A turn ended by an exception does not wait for its writes (they go on in the
    # background); what memory holds is in the store once they are done.
    flushed = session.flush(10)
    first_turn = {
        "outcome": outcome,
        "done": [e.stop_reason for e in recorder.of("done")],
        "tool_results": [(e.id, e.result, e.is_error) for e in recorder.of("tool_result")],
        "running_cards": [r.id for m in session.messages for r in _cards(m)
                          if r.status == "running"],
        "history_problem": history_problem(session.messages),
        "store_equals_memory": flushed and (
            [m.model_dump() for m in SessionStore(store.path).load_messages(session.id)]
            == [m.model_dump() for m in session.messages]),
        "partial_text": [m.text for m in session.messages if m.role == "assistant"],
        "running_after": session.running,
        "marked": [m.metadata.interrupted for m in session.messages if m.metadata.interrupted],
    }
    # The session goes on, on a new loop, and what it sends is a valid history.
    asyncio.run(session.run("and now?"))
    last_request = provider.requests[-1].messages
    return {**first_turn,
            "next_done": recorder.of("done")[-1].stop_reason,
            "next_history_problem": history_problem(list(last_request)),
            "next_text": session.messages[-1].text}


if __name__ == "__main__":
    try:
        report = main(sys.argv[1], Path(sys.argv[2]))
    except BaseException:
        report = {"crashed": traceback.format_exc()}
    print(json.dumps(report), flush=True)
