"""Outside agents over the Agent Client Protocol: :class:`AcpAgent` (the agent's
definition and presets), ``presets`` (finding an installed agent), ``process`` (its
process), ``connection`` (the protocol, through the ``agent-client-protocol`` SDK),
``turns`` (what it reports, as the session's own events and history) and ``controls`` (its
``/`` commands and session modes, as the chat input shows them)."""

from .agent import AcpAgent
from .presets import AgentNotInstalledError

__all__ = ["AcpAgent", "AgentNotInstalledError"]
