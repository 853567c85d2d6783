"""Building a provider from a ``"supplier:model"`` string, or from the environment.

``create_provider("anthropic:claude-sonnet-4-6")``, ``"openai:gpt-5"``,
``"deepseek:deepseek-reasoner"``, ``"openai-compatible:llama3:8b"`` (with ``base_url``),
``"scripted"`` / ``"scripted:demo"``. Only the first colon separates supplier and model,
so Ollama tags such as ``llama3:8b`` survive. A bare model name whose family is clear
(``claude-…``, ``gpt-…``, ``o3…``, ``deepseek-…``) gets its supplier inferred.

Vendor modules are imported here, on demand, so a missing SDK only matters when its
supplier is asked for (and then the ImportError names the pip extra).
"""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping
from typing import Any

from .base import Provider
from .prices import ModelPrice
from .scripted.scripted import ScriptedProvider

__all__ = ["DEFAULT_MODELS", "SUPPLIERS", "create_provider", "default_provider",
           "provider_from_settings"]

SUPPLIERS = ("anthropic", "openai", "deepseek", "openai-compatible", "scripted")
DEFAULT_MODELS = {"anthropic": "claude-sonnet-4-6", "openai": "gpt-5",
                  "deepseek": "deepseek-reasoner", "scripted": "demo"}
"""The model :func:`default_provider` picks for each supplier."""

_ENVIRONMENT_KEYS = (("anthropic", "ANTHROPIC_API_KEY"), ("openai", "OPENAI_API_KEY"),
                     ("deepseek", "DEEPSEEK_API_KEY"))
_INFERRED_SUPPLIERS = ((re.compile(r"^claude-"), "anthropic"),
                       (re.compile(r"^(gpt-|o\d)"), "openai"),
                       (re.compile(r"^deepseek-"), "deepseek"))

log = logging.getLogger(__name__)


def create_provider(spec: str | Provider, *, api_key: str | None = None,
                    base_url: str | None = None, context_window: int | None = None,
                    request_options: Mapping[str, Any] | None = None,
                    tool_results_as_user: bool = False,
                    price: ModelPrice | None = None) -> Provider:
    """The provider ``spec`` names (a provider instance is returned as is).

    ``context_window`` overrides the model table's window; ``request_options`` are merged
    into every request body (keys the SDK's create call names go in as arguments, others
    in the JSON body). ``tool_results_as_user`` sends tool results as user messages, for
    an OpenAI-compatible server whose chat template drops ``tool`` messages (see the
    server table in docs/configuration.md). Keys come from ``api_key`` or the usual
    environment variable and are never part of :meth:`Provider.settings`. ``price``: what
    the model costs (USD per million tokens), instead of the shipped table's
    (``prices.json``) — for a model the table does not know, a negotiated price, or
    ``ModelPrice(input=0, output=0)`` for a free local server.
    """
    if isinstance(spec, Provider):
        if price is not None:
            spec.price = price
        return spec
    provider = _create(spec, api_key=api_key, base_url=base_url,
                       context_window=context_window, request_options=request_options,
                       tool_results_as_user=tool_results_as_user)
    if price is not None:
        provider.price = price
    return provider


def provider_from_settings(settings: Mapping[str, Any],
                           options: Mapping[str, Any] | None = None) -> Provider:
    """The provider :meth:`Provider.settings` describe, with the constructor ``options``
    of :meth:`Provider.rebuild_options` (its key among them; without one, the
    environment's). ``base_url`` and ``request_options`` are used as given: the caller's
    own configuration, as ``create_provider`` takes them."""
    price = settings.get("price")
    extra = dict(options or {})
    provider = _create(f"{settings['supplier']}:{settings['model']}",
                       api_key=extra.pop("api_key", None), base_url=settings.get("base_url"),
                       context_window=settings.get("context_window"),
                       request_options=settings.get("request_options"),
                       tool_results_as_user=bool(settings.get("tool_results_as_user", False)),
                       options=extra)
    if isinstance(price, Mapping):
        provider.price = ModelPrice(**price)
    return provider


def _create(spec: str, *, api_key: str | None, base_url: str | None,
            context_window: int | None, request_options: Mapping[str, Any] | None,
            tool_results_as_user: bool, options: Mapping[str, Any] | None = None) -> Provider:
    if context_window is not None and context_window < 1:
        raise ValueError("context_window must be a positive number of tokens")
    supplier, model = _parse_spec(spec)
    if tool_results_as_user and supplier in ("anthropic", "scripted"):
        raise ValueError(f"tool_results_as_user is for OpenAI-compatible servers; "
                         f"{supplier} models read tool results as they are")
    if supplier == "scripted":
        if options:
            raise ValueError(f"the scripted model takes no {', '.join(options)}")
        return ScriptedProvider(model=model or DEFAULT_MODELS["scripted"],
                                context_window=context_window)
    if not model:
        raise ValueError(f"model spec {spec!r} names no model; expected 'supplier:model', "
                         f"e.g. '{supplier}:{DEFAULT_MODELS.get(supplier, 'my-model')}'")
    if supplier == "anthropic":
        from .anthropic import AnthropicProvider

        return AnthropicProvider(model, api_key=api_key, base_url=base_url,
                                 context_window=context_window,
                                 request_options=request_options, **(options or {}))
    from .openai import OpenAIProvider

    return OpenAIProvider(model, supplier=supplier, api_key=api_key, base_url=base_url,
                          context_window=context_window, request_options=request_options,
                          tool_results_as_user=tool_results_as_user, **(options or {}))


def default_provider() -> Provider:
    """The first supplier with a key in the environment (Anthropic, OpenAI, DeepSeek) whose
    SDK is installed, with its :data:`DEFAULT_MODELS` entry; else the offline
    :class:`ScriptedProvider`."""
    for supplier, variable in _ENVIRONMENT_KEYS:
        if os.environ.get(variable):
            try:
                return create_provider(f"{supplier}:{DEFAULT_MODELS[supplier]}")
            except ImportError as error:
                log.warning("%s is set but %s", variable, error)
    return ScriptedProvider()


def _parse_spec(spec: str) -> tuple[str, str]:
    text = spec.strip()
    supplier, colon, model = text.partition(":")
    supplier = supplier.strip().lower()
    if colon and supplier in SUPPLIERS:
        return supplier, model.strip()
    if not colon and supplier in SUPPLIERS:
        return supplier, ""
    for pattern, inferred in _INFERRED_SUPPLIERS:
        if pattern.match(text.lower()):
            return inferred, text
    if colon:
        raise ValueError(f"unknown supplier {supplier!r} in model spec {spec!r}; "
                         f"expected one of {', '.join(SUPPLIERS)}")
    raise ValueError(f"cannot tell the supplier of model {spec!r}; write it as "
                     f"'supplier:model' with supplier one of {', '.join(SUPPLIERS)}")
