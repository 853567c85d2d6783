"""MCP servers in the catalog: each server tool becomes a :class:`Tool` named
``<server>__<tool>`` (``pip install 'neta-nb[mcp]'``).

An MCP tool follows every rule a built-in tool does — the resolver, per-agent grants,
global disable, approval, visibility — because it *is* a catalog tool; only its handler
differs: it forwards the call to the server through :class:`MCPConnection`, reports the
server's progress notifications through ``ctx.progress`` (a skill card with a real
percentage when the tool's visibility is ``skill``) and turns the server's answer into the
text the model reads.

A server is untrusted input. Its tool names must already be valid provider tool names
(``^[A-Za-z0-9_-]{1,64}$`` once prefixed); others are refused with a message in
:attr:`MCPToolServer.refused` instead of being renamed silently. Descriptions and schemas
are kept as plain strings (the panel and cards render them as text). A tool whose
description or schema changes after it was first listed — the "rug pull", where a tool the
user granted starts telling the model something else — is disabled globally and listed in
:attr:`MCPToolServer.changed_tools` until the user calls
:meth:`ToolCatalog.acknowledge_mcp_change`; a tool that changes again before that shows
its latest text there, so what the user accepts is what the model is told.

What a server may send is bounded: at most :data:`MAX_TOOLS` tools (a longer listing is
refused whole), descriptions and schemas up to :data:`MAX_DESCRIPTION_CHARS` and
:data:`MAX_SCHEMA_CHARS`, no tool name twice, no ``$ref`` outside the schema (nothing is
ever fetched to check arguments), and its ``pattern`` expressions are left to the server
(they would run on the kernel's thread).
"""

from __future__ import annotations

import asyncio
import functools
import logging
from collections.abc import Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from os import PathLike
from typing import TYPE_CHECKING, Any, Protocol

import pydantic_core

try:
    import jsonschema  # comes with the SDK
    import referencing
    import referencing.exceptions
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("MCP servers need the official MCP SDK: "
                      "pip install 'neta-nb[mcp]'") from error

from ...stored_urls import storable_url, withheld_names
from ..base import (
    _TOOL_NAME,
    _VISIBILITIES,
    Tool,
    ToolArgumentError,
    ToolContext,
    ToolVisibility,
    humanise_name,
)
from .mcp_connection import MCPConnection, MCPServerError, MCPServerParameters, ServerStatus

if TYPE_CHECKING:
    import mcp_types

__all__ = [
    "MCPServerError",
    "MCPTool",
    "MCPToolError",
    "MCPToolServer",
    "ServerRegistry",
    "ServerStatus",
    "ToolChangeNotice",
    "ToolHost",
    "connect_mcp_server",
    "restore_mcp_server",
]

log = logging.getLogger(__name__)

SEPARATOR = "__"
_SERVER_NAME_MAX = 30
# What one server may put in front of the model and the panel. A description or schema is
# sent with every request that offers the tool, so a huge one costs every turn (and can
# hide instructions far below what the panel shows); a listing of thousands of tools
# blocks the kernel while each is checked and no provider accepts that many anyway.
MAX_TOOLS = 500
MAX_DESCRIPTION_CHARS = 10_000
MAX_SCHEMA_CHARS = 50_000
MAX_LABEL_CHARS = 80
MAX_PROGRESS_CHARS = 300


class MCPToolError(RuntimeError):
    """The server ran the tool and reported an error (``isError``); ``str()`` is its text."""


@dataclass(frozen=True)
class ToolChangeNotice:
    """A tool whose description or schema changed after it was first listed."""

    tool: str
    old_description: str
    new_description: str
    schema_changed: bool
    was_globally_enabled: bool
    """Whether acknowledging should switch the tool back on."""


class ServerRegistry(Protocol):
    """The servers of a catalog (``catalog.mcp_servers``, a
    :class:`~neta_nb.tools.catalog.MCPServerRegistry`), as a server adds itself to them."""

    def __contains__(self, name: object, /) -> bool: ...

    def __getitem__(self, name: str, /) -> MCPToolServer: ...

    def add(self, server: MCPToolServer) -> None: ...

    def discard(self, name: str) -> MCPToolServer | None: ...

    def changed(self) -> None: ...


