"""Shared pieces of the sub-agent runtime tests (``tests/runtime/test_subagents*.py``): a
catalog with the test tools, a response of ``delegate`` calls, the innermost event of a wrapped one,
and a gate that holds a stream until the test opens it."""

from __future__ import annotations

import asyncio
from typing import Any

from neta_nb import ToolCatalog
from neta_nb.events import SubagentEvent

from .sessions import calls, guarded_op, plus


def crew_catalog() -> ToolCatalog:
    catalog = ToolCatalog.default()
    catalog.register(plus)
    catalog.register(guarded_op)
    return catalog


def delegations(*pairs: tuple[str, str, str]) -> list[Any]:
    """One model response calling ``delegate`` once per ``(call id, agent, task)``."""
    return calls(*[(call_id, "delegate", {"agent": agent, "task": task})
                   for call_id, agent, task in pairs])


def innermost(event: Any) -> Any:
    """The child's own event inside however many ``subagent_event`` wrappers."""
    while isinstance(event, SubagentEvent):
        event = event.event
    return event


class Gate:
    """A step that holds a stream until the test opens it."""

    def __init__(self) -> None:
        self.reached = asyncio.Event()
        self.opened = asyncio.Event()

    async def __call__(self) -> None:
        self.reached.set()
        await self.opened.wait()


async def start_until_a_child_asks(session: Any) -> tuple[asyncio.Task[Any], Any, Any]:
    """Start a turn of ``session`` with an approver attached and return once an approval
    request of a child (at any depth) arrived: ``(task, recorder, detach)``."""
    from neta_nb.events import ApprovalRequestEvent

    from .sessions import Recorder
    from .timing import wait_until

    detach = session.attach_approver()
    recorder = Recorder()
    session.subscribe(recorder)
    task = session.start("go")
    await wait_until(lambda: any(isinstance(innermost(e), ApprovalRequestEvent)
                                 for e in recorder.events))
    return task, recorder, detach
