"""What the tool configuration panel's view may ask about the config and the catalog:
switch one tool, a bulk operation, forget an unknown name, acknowledge an MCP tool's
changed description — each a function ``(catalog, config, request, shown) -> reply`` that
:class:`~neta_nb.widgets.tool_config.panel.ToolConfigPanel` registers with ``@handles``;
and the checks and reply shapes of its own requests ("preview as", the prompt preview).
Each checks what the view sent (a crafted message can send anything) and answers with a
clear error.

The functions change the config or the catalog; the panel follows both and resolves again
before the change returns, so a reply reads the result from ``shown``: what the panel
publishes (:class:`Shown`, its public traits), never the panel's own state."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final, Protocol, cast

from ...tools import AgentToolConfig, PromptPreview, ToolCatalog
from ..base import RequestError
from .traits import (
    AcknowledgeRequest,
    BulkReply,
    BulkRequest,
    ForgetReply,
    ForgetRequest,
    NoReply,
    PreviewAsRequest,
    PreviewResult,
    SetToolReply,
    SetToolRequest,
    ToolDefinitionWire,
)

__all__ = ["BULK_OPERATIONS", "Shown", "acknowledge_change", "bulk", "forget",
           "preview_as_arguments", "preview_reply", "set_tool"]

BULK_OPERATIONS: Final = ("restore_core_defaults", "clear_extra_enabled",
                          "clear_disabled_overrides")
"""The three bulk operations of seed 001 §7.3, by the request's ``op`` name."""


class Shown(Protocol):
    """What the panel shows after a change (its traits of the same names)."""

    @property
    def states(self) -> Mapping[str, Any]:
        """Per tool name, the resolver's verdict (a ``ToolVerdict``)."""

    @property
    def enabled_tools(self) -> Sequence[str]:
        """The final tools, in the resolver's order."""

    @property
    def unknown(self) -> Sequence[str]:
        """Names in the config that the catalog does not have."""


def set_tool(catalog: ToolCatalog, config: AgentToolConfig, request: SetToolRequest,
             shown: Shown) -> SetToolReply:
    """``set_tool``: switch one tool on or off for this agent; the reply is its verdict."""
    name, enabled = request.get("name"), request.get("enabled")
    if not isinstance(name, str) or not isinstance(enabled, bool):
        raise RequestError("set_tool needs a tool name (string) and enabled (true/false)")
    try:
        config.set_tool(name, enabled, catalog)
    except KeyError:
        raise RequestError(f"there is no tool named '{name}' in the catalog") from None
    except ValueError:
        raise RequestError(f"'{name}' is disabled globally in tool management; it cannot "
                           "be switched on or off for this agent") from None
    return cast(SetToolReply, {"name": name, **shown.states[name]})


def bulk(catalog: ToolCatalog, config: AgentToolConfig, request: BulkRequest,
         shown: Shown) -> BulkReply:
    """``bulk``: one of :data:`BULK_OPERATIONS`; the reply is the final tools."""
    operation = request.get("op")
    if operation == "restore_core_defaults":
        config.restore_core_defaults(catalog)
    elif operation == "clear_extra_enabled":
        config.clear_extra_enabled()
    elif operation == "clear_disabled_overrides":
        config.clear_disabled_overrides()
    else:
        raise RequestError(f"unknown bulk operation {operation!r}; expected one of "
                           + ", ".join(BULK_OPERATIONS))
    return {"enabled_tools": list(shown.enabled_tools)}


def forget(config: AgentToolConfig, request: ForgetRequest, shown: Shown) -> ForgetReply:
    """``forget``: drop a config name the catalog does not know; the reply is the unknown
    names left."""
    name = request.get("name")
    # Only names the catalog does not know: forgetting a known name would silently
    # drop a real override.
    if not isinstance(name, str) or name not in shown.unknown:
        raise RequestError(f"{name!r} is not an unknown tool name of this config")
    config.forget(name)
    return {"unknown": list(shown.unknown)}


def acknowledge_change(catalog: ToolCatalog, request: AcknowledgeRequest) -> NoReply:
    """``acknowledge_change``: the user reviewed an MCP tool whose description changed
    after it was granted (the description the view showed, so a tool changed again since
    is refused)."""
    name, description = request.get("name"), request.get("description")
    if not isinstance(name, str) or not isinstance(description, str | None):
        raise RequestError("acknowledge_change needs a tool name (string) and the "
                           "description that was shown (string)")
    try:
        catalog.acknowledge_mcp_change(name, description=description)
    except KeyError:
        raise RequestError(f"'{name}' has no description change to review") from None
    except ValueError as error:
        raise RequestError(str(error)) from None
    return {}


def preview_as_arguments(request: PreviewAsRequest) -> tuple[list[str] | None, str | None]:
    """The capabilities and scene of a ``preview_as`` request, checked for their shape
    (the panel checks the names against its catalog)."""
    if "capabilities" not in request or "scene" not in request:
        raise RequestError("preview_as needs capabilities (a list of names, or null) and "
                           "scene (a name, or null)")
    capabilities, scene = request["capabilities"], request["scene"]
    if capabilities is not None and (not isinstance(capabilities, list) or not all(
            isinstance(name, str) for name in capabilities)):
        raise RequestError("capabilities must be a list of names, or null")
    if scene is not None and not isinstance(scene, str):
        raise RequestError("scene must be a name, or null")
    return capabilities, scene


def preview_reply(preview: PromptPreview) -> PreviewResult:
    """The ``preview`` reply: the system prompt and tool definitions a provider gets."""
    return {"system_prompt": preview.system_prompt,
            "tools": [cast(ToolDefinitionWire, definition.model_dump())
                      for definition in preview.tools]}
