"""The session: one conversation with an agent (:class:`AgentSession`, its public face)
and the parts with a job of their own — its state and its money (``state``,
``spending``), what a turn runs with and the runner of turns (``workspace``, ``deps``,
``runner``, ``turn``, ``kernel_interrupt``), branching and resuming (``branches``,
``notebook_rewind``, ``resume``); a turn's tool calls and sub-agents are the subpackage
``tool_calls``."""

from ..agent import Agent
from ..approvals import ApprovalPolicy
from .deps import TurnDeps
from .notebook_rewind import NotebookRewind
from .runner import TurnRunner
from .session import AgentSession
from .spending import BudgetExceededError, Spending
from .state import SessionState

__all__ = ["Agent", "AgentSession", "ApprovalPolicy", "BudgetExceededError", "NotebookRewind",
           "SessionState", "Spending", "TurnDeps", "TurnRunner"]
