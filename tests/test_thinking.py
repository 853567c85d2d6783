"""Tests for neta_nb.thinking: the capability table, the per-provider parameters (checked
against the installed SDKs' own types and wire format) and the level priority chain."""

from __future__ import annotations

import inspect
import json
import typing
from typing import Any

import anthropic
import httpx2  # the HTTP client both SDKs are built on
import openai
import pytest
import typing_extensions
from anthropic.resources.messages import AsyncMessages, Messages
from anthropic.types import (
    OutputConfigParam,
    ThinkingConfigAdaptiveParam,
    ThinkingConfigEnabledParam,
)
from anthropic.types.anthropic_beta_param import AnthropicBetaParam
from anthropic.types.message_create_params import MessageCreateParamsStreaming
from openai.resources.chat.completions import AsyncCompletions, Completions
from openai.types.chat.completion_create_params import CompletionCreateParamsStreaming
from openai.types.shared import ReasoningEffort

from neta_nb import thinking
from neta_nb.events import SetThinkingLevelCommand
from neta_nb.thinking import (
    CAPABILITY_RULES,
    THINK_LEVELS,
    ThinkingCapability,
    build_thinking_params,
    get_model_thinking_capability,
    parse_claude_version,
    parse_think_level,
    resolve_think_level,
)

ALL = ("off", "minimal", "low", "medium", "high", "adaptive")
EFFORT = ("off", "low", "medium", "high")
WITH_MINIMAL = ("off", "minimal", "low", "medium", "high")
OFF = ("off",)

# The representative model of each kind, used across the parameter tests.
ADAPTIVE_CLAUDE = "claude-sonnet-4-6"
BUDGET_CLAUDE = "claude-sonnet-4-5-20250929"
BETA = {"anthropic-beta": "interleaved-thinking-2025-05-14"}


def literal_values(hint: Any) -> set[Any]:
    """Every literal value inside a type hint (through Optional, Union, Required)."""
    if typing_extensions.get_origin(hint) is typing.Literal:
        return set(typing_extensions.get_args(hint))
    values: set[Any] = set()
    for arg in typing_extensions.get_args(hint):
        values |= literal_values(arg)
    return values


def typed_dict_hints(cls: Any) -> dict[str, Any]:
    return typing_extensions.get_type_hints(cls, include_extras=True)


def required_keys(cls: Any) -> set[str]:
    return {key for key, hint in typed_dict_hints(cls).items()
            if typing_extensions.get_origin(hint) is typing_extensions.Required}


# --- levels ------------------------------------------------------------------------


def test_think_levels_are_the_six_in_seed_order() -> None:
    assert THINK_LEVELS == ALL
    assert typing.get_args(thinking.ThinkLevel) == ALL


def test_set_thinking_level_command_accepts_exactly_the_think_levels() -> None:
    # events.py may not import thinking.py, so it repeats the literal; keep them equal.
    annotation = SetThinkingLevelCommand.model_fields["level"].annotation
    assert typing.get_args(annotation) == THINK_LEVELS


@pytest.mark.parametrize(("raw", "expected"), [
    ("high", "high"), ("HIGH", "high"), (" Adaptive ", "adaptive"), ("off", "off"),
    ("max", None), ("", None), (None, None), (3, None),
])
def test_parse_think_level(raw: object, expected: str | None) -> None:
    assert parse_think_level(raw) == expected


# --- capability table ----------------------------------------------------------------