class ToolHost(Protocol):
    """What a server needs of the catalog it registers its tools in (a
    :class:`~neta_nb.tools.catalog.ToolCatalog` is one): the tools by name, the global
    switch, one swap of a group of tools, and the registry of servers."""

    @property
    def mcp_servers(self) -> ServerRegistry: ...

    def get(self, name: str) -> Tool | None: ...

    def __getitem__(self, name: str, /) -> Tool: ...

    def __contains__(self, name: object, /) -> bool: ...

    def is_globally_enabled(self, name: str) -> bool: ...

    def enable(self, name: str) -> None: ...

    def replace_tools(self, *, remove: Sequence[str], add: Sequence[Tool],
                      disable: Sequence[str] = ()) -> None: ...


async def _unreachable_handler(ctx: ToolContext) -> str:  # pragma: no cover - see MCPTool
    raise RuntimeError("MCP tools are run by MCPTool.invoke")


@dataclass(frozen=True, eq=False)
class MCPTool(Tool):
    """A tool of an MCP server. Arguments are checked against the server's JSON schema
    (the server checks them again); the call goes to the server."""

    server: str = field(default="", kw_only=True)
    remote_name: str = field(default="", kw_only=True)
    connection: MCPConnection | None = field(default=None, kw_only=True, repr=False)

    def validate_arguments(self, args: dict[str, Any] | None) -> dict[str, Any]:
        if args is None:
            args = {}
        if not isinstance(args, dict):
            raise ToolArgumentError(self.name, [
                f"arguments must be a JSON object, got {type(args).__name__} {args!r:.200}"])
        # An empty registry: a "$ref" outside the schema is never fetched (jsonschema
        # would otherwise download any URL a server names, on the kernel's thread).
        validator = _without_patterns(jsonschema.validators.validator_for(self.parameters))(
            self.parameters, registry=referencing.Registry())
        try:
            errors = sorted(validator.iter_errors(args), key=str)[:10]
        except referencing.exceptions.Unresolvable as error:
            raise ToolArgumentError(self.name, [
                f"the server's input schema has a $ref that cannot be resolved: {error}"
            ]) from None
        except RecursionError:
            raise ToolArgumentError(self.name, [
                "the server's input schema refers to itself without end"]) from None
        problems = [f"{'.'.join(str(p) for p in error.absolute_path) or '(arguments)'}: "
                    f"{error.message[:300]}" for error in errors]
        if problems:
            raise ToolArgumentError(self.name, problems)
        return args

    async def invoke(self, args: dict[str, Any] | None, ctx: ToolContext) -> str:
        arguments = self.validate_arguments(args)
        if self.connection is None:  # pragma: no cover - built by MCPToolServer only
            raise MCPServerError(self.server, "is not connected")

        def on_progress(value: float, total: float | None, message: str | None) -> None:
            # Without a total the server reports an amount, not a share: keep the bar where
            # it is and show the message.
            percent = 100.0 * value / total if total else 0.0
            if message is not None and len(message) > MAX_PROGRESS_CHARS:
                message = message[:MAX_PROGRESS_CHARS - 1] + "…"  # a step line, not a log
            ctx.progress(percent, message)

        result = await self.connection.call_tool(self.remote_name, arguments, on_progress)
        text = render_call_result(result)
        if result.is_error:
            raise MCPToolError(text or "the tool reported an error without a message")
        return text


def render_call_result(result: mcp_types.CallToolResult) -> str:
    """The text the model reads: text blocks as they are, structured content as JSON when
    there is no text, other blocks (images, audio, resources) named with their size."""
    parts: list[str] = []
    for block in result.content:
        kind = getattr(block, "type", "")
        if kind == "text":
            parts.append(block.text)  # type: ignore[union-attr]
        elif kind in ("image", "audio"):
            data = getattr(block, "data", "") or ""
            parts.append(f"[{kind} {getattr(block, 'mime_type', '')}, "
                         f"{len(data) * 3 // 4:,} bytes]")
        elif kind == "resource":
            resource = block.resource  # type: ignore[union-attr]
            text = getattr(resource, "text", None)
            parts.append(text if isinstance(text, str) else f"[resource {resource.uri}]")
        elif kind == "resource_link":
            parts.append(f"[resource {getattr(block, 'uri', '')}]")
        else:
            parts.append(f"[{kind or 'unknown'} content]")
    if not parts and result.structured_content is not None:
        return pydantic_core.to_json(result.structured_content, fallback=repr).decode()
    return "\n".join(parts)


