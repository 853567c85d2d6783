"""Thinking levels, per-model thinking capabilities, and per-provider thinking parameters.

One normalised setting, :data:`ThinkLevel` (``off | minimal | low | medium | high |
adaptive``, seed 002 §8), is mapped to what each vendor's API understands:

* **Anthropic, manual budget** (Claude 3.7 up to 4.5): ``thinking={"type": "enabled",
  "budget_tokens": B}`` with the seed's budgets (minimal 2000, low 4000, medium 8000,
  high 16000; any other level 8000), ``max_tokens`` at least ``B + 4096`` and the
  interleaved-thinking beta header. Thinking requires temperature 1.0; the ``anthropic``
  SDK (1.0 and later) no longer has a ``temperature`` keyword, so it travels in
  ``extra_body`` — the route the SDK's migration guide gives — and the request JSON is
  the same as before.
* **Anthropic, adaptive** (Claude 4.6 and later, 5.x included): ``thinking={"type":
  "adaptive"}`` and ``output_config={"effort": E}`` with the seed's effort map.
* **OpenAI, DeepSeek and OpenAI-compatible reasoning models**: ``reasoning_effort`` with
  the seed's map (``minimal``/``low`` → ``low``, ``medium`` → ``medium``, ``high`` →
  ``high``, anything else → ``medium``). The GPT-5 (5.0) family accepts ``minimal``
  natively, so there ``minimal`` is sent as ``minimal`` instead of being folded into
  ``low`` — otherwise two entries of the level selector would do the same thing.
* ``off``, and every model without controllable thinking: nothing (``{}``). Models that
  always reason (the o-series, GPT-5.0, DeepSeek reasoners) then think at their own
  default effort; "off" means "send no thinking parameter", as the seed defines it.

Which models think is decided by :data:`CAPABILITY_RULES`, a table of documented rows
matched first to last. Claude ids are matched by their parsed version
(:func:`parse_claude_version`), not by searching for digits, so a date such as
``20240620`` is never mistaken for a version. Unknown models support ``off`` only.

The ``scripted`` supplier (the offline model) supports all six levels, default
``medium``; it reads the level from the request itself, so :func:`build_thinking_params`
returns ``{}`` for it.

This module imports no vendor SDK; ``tests/test_thinking.py`` checks every parameter
against the installed SDKs' own types.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Any, Literal, get_args

from pydantic import BaseModel, ConfigDict, model_validator

__all__ = [
    "ANTHROPIC_ADAPTIVE_EFFORT",
    "ANTHROPIC_BUDGET_TOKENS",
    "ANTHROPIC_DEFAULT_BUDGET",
    "ANTHROPIC_MAX_TOKENS_HEADROOM",
    "ANTHROPIC_THINKING_TEMPERATURE",
    "CAPABILITY_RULES",
    "GPT5_REASONING_EFFORT",
    "INTERLEAVED_THINKING_BETA",
    "REASONING_EFFORT",
    "SUPPLIERS",
    "THINK_LEVELS",
    "CapabilityRule",
    "ParamStyle",
    "ThinkLevel",
    "ThinkingCapability",
    "build_thinking_params",
    "check_think_level",
    "get_model_thinking_capability",
    "parse_claude_version",
    "parse_think_level",
    "resolve_think_level",
]

ThinkLevel = Literal["off", "minimal", "low", "medium", "high", "adaptive"]
THINK_LEVELS: tuple[ThinkLevel, ...] = get_args(ThinkLevel)

SUPPLIERS: tuple[str, ...] = ("anthropic", "openai", "deepseek", "openai-compatible",
                              "scripted")

# --- the seed's numbers (002 §8.1) ---------------------------------------------------

ANTHROPIC_BUDGET_TOKENS: Mapping[str, int] = MappingProxyType(
    {"minimal": 2000, "low": 4000, "medium": 8000, "high": 16000})
ANTHROPIC_DEFAULT_BUDGET = 8000
"""Budget for a level without its own entry (``adaptive`` on a budget model): the seed's
``ANTHROPIC_BUDGET_MAP[level] || 8000``."""
ANTHROPIC_MAX_TOKENS_HEADROOM = 4096
"""Room for the answer above the thinking budget: ``max_tokens >= budget + 4096``."""
ANTHROPIC_THINKING_TEMPERATURE = 1.0
INTERLEAVED_THINKING_BETA = "interleaved-thinking-2025-05-14"

ANTHROPIC_ADAPTIVE_EFFORT: Mapping[str, str] = MappingProxyType(
    {"minimal": "low", "low": "low", "medium": "medium", "high": "high",
     "adaptive": "medium"})
REASONING_EFFORT: Mapping[str, str] = MappingProxyType(
    {"minimal": "low", "low": "low", "medium": "medium", "high": "high"})
"""The seed's OpenAI/DeepSeek map; a level it lacks (``adaptive``) sends ``medium``."""
GPT5_REASONING_EFFORT: Mapping[str, str] = MappingProxyType(
    {**REASONING_EFFORT, "minimal": "minimal"})