# (supplier, model, supported, adaptive, levels, default_level)
CAPABILITY_CASES: list[tuple[str, str, bool, bool, tuple[str, ...], str]] = [
    # scripted: everything, default medium
    ("scripted", "scripted", True, True, ALL, "medium"),
    ("scripted", "", True, True, ALL, "medium"),
    # Claude ≥ 4.6: adaptive
    ("anthropic", "claude-sonnet-4-6", True, True, ALL, "adaptive"),
    ("anthropic", "claude-opus-4-6", True, True, ALL, "adaptive"),
    ("anthropic", "claude-sonnet-4.6", True, True, ALL, "adaptive"),
    ("anthropic", "claude-opus-4-7", True, True, ALL, "adaptive"),
    ("anthropic", "claude-opus-4-7-20260301", True, True, ALL, "adaptive"),
    ("anthropic", "claude-opus-5", True, True, ALL, "adaptive"),
    ("anthropic", "claude-sonnet-5-1", True, True, ALL, "adaptive"),
    ("anthropic", "Claude-Opus-4-6", True, True, ALL, "adaptive"),
    # Claude 3.7 – 4.5: budget
    ("anthropic", "claude-3-7-sonnet-latest", True, False, EFFORT, "medium"),
    ("anthropic", "claude-3-7-sonnet-20250219", True, False, EFFORT, "medium"),
    ("anthropic", "claude-sonnet-4-20250514", True, False, EFFORT, "medium"),
    ("anthropic", "claude-opus-4-0", True, False, EFFORT, "medium"),
    ("anthropic", "claude-opus-4-1-20250805", True, False, EFFORT, "medium"),
    ("anthropic", "claude-sonnet-4-5-20250929", True, False, EFFORT, "medium"),
    ("anthropic", "claude-sonnet-4.5", True, False, EFFORT, "medium"),
    ("anthropic", "claude-haiku-4-5", True, False, EFFORT, "medium"),
    ("anthropic", "us.anthropic.claude-3-7-sonnet-20250219-v1:0", True, False, EFFORT,
     "medium"),
    # A date with "46" in it is not version 4.6.
    ("anthropic", "claude-3-7-sonnet-20254601", True, False, EFFORT, "medium"),
    ("anthropic", "claude-sonnet-4-20254646", True, False, EFFORT, "medium"),
    # Claude before 3.7: no thinking
    ("anthropic", "claude-3-5-sonnet-20240620", False, False, OFF, "off"),
    ("anthropic", "claude-3-5-haiku-latest", False, False, OFF, "off"),
    ("anthropic", "claude-3-opus-20240229", False, False, OFF, "off"),
    ("anthropic", "claude-3-haiku-20240307", False, False, OFF, "off"),
    ("anthropic", "claude-2.1", False, False, OFF, "off"),
    ("anthropic", "claude-instant-1.2", False, False, OFF, "off"),
    ("anthropic", "my-proxy-model", False, False, OFF, "off"),
    # OpenAI
    ("openai", "o1-mini", False, False, OFF, "off"),
    ("openai", "o1-preview-2024-09-12", False, False, OFF, "off"),
    ("openai", "o1", True, False, EFFORT, "medium"),
    ("openai", "o1-2024-12-17", True, False, EFFORT, "medium"),
    ("openai", "o3", True, False, EFFORT, "medium"),
    ("openai", "o3-mini", True, False, EFFORT, "medium"),
    ("openai", "o3-pro", True, False, EFFORT, "medium"),
    ("openai", "o4-mini", True, False, EFFORT, "medium"),
    ("openai", "gpt-5-chat-latest", False, False, OFF, "off"),
    ("openai", "gpt-5.1-chat-latest", False, False, OFF, "off"),
    ("openai", "gpt-5-codex", True, False, EFFORT, "medium"),
    ("openai", "gpt-5", True, False, WITH_MINIMAL, "medium"),
    ("openai", "gpt-5-mini", True, False, WITH_MINIMAL, "medium"),
    ("openai", "gpt-5-nano-2025-08-07", True, False, WITH_MINIMAL, "medium"),
    ("openai", "gpt-5.1", True, False, EFFORT, "medium"),
    ("openai", "gpt-5.2-pro", True, False, EFFORT, "medium"),
    ("openai", "gpt-4o", False, False, OFF, "off"),
    ("openai", "gpt-4o-mini", False, False, OFF, "off"),
    ("openai", "gpt-4.1", False, False, OFF, "off"),
    ("openai", "chatgpt-4o-latest", False, False, OFF, "off"),
    ("openai", "gpt-3.5-turbo", False, False, OFF, "off"),
    ("openai", "omni-moderation-latest", False, False, OFF, "off"),
    # OpenAI-compatible servers
    ("openai-compatible", "openai/gpt-5", True, False, WITH_MINIMAL, "medium"),
    ("openai-compatible", "gpt-oss:20b", True, False, EFFORT, "medium"),
    ("openai-compatible", "openai/gpt-oss-120b", True, False, EFFORT, "medium"),
    ("openai-compatible", "deepseek-ai/DeepSeek-R1", True, False, EFFORT, "medium"),
    ("openai-compatible", "deepseek-r1:14b", True, False, EFFORT, "medium"),
    ("openai-compatible", "llama3.1:8b", False, False, OFF, "off"),
    ("openai", "gpt-oss-20b", False, False, OFF, "off"),  # not served by OpenAI itself
    # DeepSeek
    ("deepseek", "deepseek-reasoner", True, False, EFFORT, "medium"),
    ("deepseek", "deepseek-r1", True, False, EFFORT, "medium"),
    ("deepseek", "deepseek-r1-distill-qwen-32b", True, False, EFFORT, "medium"),
    ("deepseek", "deepseek-chat", False, False, OFF, "off"),
    ("deepseek", "deepseek-r10", False, False, OFF, "off"),
    ("deepseek", "o3", False, False, OFF, "off"),  # OpenAI rows are not DeepSeek's
    # Unknown suppliers, and a supplier's rows do not leak to another
    ("mistral", "magistral-medium", False, False, OFF, "off"),
    ("openai", "claude-sonnet-4-6", False, False, OFF, "off"),
    ("anthropic", "o3", False, False, OFF, "off"),
    ("anthropic", "deepseek-reasoner", False, False, OFF, "off"),
]


