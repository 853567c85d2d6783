"""TurnDeps: what a turn runs with besides the session's state — the agent and its
provider (the workspace), the tool runner, the sub-agents, the prompt preview, the call
gate, the tracer, and an outside agent's turns."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from contextlib import AbstractAsyncContextManager
from typing import Any, Protocol, runtime_checkable

from ...messages import Message, Usage
from ..tracing.tracing import TurnTracer, turn_tracer
from .state import SessionState
from .tool_calls.subagents import Crew, NewSession
from .tool_calls.tool_runner import ToolRunner
from .tool_calls.toolbox import Toolbox
from .turn import Turn
from .workspace import Workspace

__all__ = ["CallGate", "CountUsage", "OutsideAgent", "OutsideTurns", "TurnDeps"]


class CallGate(Protocol):
    """What each model call of a session waits for before it starts (a batch run's rate
    limiter: see :mod:`neta_nb.batch.limiter`)."""

    def call(self) -> AbstractAsyncContextManager[None]: ...


class CountUsage(Protocol):
    """What counts a model's usage into the turn's figures (and says ``token_update``);
    ``reported_cost``: what the calls cost as the agent said it, the cost when the
    session has no price."""

    def __call__(self, turn: Turn, usage: Usage | None, /, *,
                 reported_cost: float | None = None) -> None: ...


class OutsideTurns(Protocol):
    """The turns of an agent that runs its own loop in another process (an outside agent,
    such as Claude Code over the Agent Client Protocol: :mod:`neta_nb.runtime.acp`).

    Such an agent calls its own model and runs its own tools; the session follows what
    it reports. The turn runner hands it a turn instead of calling a model, and keeps
    everything around it — the turn's start and ``done``, Stop, the store's claim and
    record, a failure's ``error``, the partial answer kept — so an outside agent's turn
    closes exactly as a native one does. The driver writes what the agent reports into
    the session's state (history, cards, plan, approvals, figures) with the calls the
    native turn uses, so views, projection, static form and store need no case of their
    own."""

    async def run(self, turn: Turn, prompt: Message, count_usage: CountUsage) -> Message | None:
        """Run ``turn`` of ``prompt`` (already in the history) to its end; its last
        assistant message. Raises :class:`~neta_nb.providers.base.ProviderError` when
        the agent failed (the runner closes the turn with an ``error``); a Stop cancels
        the awaiting task, and the driver stops the agent before it re-raises."""
        ...

    def close(self) -> None:
        """End the agent's process and all it started; a next turn starts it again."""
        ...

    def fork_from(self, other: OutsideTurns) -> None:
        """This session is a fork of the whole of ``other``'s (the same agent's): its
        agent may start from a copy of ``other``'s own session."""
        ...

    def stored(self) -> dict[str, Any]:
        """What the store keeps to continue the agent's own session (its id; never a
        key): the session record holds it as ``agent["outside"]``."""
        ...

    def restore(self, stored: Mapping[str, Any]) -> None:
        """Continue the agent's session that :meth:`stored` described (a resume)."""
        ...


@runtime_checkable
class OutsideAgent(Protocol):
    """An agent that runs its own loop elsewhere (:class:`~neta_nb.runtime.acp.AcpAgent`):
    it gives each of its sessions the driver of their turns."""

    def outside_turns(self, state: SessionState, deps: TurnDeps) -> OutsideTurns:
        """The driver of the turns of the session of ``state``; ``deps``: what its turns
        run with (its workspace — the working directory, the notebook page —, its tools
        and their runner, for the calls the agent makes of the notebook's tools)."""
        ...


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
        agent = workspace.agent
        self.outside = (agent.outside_turns(state, self)
                        if isinstance(agent, OutsideAgent) else None)
        """What runs the turns when the agent runs its own loop in another process (an
        outside agent); ``None``: the turn runner calls the model and runs the tools."""
