"""``AgentToolConfig``: which tools one agent uses (seed 001 §4–§5).

The unit of authorization is a single tool. The config records only *overrides* of the
defaults, so that "default on" stays a real, explainable state::

    {"inheritCoreTools": true, "enabled": [...], "disabled": [...]}

* ``inherit_core_tools`` — the agent gets the catalog's core tools by default.
* ``enabled`` — non-default tools switched on for this agent.
* ``disabled`` — default (core) tools switched off for this agent.

Reading accepts camelCase and snake_case, and the legacy ``{"toolsets": [...], "tools":
{"disabled": [...]}}`` shape (migrated once, seed §5.3); writing produces the new
camelCase shape only. Lists are kept as given when loaded, so the resolver can report
duplicates and conflicts; every mutation through the methods below normalises them
(sorted, unique), and :meth:`AgentToolConfig.dump` writes them normalised.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict, PrivateAttr, ValidationError
from pydantic.alias_generators import to_camel

from ..labels import Notice
from .catalog import ToolCatalog
from .displayable import Displayable

__all__ = ["AgentToolConfig", "LoadReport", "ToolConfigError"]

_NEW_SHAPE_KEYS = frozenset({"inheritCoreTools", "inherit_core_tools", "enabled", "disabled"})
_LEGACY_KEYS = frozenset({"toolsets", "tools"})

ConfigListener = Callable[["AgentToolConfig"], None]


class ToolConfigError(ValueError):
    """Agent tool config data that cannot be read; the message says what is wrong."""


def _normalised(names: Iterable[str]) -> list[str]:
    return sorted(set(names))


class AgentToolConfig(BaseModel, Displayable):
    """One agent's tool authorization. Mutate it through the methods (they notify
    subscribers, e.g. a config panel); direct assignment is validated but silent."""

    model_config = ConfigDict(alias_generator=to_camel, validate_by_name=True,
                              validate_by_alias=True, validate_assignment=True,
                              extra="ignore")

    inherit_core_tools: bool = True
    enabled: list[str] = []
    disabled: list[str] = []

    _listeners: list[ConfigListener] = PrivateAttr(default_factory=list)
    _load_warnings: list[Notice] = PrivateAttr(default_factory=list)

    # --- reading and writing ----------------------------------------------------------
    @classmethod
    def load(cls, data: Mapping[str, Any] | AgentToolConfig | None,
             catalog: ToolCatalog | None = None) -> AgentToolConfig:
        """Read a config in the new shape (camelCase or snake_case) or the legacy shape.

        The new shape wins when both are present. Migrating the legacy shape needs the
        catalog (legacy toolsets are category names). Problems the data has but that can
        be worked around (a legacy toolset no category matches) are kept in
        :attr:`load_warnings` and reported again by the resolver; data that cannot be
        read raises :class:`ToolConfigError`.
        """
        if data is None:
            return cls()
        if isinstance(data, AgentToolConfig):
            return data.model_copy(deep=True)
        if not isinstance(data, Mapping):
            raise ToolConfigError("an agent tool config must be an object such as "
                                  '{"inheritCoreTools": true, "enabled": [], "disabled": []}'
                                  f", got {type(data).__name__}")
        keys = set(data)
        if keys & _NEW_SHAPE_KEYS or not keys & _LEGACY_KEYS:
            try:
                config = cls.model_validate(dict(data))
            except ValidationError as error:
                raise ToolConfigError(_explain(error)) from None
            # A misspelt key grants nothing, but the user should hear that it was ignored.
            config._load_warnings = [
                Notice("unrecognised_key", key=key)
                for key in data if key not in _NEW_SHAPE_KEYS | _LEGACY_KEYS]
            return config
        if catalog is None:
            raise ToolConfigError("this is a legacy tool config (toolsets + tools.disabled); "
                                  "migrating it needs the tool catalog: "
                                  "AgentToolConfig.load(data, catalog)")
        return _migrate_legacy(data, catalog)

    @classmethod
    def load_report(cls, data: Mapping[str, Any] | AgentToolConfig | None,
                    catalog: ToolCatalog | None = None) -> LoadReport:
        """:meth:`load`, and what it did: for a legacy config the toolsets and disabled
        list it started from, the tools each toolset brought in, the new-shape result and
        the notes. Raises what :meth:`load` raises."""
        config = cls.load(data, catalog)
        if not isinstance(data, Mapping) or set(data) & _NEW_SHAPE_KEYS \
                or not set(data) & _LEGACY_KEYS:
            return LoadReport(config=config, legacy=False, notes=config.load_warnings)
        assert catalog is not None  # load() refuses a legacy config without one
        toolsets = _string_list(data.get("toolsets"), "'toolsets'")
        legacy_tools = data.get("tools") or {}
        groups = catalog.categories()
        disabled = set(config.disabled)
        brought_in = {toolset: [item.name for item in groups[toolset]
                                if not item.core and item.name not in disabled]
                      for toolset in dict.fromkeys(toolsets) if toolset in groups}
        return LoadReport(config=config, legacy=True, toolsets=toolsets,
                          legacy_disabled=_string_list(legacy_tools.get("disabled"),
                                                       "'tools.disabled'"),
                          brought_in=brought_in, notes=config.load_warnings)

    def dump(self) -> dict[str, Any]:
        """The new camelCase shape, lists sorted and without duplicates."""
        return {"inheritCoreTools": self.inherit_core_tools,
                "enabled": _normalised(self.enabled),
                "disabled": _normalised(self.disabled)}

    @property
    def load_warnings(self) -> list[Notice]:
        """What :meth:`load` had to work around, as notices (``unrecognised_key``,
        ``legacy_toolset_unmatched``); each is also its English sentence."""
        return list(self._load_warnings)

    # --- toggles (seed §4.3) --------------------------------------------------------------
    def set_tool(self, name: str, enabled: bool, catalog: ToolCatalog) -> None:
        """Switch one tool on or off for this agent.

        On: it leaves ``disabled``; a core tool the agent inherits returns to "default
        enabled" and is *not* written to ``enabled``; any other tool is added to
        ``enabled``. Off: it leaves ``enabled``; a tool that would still be on by default
        is added to ``disabled``. A globally disabled tool is read-only here
        (``ValueError``); an unknown name raises ``KeyError`` (use :meth:`forget` to drop
        a name the catalog no longer has).
        """
        tool = catalog[name]
        if not catalog.is_globally_enabled(name):
            raise ValueError(f"tool {name!r} is disabled globally in tool management; "
                             "it cannot be switched on or off for a single agent")
        on_by_default = tool.core and self.inherit_core_tools
        enabled_names = {n for n in self.enabled if n != name}
        disabled_names = {n for n in self.disabled if n != name}
        if enabled and not on_by_default:
            enabled_names.add(name)
        elif not enabled and on_by_default:
            disabled_names.add(name)
        self._apply(enabled=enabled_names, disabled=disabled_names)

    def forget(self, name: str) -> None:
        """Remove a name from both lists (for names the catalog no longer knows)."""
        self._apply(enabled={n for n in self.enabled if n != name},
                    disabled={n for n in self.disabled if n != name})

    def set_inherit_core_tools(self, inherit: bool) -> None:
        self._apply(inherit_core_tools=inherit)

    # --- bulk operations (seed §7.3) ------------------------------------------------------
    def restore_core_defaults(self, catalog: ToolCatalog | None = None) -> None:
        """Core tools back to "default enabled": inherit them again and drop their
        overrides. With the catalog, only core tools' overrides are dropped; without it,
        every ``disabled`` entry is (by the seed, ``disabled`` holds default tools only)."""
        if catalog is None:
            self._apply(inherit_core_tools=True, enabled=set(self.enabled), disabled=set())
            return
        core = {item.name for item in catalog.core_tools()}
        self._apply(inherit_core_tools=True,
                    enabled={n for n in self.enabled if n not in core},
                    disabled={n for n in self.disabled if n not in core})

    def clear_extra_enabled(self) -> None:
        """Drop every explicit grant: only default tools remain."""
        self._apply(enabled=set())

    def clear_disabled_overrides(self) -> None:
        """Drop every "switched off for this agent" override."""
        self._apply(disabled=set())

    # --- change notification ------------------------------------------------------------
    def subscribe(self, callback: ConfigListener) -> Callable[[], None]:
        """Call ``callback(config)`` after every mutation through this class's methods.
        Returns a function that unsubscribes."""
        self._listeners.append(callback)

        def unsubscribe() -> None:
            if callback in self._listeners:
                self._listeners.remove(callback)

        return unsubscribe

    def _apply(self, *, inherit_core_tools: bool | None = None,
               enabled: set[str] | None = None, disabled: set[str] | None = None) -> None:
        before = (self.inherit_core_tools, list(self.enabled), list(self.disabled))
        if inherit_core_tools is not None:
            self.inherit_core_tools = inherit_core_tools
        self.enabled = _normalised(self.enabled if enabled is None else enabled)
        self.disabled = _normalised(self.disabled if disabled is None else disabled)
        if (self.inherit_core_tools, self.enabled, self.disabled) != before:
            for listener in list(self._listeners):
                listener(self)

    # --- displays -------------------------------------------------------------------------

    # --- value semantics ------------------------------------------------------------------
    def __eq__(self, other: object) -> bool:
        # Subscribers and load notes are not part of the config's value.
        if not isinstance(other, AgentToolConfig):
            return NotImplemented
        return ((self.inherit_core_tools, self.enabled, self.disabled)
                == (other.inherit_core_tools, other.enabled, other.disabled))

    __hash__ = None  # type: ignore[assignment]

    def __copy__(self) -> AgentToolConfig:
        # A copy is a new config: it must not share (and so notify) the original's
        # subscribers.
        copied = super().__copy__()
        copied._listeners = []
        return copied

    def __deepcopy__(self, memo: dict[int, Any] | None = None) -> AgentToolConfig:
        copied = super().__deepcopy__(memo)
        copied._listeners = []
        return copied


@dataclass(frozen=True)
class LoadReport(Displayable):
    """What :meth:`AgentToolConfig.load_report` found and did (seed §5.3)."""

    config: AgentToolConfig
    """The loaded config: the same as :meth:`AgentToolConfig.load` returns."""
    legacy: bool
    """Whether the data was in the legacy shape and was migrated."""
    toolsets: list[str] = field(default_factory=list)
    """Before: the legacy ``toolsets`` (category names), as given."""
    legacy_disabled: list[str] = field(default_factory=list)
    """Before: the legacy ``tools.disabled``, as given."""
    brought_in: dict[str, list[str]] = field(default_factory=dict)
    """Per matched toolset, the non-core tools it turned into explicit grants."""
    notes: list[Notice] = field(default_factory=list)
    """The load notes (``legacy_toolset_unmatched``, ``unrecognised_key``)."""

    @property
    def before(self) -> dict[str, Any]:
        """The legacy shape read (empty for a config already in the new shape)."""
        if not self.legacy:
            return {}
        return {"toolsets": list(self.toolsets), "tools": {"disabled": list(self.legacy_disabled)}}

    @property
    def after(self) -> dict[str, Any]:
        """The new shape, as :meth:`AgentToolConfig.dump` writes it."""
        return self.config.dump()


    def __repr__(self) -> str:
        if not self.legacy:
            return f"LoadReport(not legacy, {self.after})"
        return f"LoadReport({self.before} → {self.after}, {len(self.notes)} notes)"


def _explain(error: ValidationError) -> str:
    problems = []
    for detail in error.errors(include_url=False):
        location = ".".join(str(part) for part in detail["loc"])
        problems.append(f"{location}: {detail['msg']} (got {detail.get('input')!r:.80})")
    return "invalid agent tool config: " + "; ".join(problems)


def _string_list(value: object, what: str) -> list[str]:
    if value is None:
        return []
    if isinstance(value, (str, bytes)) or not isinstance(value, list):
        raise ToolConfigError(f"legacy tool config: {what} must be a list of names, "
                              f"got {type(value).__name__} {value!r:.80}")
    bad = [item for item in value if not isinstance(item, str)]
    if bad:
        raise ToolConfigError(f"legacy tool config: {what} must hold names (strings), "
                              f"got {bad[0]!r:.80}")
    return list(value)


def _migrate_legacy(data: Mapping[str, Any], catalog: ToolCatalog) -> AgentToolConfig:
    """Seed §5.3: core tools → ``inheritCoreTools=true``; non-core tools a legacy toolset
    (a category) brought in → ``enabled``; ``tools.disabled`` kept as ``disabled``.
    Category semantics are used here once and never again."""
    toolsets = _string_list(data.get("toolsets"), "'toolsets'")
    legacy_tools = data.get("tools")
    if legacy_tools is None:
        legacy_tools = {}
    if not isinstance(legacy_tools, Mapping):
        raise ToolConfigError("legacy tool config: 'tools' must be an object such as "
                              f'{{"disabled": [...]}}, got {type(legacy_tools).__name__}')
    disabled = _string_list(legacy_tools.get("disabled"), "'tools.disabled'")
    groups = catalog.categories()
    warnings: list[Notice] = []
    enabled: set[str] = set()
    for toolset in dict.fromkeys(toolsets):
        members = groups.get(toolset)
        if members is None:
            warnings.append(Notice("legacy_toolset_unmatched", toolset=toolset))
            continue
        enabled.update(item.name for item in members if not item.core)
    config = AgentToolConfig(inherit_core_tools=True,
                             enabled=_normalised(enabled - set(disabled)),
                             disabled=_normalised(disabled))
    config._load_warnings = warnings
    return config
