"""A long stored session, as an agent that works all day leaves one: each turn a prompt,
thinking, four tool calls (with their results) and a 600-character answer with a code block
and a table. The chat view's browser tests of long transcripts and
``benchmarks/long_sessions.py`` open it with ``AgentSession.resume``.

Every text names its turn (``turn 17``), so what a page shows can be checked in order.
"""

from __future__ import annotations

from pathlib import Path

from neta_nb import SessionStore
from neta_nb.messages import (
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolExecution,
)
from neta_nb.store.records import SessionRecord

__all__ = ["ANSWER_CHARS", "SESSION_ID", "answer", "prompt", "store_long_session"]

SESSION_ID = "long-session"
ANSWER_CHARS = 600
TOOLS = ("list_files", "read_file", "run_sql", "plot_chart")


def prompt(turn: int) -> str:
    return f"Question of turn {turn}: how did the regions sell this quarter?"


def answer(turn: int) -> str:
    """The turn's answer: a paragraph, a code block and a table, 600 characters."""
    text = (f"Answer of turn {turn}. The east grows fastest, the south fell again.\n\n"
            "```python\nframe = pd.read_csv('sales.csv')\nframe.groupby('region').sum()\n```\n\n"
            "| region | sales | change |\n|---|---|---|\n| north | 1,204 | +4% |\n"
            "| south | 980 | -2% |\n| east | 1,530 | +9% |\n\n")
    filler = "The figures come from the quarterly table; more detail follows in the report. "
    while len(text) < ANSWER_CHARS:
        text += filler
    return text[:ANSWER_CHARS - 1] + "."


def _turn(turn: int) -> list[Message]:
    calls = [ToolCallPart(id=f"call-{turn}-{k}", name=name,
                          args={"path": f"data/{name}-{turn}.csv"})
             for k, name in enumerate(TOOLS)]
    executions = [ToolExecution(id=call.id, name=call.name, label=f"{call.name} ({turn})",
                                args=call.args, status="done",
                                result=f"{call.name} of turn {turn}: 3 rows\n\n"
                                       "| a | b |\n|---|---|\n| 1 | 2 |")
                  for call in calls]
    thinking = ThinkingPart(text=f"Thinking about turn {turn}: which tables answer it. " * 4)
    messages = [Message.user(prompt(turn)),
                Message.assistant([thinking, *calls], tool_executions=executions)]
    messages += [Message.tool_result(call.id, call.name, execution.result or "")
                 for call, execution in zip(calls, executions, strict=True)]
    messages.append(Message.assistant([TextPart(text=answer(turn))]))
    return messages


def store_long_session(path: Path, turns: int) -> str:
    """Write a session of ``turns`` turns into the SQLite store at ``path`` (kept when it
    holds that session already); returns the session's id."""
    store = SessionStore(str(path))
    session_id = f"{SESSION_ID}-{turns}"
    if store.get_session(session_id) is not None:
        return session_id
    store.save_session(SessionRecord(id=session_id, title=f"A long session ({turns} turns)"))
    for turn in range(1, turns + 1):
        for message in _turn(turn):
            store.append_message(session_id, message)
    return session_id
