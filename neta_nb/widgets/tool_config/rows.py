"""The tool configuration panel's rows, as the view receives them: what it shows of a
tool whatever the agent (:func:`describe_tool`), a resolver reason in the panel's
language (:func:`reason_fields`) and the MCP servers of the catalog
(:func:`mcp_server_rows`)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Final

from ...labels import Notice, t
from ...tools import ToolCatalog
from ...tools.base import Tool
from .traits import MCPServerInfo, ToolInfo

__all__ = ["describe_tool", "mcp_server_rows", "reason_fields"]

_NO_REASON: Final[Mapping[str, Any]] = {"reason": None, "reason_code": None,
                                         "reason_params": None}


def reason_fields(reason: Notice | None, lang: str,
                   rendered: dict[Notice, Mapping[str, Any]]) -> Mapping[str, Any]:
    """What the view gets of a resolver reason: its text in the panel's language, rendered
    from the label table, and the notice itself (code + params) for anything that needs
    more than words. ``rendered`` makes each distinct notice once per refresh (the
    resolver shares one notice among all the tools it applies to)."""
    if reason is None:
        return _NO_REASON
    fields = rendered.get(reason)
    if fields is None:
        data = reason.to_json()
        fields = rendered[reason] = {"reason": reason.text(lang), "reason_code": data["code"],
                                     "reason_params": data["params"]}
    return fields


def describe_tool(item: Tool) -> ToolInfo:
    """What the view shows of a tool that does not depend on the agent."""
    return {
        "name": item.name,
        "label": item.label or item.name,
        "description": item.description,
        "category": item.category,
        "capabilities": sorted(item.capabilities),
        "scenes": None if item.scenes is None else sorted(item.scenes),
        "core": item.core,
        "visibility": item.visibility,
        "requires_approval": item.requires_approval,
    }


def mcp_server_rows(catalog: ToolCatalog, lang: str) -> list[MCPServerInfo]:
    """The MCP servers of the catalog as the panel lists them: status, refusals and the
    tools whose description changed after they were granted."""
    servers: list[MCPServerInfo] = []
    for server in catalog.mcp_servers.values():
        status = server.status.value
        text = t(f"panel_mcp_{status}", lang)
        if server.reason:
            text = t("panel_mcp_status_reason", lang, status=text, reason=server.reason)
        servers.append({
            "name": server.name, "category": server.category, "status": server.status,
            "status_text": text, "refused": dict(server.refused),
            "changed": [{"name": notice.tool, "old_description": notice.old_description,
                         "new_description": notice.new_description,
                         "schema_changed": notice.schema_changed}
                        for notice in server.changed_tools.values()]})
    return servers
