"""The offline outside-agent demo: :func:`demo_outside_agent` is Claude Code (the real
``claude-agent-acp``, found as :meth:`AcpAgent.claude_code` finds it) whose model is the
demo's local Messages API (:mod:`.model_server`), so its plan, thinking, file write and
permission request can be seen with no key and no network. Asked
:data:`OUTSIDE_PROMPT` (or anything), it plans three steps, writes ``notes.md`` in its
working directory once allowed, ticks the plan off and says so.
"""

from __future__ import annotations

import tempfile
from pathlib import Path

from ..providers.scripted.demo_outside_script import NOTE_NAME, OUTSIDE_PROMPT
from ..runtime.acp import AcpAgent
from .model_server import DemoModelServer, demo_model_server

__all__ = ["NOTE_NAME", "OUTSIDE_PROMPT", "demo_outside_agent"]


def demo_outside_agent(cwd: str | Path = "outside-demo", *,
                       server: DemoModelServer | None = None,
                       search: str | Path | None = None,
                       chars_per_second: float = 0.0) -> AcpAgent:
    """Claude Code working in ``cwd`` (made if missing) against the demo's model
    ``server`` (one is started, paced at ``chars_per_second``, when not given).
    ``search``: the folder its program is in (default: ``PATH``, then
    ``./node_modules/.bin``). Raises :class:`~neta_nb.runtime.acp.AgentNotInstalledError`
    saying how to install it.

    Its environment points it at the server with a placeholder key, keeps it off the
    network (no update check, no telemetry) and gives it a configuration folder of its
    own (a temporary one), so your own Claude Code settings and history are neither used
    nor changed.
    """
    if server is not None and not server.running:
        raise ValueError("the demo model server is stopped: start another with "
                         "demo_model_server()")
    agent_cwd = Path(cwd).absolute()
    # Found first: a missing agent is said before anything is started or made.
    probe = AcpAgent.claude_code(search=search, cwd=agent_cwd)
    agent_cwd.mkdir(parents=True, exist_ok=True)
    if server is None:
        server = demo_model_server(chars_per_second=chars_per_second)
    home = tempfile.mkdtemp(prefix="neta-nb-outside-demo-")
    return AcpAgent.claude_code(
        command=probe.command, cwd=agent_cwd,
        env={"ANTHROPIC_BASE_URL": server.url, "ANTHROPIC_API_KEY": "offline-demo",
             "CLAUDE_CONFIG_DIR": home, "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1",
             "DISABLE_AUTOUPDATER": "1",
             # Claude Code 0.23.1 cannot open a session when IS_SANDBOX is set (as in
             # some containers).
             "IS_SANDBOX": None})
