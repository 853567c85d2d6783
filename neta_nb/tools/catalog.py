"""``ToolCatalog``: the global set of tools and their global on/off switch (seed 001).

The catalog is what "tool management" administers: which tools exist, how they group
into categories, which are core (on by default for every agent) and which are disabled
globally. Per-agent choices live in :class:`~neta_nb.tools.config.AgentToolConfig`; the
two meet only in :func:`~neta_nb.tools.resolution.resolver.resolve_tools`.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from os import PathLike
from typing import TYPE_CHECKING

from ..stored_urls import describe_withheld, withheld_names
from .base import Tool, ToolVisibility
from .displayable import Displayable

if TYPE_CHECKING:
    # Types only: .mcp never imports this module (it works against its ToolHost protocol).
    from .mcp.mcp import MCPToolServer

__all__ = ["SEED_CATEGORIES", "MCPServerRegistry", "ToolCatalog", "demo_catalog"]

SEED_CATEGORIES: tuple[str, ...] = (
    "base", "planning", "interaction", "memory", "skill", "crew", "vision", "document",
)
"""The seed's categories, in the order the config panel lists them (seed 001 §7.1).
Categories a tool invents are listed after these, in order of first registration."""

_SEED_RANK = {category: rank for rank, category in enumerate(SEED_CATEGORIES)}

CatalogListener = Callable[["ToolCatalog"], None]


class MCPServerRegistry(Mapping[str, "MCPToolServer"]):
    """The MCP servers of one catalog, by name (``catalog.mcp_servers``): read it as a
    mapping. A server adds itself while it connects or is restored
    (:mod:`neta_nb.tools.mcp.mcp`); :meth:`ToolCatalog.remove_mcp_server` takes it out."""

    def __init__(self, changed: Callable[[], None]) -> None:
        self._servers: dict[str, MCPToolServer] = {}
        self._changed = changed

    def __getitem__(self, name: str) -> MCPToolServer:
        return self._servers[name]

    def __iter__(self) -> Iterator[str]:
        return iter(self._servers)

    def __len__(self) -> int:
        return len(self._servers)

    def add(self, server: MCPToolServer) -> None:
        """Register ``server`` under its name (``ValueError`` when one already has it)."""
        if server.name in self._servers:
            raise ValueError(f"an MCP server named {server.name!r} is already in this "
                             "catalog; remove_mcp_server it first")
        self._servers[server.name] = server

    def discard(self, name: str) -> MCPToolServer | None:
        """Take the server named ``name`` out (``None`` when there is none)."""
        return self._servers.pop(name, None)

    def changed(self) -> None:
        """A server's status or flags changed: the catalog's listeners (the panels) hear
        of it."""
        self._changed()

    def __repr__(self) -> str:
        return f"MCPServerRegistry({', '.join(self._servers) or 'empty'})"


class ToolCatalog(Displayable):
    """The global tool set. Iterating yields tools in registration order; ``ordered()``
    yields them in display order (category, then name), the order the resolver uses."""

    def __init__(self, tools: Iterable[Tool] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._globally_disabled: set[str] = set()
        self._listeners: list[CatalogListener] = []
        self._custom_categories: list[str] = []
        self._ordered: list[Tool] | None = None
        self._version = 0
        self._mcp_servers = MCPServerRegistry(self._changed)
        for item in tools:
            self._add(item)

    # --- built-in sets ------------------------------------------------------------
    @classmethod
    def default(cls) -> ToolCatalog:
        """The built-in tools: ``todo``, ``read_file``, ``list_files``, ``python`` (not
        core; needs approval), ``list_variables`` (not core), the ``profile_table`` skill
        and the notebook tools (not core; :mod:`neta_nb.tools.notebook`)."""
        from .builtin import builtin_tools
        from .notebook import notebook_tools

        return cls([*builtin_tools(), *notebook_tools()])

    @classmethod
    def demo(cls) -> ToolCatalog:
        """The built-ins plus demo tools that fill every seed category (one of them needs
        the ``vision`` capability, one is disabled globally), for notebooks and the config
        panel."""
        from .demo import GLOBALLY_DISABLED, catalog_tools

        catalog = cls(catalog_tools())
        for name in GLOBALLY_DISABLED:
            catalog.disable(name)
        return catalog

    # --- registration ---------------------------------------------------------------
    def register(self, tool: Tool) -> Tool:
        """Add a tool. A second tool with the same name is refused (``ValueError``)."""
        self._add(tool)
        self._changed()
        return tool

    def unregister(self, name: str) -> Tool:
        """Remove a tool (``KeyError`` if absent). Agent configs that name it keep the
        name; the resolver reports it as unknown."""
        removed = self._tools.pop(name)
        self._globally_disabled.discard(name)
        self._ordered = None
        self._custom_categories = [c for c in self._custom_categories
                                   if any(t.category == c for t in self._tools.values())]
        self._changed()
        return removed

    def replace_tools(self, *, remove: Sequence[str], add: Sequence[Tool],
                      disable: Sequence[str] = ()) -> None:
        """Swap a group of tools as one change (an MCP server's listing): ``remove`` those
        names (absent ones are skipped), register ``add`` and disable ``disable`` of them
        globally; listeners see the catalog once, complete. Global disables of re-added
        names are kept. A name ``add`` repeats, or one registered and not removed, is
        refused (``ValueError``) before anything changes."""
        removed = set(remove)
        seen: set[str] = set()
        for item in add:
            _check_tool(item)
            if item.name in seen or (item.name in self._tools and item.name not in removed):
                raise ValueError(f"a tool named {item.name!r} is already registered")
            seen.add(item.name)
        kept_disabled = self._globally_disabled & removed
        for name in remove:
            self._tools.pop(name, None)
        for item in add:
            self._add(item)
        names = {item.name for item in add}
        self._globally_disabled = ((self._globally_disabled - set(remove))
                                   | (kept_disabled & names) | (set(disable) & names))
        self._ordered = None
        self._custom_categories = [c for c in self._custom_categories
                                   if any(t.category == c for t in self._tools.values())]
        self._changed()

    def _add(self, tool: Tool) -> None:
        _check_tool(tool)
        if tool.name in self._tools:
            raise ValueError(f"a tool named {tool.name!r} is already registered")
        self._tools[tool.name] = tool
        if tool.category not in _SEED_RANK and tool.category not in self._custom_categories:
            self._custom_categories.append(tool.category)
        self._ordered = None

    # --- lookup ---------------------------------------------------------------------
    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __getitem__(self, name: str) -> Tool:
        try:
            return self._tools[name]
        except KeyError:
            raise KeyError(f"no tool named {name!r} in the catalog") from None

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __iter__(self) -> Iterator[Tool]:
        return iter(list(self._tools.values()))

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> list[str]:
        return list(self._tools)

    @property
    def version(self) -> int:
        """Increases with every change; lets callers cache what they derive."""
        return self._version

    def category_rank(self, category: str) -> int:
        """Sort position of a category: the seed's first, then custom ones."""
        rank = _SEED_RANK.get(category)
        if rank is not None:
            return rank
        try:
            return len(SEED_CATEGORIES) + self._custom_categories.index(category)
        except ValueError:
            return len(SEED_CATEGORIES) + len(self._custom_categories)

    def ordered(self) -> list[Tool]:
        """Every tool in display order: category (seed order, then custom), then name."""
        if self._ordered is None:
            self._ordered = sorted(self._tools.values(),
                                   key=lambda t: (self.category_rank(t.category), t.name))
        return list(self._ordered)

    def _ordered_view(self) -> list[Tool]:
        """``ordered()`` without the defensive copy, for the resolver's hot path."""
        if self._ordered is None:
            self.ordered()
        assert self._ordered is not None
        return self._ordered

    def categories(self) -> dict[str, list[Tool]]:
        """Tools grouped by category (seed categories first, custom after; only
        categories that have tools), each group sorted by name."""
        groups: dict[str, list[Tool]] = {}
        for item in self._ordered_view():
            groups.setdefault(item.category, []).append(item)
        return groups

    def core_tools(self) -> list[Tool]:
        """The core tools (on by default for agents that inherit them), display order."""
        return [item for item in self._ordered_view() if item.core]

    # --- global switch --------------------------------------------------------------
    def disable(self, name: str) -> None:
        """Disable a tool for every agent. No agent config can switch it back on."""
        self._require(name)
        if name not in self._globally_disabled:
            self._globally_disabled.add(name)
            self._changed()

    def enable(self, name: str) -> None:
        """Lift a global disable."""
        self._require(name)
        if name in self._globally_disabled:
            self._globally_disabled.discard(name)
            self._changed()

    def _require(self, name: str) -> None:
        if name not in self._tools:
            raise KeyError(f"no tool named {name!r} in the catalog")

    def is_globally_enabled(self, name: str) -> bool:
        """True for a registered tool that is not disabled globally."""
        return name in self._tools and name not in self._globally_disabled

    @property
    def globally_disabled(self) -> frozenset[str]:
        return frozenset(self._globally_disabled)

    # --- MCP servers --------------------------------------------------------------------
    async def add_mcp_server(
            self, name: str, *, command: str | None = None, args: Sequence[str] = (),
            env: Mapping[str, str] | None = None, cwd: str | PathLike[str] | None = None,
            url: str | None = None, headers: Mapping[str, str] | None = None,
            category: str | None = None,
            visibility: ToolVisibility | Mapping[str, ToolVisibility] | None = None,
            requires_approval: bool | Iterable[str] = False,
            # The server's connect/list timeout, not a deadline for this coroutine.
            timeout: float = 30.0,  # noqa: ASYNC109
    ) -> MCPToolServer:
        """Start an MCP server (``command`` over stdio, or ``url`` over streamable HTTP),
        list its tools and register each as ``<name>__<tool>`` in ``category`` (default:
        the server's name). ``visibility`` is one for every tool or a mapping from the
        server's tool names (default ``tool``; ``skill`` shows progress as a skill card);
        ``requires_approval`` is ``True`` for every tool or the server's tool names that
        need it. ``timeout`` bounds connecting and listing. Needs ``neta-nb[mcp]``.

        The server runs until :meth:`remove_mcp_server` or the interpreter exits."""
        from .mcp.mcp import connect_mcp_server

        return await connect_mcp_server(
            self, name, command=command, args=args, env=env, cwd=cwd, url=url,
            headers=headers, category=category, visibility=visibility,
            requires_approval=requires_approval, timeout=timeout)

    async def remove_mcp_server(self, name: str) -> None:
        """Stop the server and remove its tools (``KeyError`` if there is none)."""
        server = self._mcp_servers.discard(name)
        if server is None:
            raise KeyError(f"no MCP server named {name!r} in the catalog")
        try:
            await server.close()
        finally:
            self.replace_tools(remove=[n for n in server.tool_names if n in self._tools],
                               add=[])

    @property
    def mcp_servers(self) -> MCPServerRegistry:
        """The MCP servers added to this catalog, by name."""
        return self._mcp_servers

    @property
    def suspended(self) -> Mapping[str, str]:
        """MCP tools switched off because their server changed their description or
        schema after they were granted (the "rug pull"), until the user acknowledges the
        change: tool name → server name. Each is also disabled globally — that is how the
        suspension is enforced — but its reason says why."""
        return {name: server.name for server in self._mcp_servers.values()
                for name, notice in server.changed_tools.items()
                if notice.was_globally_enabled and name in self._globally_disabled}

    def acknowledge_mcp_change(self, name: str, *, description: str | None = None) -> None:
        """Accept the new description of an MCP tool that changed after it was granted;
        it is switched back on if the change switched it off. ``description``: the new
        text the user reviewed — if the tool changed again since, ``ValueError`` and it
        stays off (else a server could swap the text between showing and granting)."""
        for server in self._mcp_servers.values():
            if name in server.changed_tools:
                server.acknowledge(name, description=description)
                return
        raise KeyError(f"MCP tool {name!r} has no unacknowledged change")

    def mcp_server_specs(self) -> list[dict[str, object]]:
        """What a session stores about this catalog's MCP servers (no secrets)."""
        return [server.spec() for server in self._mcp_servers.values()]

    def restore_mcp_servers(self, specs: Iterable[Mapping[str, object]]) -> list[str]:
        """Bring back stored servers (see :func:`neta_nb.tools.mcp.mcp.restore_mcp_server`):
        their tools at once, each server started on its first call. Servers already in
        the catalog are kept as they are. Returns why any could not be restored, or lacks
        what its stored URL was stored without (credentials, query parameters)."""
        problems: list[str] = []
        specs = list(specs)
        if not specs:
            return problems
        try:
            from .mcp.mcp import restore_mcp_server
        except ImportError as error:
            return [str(error)]
        for spec in specs:
            name = spec.get("name")
            added_again = isinstance(name, str) and name in self._mcp_servers
            try:
                restore_mcp_server(self, spec)
            except (KeyError, TypeError, ValueError) as error:
                problems.append(f"MCP server {name!r} not restored: {error}")
                continue
            withheld = withheld_names(spec.get("url_withheld"))
            if withheld and not added_again:
                problems.append(
                    f"MCP server {name!r}: its url was stored without "
                    f"{describe_withheld(withheld)} (they may be secrets); add it again "
                    f"with the full url before resuming: catalog.add_mcp_server({name!r}, "
                    f"url=...)")
        return problems

    # --- change notification ----------------------------------------------------------
    def subscribe(self, callback: CatalogListener) -> Callable[[], None]:
        """Call ``callback(catalog)`` after every change (register, unregister, enable,
        disable). Returns a function that unsubscribes."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _changed(self) -> None:
        self._version += 1
        for listener in list(self._listeners):
            listener(self)

    # --- displays -----------------------------------------------------------------------

    def __repr__(self) -> str:
        disabled = len(self._globally_disabled)
        return (f"ToolCatalog({len(self._tools)} tools"
                + (f", {disabled} disabled globally" if disabled else "") + ")")


def _check_tool(item: object) -> None:
    if not isinstance(item, Tool):
        raise TypeError(f"expected a Tool, got {type(item).__name__}; decorate the "
                        "function with @tool first")


def demo_catalog() -> ToolCatalog:
    """The built-in tools plus the demo tools; ``web_search`` is disabled globally (the
    same as :meth:`ToolCatalog.demo`)."""
    return ToolCatalog.demo()
