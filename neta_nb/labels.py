"""Every label and message neta_nb shows, in English and Chinese, from one table.

The table is ``labels.json`` beside this module: ``{"en": {key: text}, "zh-CN": {key:
text}}`` with ``{param}`` placeholders. The JS components import the same file
(``js/src/i18n.ts``), so a widget, its text fallback and the resolver's reasons cannot drift
apart. The Chinese wording is the seeds'.

Resolver reasons and config warnings are data, not sentences (like pydantic's errors: a
``type`` plus a ``ctx``): a :class:`Notice` carries a ``code`` and its ``params``, and is
rendered into a language here and nowhere else. A caller that wants the reason in Chinese
asks ``notice.text("zh-CN")``; nobody parses English back into meaning.

This is a core module: it imports nothing from widgets or sessions.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping
from importlib import resources
from types import MappingProxyType
from typing import Any, Final, Literal, NoReturn, get_args

__all__ = ["LABELS", "LANGS", "NOTICE_CODES", "Lang", "Notice", "t"]

Lang = Literal["en", "zh-CN"]
LANGS: Final[tuple[Lang, ...]] = get_args(Lang)
"""The languages of the table; the first is the fallback for a key or language missing."""


def _load() -> Mapping[str, Mapping[str, str]]:
    text = resources.files(__package__ or "neta_nb").joinpath("labels.json").read_text("utf-8")
    data: dict[str, dict[str, str]] = json.loads(text)
    return MappingProxyType({lang: MappingProxyType(data[lang]) for lang in LANGS})


LABELS: Final = _load()
"""The table, read-only: ``LABELS[lang][key]`` is a template with ``{param}`` placeholders."""


def t(key: str, lang: str = "en", /, **params: object) -> str:
    """The label ``key`` in ``lang`` (English for an unknown language), placeholders
    filled from ``params``. ``key`` and ``lang`` are positional-only so a template may
    use ``{key}`` or ``{lang}`` as a placeholder. An unknown key or a missing parameter
    raises ``KeyError``: a label is code's responsibility, not the user's."""
    table = LABELS.get(lang, LABELS["en"])
    return table[key].format_map(params)


# --- notices: reasons and warnings as data --------------------------------------------------

def _capability_key(params: Mapping[str, Any]) -> str:
    # Whole sentences per variant (one/many capabilities, a named model or not): a
    # translator sees a sentence, and no language has to share English grammar.
    many = "capabilities" if len(params["capabilities"]) > 1 else "capability"
    named = "" if params.get("model") else "_current_model"
    return f"reason_needs_{many}{named}"


_NOTICE_KEYS: Final[Mapping[str, str | Callable[[Mapping[str, Any]], str]]] = {
    # Why a tool is left out of an agent's final set (ToolResolution.reasons).
    "globally_disabled": "reason_globally_disabled",
    "mcp_changed": "reason_mcp_changed",  # {server}
    "agent_disabled": "reason_agent_disabled",
    "not_enabled": "reason_not_enabled",
    "core_not_inherited": "reason_core_not_inherited",
    "needs_capability": _capability_key,  # {capabilities: [..], model: str | None}
    "scene": "reason_scene",  # {scene}
    "no_subagents": "reason_no_subagents",
    "no_notebook_page": "reason_no_notebook_page",
    # Problems with the config itself (ToolResolution.warnings, AgentToolConfig.load_warnings).
    "unknown_tool": "warning_unknown_tool",  # {name, field}
    "enabled_but_globally_disabled": "warning_enabled_but_globally_disabled",  # {name}
    "duplicate": "warning_duplicate",  # {name, field}
    "enabled_and_disabled": "warning_enabled_and_disabled",  # {name}
    "unrecognised_key": "warning_unrecognised_key",  # {key}
    "legacy_toolset_unmatched": "warning_legacy_toolset_unmatched",  # {toolset}
}

NOTICE_CODES: Final = frozenset(_NOTICE_KEYS)
"""Every code a :class:`Notice` may carry."""

_LIST_CODES: Final = frozenset({"needs_capability"})
"""Codes with a list parameter, rendered as a list inside the sentence."""

_ENGLISH: Final[Mapping[str, Callable[[Mapping[str, Any]], str]]] = {
    code: LABELS["en"][key].format_map for code, key in _NOTICE_KEYS.items()
    if isinstance(key, str) and code not in _LIST_CODES}
"""The English of every plain code, ready to fill: a notice is made per warning, and a
large config has hundreds."""


def _render(code: str, params: Mapping[str, Any], lang: str) -> str:
    entry = _NOTICE_KEYS[code]
    key = entry if isinstance(entry, str) else entry(params)
    table = LABELS.get(lang, LABELS["en"])
    if code not in _LIST_CODES:
        return table[key].format_map(params)  # no list to render
    values: dict[str, object] = {}
    for name, value in params.items():
        if type(value) is tuple:
            # A list inside a sentence: "'a' and 'b'" / "'a'、'b'".
            values[name] = table["list_separator"].join(
                table["list_item"].format(item=item) for item in value)
        else:
            values[name] = value
    return table[key].format_map(values)


class Notice(str):
    """A reason or warning as data: ``code`` + ``params``, rendered by :meth:`text`.

    It *is* its English text (a ``str`` subclass), by choice: ``ToolResolution.reasons``
    and ``.warnings`` were plain English strings, and callers compare them, slice them,
    format them into messages and send them over JSON. As a ``str`` all of that keeps
    working unchanged, while new callers read ``code``/``params`` or ask for another
    language — and the English is itself rendered from the table, never written inline.
    Equality and hashing are the string's: two notices are equal when their English text
    is, which the English rendering makes the same as equal code and parameters.

    Parameters must be JSON values (strings, numbers, ``None``, lists of them); lists are
    kept as tuples so a notice cannot change after it is made.
    """

    _code: str
    _params: dict[str, Any]  # owned: **params is a fresh dict, never the caller's

    def __new__(cls, code: str, /, **params: Any) -> Notice:
        if code not in _NOTICE_KEYS:
            raise KeyError(f"unknown notice code {code!r}; known: {sorted(_NOTICE_KEYS)}")
        # The resolver makes hundreds of these for a large config: copy only when a list
        # has to be frozen into a tuple.
        for value in params.values():
            if isinstance(value, list):
                params = {name: tuple(value) if isinstance(value, list) else value
                          for name, value in params.items()}
                break
        english = _ENGLISH.get(code)
        self = str.__new__(cls, _render(code, params, "en") if english is None
                           else english(params))
        # Bypasses __setattr__, which refuses assignment so that a notice stays frozen.
        self.__dict__.update(_code=code, _params=params)
        return self

    @property
    def code(self) -> str:
        """What the notice says, as a stable identifier (see :data:`NOTICE_CODES`)."""
        return self._code

    @property
    def params(self) -> Mapping[str, Any]:
        """The values the text is rendered from (read-only)."""
        return MappingProxyType(self._params)

    def text(self, lang: str = "en") -> str:
        """The notice in ``lang`` (English for an unknown language)."""
        return str(self) if lang == "en" else _render(self._code, self._params, lang)

    def to_json(self) -> dict[str, Any]:
        """``{"code", "params"}`` with lists as JSON lists, for a wire or a file."""
        return {"code": self._code,
                "params": {name: list(value) if isinstance(value, tuple) else value
                           for name, value in self._params.items()}}

    def __setattr__(self, name: str, value: object) -> NoReturn:
        raise AttributeError(f"a Notice is immutable (cannot set {name!r})")

    def __reduce__(self) -> tuple[Callable[..., Notice], tuple[str, dict[str, Any]]]:
        # str's own pickling would pass the English text back as the code.
        return _notice_from_json, (self._code, self.to_json()["params"])

    def __repr__(self) -> str:
        params = ", ".join(f"{name}={value!r}" for name, value in self._params.items())
        return f"Notice({self._code!r}{', ' if params else ''}{params})"


def _notice_from_json(code: str, params: dict[str, Any]) -> Notice:
    return Notice(code, **params)