@pytest.mark.parametrize(("supplier", "model", "supported", "adaptive", "levels", "default"),
                         CAPABILITY_CASES)
def test_capability(supplier: str, model: str, supported: bool, adaptive: bool,
                    levels: tuple[str, ...], default: str) -> None:
    assert get_model_thinking_capability(supplier, model) == ThinkingCapability(
        supported=supported, adaptive=adaptive, levels=levels, default_level=default)


def test_every_capability_row_is_exercised() -> None:
    hit = {id(rule) for supplier, model, *_ in CAPABILITY_CASES
           if (rule := thinking._find_rule(supplier, model)) is not None}
    missing = [rule.note for rule in CAPABILITY_RULES if id(rule) not in hit]
    assert missing == []


def test_every_row_is_documented_and_consistent() -> None:
    for rule in CAPABILITY_RULES:
        assert rule.note.strip()
        assert rule.suppliers <= set(thinking.SUPPLIERS)
        # A row that sends parameters supports thinking, and one that does not, doesn't —
        # except the scripted model, which thinks without any parameter.
        if "scripted" not in rule.suppliers:
            assert rule.capability.supported == (rule.params != "none"), rule.note


@pytest.mark.parametrize(("model", "version"), [
    ("claude-sonnet-4-6", (4, 6)),
    ("claude-opus-4-7", (4, 7)),
    ("claude-sonnet-4-5-20250929", (4, 5)),
    ("claude-3-7-sonnet-latest", (3, 7)),
    ("claude-opus-5", (5, 0)),
    ("claude-haiku-4-5", (4, 5)),
    ("claude-sonnet-4.6", (4, 6)),
    ("claude-3-5-sonnet-20240620", (3, 5)),
    ("claude-sonnet-4-20250514", (4, 0)),
    ("claude-3-haiku-20240307", (3, 0)),
    ("claude-sonnet-4-5@20250929", (4, 5)),
    ("anthropic.claude-opus-4-1-20250805-v1:0", (4, 1)),
    ("claude-2.1", (2, 1)),
    ("CLAUDE-OPUS-4-6", (4, 6)),
    ("gpt-5", None),
    ("sonnet-4-6", None),
    ("", None),
])
def test_parse_claude_version(model: str, version: tuple[int, int] | None) -> None:
    assert parse_claude_version(model) == version


