"""The MCP servers an outside agent is given in ``session/new`` (and ``session/load``):
what ``AcpAgent(mcp_servers=[...])`` takes, checked when the agent is made, and the
servers of the session's catalog the agent is granted (:func:`granted_servers`). Their
headers and environment hold keys: never stored nor shown."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ...tools import ToolCatalog

__all__ = ["NOTEBOOK_GRANTS", "McpServerSpec", "granted_servers", "mcp_server_specs"]

NOTEBOOK_SERVER = "neta-notebook"
"""The name the notebook's own MCP server is given (``serve_notebook_mcp()``'s object, or
the one a session on a notebook page gives its agent)."""
NOTEBOOK_GRANTS = ("read_notebook", "list_variables", "edit_cell", "insert_cell", "run_cell",
                   "cell_status", "delete_cell", "move_cell", "clear_outputs", "run_all")
"""The notebook tools an outside agent is granted unless its ``tools`` say otherwise: as
a client of the notebook's MCP server is (edits, deletes and moves as proposals the user
decides on; runs with approval)."""


@dataclass(frozen=True, repr=False)
class McpServerSpec:
    """One MCP server: over HTTP (``url``, ``headers``) or started by the agent over stdio
    (``command``, ``args``, ``env``)."""

    name: str
    url: str | None = None
    headers: Mapping[str, str] = field(default_factory=dict)
    command: str | None = None
    args: Sequence[str] = ()
    env: Mapping[str, str] = field(default_factory=dict)

    def __repr__(self) -> str:  # never the headers nor the environment
        where = self.url if self.url is not None else self.command
        return f"McpServerSpec({self.name!r}, {where!r})"


def mcp_server_specs(given: Sequence[Any]) -> list[McpServerSpec]:
    """``given`` as specs: each a dict — ``{"name", "url", "headers"}`` or ``{"name",
    "command", "args", "env"}`` — or the object ``serve_notebook_mcp()`` returns (its
    ``url`` and ``token``). Raises ``TypeError`` naming what is wrong."""
    specs = [_spec(item) for item in given]
    names = [spec.name for spec in specs]
    repeated = sorted({name for name in names if names.count(name) > 1})
    if repeated:
        raise TypeError(f"mcp_servers: each needs a name of its own; repeated: "
                        f"{', '.join(repeated)}")
    return specs


def _spec(item: Any) -> McpServerSpec:
    if not isinstance(item, Mapping):
        url, token = getattr(item, "url", None), getattr(item, "token", None)
        if isinstance(url, str) and isinstance(token, str):  # the notebook's own server
            return McpServerSpec(NOTEBOOK_SERVER, url=url,
                                 headers={"Authorization": f"Bearer {token}"})
        raise TypeError(f"mcp_servers: {type(item).__name__} is no MCP server: give a dict "
                        f"(name and url, or name and command) or serve_notebook_mcp()'s "
                        f"object")
    name = item.get("name")
    if not isinstance(name, str) or not name:
        raise TypeError("mcp_servers: each server needs a name")
    unknown = sorted(set(item) - {"name", "url", "headers", "command", "args", "env"})
    if unknown:
        raise TypeError(f"mcp_servers: {name!r} has unknown keys: {', '.join(unknown)}")
    url, command = item.get("url"), item.get("command")
    if (url is None) == (command is None):
        raise TypeError(f"mcp_servers: {name!r} needs a url or a command (one of them)")
    headers, args, env = item.get("headers") or {}, item.get("args") or [], item.get("env") or {}
    if not _strings(headers) or not _strings(env) or isinstance(args, str) \
            or not all(isinstance(a, str) for a in args):
        raise TypeError(f"mcp_servers: {name!r}: headers and env map names to strings, "
                        f"args is a list of strings")
    if url is not None:
        if not isinstance(url, str) or not url.startswith(("http://", "https://")):
            raise TypeError(f"mcp_servers: {name!r}: url must be an http(s) URL")
        return McpServerSpec(name, url=url, headers=dict(headers))
    if not isinstance(command, str) or not command:
        raise TypeError(f"mcp_servers: {name!r}: command must be a program's name or path")
    return McpServerSpec(name, command=command, args=list(args), env=dict(env))


def _strings(mapping: Any) -> bool:
    return isinstance(mapping, Mapping) and all(
        isinstance(k, str) and isinstance(v, str) for k, v in mapping.items())


def granted_servers(catalog: ToolCatalog, granted: Sequence[str]) -> list[McpServerSpec]:
    """The MCP servers of ``catalog`` the agent is granted — those with a tool among
    ``granted`` (the names the agent's tool config resolves to) — as the agent is given
    them: it talks to each server itself, so a server comes whole (all its tools) and a
    server none of whose tools is granted never comes."""
    names = set(granted)
    specs = []
    for name in catalog.mcp_servers:
        server = catalog.mcp_servers[name]
        if not names.intersection(server.tool_names):
            continue
        given = server.parameters
        if given.command is not None:
            specs.append(McpServerSpec(name, command=given.command, args=list(given.args),
                                       env=dict(given.env or {})))
        elif given.url is not None:
            specs.append(McpServerSpec(name, url=given.url, headers=dict(given.headers or {})))
    return specs