class MCPToolServer:
    """One server in a catalog: its connection, its options, the tools it registered,
    what it refused and what changed. Read it from ``catalog.mcp_servers[name]``."""

    def __init__(self, catalog: ToolHost, parameters: MCPServerParameters, *,
                 category: str | None,
                 visibility: ToolVisibility | Mapping[str, ToolVisibility] | None,
                 requires_approval: bool | Iterable[str]) -> None:
        self.name = parameters.name
        self.parameters = parameters
        self.category = category or parameters.name
        self._catalog = catalog
        self._visibility = visibility
        self._approval = requires_approval if isinstance(requires_approval, bool) \
            else frozenset(requires_approval)
        self.tool_names: list[str] = []
        """Catalog names of this server's tools, in the server's order."""
        self.refused: dict[str, str] = {}
        """Server tool name → why it was not registered."""
        self.changed_tools: dict[str, ToolChangeNotice] = {}
        """Catalog tool name → what changed since it was first listed (suspended)."""
        self.url_withheld: tuple[str, ...] = ()
        """What the stored URL this server was restored from had been stored without."""
        self._seen: dict[str, tuple[str, str]] = {}
        self._listed: list[dict[str, Any]] = []
        self._relist_lock = asyncio.Lock()
        self.connection = MCPConnection(parameters, on_tools_changed=self.refresh,
                                        on_status=self._status_changed,
                                        on_restarted=self.refresh)

    @property
    def status(self) -> ServerStatus:
        self.connection.watch_for_exit()
        return self.connection.status

    @property
    def reason(self) -> str | None:
        """Why the server failed or is reconnecting; ``None`` while it is fine."""
        return self.connection.reason

    def describe(self) -> dict[str, Any]:
        """What the panel shows: never ``env``, ``headers`` or a secret in the URL."""
        return {"name": self.name, "transport": self.parameters.transport,
                "command": self.parameters.command, "args": list(self.parameters.args),
                "cwd": self.parameters.cwd, "url": storable_url(self.parameters.url).url,
                "status": self.status.value, "reason": self.reason,
                "tools": list(self.tool_names), "refused": dict(self.refused),
                "changed": sorted(self.changed_tools)}

    def _status_changed(self, status: ServerStatus, reason: str | None) -> None:
        self._catalog.mcp_servers.changed()

    async def refresh(self) -> None:
        """List the server's tools again and bring the catalog in line (new tools added,
        gone ones removed, changed ones updated and suspended)."""
        async with self._relist_lock:
            listed = await self.connection.list_tools()
            self._apply(listed)

    def spec(self) -> dict[str, Any]:
        """What a session stores to bring this server back on resume: how to start it,
        its options and the tool listing the user granted — never ``env``, ``headers`` or
        the URL's credentials and query parameters other than versions (``url_withheld``
        names them; a server that needs them must be added to the catalog again before
        resuming)."""
        visibility, url = self._visibility, storable_url(self.parameters.url,
                                                        self.url_withheld)
        return {"name": self.name, "command": self.parameters.command,
                "args": list(self.parameters.args), "cwd": self.parameters.cwd,
                "url": url.url, "url_withheld": list(url.withheld), "category": self.category,
                "visibility": dict(visibility) if isinstance(visibility, Mapping)
                else visibility,
                "requires_approval": self._approval if isinstance(self._approval, bool)
                else sorted(self._approval),
                "timeout": self.parameters.timeout, "tools": list(self._listed)}

    def _apply(self, listed: Sequence[mcp_types.Tool]) -> None:
        if len(listed) > MAX_TOOLS:
            # Refused whole: a cut listing would hide which tools the user is granting.
            raise MCPServerError(self.name, f"lists {len(listed):,} tools; at most "
                                 f"{MAX_TOOLS} are accepted from one server")
        self._listed = [remote.model_dump(mode="json", by_alias=True, exclude_none=True)
                        for remote in listed]
        catalog = self._catalog
        tools: list[MCPTool] = []
        refused: dict[str, str] = {}
        listed_names: set[str] = set()
        for remote in listed:
            remote_name = str(remote.name)
            if remote_name in listed_names:
                # The first one stays; a second with the same name would replace it
                # unseen (and break the catalog's one-tool-per-name rule).
                refused[remote_name] = (f"the server lists a tool named {remote_name!r} "
                                        "more than once; the first one is used")
                continue
            listed_names.add(remote_name)
            built = self._build(remote)
            if isinstance(built, str):
                refused[remote_name] = built
            else:
                tools.append(built)
        taken: set[str] = set()
        for item in tools:
            other = catalog.get(item.name)
            if other is not None and not (isinstance(other, MCPTool) and other.server == self.name):
                # Keyed by the server's name like every refusal (the panel lists those).
                refused[item.remote_name] = f"a tool named {item.name!r} is already in the catalog"
                taken.add(item.name)
        tools = [t for t in tools if t.name not in taken]
        new_names = {t.name for t in tools}
        suspend: list[str] = []
        for item in tools:
            fingerprint = (item.description, _schema_text(item.parameters))
            first = self._seen.setdefault(item.name, fingerprint)
            earlier = self.changed_tools.get(item.name)
            if first == fingerprint and earlier is None:
                continue
            # A tool that changes again before the user looked (even back to what was
            # granted): the notice shows what the model would now be told (else the user
            # would review one text and grant another), and it stays suspended as the
            # first change left it.
            self.changed_tools[item.name] = ToolChangeNotice(
                tool=item.name, old_description=first[0], new_description=item.description,
                schema_changed=first[1] != fingerprint[1],
                was_globally_enabled=earlier.was_globally_enabled if earlier is not None
                else catalog.is_globally_enabled(item.name) or item.name not in catalog)
            if earlier is None:
                suspend.append(item.name)
        for gone in set(self.tool_names) - new_names:
            self.changed_tools.pop(gone, None)
        catalog.replace_tools(remove=[n for n in self.tool_names if n in catalog],
                              add=tools, disable=suspend)
        self.tool_names = [t.name for t in tools]
        self.refused = refused
        for name, why in refused.items():
            log.warning("MCP server %s: tool %r not added: %s", self.name, name, why)

    def acknowledge(self, tool_name: str, *, description: str | None = None) -> None:
        """The user looked at a changed tool: its new description becomes the one granted,
        and it is switched back on if the change switched it off. With ``description``
        (what the user was shown), only if that is still the tool's description."""
        notice = self.changed_tools[tool_name]
        if description is not None and description != notice.new_description:
            raise ValueError(f"{tool_name!r} changed again after it was shown; review its "
                             "new description")
        del self.changed_tools[tool_name]
        item = self._catalog[tool_name]
        self._seen[tool_name] = (item.description, _schema_text(item.parameters))
        if notice.was_globally_enabled:
            self._catalog.enable(tool_name)
        else:
            self._catalog.mcp_servers.changed()

    def _build(self, remote: mcp_types.Tool) -> MCPTool | str:
        remote_name = str(remote.name)
        name = f"{self.name}{SEPARATOR}{remote_name}"
        if not _TOOL_NAME.match(name):
            return (f"{name!r} is not a valid tool name for the model providers (1-64 "
                    "letters, digits, '_' or '-'); the server's tool name cannot be used")
        description = str(remote.description or "")
        if len(description) > MAX_DESCRIPTION_CHARS:
            return (f"its description is {len(description):,} characters; at most "
                    f"{MAX_DESCRIPTION_CHARS:,} are accepted")
        schema = remote.input_schema
        if not isinstance(schema, dict) or schema.get("type") != "object":
            return "its input schema is not a JSON object schema"
        schema_size = len(_schema_text(schema))
        if schema_size > MAX_SCHEMA_CHARS:
            return (f"its input schema is {schema_size:,} characters of JSON; at most "
                    f"{MAX_SCHEMA_CHARS:,} are accepted")
        outside = _outside_reference(schema)
        if outside is not None:
            return (f"its input schema refers outside itself ($ref {outside[:200]!r}); "
                    "such references are not fetched")
        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except jsonschema.SchemaError as exc:
            return f"its input schema is not valid JSON Schema: {exc.message[:200]}"
        visibility = self._visibility
        if isinstance(visibility, Mapping):
            visibility = visibility.get(remote_name, "tool")
        approval = (self._approval if isinstance(self._approval, bool)
                    else remote_name in self._approval)
        # The server's title, else its own tool name made readable (not "T add tool").
        label = str(getattr(remote, "title", None) or humanise_name(remote_name))
        if len(label) > MAX_LABEL_CHARS:
            label = label[:MAX_LABEL_CHARS - 1] + "…"
        try:
            return MCPTool(name=name, description=description,
                           handler=_unreachable_handler, parameters=dict(schema),
                           visibility=visibility or "tool", category=self.category,
                           label=label, requires_approval=approval,
                           server=self.name, remote_name=remote_name,
                           connection=self.connection)
        except ValueError as exc:
            return str(exc)

    async def close(self) -> None:
        await self.connection.close()