def test_capability_rejects_inconsistent_levels() -> None:
    with pytest.raises(ValueError, match="ordered"):
        ThinkingCapability(supported=True, adaptive=False, levels=("high", "off"),
                           default_level="off")
    with pytest.raises(ValueError, match="ordered"):
        ThinkingCapability(supported=True, adaptive=False, levels=("off", "off"),
                           default_level="off")
    with pytest.raises(ValueError, match="default_level"):
        ThinkingCapability(supported=True, adaptive=False, levels=("off", "low"),
                           default_level="high")


def test_capability_is_frozen() -> None:
    capability = get_model_thinking_capability("anthropic", ADAPTIVE_CLAUDE)
    with pytest.raises(ValueError, match="frozen"):
        capability.default_level = "off"  # type: ignore[misc]


# --- build_thinking_params -------------------------------------------------------------


@pytest.mark.parametrize(("level", "budget"), [
    ("minimal", 2000), ("low", 4000), ("medium", 8000), ("high", 16000),
    ("adaptive", 8000),  # the seed's `|| 8000` for a level without a budget
])
@pytest.mark.parametrize("model", [BUDGET_CLAUDE, "claude-3-7-sonnet-latest",
                                   "claude-haiku-4-5", "claude-sonnet-4-20250514"])
def test_anthropic_budget_params(model: str, level: str, budget: int) -> None:
    assert build_thinking_params("anthropic", model, level) == {
        "thinking": {"type": "enabled", "budget_tokens": budget},
        "max_tokens": budget + 4096,
        "extra_body": {"temperature": 1.0},
        "extra_headers": BETA,
    }


@pytest.mark.parametrize(("level", "effort"), [
    ("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"),
    ("adaptive", "medium"),
])
@pytest.mark.parametrize("model", [ADAPTIVE_CLAUDE, "claude-opus-4-7", "claude-opus-5",
                                   "claude-sonnet-4.6"])
def test_anthropic_adaptive_params(model: str, level: str, effort: str) -> None:
    assert build_thinking_params("anthropic", model, level) == {
        "thinking": {"type": "adaptive"},
        "output_config": {"effort": effort},
        "extra_headers": BETA,
    }


SEED_EFFORT = [("minimal", "low"), ("low", "low"), ("medium", "medium"), ("high", "high"),
               ("adaptive", "medium")]


@pytest.mark.parametrize(("level", "effort"), SEED_EFFORT)
@pytest.mark.parametrize(("supplier", "model"), [
    ("openai", "o3"), ("openai", "o4-mini"), ("openai", "gpt-5.1"), ("openai", "gpt-5-codex"),
    ("deepseek", "deepseek-reasoner"), ("deepseek", "deepseek-r1"),
    ("openai-compatible", "deepseek-r1:14b"), ("openai-compatible", "gpt-oss:20b"),
])
def test_reasoning_effort_params(supplier: str, model: str, level: str, effort: str) -> None:
    assert build_thinking_params(supplier, model, level) == {"reasoning_effort": effort}


@pytest.mark.parametrize(("level", "effort"), [
    ("minimal", "minimal"), ("low", "low"), ("medium", "medium"), ("high", "high"),
    ("adaptive", "medium"),
])
@pytest.mark.parametrize("model", ["gpt-5", "gpt-5-mini", "gpt-5-nano"])
def test_gpt5_sends_minimal_natively(model: str, level: str, effort: str) -> None:
    assert build_thinking_params("openai", model, level) == {"reasoning_effort": effort}


@pytest.mark.parametrize(("supplier", "model"), [
    (supplier, model) for supplier, model, *_ in CAPABILITY_CASES])
def test_off_sends_nothing(supplier: str, model: str) -> None:
    assert build_thinking_params(supplier, model, "off") == {}


@pytest.mark.parametrize("level", ALL)
@pytest.mark.parametrize(("supplier", "model"), [
    (supplier, model) for supplier, model, supported, *_ in CAPABILITY_CASES if not supported])
