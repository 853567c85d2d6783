"""TurnDeps: what a turn runs with besides the session's state — the agent and its
provider (the workspace), the tool runner, the sub-agents, the prompt preview, the call
gate, the tracer, and an outside agent's turns."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractAsyncContextManager
from typing import Protocol

from ..tracing.tracing import TurnTracer, turn_tracer
from .state import SessionState
from .subagents import Crew, NewSession
from .tool_runner import ToolRunner
from .toolbox import Toolbox
from .workspace import Workspace

__all__ = ["CallGate", "TurnDeps"]


class CallGate(Protocol):
    """What each model call of a session waits for before it starts (a batch run's rate
    limiter: see :mod:`neta_nb.batch.limiter`)."""

    def call(self) -> AbstractAsyncContextManager[None]: ...


class TurnDeps:
    """The collaborators of one session's turns, made for its ``state``: ``new_session``
    makes a sub-agent's session, ``depth``/``max_depth`` place the session in its tree."""

    def __init__(self, state: SessionState, workspace: Workspace, new_session: NewSession, *,
                 depth: int, max_depth: int, call_gate: CallGate | None = None,
                 tracer: Callable[[], TurnTracer] = turn_tracer) -> None:
        self.workspace = workspace
        self.crew = Crew(state, workspace, new_session, depth=depth, max_depth=max_depth)
        """The sub-agents the session's ``delegate`` calls run."""
        self.toolbox = Toolbox(state, workspace, self.crew)
        """The prompt preview, the tools' resolution and each call's context."""
        self.tools = ToolRunner(state, self.toolbox)
        self.call_gate = call_gate
        """What each model call waits for before it starts (a batch run's limiter)."""
        self.tracer = tracer
        """Makes each turn's tracer (spans when tracing is configured)."""
        self.outside = workspace.agent.outside_turns(state, workspace.working_dir)
        """What runs the turns when the agent runs its own loop in another process (an
        outside agent); ``None``: the turn runner calls the model and runs the tools."""
