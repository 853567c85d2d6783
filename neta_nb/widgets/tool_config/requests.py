"""What the tool configuration panel's view may ask (the ``@handles`` methods of
:class:`~neta_nb.widgets.tool_config.panel.ToolConfigPanel`): switch one tool, a bulk
operation, forget an unknown name, acknowledge an MCP tool's changed description, dismiss
the warnings, preview as another model or scene, and the prompt preview. Each checks what
the view sent (a crafted message can send anything) and answers with a clear error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, Final, cast

from ...labels import Notice
from ...tools import AgentToolConfig, ToolCatalog, preview_prompt
from ..base import NetaWidget, RequestError, handles
from .traits import (
    AcknowledgeRequest,
    BulkReply,
    BulkRequest,
    ForgetReply,
    ForgetRequest,
    NoReply,
    PreviewAs,
    PreviewAsReply,
    PreviewAsRequest,
    PreviewResult,
    SetToolReply,
    SetToolRequest,
    ToolDefinitionWire,
)

if TYPE_CHECKING:
    from collections.abc import Iterable

    from ...runtime.session import AgentSession

__all__ = ["BULK_OPERATIONS", "PanelRequests"]

BULK_OPERATIONS: Final = ("restore_core_defaults", "clear_extra_enabled",
                          "clear_disabled_overrides")
"""The three bulk operations of seed 001 §7.3, by the request's ``op`` name."""


class PanelRequests(NetaWidget):
    """The panel's request handlers; the attributes it declares are the panel's."""

    _catalog: ToolCatalog
    _config: AgentToolConfig
    _session: AgentSession | None
    _preview: tuple[frozenset[str] | None, str | None] | None
    _model_capabilities: frozenset[str] | None
    _scene: str | None
    _model: str | None
    _delegates: bool | None
    _notebook_page: bool | None
    _dismissed_warnings: set[Notice]
    _shown_warnings: list[Notice]
    system_prompt: str

    if TYPE_CHECKING:
        states: dict[str, Any]
        enabled_tools: list[str]
        unknown: list[str]
        warnings: list[str]
        previewing_as: dict[str, Any] | None

        def _follow_session(self) -> None: ...
        def preview_as(self, *, model_capabilities: Iterable[str] | None,
                       scene: str | None) -> None: ...
        def reset_preview(self) -> None: ...

    @handles("set_tool")
    def _request_set_tool(self, content: SetToolRequest) -> SetToolReply:
        name, enabled = content.get("name"), content.get("enabled")
        if not isinstance(name, str) or not isinstance(enabled, bool):
            raise RequestError("set_tool needs a tool name (string) and enabled (true/false)")
        try:
            self._config.set_tool(name, enabled, self._catalog)
        except KeyError:
            raise RequestError(f"there is no tool named '{name}' in the catalog") from None
        except ValueError:
            raise RequestError(f"'{name}' is disabled globally in tool management; it cannot "
                               "be switched on or off for this agent") from None
        return cast(SetToolReply, {"name": name, **self.states[name]})

    @handles("bulk")
    def _request_bulk(self, content: BulkRequest) -> BulkReply:
        operation = content.get("op")
        if operation == "restore_core_defaults":
            self._config.restore_core_defaults(self._catalog)
        elif operation == "clear_extra_enabled":
            self._config.clear_extra_enabled()
        elif operation == "clear_disabled_overrides":
            self._config.clear_disabled_overrides()
        else:
            raise RequestError(f"unknown bulk operation {operation!r}; expected one of "
                               + ", ".join(BULK_OPERATIONS))
        return {"enabled_tools": list(self.enabled_tools)}

    @handles("forget")
    def _request_forget(self, content: ForgetRequest) -> ForgetReply:
        name = content.get("name")
        # Only names the catalog does not know: forgetting a known name would silently
        # drop a real override.
        if not isinstance(name, str) or name not in self.unknown:
            raise RequestError(f"{name!r} is not an unknown tool name of this config")
        self._config.forget(name)
        return {"unknown": list(self.unknown)}

    @handles("acknowledge_change")
    def _request_acknowledge_change(self, content: AcknowledgeRequest) -> NoReply:
        name, description = content.get("name"), content.get("description")
        if not isinstance(name, str) or not isinstance(description, str | None):
            raise RequestError("acknowledge_change needs a tool name (string) and the "
                               "description that was shown (string)")
        try:
            self._catalog.acknowledge_mcp_change(name, description=description)
        except KeyError:
            raise RequestError(f"'{name}' has no description change to review") from None
        except ValueError as error:
            raise RequestError(str(error)) from None
        return {}

    @handles("dismiss_warnings")
    def _request_dismiss_warnings(self, _content: Mapping[str, object]) -> NoReply:
        # Remembered as notices (code + params), so a dismissal holds in every language.
        self._dismissed_warnings.update(self._shown_warnings)
        self._shown_warnings = []
        self.warnings = []
        return {}

    @handles("preview_as")
    def _request_preview_as(self, content: PreviewAsRequest) -> PreviewAsReply:
        if "capabilities" not in content or "scene" not in content:
            raise RequestError("preview_as needs capabilities (a list of names, or null) and "
                               "scene (a name, or null)")
        capabilities, scene = content["capabilities"], content["scene"]
        if capabilities is not None and (not isinstance(capabilities, list) or not all(
                isinstance(name, str) for name in capabilities)):
            raise RequestError("capabilities must be a list of names, or null")
        if scene is not None and not isinstance(scene, str):
            raise RequestError("scene must be a name, or null")
        try:
            self.preview_as(model_capabilities=capabilities, scene=scene)
        except ValueError as error:
            raise RequestError(str(error)) from None
        return {"preview_as": cast("PreviewAs | None", self.previewing_as),
                "enabled_tools": list(self.enabled_tools)}

    @handles("reset_preview")
    def _request_reset_preview(self, _content: Mapping[str, object]) -> PreviewAsReply:
        self.reset_preview()
        return {"preview_as": None, "enabled_tools": list(self.enabled_tools)}

    @handles("preview")
    def _request_preview(self, _content: Mapping[str, object]) -> PreviewResult:
        # The prompt preview shows what the view shows: under "preview as", what that
        # model and scene would receive.
        self._follow_session()
        capabilities, scene = (self._preview if self._preview is not None
                               else (self._model_capabilities, self._scene))
        if self._preview is None and self._session is not None:
            # The session's own view: `delegate` lists its agent's sub-agents.
            preview = self._session.preview()
        else:
            preview = preview_prompt(system_prompt=self.system_prompt, catalog=self._catalog,
                                     config=self._config, model_capabilities=capabilities,
                                     scene=scene, model=self._model,
                                     delegates=self._delegates,
                                     notebook_page=self._notebook_page)
        return {"system_prompt": preview.system_prompt,
                "tools": [cast(ToolDefinitionWire, definition.model_dump())
                          for definition in preview.tools]}