def test_models_without_thinking_get_nothing(supplier: str, model: str, level: str) -> None:
    assert build_thinking_params(supplier, model, level) == {}


@pytest.mark.parametrize("level", ALL)
def test_scripted_gets_nothing(level: str) -> None:
    # The scripted model reads the level from the request itself.
    assert build_thinking_params("scripted", "scripted", level) == {}


@pytest.mark.parametrize("level", ["max", "xhigh", "", "medium-high", "none"])
def test_unknown_level_raises(level: str) -> None:
    with pytest.raises(ValueError, match="unknown thinking level") as caught:
        build_thinking_params("anthropic", ADAPTIVE_CLAUDE, level)
    assert repr(level) in str(caught.value)
    assert "off, minimal, low, medium, high, adaptive" in str(caught.value)


def test_unknown_level_raises_even_for_models_without_thinking() -> None:
    with pytest.raises(ValueError, match="unknown thinking level"):
        build_thinking_params("openai", "gpt-4o", "extreme")


def test_level_and_supplier_are_case_insensitive() -> None:
    assert build_thinking_params("Anthropic", BUDGET_CLAUDE, " HIGH ") == \
        build_thinking_params("anthropic", BUDGET_CLAUDE, "high")
    assert build_thinking_params("OpenAI", "O3", "Low") == {"reasoning_effort": "low"}


def test_every_call_returns_new_dicts() -> None:
    first = build_thinking_params("anthropic", BUDGET_CLAUDE, "high")
    first["thinking"]["budget_tokens"] = 1
    first["extra_headers"]["anthropic-beta"] = "changed"
    first["extra_body"]["temperature"] = 0.0
    assert build_thinking_params("anthropic", BUDGET_CLAUDE, "high")["thinking"] == {
        "type": "enabled", "budget_tokens": 16000}
    again = build_thinking_params("anthropic", BUDGET_CLAUDE, "high")
    assert again["extra_headers"] == BETA
    assert again["extra_body"] == {"temperature": 1.0}
    adaptive = build_thinking_params("anthropic", ADAPTIVE_CLAUDE, "low")
    adaptive["output_config"]["effort"] = "max"
    assert build_thinking_params("anthropic", ADAPTIVE_CLAUDE, "low")["output_config"] == {
        "effort": "low"}


# --- against the installed SDKs' own types ---------------------------------------------

ANTHROPIC_ENTRY_POINTS = [Messages.create, Messages.stream, AsyncMessages.create,
                          AsyncMessages.stream]
OPENAI_ENTRY_POINTS = [Completions.create, AsyncCompletions.create]


def all_anthropic_params() -> list[dict[str, Any]]:
    return [build_thinking_params("anthropic", model, level)
            for model in (ADAPTIVE_CLAUDE, BUDGET_CLAUDE) for level in ALL if level != "off"]


def all_reasoning_params() -> list[dict[str, Any]]:
    return [build_thinking_params(supplier, model, level)
            for supplier, model in [("openai", "o3"), ("openai", "gpt-5"),
                                    ("deepseek", "deepseek-reasoner")]
            for level in ALL if level != "off"]


@pytest.mark.parametrize("entry_point", ANTHROPIC_ENTRY_POINTS)
def test_anthropic_keys_are_sdk_keyword_arguments(entry_point: Any) -> None:
    accepted = inspect.signature(entry_point).parameters
    for params in all_anthropic_params():
        assert set(params) <= set(accepted), set(params) - set(accepted)


def test_anthropic_request_body_keys_exist_in_message_create_params() -> None:
    body_fields = typed_dict_hints(MessageCreateParamsStreaming)
    for params in all_anthropic_params():
        body_keys = set(params) - {"extra_headers", "extra_body"}
        assert body_keys <= set(body_fields)
    assert typing_extensions.get_args(body_fields["max_tokens"]) == (int,)


