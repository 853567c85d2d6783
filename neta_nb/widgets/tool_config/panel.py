"""``ToolConfigPanel``: one agent's tool authorization (seed 001 §7).

The panel edits an :class:`~neta_nb.tools.AgentToolConfig` against a
:class:`~neta_nb.tools.ToolCatalog`, one tool at a time. It never decides anything itself:
after every change — from the view, from Python (``config.set_tool(...)``,
``catalog.disable(...)``) or to the model's capabilities / scene — it calls
:func:`~neta_nb.tools.resolve_tools` and publishes the result as traits. The view renders
those traits and sends requests:

* ``{kind: "set_tool", id, name, enabled}`` — switch one tool on or off for this agent;
* ``{kind: "bulk", id, op}`` — ``restore_core_defaults`` / ``clear_extra_enabled`` /
  ``clear_disabled_overrides``;
* ``{kind: "forget", id, name}`` — drop a config name the catalog does not know;
* ``{kind: "dismiss_warnings", id}`` — hide the current config warnings;
* ``{kind: "acknowledge_change", id, name}`` — the user reviewed an MCP tool whose
  description changed after it was granted; it is switched back on;
* ``{kind: "preview", id}`` — the exact tool definitions the provider will receive;
* ``{kind: "preview_as", id, capabilities, scene}`` — show the tools as another model
  (capabilities) or scene would get them; ``{kind: "reset_preview", id}`` ends that.

"Preview as" never touches the config: the panel resolves twice, once for the agent (its
:attr:`resolution`, what the runtime gets) and once as previewed (what the view shows), and
the switches keep editing the agent's config. The choices offered are derived from the
catalog — the capabilities its tools need, the scenes they mention — and a request naming
anything else is refused, since it could only be a typo or a crafted message.

A globally disabled tool is read-only: a request to switch it is refused with an error
reply and the config is left as it was.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from enum import Enum
from typing import TYPE_CHECKING, Any, Final, cast

import traitlets

from ...events import ProgressEvent, SubagentEvent, ThinkingDeltaEvent, TokenEvent
from ...labels import Notice
from ...tools import (
    AgentToolConfig,
    PromptPreview,
    ToolCatalog,
    ToolResolution,
    ToolState,
    preview_prompt,
    resolve_tools,
)
from ..base import NetaWidget, RequestError, handles
from .preview import (
    known_scenes,
    needed_capabilities,
    preview_choices,
    preview_state,
    scene_label,
)
from .requests import (
    BULK_OPERATIONS,
    acknowledge_change,
    bulk,
    forget,
    preview_as_arguments,
    preview_reply,
    set_tool,
)
from .rows import describe_tool, mcp_server_rows, reason_fields
from .static import PanelStatic
from .traits import (
    AcknowledgeRequest,
    BulkReply,
    BulkRequest,
    CategoryCount,
    ForgetReply,
    ForgetRequest,
    NoReply,
    PreviewAs,
    PreviewAsReply,
    PreviewAsRequest,
    PreviewChoice,
    PreviewOptions,
    PreviewResult,
    SetToolReply,
    SetToolRequest,
    ToolConfigSummary,
    ToolInfo,
    ToolVerdict,
)

if TYPE_CHECKING:
    from ...runtime.session import AgentSession

__all__ = ["AGENT_OWN", "BULK_OPERATIONS", "STATE_FILTERS", "CategoryCount", "PreviewAs",
           "PreviewOptions", "PreviewResult", "ToolConfigPanel", "ToolConfigSummary",
           "ToolInfo", "ToolVerdict"]


class _AgentOwn(Enum):
    AGENT_OWN = "agent_own"


AGENT_OWN: Final = _AgentOwn.AGENT_OWN
"""For :meth:`ToolConfigPanel.preview_as`: keep the agent's own capabilities or scene
(``None`` already means "no filter")."""


STATE_FILTERS: Final = ("all", "enabled", "off", "globally_disabled")
"""The state filter of seed 001 §7.3: all / enabled / switched off / globally disabled."""

_ON_STATES: Final = (ToolState.DEFAULT_ENABLED, ToolState.AGENT_ENABLED)
_UNSHOWN_EVENTS: Final = frozenset({TokenEvent, ThinkingDeltaEvent, ProgressEvent, SubagentEvent})
"""Events of a followed session that change nothing the panel shows: deltas, progress, and
all of a sub-agent's (wrapped, one per delta of its own; the panel shows the session's
tools, and a child changes neither its inputs nor its resolution)."""

class ToolConfigPanel(NetaWidget):
    """``ToolConfigPanel(catalog, config)``: switch tools on and off for one agent.

    The panel follows ``catalog`` and ``config`` live (their ``subscribe``) until it is
    closed. ``model_capabilities``, ``scene`` and ``model`` are passed to the resolver
    (they can be changed later; the panel re-resolves), ``system_prompt`` only feeds the
    prompt preview.

    For an agent that runs in a session, use :meth:`for_session`: a panel built from the
    catalog and config alone filters nothing by model or scene, so it would list tools
    (``describe_image`` for a model without vision) that the runtime never sends.
    """

    _component = traitlets.Unicode("tool-config-panel").tag(sync=True)
    _static_traits = ("tools", "states", "summary", "unknown", "warnings", "previewing_as", "lang")

    tools = traitlets.List(traitlets.Dict(), help=(
        "Every catalog tool in display order: name, label, description, category, "
        "capabilities, scenes, core, visibility, requires_approval.")).tag(sync=True)
    states = traitlets.Dict(help=(
        "Per tool name, the resolver's verdict: state (a ToolState value), on (the "
        "agent's switch), available (in the final set); for a tool not in the final set "
        "reason (why, in the panel's language), reason_code and reason_params (the "
        "resolver's notice as data).")).tag(sync=True)
    enabled_tools = traitlets.List(traitlets.Unicode(), help=(
        "The final tools, in the resolver's order.")).tag(sync=True)
    categories = traitlets.List(traitlets.Dict(), help=(
        "Categories in display order with their tool count and enabled count.")).tag(sync=True)
    summary = traitlets.Dict(help="Counts for the summary line.").tag(sync=True)
    unknown = traitlets.List(traitlets.Unicode(), help=(
        "Names in the config that the catalog does not have.")).tag(sync=True)
    warnings = traitlets.List(traitlets.Unicode(), help=(
        "Problems with the config (load notes, conflicts), minus dismissed ones, in the "
        "panel's language.")).tag(sync=True)

    search = traitlets.Unicode("", help="Search text (name, label, description).").tag(sync=True)
    state_filter = traitlets.Enum(STATE_FILTERS, default_value="all").tag(sync=True)
    core_only = traitlets.Bool(False, help="Show core tools only.").tag(sync=True)
    collapsed = traitlets.List(traitlets.Unicode(), help=(
        "Categories whose section is folded.")).tag(sync=True)
    preview_options = traitlets.Dict(help=(
        "What 'preview as' offers: model choices derived from the capabilities the "
        "catalog's tools need, the scenes they mention, the agent's own scene.")).tag(sync=True)
    previewing_as = traitlets.Dict(allow_none=True, default_value=None, help=(
        "The active preview (capabilities, scene, choice, text, changed), or None: then "
        "the traits show the agent's own resolution.")).tag(sync=True)
    mcp_servers = traitlets.List(traitlets.Dict(), help=(
        "The catalog's MCP servers: name, category (their section), status, status_text, "
        "changed (tools whose description changed since granted: suspended until "
        "acknowledged), refused (server tool names not added, and why).")).tag(sync=True)


    _following = False
    """True from the end of ``__init__`` until :meth:`close`."""

    def __init__(self, catalog: ToolCatalog, config: AgentToolConfig, *,
                 model_capabilities: Iterable[str] | None = None, scene: str | None = None,
                 model: str | None = None, system_prompt: str = "",
                 delegates: bool | None = None, notebook_page: bool | None = None,
                 **kwargs: Any) -> None:
        super().__init__(**kwargs)
        # Whether the agent may delegate, and whether a notebook page answers it
        # (resolve_tools): a session's panel knows them.
        self._delegates = delegates
        self._notebook_page = notebook_page
        self._catalog = catalog
        self._config = config
        self._model_capabilities = (None if model_capabilities is None
                                    else frozenset(model_capabilities))
        self._scene = scene
        self._model = model
        self.system_prompt = system_prompt
        self._dismissed_warnings: set[Notice] = set()
        self._shown_warnings: list[Notice] = []
        self._catalog_version: int | None = None
        self._resolution: ToolResolution = resolve_tools(catalog, config)
        self._shown: ToolResolution = self._resolution
        # The previewed resolver arguments (capabilities, scene), or None for the agent's.
        self._preview: tuple[frozenset[str] | None, str | None] | None = None
        self._session: AgentSession | None = None
        self._unsubscribe_session: Callable[[], None] | None = None
        self._unsubscribers: list[Callable[[], None]] = self._watch(catalog, config)
        self._following = True
        self.refresh()

    @classmethod
    def for_session(cls, session: AgentSession, **kwargs: Any) -> ToolConfigPanel:
        """The panel of ``session``'s agent, resolving exactly as the session's next model
        call will: its catalog and tool config, the model's capabilities and the agent's
        scene (the same inputs as :meth:`AgentSession.preview`), and its system prompt for
        the prompt preview.

        It follows the session: edits to the config or catalog show at once, and a new
        provider (``session.provider = …``), a changed scene or a replaced config or
        catalog show at the session's next event (a turn's first model call) or on
        :meth:`refresh`.
        """
        panel = cls(session.catalog, session.agent.tools, **_session_inputs(session), **kwargs)
        panel._session = session

        def on_event(event: object) -> None:
            # A refresh resolves and renders every tool again, and deltas are most events.
            if type(event) not in _UNSHOWN_EVENTS:
                panel.refresh()

        panel._unsubscribe_session = session.subscribe(on_event)
        return panel

    def _watch(self, catalog: ToolCatalog, config: AgentToolConfig) -> list[Callable[[], None]]:
        return [catalog.subscribe(lambda _catalog: self.refresh()),
                config.subscribe(lambda _config: self.refresh())]

    def _follow_session(self) -> None:
        """Take the bound session's resolver inputs as they are now."""
        session = self._session
        if session is None:
            return
        if session.catalog is not self._catalog or session.agent.tools is not self._config:
            for unsubscribe in self._unsubscribers:
                unsubscribe()
            self._catalog, self._config = session.catalog, session.agent.tools
            self._catalog_version = None  # a new catalog: its tools are sent again
            self._unsubscribers = self._watch(self._catalog, self._config)
        inputs = _session_inputs(session)
        self._model_capabilities = inputs["model_capabilities"]
        self._scene = inputs["scene"]
        self._model = inputs["model"]
        self.system_prompt = inputs["system_prompt"]
        self._delegates = inputs["delegates"]
        self._notebook_page = inputs["notebook_page"]

    # --- what the panel edits ------------------------------------------------------

    @property
    def catalog(self) -> ToolCatalog:
        return self._catalog

    @property
    def config(self) -> AgentToolConfig:
        return self._config

    @property
    def resolution(self) -> ToolResolution:
        """The agent's own resolution (what the runtime gets), whatever is previewed."""
        return self._resolution

    @property
    def shown_resolution(self) -> ToolResolution:
        """What the view shows: the previewed resolution while a preview is active."""
        return self._shown

    @property
    def previewing(self) -> bool:
        """Whether a "preview as" is active (the view then shows :attr:`shown_resolution`)."""
        return self._preview is not None

    @property
    def model_capabilities(self) -> frozenset[str] | None:
        return self._model_capabilities

    @model_capabilities.setter
    def model_capabilities(self, value: Iterable[str] | None) -> None:
        self._model_capabilities = None if value is None else frozenset(value)
        self.refresh()

    @property
    def scene(self) -> str | None:
        return self._scene

    @scene.setter
    def scene(self, value: str | None) -> None:
        self._scene = value
        self.refresh()

    @property
    def model(self) -> str | None:
        return self._model

    @model.setter
    def model(self, value: str | None) -> None:
        self._model = value
        self.refresh()

    # --- state ---------------------------------------------------------------------

    def _resolve(self) -> ToolResolution:
        return resolve_tools(self._catalog, self._config,
                             model_capabilities=self._model_capabilities,
                             scene=self._scene, model=self._model,
                             delegates=self._delegates, notebook_page=self._notebook_page)

    # --- preview as ----------------------------------------------------------------

    def _needed_capabilities(self) -> list[str]:
        return needed_capabilities(self._catalog)

    def _known_capabilities(self) -> set[str]:
        return set(self._needed_capabilities()) | (self._model_capabilities or set())

    def _known_scenes(self) -> list[str]:
        return known_scenes(self._catalog, self._scene)

    def _preview_choices(self) -> list[PreviewChoice]:
        return preview_choices(self._catalog, self._model_capabilities, self._model, self.lang)

    def _scene_label(self, scene: str | None) -> str:
        return scene_label(scene, self._scene, self.lang)

    def preview_as(self, *, model_capabilities: Iterable[str] | _AgentOwn | None = AGENT_OWN,
                   scene: str | _AgentOwn | None = AGENT_OWN) -> None:
        """Show the tools as a model with ``model_capabilities`` in ``scene`` would get
        them (``None``: no filter; :data:`AGENT_OWN`: the agent's own), without changing
        the config. Names the catalog's tools never mention raise ``ValueError``. A
        preview equal to the agent's own settings is no preview."""
        if isinstance(model_capabilities, _AgentOwn):
            capabilities = self._model_capabilities
        elif isinstance(model_capabilities, str):
            # A bare string would otherwise be read as a set of one-letter capabilities.
            raise TypeError("model_capabilities must be a collection of names, not a string")
        else:
            capabilities = frozenset(model_capabilities) if model_capabilities is not None else None
            unknown = sorted(capabilities - self._known_capabilities()) if capabilities else []
            if unknown:
                raise ValueError(
                    f"unknown capability {', '.join(map(repr, unknown))}; the catalog's tools "
                    f"need: {', '.join(self._needed_capabilities()) or 'none'}")
        if isinstance(scene, _AgentOwn):
            scene = self._scene
        elif scene is not None and scene not in self._known_scenes():
            raise ValueError(f"unknown scene {scene!r}; the catalog's tools mention: "
                             f"{', '.join(self._known_scenes()) or 'none'}")
        preview = (capabilities, scene)
        self._preview = None if preview == (self._model_capabilities, self._scene) else preview
        self.refresh()

    def reset_preview(self) -> None:
        """Show the agent's own resolution again."""
        self._preview = None
        self.refresh()

    def _preview_state(self, choices: list[PreviewChoice]) -> PreviewAs | None:
        if self._preview is None:
            return None
        return preview_state(self._preview, choices, agent_scene=self._scene,
                             catalog=self._catalog, real=self._resolution, shown=self._shown,
                             lang=self.lang)

    @property
    def session(self) -> AgentSession | None:
        """The session this panel follows (:meth:`for_session`), else ``None``."""
        return self._session

    def refresh(self) -> None:
        """Resolve again and publish the result (called on every change it follows)."""
        self._follow_session()
        self._resolution = self._resolve()
        if self._preview is None:
            self._shown = self._resolution
        else:
            capabilities, scene = self._preview
            # The reasons name the agent's model only for its own capabilities: a
            # previewed model is not that model.
            model = self._model if capabilities == self._model_capabilities else None
            self._shown = resolve_tools(self._catalog, self._config,
                                        model_capabilities=capabilities, scene=scene,
                                        model=model, delegates=self._delegates,
                                        notebook_page=self._notebook_page)
        resolution = self._shown
        ordered = self._catalog.ordered()
        final = set(resolution.names)
        lang = self.lang
        rendered: dict[Notice, Mapping[str, Any]] = {}
        states: dict[str, ToolVerdict] = {}
        for name, state in resolution.states.items():
            reason = resolution.reasons.get(name)
            states[name] = cast(ToolVerdict, {
                "state": state.value,
                "on": state in _ON_STATES,
                "available": name in final,
                **reason_fields(reason, lang, rendered),
            })
        counts: dict[str, list[int]] = {}
        for item in ordered:
            count = counts.setdefault(item.category, [0, 0])
            count[0] += 1
            count[1] += item.name in final
        state_counts = {state: 0 for state in ToolState}
        for state in resolution.states.values():
            state_counts[state] += 1
        unknown = resolution.unknown
        # Unknown names have their own notice (with a forget action); the resolver's
        # warning about each would say the same thing twice.
        warnings = [warning for warning in dict.fromkeys(resolution.warnings)
                    if warning.code != "unknown_tool"
                    and warning not in self._dismissed_warnings]
        self._shown_warnings = warnings
        categories: list[CategoryCount] = [
            {"name": category, "count": total, "enabled": enabled}
            for category, (total, enabled) in counts.items()]
        summary: ToolConfigSummary = {
            "enabled": len(resolution.tools),
            "total": len(ordered),
            "core": sum(item.core for item in ordered),
            "extra_enabled": state_counts[ToolState.AGENT_ENABLED],
            "switched_off": state_counts[ToolState.AGENT_DISABLED],
            "globally_disabled": state_counts[ToolState.GLOBALLY_DISABLED],
            "filtered_out": len(resolution.filtered_out),
        }
        choices = self._preview_choices()
        scenes = self._known_scenes()
        preview_options: PreviewOptions = {
            "choices": choices, "scenes": scenes, "agent_scene": self._scene,
            "scene_labels": {"": self._scene_label(None),
                             **{scene: self._scene_label(scene) for scene in scenes}}}
        previewing = self._preview_state(choices)
        with self.hold_sync():
            if self._catalog_version != self._catalog.version:
                self._catalog_version = self._catalog.version
                self.tools = cast("list[dict[str, Any]]", [describe_tool(item) for item in ordered])
            self.states = states
            self.enabled_tools = resolution.names
            self.categories = cast("list[dict[str, Any]]", categories)
            self.summary = cast("dict[str, Any]", summary)
            self.unknown = unknown
            self.warnings = [warning.text(lang) for warning in warnings]
            self.preview_options = cast("dict[str, Any]", preview_options)
            self.mcp_servers = cast("list[dict[str, Any]]", mcp_server_rows(self._catalog, lang))
            # set_trait: the stubs type a Dict trait as never None, and this one may be.
            self.set_trait("previewing_as", previewing)
        # The whole new form, now, if one waits for the throttle: the first trait set above
        # sent one in between (new rows under the old count), and a notebook saved before
        # the throttled update would keep that one.
        self._static_form.flush()

    @traitlets.observe("lang")
    def _on_lang(self, _change: object) -> None:
        # Reasons and warnings are sent as text in the panel's language. (A ``lang``
        # given to the constructor arrives before there is anything to resolve.)
        if self._following:
            self.refresh()

    # --- requests from the view --------------------------------------------------------
    # The config and catalog changes are functions of .requests; the panel follows both,
    # so their replies read what it shows after the change.

    @handles("set_tool")
    def _request_set_tool(self, request: SetToolRequest) -> SetToolReply:
        return set_tool(self._catalog, self._config, request, self)

    @handles("bulk")
    def _request_bulk(self, request: BulkRequest) -> BulkReply:
        return bulk(self._catalog, self._config, request, self)

    @handles("forget")
    def _request_forget(self, request: ForgetRequest) -> ForgetReply:
        return forget(self._config, request, self)

    @handles("acknowledge_change")
    def _request_acknowledge_change(self, request: AcknowledgeRequest) -> NoReply:
        return acknowledge_change(self._catalog, request)

    @handles("dismiss_warnings")
    def _request_dismiss_warnings(self, _request: Mapping[str, object]) -> NoReply:
        # Remembered as notices (code + params), so a dismissal holds in every language.
        self._dismissed_warnings.update(self._shown_warnings)
        self._shown_warnings = []
        self.warnings = []
        return {}

    @handles("preview_as")
    def _request_preview_as(self, request: PreviewAsRequest) -> PreviewAsReply:
        capabilities, scene = preview_as_arguments(request)
        try:
            self.preview_as(model_capabilities=capabilities, scene=scene)
        except ValueError as error:
            raise RequestError(str(error)) from None
        return {"preview_as": cast("PreviewAs | None", self.previewing_as),
                "enabled_tools": list(self.enabled_tools)}

    @handles("reset_preview")
    def _request_reset_preview(self, _request: Mapping[str, object]) -> PreviewAsReply:
        self.reset_preview()
        return {"preview_as": None, "enabled_tools": list(self.enabled_tools)}

    @handles("preview")
    def _request_preview(self, _request: Mapping[str, object]) -> PreviewResult:
        return preview_reply(self._prompt_preview())

    def _prompt_preview(self) -> PromptPreview:
        # The prompt preview shows what the view shows: under "preview as", what that
        # model and scene would receive.
        self._follow_session()
        capabilities, scene = (self._preview if self._preview is not None
                               else (self._model_capabilities, self._scene))
        if self._preview is None and self._session is not None:
            # The session's own view: `delegate` lists its agent's sub-agents.
            return self._session.preview()
        return preview_prompt(system_prompt=self.system_prompt, catalog=self._catalog,
                              config=self._config, model_capabilities=capabilities,
                              scene=scene, model=self._model, delegates=self._delegates,
                              notebook_page=self._notebook_page)

    def close(self) -> None:
        for unsubscribe in self._unsubscribers:
            unsubscribe()
        self._unsubscribers = []
        if self._unsubscribe_session is not None:
            self._unsubscribe_session()
            self._unsubscribe_session = None
        self._following = False
        super().close()

    # --- text forms ----------------------------------------------------------------

    def __repr__(self) -> str:
        return (f"ToolConfigPanel({self.summary.get('enabled', 0)} of "
                f"{self.summary.get('total', 0)} tools enabled)")

    def _static(self) -> PanelStatic:
        return PanelStatic(lang=self.lang, tools=self.tools, states=self.states,
                           summary=self.summary, unknown=self.unknown,
                           warnings=self.warnings, previewing_as=self.previewing_as)

    def _fallback_text(self) -> str:
        return self._static().text()

    def _fallback_html(self) -> str:
        return self._static().html()


def _session_inputs(session: AgentSession) -> dict[str, Any]:
    """The resolver inputs of ``session``'s next model call (as ``session.preview()``)."""
    return {"model_capabilities": session.provider.info.capabilities,
            "scene": session.agent.scene, "model": session.provider.model_id,
            "system_prompt": session.agent.system_prompt,
            "delegates": session.can_delegate, "notebook_page": _page_answers(session)}


def _page_answers(session: AgentSession) -> bool | None:
    """Whether a notebook page answers ``session``: no chat view bound at all, no (the
    edit and run tools show why they are left out); a bound view not (yet) on a page
    with the extension, unknown (a view may open any moment), so not filtered."""
    page = session.notebook_page
    if page is None:
        return False
    return True if page.available else None