def _schema_text(schema: dict[str, Any]) -> str:
    return pydantic_core.to_json(schema, fallback=repr).decode()


def _skip_pattern(*_args: Any) -> Iterator[jsonschema.ValidationError]:
    return iter(())


@functools.cache
def _without_patterns(validator: type[Any]) -> type[Any]:
    """``validator`` without the ``pattern`` keyword. The server's regular expression runs
    against what the model sends, on the kernel's thread; one that backtracks
    exponentially (``^(a+)+$``) would hang the kernel for good. The server checks its
    own patterns when it gets the call."""
    extended: type[Any] = jsonschema.validators.extend(  # type: ignore[no-untyped-call]
        validator, {"pattern": _skip_pattern})
    return extended


def _outside_reference(schema: Any) -> str | None:
    """The first ``$ref`` / ``$dynamicRef`` of ``schema`` that does not point inside it
    (``#…``), if any."""
    pending = [schema]
    while pending:
        node = pending.pop()
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$ref", "$dynamicRef") and isinstance(value, str) \
                        and not value.startswith("#"):
                    return value
                pending.append(value)
        elif isinstance(node, list):
            pending.extend(node)
    return None


def restore_mcp_server(catalog: ToolHost, spec: Mapping[str, Any]) -> MCPToolServer:
    """Bring back a server a session stored (:meth:`MCPToolServer.spec`) without waiting
    for it: its tools are registered from the stored listing at once (so agent configs
    that name them resolve), the server starts on the first call, and its live listing then
    replaces the stored one — a description that differs from the stored, granted one is
    flagged like any change."""
    import mcp_types

    name = spec["name"]
    if not isinstance(name, str) or not _TOOL_NAME.match(name) or SEPARATOR in name:
        raise ValueError(f"stored MCP server name {name!r} is not valid")
    if name in catalog.mcp_servers:
        return catalog.mcp_servers[name]
    parameters = MCPServerParameters(
        name=name, command=spec.get("command"), args=tuple(spec.get("args") or ()),
        cwd=spec.get("cwd"), url=spec.get("url"), timeout=float(spec.get("timeout") or 30.0))
    server = MCPToolServer(catalog, parameters, category=spec.get("category"),
                           visibility=spec.get("visibility"),
                           requires_approval=spec.get("requires_approval") or False)
    listed = [mcp_types.Tool.model_validate(item) for item in spec.get("tools") or ()]
    server.connection.restored = True
    server.url_withheld = withheld_names(spec.get("url_withheld"))
    server.connection.status = ServerStatus.NOT_STARTED
    catalog.mcp_servers.add(server)
    try:
        server._apply(listed)
    except MCPServerError as error:  # a stored listing this version no longer accepts
        catalog.mcp_servers.discard(name)
        raise ValueError(error.reason) from None
    return server


