"""A provider rebuilt in another process from what :func:`recipe_of` sets apart: the same
settings, SDK options and key, and nothing secret outside ``secrets``."""

from __future__ import annotations

import pickle

from neta_nb import create_provider
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.providers.portable import rebuild, recipe_of
from neta_nb.providers.prices import ModelPrice
from neta_nb.providers.scripted.scripted import ScriptedProvider


class TunedOpenAI(OpenAIProvider):
    """A subclass may hold more than its settings say."""


def test_an_openai_compatible_provider_comes_back_whole_with_its_secrets_apart() -> None:
    provider = create_provider(
        "openai-compatible:llama3:8b", base_url="http://127.0.0.1:9/v1?token=URL-SECRET",
        api_key="KEY-SECRET", context_window=8192, price=ModelPrice(input=1.0, output=2.0),
        request_options={"top_k": 40, "extra_headers": {"X-Proxy": "HEADER-SECRET"}},
        tool_results_as_user=True)
    recipe = recipe_of(provider)
    assert recipe is not None
    shown = pickle.dumps((recipe.settings, recipe.options))
    for secret in (b"URL-SECRET", b"KEY-SECRET", b"HEADER-SECRET"):
        assert secret not in shown
    rebuilt = rebuild(*pickle.loads(pickle.dumps((recipe.settings, recipe.options,
                                                  recipe.secrets))))
    assert isinstance(rebuilt, OpenAIProvider)
    assert rebuilt.settings() == provider.settings()
    assert rebuilt.base_url == "http://127.0.0.1:9/v1?token=URL-SECRET"
    assert rebuilt.request_options == provider.request_options
    assert rebuilt.rebuild_options() == provider.rebuild_options()
    assert rebuilt.price == ModelPrice(input=1.0, output=2.0)


def test_sdk_options_and_the_environments_key_come_back() -> None:
    provider = OpenAIProvider("deepseek-chat", supplier="deepseek", api_key="k",
                              max_tokens=512, max_retries=0, timeout=30.0,
                              send_reasoning_content=False)
    recipe = recipe_of(provider)
    assert recipe is not None
    rebuilt = rebuild(recipe.settings, recipe.options, recipe.secrets)
    assert rebuilt.rebuild_options() == provider.rebuild_options() == {
        "api_key": "k", "max_tokens": 512, "send_reasoning_content": False,
        "max_retries": 0, "timeout": 30.0}
    assert rebuilt.settings() == provider.settings()


def test_an_anthropic_provider_comes_back() -> None:
    provider = AnthropicProvider("claude-sonnet-4-5", api_key="ak", base_url="http://127.0.0.1:9",
                                 max_tokens=2048, context_window=100_000)
    recipe = recipe_of(provider)
    assert recipe is not None and recipe.secrets == {"api_key": "ak"}
    rebuilt = rebuild(recipe.settings, recipe.options, recipe.secrets)
    assert isinstance(rebuilt, AnthropicProvider)
    assert rebuilt.settings() == provider.settings()
    assert rebuilt.rebuild_options() == provider.rebuild_options()


def test_what_settings_do_not_rebuild_has_no_recipe() -> None:
    assert recipe_of(ScriptedProvider()) is None
    assert recipe_of(TunedOpenAI("gpt-5", api_key="k")) is None
