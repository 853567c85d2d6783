"""A turn caught in the middle of its tools, as a process that dies then would leave it:
of the two calls of one response, the first has finished and its result is stored, the
second still runs. ``copy_as_on_disk`` takes the database as that process leaves it.
Shared by the resume and projection tests."""

from __future__ import annotations

import asyncio
import sqlite3
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from neta_nb import AgentSession, SessionStore, tool

from .sessions import Recorder, calls, make_session
from .timing import wait_until


@dataclass
class MidTools:
    session: AgentSession
    recorder: Recorder
    task: asyncio.Task[Any]
    db: Path


async def start_until_mid_tools(tmp_path: Path, *, history: bool = False) -> MidTools:
    """A session on ``tmp_path / "s.db"`` whose turn stands between its two tool calls:
    ``plus`` done and stored, ``slow_job`` running (until the turn is cancelled). Its
    recorder keeps the history events with ``history=True``."""
    started = asyncio.Event()
    never = asyncio.Event()

    @tool(core=True)
    async def slow_job() -> str:
        """Takes a while."""
        started.set()
        await never.wait()
        return "slow done"

    db = tmp_path / "s.db"
    store = SessionStore(db)
    session, _, _ = make_session([calls(("a", "plus", {"a": 1, "b": 2}),
                                        ("b", "slow_job", {}))],
                                 extra=[slow_job], store=store)
    recorder = Recorder(history=history)
    session.subscribe(recorder)
    task = session.start("go")
    await asyncio.wait_for(started.wait(), 5)
    await recorder.wait_for("tool_result")  # the fast call has finished
    await wait_until(lambda: any(m.role == "tool" for m in store.load_messages(session.id)))
    return MidTools(session, recorder, task, db)


def copy_as_on_disk(db: Path, copy: Path) -> Path:
    """A consistent copy of the database as it is on disk now."""
    with sqlite3.connect(db) as source, sqlite3.connect(copy) as target:
        source.backup(target)
    return copy
