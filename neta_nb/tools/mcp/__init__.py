"""Tools of MCP servers: connecting a server and calling its tools (:mod:`.mcp`), the
session with one server (:mod:`.mcp_connection`) over stdio or HTTP
(:mod:`.mcp_transport`), the server processes this kernel started (:mod:`.mcp_processes`)
and what they write to stderr (:mod:`.mcp_stderr`). ``neta_nb.tools.mcp`` keeps naming
what :mod:`.mcp` exports."""

from .mcp import *  # noqa: F403
from .mcp import __all__ as __all__