async def connect_mcp_server(
        catalog: ToolHost, name: str, *, command: str | None = None,
        args: Sequence[str] = (), env: Mapping[str, str] | None = None,
        cwd: str | PathLike[str] | None = None, url: str | None = None,
        headers: Mapping[str, str] | None = None, category: str | None = None,
        visibility: ToolVisibility | Mapping[str, ToolVisibility] | None = None,
        requires_approval: bool | Iterable[str] = False,
        timeout: float = 30.0,  # noqa: ASYNC109 - the server's connect timeout
) -> MCPToolServer:
    """What :meth:`ToolCatalog.add_mcp_server` does."""
    from mcp import MCPError  # after .mcp_connection, which names the extra if it is missing

    if not isinstance(name, str) or not _TOOL_NAME.match(name) or SEPARATOR in name \
            or len(name) > _SERVER_NAME_MAX:
        raise ValueError(f"MCP server name {name!r} must be 1-{_SERVER_NAME_MAX} letters, "
                         "digits, '_' or '-' without '__' (it prefixes every tool name)")
    if name in catalog.mcp_servers:
        raise ValueError(f"an MCP server named {name!r} is already in this catalog; "
                         "remove_mcp_server it first")
    choices = visibility.values() if isinstance(visibility, Mapping) else [visibility]
    if visibility is not None and any(v not in _VISIBILITIES for v in choices):
        raise ValueError("visibility must be 'internal', 'tool', 'skill' or a mapping from "
                         f"the server's tool names to one of those, got {visibility!r}")
    parameters = MCPServerParameters(
        name=name, command=command, args=tuple(args), env=env,
        cwd=None if cwd is None else str(cwd), url=url, headers=headers, timeout=timeout)
    server = MCPToolServer(catalog, parameters, category=category, visibility=visibility,
                           requires_approval=requires_approval)
    catalog.mcp_servers.add(server)
    try:
        await server.connection.open()
        try:
            await server.refresh()
        except MCPError as error:  # the server answered the listing with an error
            raise MCPServerError(name, f"could not list its tools: {error}") from error
    except BaseException:
        catalog.mcp_servers.discard(name)
        await server.close()
        raise
    return server
