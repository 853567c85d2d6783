"""create_provider and default_provider."""

from __future__ import annotations

import pytest

from neta_nb.providers import (
    AnthropicProvider,
    OpenAIProvider,
    ScriptedProvider,
    create_provider,
    default_provider,
)

from .conftest import SECRET_KEY


@pytest.mark.parametrize(("spec", "kind", "model_id"), [
    ("anthropic:claude-sonnet-4-6", AnthropicProvider, "anthropic:claude-sonnet-4-6"),
    ("openai:gpt-5", OpenAIProvider, "openai:gpt-5"),
    ("deepseek:deepseek-reasoner", OpenAIProvider, "deepseek:deepseek-reasoner"),
    ("claude-opus-4-6", AnthropicProvider, "anthropic:claude-opus-4-6"),
    ("o3-mini", OpenAIProvider, "openai:o3-mini"),
    ("scripted", ScriptedProvider, "scripted:demo"),
    ("scripted:demo", ScriptedProvider, "scripted:demo"),
])
def test_specs(spec: str, kind: type, model_id: str) -> None:
    provider = create_provider(spec, api_key=SECRET_KEY)

    assert isinstance(provider, kind)
    assert provider.model_id == model_id
    assert SECRET_KEY not in repr(provider)


def test_openai_compatible_keeps_colons_in_the_model() -> None:
    provider = create_provider("openai-compatible:llama3:8b",
                               base_url="http://127.0.0.1:11434/v1")

    assert provider.model_id == "openai-compatible:llama3:8b"


def test_a_provider_instance_is_returned_as_is() -> None:
    provider = ScriptedProvider()

    assert create_provider(provider) is provider


@pytest.mark.parametrize(("spec", "message"), [
    ("mistral:large", "unknown supplier 'mistral'"),
    ("llama3", "cannot tell the supplier"),
    ("anthropic", "names no model"),
    ("openai:", "names no model"),
])
def test_bad_specs(spec: str, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        create_provider(spec)


def test_default_provider_without_keys_is_scripted() -> None:
    assert isinstance(default_provider(), ScriptedProvider)


@pytest.mark.parametrize(("variables", "model_id"), [
    (("ANTHROPIC_API_KEY", "OPENAI_API_KEY"), "anthropic:claude-sonnet-4-6"),
    (("OPENAI_API_KEY", "DEEPSEEK_API_KEY"), "openai:gpt-5"),
    (("DEEPSEEK_API_KEY",), "deepseek:deepseek-reasoner"),
])
def test_default_provider_picks_the_first_supplier_with_a_key(
        monkeypatch: pytest.MonkeyPatch, variables: tuple[str, ...], model_id: str) -> None:
    for name in variables:
        monkeypatch.setenv(name, SECRET_KEY)

    provider = default_provider()

    assert provider.model_id == model_id
    assert SECRET_KEY not in repr(provider)
