"""The model table: exact ids, families by prefix, defaults, overrides."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from neta_nb.providers import models
from neta_nb.providers.models import DEFAULT_MODEL_INFO, ModelInfo, get_model_info, register_model
from neta_nb.providers.scripted.scripted import ScriptedProvider


@pytest.fixture(autouse=True)
def restore_registry() -> Iterator[None]:
    saved = dict(models._registry)
    yield
    models._registry.clear()
    models._registry.update(saved)


@pytest.mark.parametrize(("supplier", "model", "window", "output", "capabilities"), [
    # "pdf": Claude reads PDF attachments from 3.5 on.
    ("anthropic", "claude-sonnet-4-5-20250929", 200_000, 64_000,
     {"tools", "vision", "thinking", "pdf"}),
    ("anthropic", "claude-opus-4-1-20250805", 200_000, 32_000,
     {"tools", "vision", "thinking", "pdf"}),
    ("anthropic", "claude-3-5-haiku-20241022", 200_000, 8_192, {"tools", "vision", "pdf"}),
    ("anthropic", "claude-3-haiku-20240307", 200_000, 4_096, {"tools", "vision"}),
    ("anthropic", "claude-future-9", 200_000, 64_000, {"tools", "vision", "thinking", "pdf"}),
    ("openai", "gpt-4o-mini", 128_000, 16_384, {"tools", "vision"}),
    ("openai", "gpt-5-mini", 400_000, 128_000, {"tools", "vision", "thinking"}),
    ("openai", "gpt-5-chat-latest", 128_000, 16_384, {"tools", "vision"}),
    ("openai", "o3-mini", 200_000, 100_000, {"tools", "thinking"}),
    ("deepseek", "deepseek-reasoner", 128_000, 65_536, {"tools", "thinking"}),
    ("deepseek", "DeepSeek-Chat", 128_000, 8_192, {"tools"}),
    ("openai-compatible", "deepseek-ai/deepseek-r1-distill-qwen-32b", 128_000, 32_768,
     {"tools", "thinking"}),
    ("openai-compatible", "gpt-oss:20b", 131_072, 131_072, {"tools", "thinking"}),
    ("scripted", "demo", 200_000, 32_000, {"tools", "vision", "thinking", "pdf"}),
])
def test_known_models(supplier: str, model: str, window: int, output: int,
                      capabilities: set[str]) -> None:
    info = get_model_info(supplier, model)

    assert (info.supplier, info.model) == (supplier, model)
    assert (info.context_window, info.max_output_tokens) == (window, output)
    assert info.capabilities == frozenset(capabilities)


def test_unknown_model_gets_the_default() -> None:
    info = get_model_info("openai-compatible", "llama3:8b")

    assert info == ModelInfo("openai-compatible", "llama3:8b", 128_000, 8_192,
                             frozenset({"tools"}), assumed=True)
    assert info.context_window == DEFAULT_MODEL_INFO.context_window
    assert info.supports("tools")
    assert not info.supports("vision")


def test_register_model_overrides_and_adds() -> None:
    register_model(ModelInfo("openai-compatible", "llama3", 8_192, 2_048,
                             frozenset({"tools", "vision"})))
    register_model(ModelInfo("openai", "gpt-4o", 64_000, 4_000, frozenset()))

    assert get_model_info("openai-compatible", "llama3:70b").context_window == 8_192
    assert not get_model_info("openai-compatible", "llama3:70b").assumed
    assert get_model_info("openai", "gpt-4o-2024-08-06").capabilities == frozenset()
    assert get_model_info("openai", "gpt-4o-mini").context_window == 128_000  # longer prefix


def test_providers_expose_their_info() -> None:
    assert ScriptedProvider().info == get_model_info("scripted", "demo")