def test_anthropic_budget_thinking_matches_enabled_param() -> None:
    hints = typed_dict_hints(ThinkingConfigEnabledParam)
    for level in ("minimal", "low", "medium", "high", "adaptive"):
        params = build_thinking_params("anthropic", BUDGET_CLAUDE, level)
        config = params["thinking"]
        assert required_keys(ThinkingConfigEnabledParam) <= set(config) <= set(hints)
        assert config["type"] in literal_values(hints["type"])
        assert isinstance(config["budget_tokens"], int)
        # The API requires budget_tokens >= 1024 and < max_tokens.
        assert 1024 <= config["budget_tokens"] < params["max_tokens"]


def test_anthropic_adaptive_thinking_matches_adaptive_param() -> None:
    hints = typed_dict_hints(ThinkingConfigAdaptiveParam)
    output_hints = typed_dict_hints(OutputConfigParam)
    for level in ("minimal", "low", "medium", "high", "adaptive"):
        params = build_thinking_params("anthropic", ADAPTIVE_CLAUDE, level)
        assert required_keys(ThinkingConfigAdaptiveParam) <= set(params["thinking"]) \
            <= set(hints)
        assert params["thinking"]["type"] in literal_values(hints["type"])
        assert set(params["output_config"]) <= set(output_hints)
        assert params["output_config"]["effort"] in literal_values(output_hints["effort"])


def test_every_anthropic_effort_value_is_an_sdk_effort() -> None:
    efforts = literal_values(typed_dict_hints(OutputConfigParam)["effort"])
    assert set(thinking.ANTHROPIC_ADAPTIVE_EFFORT.values()) <= efforts


def test_interleaved_thinking_beta_is_a_known_sdk_beta() -> None:
    assert thinking.INTERLEAVED_THINKING_BETA in literal_values(AnthropicBetaParam)


def test_temperature_travels_in_extra_body_because_the_sdk_dropped_the_keyword() -> None:
    # If a future SDK takes `temperature` again, either route works; while it does not,
    # a top-level "temperature" would raise TypeError before any request is sent.
    params = build_thinking_params("anthropic", BUDGET_CLAUDE, "medium")
    assert "temperature" not in params
    assert params["extra_body"] == {"temperature": 1.0}


@pytest.mark.parametrize("entry_point", OPENAI_ENTRY_POINTS)
def test_reasoning_keys_are_sdk_keyword_arguments(entry_point: Any) -> None:
    accepted = inspect.signature(entry_point).parameters
    for params in all_reasoning_params():
        assert set(params) == {"reasoning_effort"}
        assert set(params) <= set(accepted)


def test_every_reasoning_effort_value_is_an_sdk_effort() -> None:
    efforts = literal_values(ReasoningEffort)
    assert "reasoning_effort" in typed_dict_hints(CompletionCreateParamsStreaming)
    assert set(thinking.REASONING_EFFORT.values()) <= efforts
    assert set(thinking.GPT5_REASONING_EFFORT.values()) <= efforts
    for params in all_reasoning_params():
        assert params["reasoning_effort"] in efforts


# The SDKs build real requests from our parameters; a mock transport captures them, so the
# wire format is checked without a network.


def captured_anthropic_request(params: dict[str, Any]) -> httpx2.Request:
    captured: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        return httpx2.Response(200, json={
            "id": "msg_1", "type": "message", "role": "assistant", "model": "m",
            "content": [{"type": "text", "text": "ok"}], "stop_reason": "end_turn",
            "stop_sequence": None, "usage": {"input_tokens": 1, "output_tokens": 1}})

    with httpx2.Client(transport=httpx2.MockTransport(handler)) as http_client:
        client = anthropic.Anthropic(api_key="test-key", base_url="http://127.0.0.1:9",
                                     http_client=http_client, max_retries=0)
        floor = params.pop("max_tokens", 0)
        client.messages.create(model="m", messages=[{"role": "user", "content": "hi"}],
                               max_tokens=max(1024, floor), **params)
    assert len(captured) == 1
    return captured[0]