"""GPT-5 (5.0) takes ``minimal`` natively; everything else as :data:`REASONING_EFFORT`."""
_FALLBACK_EFFORT = "medium"


def parse_think_level(value: object) -> ThinkLevel | None:
    """``value`` as a :data:`ThinkLevel` (case and surrounding spaces ignored), or
    ``None`` when it is not one."""
    if not isinstance(value, str):
        return None
    text = value.strip().lower()
    for level in THINK_LEVELS:
        if level == text:
            return level
    return None


def check_think_level(level: str | None) -> ThinkLevel | None:
    """``level`` if it is a :data:`ThinkLevel` (or ``None``); anything else is a
    ``ValueError`` that lists the levels."""
    if level is None:
        return None
    if level not in THINK_LEVELS:
        raise ValueError(f"unknown thinking level {level!r}; "
                         f"choose one of {', '.join(THINK_LEVELS)}")
    return level


class ThinkingCapability(BaseModel):
    """What a model can do with thinking: whether it thinks at all, whether it has
    adaptive thinking, the levels a user may pick (in :data:`THINK_LEVELS` order) and the
    level used when nobody picked one."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    supported: bool
    adaptive: bool
    levels: tuple[ThinkLevel, ...]
    default_level: ThinkLevel

    @model_validator(mode="after")
    def _check_consistent(self) -> ThinkingCapability:
        if list(self.levels) != [lv for lv in THINK_LEVELS if lv in self.levels]:
            raise ValueError(f"levels must be unique and ordered as {THINK_LEVELS}")
        if self.default_level not in self.levels:
            raise ValueError(f"default_level {self.default_level!r} is not in levels")
        return self


_ALL_LEVELS = THINK_LEVELS
_EFFORT_LEVELS: tuple[ThinkLevel, ...] = ("off", "low", "medium", "high")

_NO_THINKING = ThinkingCapability(supported=False, adaptive=False, levels=("off",),
                                  default_level="off")
_ADAPTIVE = ThinkingCapability(supported=True, adaptive=True, levels=_ALL_LEVELS,
                               default_level="adaptive")
_BUDGET = ThinkingCapability(supported=True, adaptive=False, levels=_EFFORT_LEVELS,
                             default_level="medium")
_REASONING = _BUDGET
_REASONING_WITH_MINIMAL = ThinkingCapability(
    supported=True, adaptive=False, levels=("off", "minimal", "low", "medium", "high"),
    default_level="medium")
_SCRIPTED = ThinkingCapability(supported=True, adaptive=True, levels=_ALL_LEVELS,
                               default_level="medium")


# --- model id parsing ------------------------------------------------------------------

# Both Claude naming schemes: "claude-3-7-sonnet-20250219" (version, then family) and
# "claude-sonnet-4-5-20250929" (family, then version), dashed or dotted ("claude-sonnet-4.6").
# A minor version has one or two digits; the 8-digit date never is one, so
# "claude-sonnet-4-20250514" is 4.0. `search` (not `match`) also finds ids inside cloud
# forms such as "us.anthropic.claude-3-7-sonnet-20250219-v1:0".
_CLAUDE_ID = re.compile(
    r"claude-(?:[a-z]+-)?(?P<major>\d{1,2})(?:[-.](?P<minor>\d{1,2}))?(?!\d)")


def parse_claude_version(model: str) -> tuple[int, int] | None:
    """``(major, minor)`` of a Claude model id, or ``None`` when it is not one."""
    found = _CLAUDE_ID.search(model.strip().lower())
    if found is None:
        return None
    return int(found["major"]), int(found["minor"] or 0)


def _model_name(model: str) -> str:
    """The id without a routing prefix: OpenAI-compatible servers often name models
    ``vendor/model`` ("deepseek-ai/DeepSeek-R1", "openai/gpt-5")."""
    return model.strip().lower().rsplit("/", 1)[-1]


def _claude_between(low: tuple[int, int] | None,
                    high: tuple[int, int] | None) -> Callable[[str], bool]:
    """Claude versions in ``[low, high)``; ``None`` leaves that side open."""
    def matches(model: str) -> bool:
        version = parse_claude_version(model)
        return version is not None and (low is None or version >= low) and (
            high is None or version < high)
    return matches


def _name_matches(pattern: str) -> Callable[[str], bool]:
    compiled = re.compile(pattern)
    return lambda model: compiled.search(_model_name(model)) is not None


_GPT_VERSION = re.compile(r"^gpt-(?P<major>\d+)(?:\.(?P<minor>\d+))?(?![\d.])")


def _gpt_between(low: tuple[int, int], high: tuple[int, int] | None) -> Callable[[str], bool]:
    """GPT versions ("gpt-5", "gpt-5-mini", "gpt-5.1", "gpt-5.2-pro") in ``[low, high)``."""
    def matches(model: str) -> bool:
        found = _GPT_VERSION.search(_model_name(model))
        if found is None:
            return False
        version = (int(found["major"]), int(found["minor"] or 0))
        return version >= low and (high is None or version < high)
    return matches


# --- the capability table ----------------------------------------------------------------

ParamStyle = Literal["none", "anthropic_budget", "anthropic_adaptive", "reasoning_effort"]


@dataclass(frozen=True, slots=True)
class CapabilityRule:
    """One row of :data:`CAPABILITY_RULES`: for these suppliers, models that ``matches``
    accepts have ``capability`` and take thinking parameters in ``params`` style."""

    note: str
    suppliers: frozenset[str]
    matches: Callable[[str], bool]
    capability: ThinkingCapability
    params: ParamStyle
    effort: Mapping[str, str] = field(default_factory=lambda: REASONING_EFFORT)


_OPENAI_LIKE = frozenset({"openai", "openai-compatible"})
_DEEPSEEK_LIKE = frozenset({"deepseek", "openai-compatible"})

CAPABILITY_RULES: tuple[CapabilityRule, ...] = (
    CapabilityRule(
        "The offline scripted model streams thinking at every level (so it counts as"
        " adaptive too).",
        frozenset({"scripted"}), lambda model: True, _SCRIPTED, "none"),
    CapabilityRule(
        "Claude 4.6 and later (4.7, 5.x): adaptive thinking, effort via output_config.",
        frozenset({"anthropic"}), _claude_between((4, 6), None), _ADAPTIVE,
        "anthropic_adaptive", ANTHROPIC_ADAPTIVE_EFFORT),
    CapabilityRule(
        "Claude 3.7 up to 4.5 (Sonnet 3.7, Opus/Sonnet 4, Opus 4.1, Sonnet/Haiku/Opus 4.5):"
        " extended thinking with a token budget.",
        frozenset({"anthropic"}), _claude_between((3, 7), (4, 6)), _BUDGET,
        "anthropic_budget"),
    CapabilityRule(
        "Claude before 3.7 (3.5 Sonnet/Haiku, 3 Opus/Haiku, 2.x): no extended thinking.",
        frozenset({"anthropic"}), _claude_between(None, (3, 7)), _NO_THINKING, "none"),
    CapabilityRule(
        "o1-mini and o1-preview reason internally but accept no reasoning_effort.",
        _OPENAI_LIKE, _name_matches(r"^o1-(?:mini|preview)(?:-|$)"), _NO_THINKING, "none"),
    CapabilityRule(
        "OpenAI o-series (o1, o3, o3-mini, o3-pro, o4-mini, …): reasoning_effort.",
        _OPENAI_LIKE, _name_matches(r"^o\d+(?:-|$)"), _REASONING, "reasoning_effort"),
    CapabilityRule(
        "GPT chat snapshots (gpt-5-chat-latest, gpt-5.1-chat-latest): no reasoning_effort.",
        _OPENAI_LIKE, _name_matches(r"^gpt-\d+(?:\.\d+)?-chat"), _NO_THINKING, "none"),
    CapabilityRule(
        "gpt-5-codex rejects minimal: reasoning_effort low/medium/high.",
        _OPENAI_LIKE, _name_matches(r"^gpt-5-codex"), _REASONING, "reasoning_effort"),
    CapabilityRule(
        "GPT-5 (5.0: gpt-5, gpt-5-mini, gpt-5-nano): reasoning_effort including native"
        " minimal.",
        _OPENAI_LIKE, _gpt_between((5, 0), (5, 1)), _REASONING_WITH_MINIMAL,
        "reasoning_effort", GPT5_REASONING_EFFORT),
    CapabilityRule(
        "GPT-5.1 and later: reasoning_effort low/medium/high (minimal was replaced by"
        " none, which is what sending nothing gives).",
        _OPENAI_LIKE, _gpt_between((5, 1), None), _REASONING, "reasoning_effort"),
    CapabilityRule(
        "gpt-oss (served by Ollama, vLLM, llama.cpp): reasoning_effort low/medium/high.",
        frozenset({"openai-compatible"}), _name_matches(r"^gpt-oss(?:[-:]|$)"),
        _REASONING, "reasoning_effort"),
    CapabilityRule(
        "deepseek-reasoner (DeepSeek's thinking mode): reasoning_effort.",
        _DEEPSEEK_LIKE, _name_matches(r"^deepseek-reasoner"), _REASONING,
        "reasoning_effort"),
    CapabilityRule(
        "DeepSeek R1 and its distills (deepseek-r1, deepseek-r1-distill-qwen-32b,"
        " deepseek-r1:14b): reasoning_effort.",
        _DEEPSEEK_LIKE, _name_matches(r"deepseek.*\br1\b"), _REASONING, "reasoning_effort"),
    CapabilityRule(
        "deepseek-chat (DeepSeek's non-thinking mode): no thinking.",
        _DEEPSEEK_LIKE, _name_matches(r"^deepseek-chat"), _NO_THINKING, "none"),
)
"""The thinking capability table, matched first to last; a model no row matches (gpt-4o,
gpt-4.1, any unknown model or supplier) supports ``off`` only."""


def _find_rule(supplier: str, model: str) -> CapabilityRule | None:
    supplier = supplier.strip().lower()
    for rule in CAPABILITY_RULES:
        if supplier in rule.suppliers and rule.matches(model):
            return rule
    return None


def get_model_thinking_capability(supplier: str, model: str) -> ThinkingCapability:
    """What ``model`` of ``supplier`` can do with thinking (see :data:`CAPABILITY_RULES`).
    Unknown suppliers and models support ``off`` only."""
    rule = _find_rule(supplier, model)
    return rule.capability if rule is not None else _NO_THINKING


def build_thinking_params(supplier: str, model: str, level: ThinkLevel | str) -> dict[str, Any]:
    """Keyword arguments for the vendor SDK's streaming create call that ask ``model`` to
    think at ``level``; ``{}`` for ``off`` and for models without controllable thinking.

    ``max_tokens`` in an Anthropic budget result is a floor: use
    ``max(your_max_tokens, result["max_tokens"])``. A level the model does not list is
    still mapped by the seed's tables (pick levels with :func:`resolve_think_level`).
    Anthropic results carry ``extra_headers`` (the beta) and, for budget models,
    ``extra_body`` (the temperature); merge them into any the call already sets rather
    than replacing them. Every call returns new dicts. Raises :class:`ValueError` for an
    unknown level (case and surrounding spaces are ignored).
    """
    think_level = parse_think_level(level)
    if think_level is None:
        raise ValueError(f"unknown thinking level {level!r}; expected one of "
                         f"{', '.join(THINK_LEVELS)}")
    rule = _find_rule(supplier, model)
    if think_level == "off" or rule is None:
        return {}
    if rule.params == "anthropic_budget":
        budget = ANTHROPIC_BUDGET_TOKENS.get(think_level, ANTHROPIC_DEFAULT_BUDGET)
        return {
            "thinking": {"type": "enabled", "budget_tokens": budget},
            "max_tokens": budget + ANTHROPIC_MAX_TOKENS_HEADROOM,
            "extra_body": {"temperature": ANTHROPIC_THINKING_TEMPERATURE},
            "extra_headers": {"anthropic-beta": INTERLEAVED_THINKING_BETA},
        }
    if rule.params == "anthropic_adaptive":
        return {
            "thinking": {"type": "adaptive"},
            "output_config": {"effort": rule.effort.get(think_level, _FALLBACK_EFFORT)},
            "extra_headers": {"anthropic-beta": INTERLEAVED_THINKING_BETA},
        }
    if rule.params == "reasoning_effort":
        return {"reasoning_effort": rule.effort.get(think_level, _FALLBACK_EFFORT)}
    return {}


def resolve_think_level(session_level: ThinkLevel | str | None,
                        agent_default: ThinkLevel | str | None,
                        supplier: str, model: str) -> ThinkLevel:
    """The level to use for the next model call (seed 002 §8.4): the session's choice,
    else the agent's default, else the model's default. A source that is ``None``, not a
    level, or a level the model does not support falls through to the next one."""
    capability = get_model_thinking_capability(supplier, model)
    for candidate in (session_level, agent_default):
        level = parse_think_level(candidate)
        if level is not None and level in capability.levels:
            return level
    return capability.default_level
