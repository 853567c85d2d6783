"""AcpAgent: an outside agent — Claude Code, Codex, Gemini CLI or any other program that
speaks the Agent Client Protocol — as an :class:`~neta_nb.runtime.agent.Agent`, usable
wherever one is (``AgentSession(AcpAgent(...))``, the chat view).

The agent calls its own model and runs its own tools in its own process; a session of it
shows what it reports (:mod:`.turns`). Its definition is stored with the session — the
name and the command, never the environment it was given (keys live there).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from ...providers.prices import ModelPrice
from ...tools import AgentToolConfig
from ..agent import Agent
from ..session.deps import OutsideTurns, TurnDeps
from ..session.state import SessionState
from .model import ACP_SUPPLIER, AcpModel
from .presets import CLAUDE_CODE, CODEX, GEMINI, Preset, find_command
from .servers import NOTEBOOK_GRANTS, mcp_server_specs

__all__ = ["ACP_SUPPLIER", "AcpAgent", "AcpModel"]

class AcpAgent(Agent):
    """An outside agent over the Agent Client Protocol.

    ``command``: the program and its arguments (``["claude-agent-acp"]``); ``env``: what
    is added to this process's environment for it (keys: never stored; a name mapped to
    ``None`` is left out of it); ``cwd``: where
    it works (default: the session's working directory); ``mode``: the session mode to
    set (an id the agent offers, e.g. ``"acceptEdits"`` for Claude Code); ``price``: what
    the agent's model costs (USD per million tokens), for the cost of the usage it
    reports; ``mcp_servers``: MCP servers the agent is given for its session (dicts, or
    ``serve_notebook_mcp()``'s object: see :func:`~.servers.mcp_server_specs`), besides
    those given by themselves: the servers of the session's catalog whose tools ``tools``
    grants, and — when the session's chat is on a notebook page — the notebook's own,
    whose calls are reviewed in that chat (:mod:`.notebook_server`); ``tools``: the
    agent's grants (default: the notebook tools a client of the notebook's MCP server
    gets, :data:`~.servers.NOTEBOOK_GRANTS`). The presets :meth:`claude_code`,
    :meth:`codex` and :meth:`gemini` find an installed agent.
    """

    def __init__(self, name: str, command: Sequence[str], *,
                 env: Mapping[str, str | None] | None = None, cwd: str | Path | None = None,
                 mode: str | None = None, description: str | None = None,
                 price: ModelPrice | None = None, mcp_servers: Sequence[Any] = (),
                 budget_usd: float | None = None,
                 turn_budget_usd: float | None = None,
                 tools: AgentToolConfig | None = None) -> None:
        if isinstance(command, str) or not isinstance(command, Sequence) or not command \
                or not all(isinstance(part, str) and part for part in command):
            raise TypeError("command must be a non-empty list of strings: the program and "
                            f"its arguments, e.g. ['claude-agent-acp']; got {command!r}")
        if env is not None and not all(isinstance(k, str) and (v is None or isinstance(v, str))
                                       for k, v in dict(env).items()):
            raise TypeError("env must map names to strings (or to None: left out)")
        if mode is not None and (not isinstance(mode, str) or not mode):
            raise TypeError(f"mode must be the id of one of the agent's modes, got {mode!r}")
        self.command = list(command)
        self.env = dict(env) if env is not None else None
        self.cwd = Path(cwd) if cwd is not None else None
        self.mode = mode
        self.mcp_servers = mcp_server_specs(mcp_servers)
        model = AcpModel(name, command)
        model.price = price  # checked there
        if tools is None:
            tools = AgentToolConfig(enabled=list(NOTEBOOK_GRANTS))
        super().__init__(name=name, model=model, system_prompt="", tools=tools,
                         compact_at=None, description=description, budget_usd=budget_usd,
                         turn_budget_usd=turn_budget_usd)

    def __repr__(self) -> str:
        # Never the environment: keys live there.
        return f"AcpAgent({self.name!r}, command={self.command!r})"

    def outside_turns(self, state: SessionState, deps: TurnDeps) -> OutsideTurns:
        # The SDK is an optional extra (neta-nb[acp]) that takes most of a second to
        # import: it is imported when a session of an outside agent is made, and its
        # absence is said then, naming the extra.
        from .turns import AcpTurns

        return AcpTurns(self, state, deps)

    # --- presets -------------------------------------------------------------------------
    @classmethod
    def _preset(cls, preset: Preset, name: str | None, command: Sequence[str] | None,
                search: str | Path | None, **options: Any) -> AcpAgent:
        return cls(name or preset.name,
                   list(command) if command is not None else find_command(preset, search),
                   **options)

    @classmethod
    def claude_code(cls, *, name: str | None = None, command: Sequence[str] | None = None,
                    search: str | Path | None = None,
                    env: Mapping[str, str | None] | None = None,
                    cwd: str | Path | None = None, mode: str | None = None) -> AcpAgent:
        """Claude Code (``@zed-industries/claude-agent-acp`` 0.23.1); it reads
        ``ANTHROPIC_API_KEY`` and ``ANTHROPIC_BASE_URL``. ``search``: the folder its
        program is in (default: ``PATH``, then ``./node_modules/.bin``)."""
        return cls._preset(CLAUDE_CODE, name, command, search, env=env, cwd=cwd, mode=mode)

    @classmethod
    def codex(cls, *, name: str | None = None, command: Sequence[str] | None = None,
              search: str | Path | None = None, env: Mapping[str, str | None] | None = None,
              cwd: str | Path | None = None, mode: str | None = None) -> AcpAgent:
        """Codex (``@zed-industries/codex-acp`` 0.16.0); it reads ``OPENAI_API_KEY`` and
        ``$CODEX_HOME/config.toml``."""
        return cls._preset(CODEX, name, command, search, env=env, cwd=cwd, mode=mode)

    @classmethod
    def gemini(cls, *, name: str | None = None, command: Sequence[str] | None = None,
               search: str | Path | None = None, env: Mapping[str, str | None] | None = None,
               cwd: str | Path | None = None, mode: str | None = None) -> AcpAgent:
        """Gemini CLI (``@google/gemini-cli`` 0.61.0, ``--acp``); it reads
        ``GEMINI_API_KEY`` and ``GOOGLE_GEMINI_BASE_URL``."""
        return cls._preset(GEMINI, name, command, search, env=env, cwd=cwd, mode=mode)