def test_anthropic_budget_wire_format() -> None:
    request = captured_anthropic_request(build_thinking_params("anthropic", BUDGET_CLAUDE,
                                                               "low"))
    body = json.loads(request.content)
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 4000}
    assert body["temperature"] == 1.0
    assert body["max_tokens"] == 4000 + 4096
    assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_anthropic_adaptive_wire_format() -> None:
    request = captured_anthropic_request(build_thinking_params("anthropic", ADAPTIVE_CLAUDE,
                                                               "high"))
    body = json.loads(request.content)
    assert body["thinking"] == {"type": "adaptive"}
    assert body["output_config"] == {"effort": "high"}
    assert "temperature" not in body
    assert request.headers["anthropic-beta"] == "interleaved-thinking-2025-05-14"


def test_openai_wire_format() -> None:
    captured: list[httpx2.Request] = []

    def handler(request: httpx2.Request) -> httpx2.Response:
        captured.append(request)
        return httpx2.Response(200, json={
            "id": "c1", "object": "chat.completion", "created": 0, "model": "o3",
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": "ok"}}]})

    with httpx2.Client(transport=httpx2.MockTransport(handler)) as http_client:
        client = openai.OpenAI(api_key="test-key", base_url="http://127.0.0.1:9/v1",
                               http_client=http_client, max_retries=0)
        client.chat.completions.create(model="o3", messages=[{"role": "user", "content": "hi"}],
                                       **build_thinking_params("openai", "o3", "minimal"))
    assert json.loads(captured[0].content)["reasoning_effort"] == "low"


# --- resolve_think_level ------------------------------------------------------------------


@pytest.mark.parametrize(("session", "agent", "supplier", "model", "expected"), [
    # the priority chain: session, then agent, then the model's default
    ("high", "low", "anthropic", BUDGET_CLAUDE, "high"),
    (None, "low", "anthropic", BUDGET_CLAUDE, "low"),
    (None, None, "anthropic", BUDGET_CLAUDE, "medium"),
    (None, None, "anthropic", ADAPTIVE_CLAUDE, "adaptive"),
    (None, None, "openai", "o3", "medium"),
    (None, None, "openai", "gpt-4o", "off"),
    (None, None, "scripted", "scripted", "medium"),
    ("off", "high", "anthropic", ADAPTIVE_CLAUDE, "off"),  # "off" is a choice, not absence
    # a level the model does not support falls through to the next source
    ("adaptive", "low", "anthropic", BUDGET_CLAUDE, "low"),
    ("minimal", "high", "openai", "o3", "high"),
    ("minimal", None, "openai", "gpt-5.1", "medium"),
    ("adaptive", "minimal", "anthropic", BUDGET_CLAUDE, "medium"),
    ("high", "low", "openai", "gpt-4o", "off"),
    ("high", None, "deepseek", "deepseek-chat", "off"),
    # native minimal on GPT-5
    ("minimal", None, "openai", "gpt-5", "minimal"),
    # unknown or empty strings are skipped, never raised
    ("extreme", "low", "openai", "o3", "low"),
    ("", "", "anthropic", ADAPTIVE_CLAUDE, "adaptive"),
    ("bogus", "also bogus", "scripted", "scripted", "medium"),
    # normalised spelling
    (" HIGH ", None, "anthropic", BUDGET_CLAUDE, "high"),
    # every level is valid for the scripted model and adaptive Claude
    ("adaptive", None, "scripted", "scripted", "adaptive"),
    ("minimal", None, "anthropic", "claude-opus-5", "minimal"),
])
def test_resolve_think_level(session: str | None, agent: str | None, supplier: str,
                             model: str, expected: str) -> None:
    assert resolve_think_level(session, agent, supplier, model) == expected


def test_resolved_level_is_always_supported() -> None:
    for supplier, model, *_ in CAPABILITY_CASES:
        levels = get_model_thinking_capability(supplier, model).levels
        for session in (*ALL, None, "junk"):
            for agent in (*ALL, None, "junk"):
                assert resolve_think_level(session, agent, supplier, model) in levels
