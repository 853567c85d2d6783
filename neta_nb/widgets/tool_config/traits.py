"""The tool configuration panel's wire format: each TypedDict mirrors the TS interface of
the same name in ``js/src/tool_config/tool-config-panel-traits.ts`` (the requests' payloads are
written inline there: ``{name, enabled}``, ``{op}``, ``{name}``, ``{capabilities,
scene}``), so ``mypy --strict``
sees what the view is sent."""

from __future__ import annotations

from typing import Any, Literal, TypedDict

from ...tools import ToolState
from ...tools.mcp.mcp import ServerStatus
from ..wire import NoReply

__all__ = ["AcknowledgeRequest", "BulkReply", "BulkRequest", "CategoryCount", "ForgetReply",
           "ForgetRequest", "MCPServerInfo", "MCPToolChange", "NoReply", "PreviewAs",
           "PreviewAsReply", "PreviewAsRequest", "PreviewChoice", "PreviewOptions",
           "PreviewResult", "SetToolReply", "SetToolRequest", "ToolConfigSummary",
           "ToolDefinitionWire", "ToolInfo", "ToolVerdict"]


class ToolInfo(TypedDict):
    """What the view shows of a tool that does not depend on the agent (TS: ``ToolInfo``)."""

    name: str
    label: str
    description: str
    category: str
    capabilities: list[str]
    scenes: list[str] | None
    core: bool
    visibility: str
    requires_approval: bool


class ToolVerdict(TypedDict):
    """The resolver's verdict on one tool for this agent (TS: ``ToolVerdict``)."""

    state: ToolState
    on: bool
    available: bool
    reason: str | None
    """Why the tool is not in the final set, in the panel's language."""
    reason_code: str | None
    """The reason as data (a notice code of ``neta_nb.labels``) ..."""
    reason_params: dict[str, Any] | None
    """... and its parameters."""


class MCPToolChange(TypedDict):
    """A server tool whose description changed after it was granted (TS: ``MCPToolChange``)."""

    name: str
    old_description: str
    new_description: str
    schema_changed: bool


class MCPServerInfo(TypedDict):
    """One MCP server of the catalog, shown on its category's section (TS:
    ``MCPServerInfo``). Never its ``env`` or ``headers``."""

    name: str
    category: str
    status: ServerStatus
    status_text: str
    """The status line in the panel's language, with the reason when there is one."""
    changed: list[MCPToolChange]
    refused: dict[str, str]


class AcknowledgeRequest(TypedDict, total=False):
    """``acknowledge_change`` (TS: sent inline as ``{name, description}``)."""

    name: str
    description: str
    """The new description the view showed: if the tool changed again since, the
    acknowledgement is refused (the user reviewed another text)."""


class CategoryCount(TypedDict):
    """TS: ``CategoryCount``."""

    name: str
    count: int
    enabled: int


class ToolConfigSummary(TypedDict):
    """Counts for the summary line (TS: ``ToolConfigSummary``)."""

    enabled: int
    total: int
    core: int
    extra_enabled: int
    switched_off: int
    globally_disabled: int
    filtered_out: int


class SetToolRequest(TypedDict):
    """``set_tool``: switch one tool for this agent (TS: sent inline as ``{name, enabled}``)."""

    name: str
    enabled: bool


class SetToolReply(ToolVerdict):
    """The tool's verdict after the switch, with its name."""

    name: str


class BulkRequest(TypedDict):
    """``bulk`` (TS: sent inline as ``{op}``, one of ``BulkOperation``)."""

    op: Literal["restore_core_defaults", "clear_extra_enabled", "clear_disabled_overrides"]


class BulkReply(TypedDict):
    enabled_tools: list[str]


class ForgetRequest(TypedDict):
    """``forget`` (TS: sent inline as ``{name}``)."""

    name: str


class ForgetReply(TypedDict):
    unknown: list[str]


class ToolDefinitionWire(TypedDict):
    """One tool definition of the preview (TS: ``PreviewResult.tools[]``)."""

    name: str
    description: str
    parameters: dict[str, Any]


class PreviewResult(TypedDict):
    """The ``preview`` reply (TS: ``PreviewResult``)."""

    system_prompt: str
    tools: list[ToolDefinitionWire]


class PreviewChoice(TypedDict):
    """One entry of the "preview as" model list (TS: ``PreviewChoice``)."""

    id: str
    """``model`` (the agent's own), ``all``, ``without:<capability>``, ``none``."""
    label: str
    """In the panel's language."""
    capabilities: list[str] | None
    """What the view sends as ``capabilities`` when this entry is picked (``None``: no
    capability filter, for an agent whose model's capabilities are not known)."""


class PreviewOptions(TypedDict):
    """The ``preview_options`` trait: what can be previewed, derived from the catalog
    (TS: ``PreviewOptions``)."""

    choices: list[PreviewChoice]
    scenes: list[str]
    """Every scene a catalog tool mentions, plus the agent's own."""
    scene_labels: dict[str, str]
    """Per scene, its label in the panel's language; ``""`` is "no scene"."""
    agent_scene: str | None
    """The agent's own scene (``None``: no scene filter)."""


class PreviewAs(TypedDict):
    """The ``preview_as`` trait while a preview is active (TS: ``PreviewAs``)."""

    capabilities: list[str] | None
    scene: str | None
    choice: str
    """The id of the matching :class:`PreviewChoice`, or ``custom``."""
    text: str
    """"Previewing as …", in the panel's language."""
    changed: list[str]
    """Tools whose availability the preview changes, in display order."""


class PreviewAsRequest(TypedDict):
    """``preview_as`` (TS: sent inline as ``{capabilities, scene}``): the resolver's own
    arguments, literally (``None`` is "no filter")."""

    capabilities: list[str] | None
    scene: str | None


class PreviewAsReply(TypedDict):
    preview_as: PreviewAs | None
    enabled_tools: list[str]

