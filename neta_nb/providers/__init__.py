"""Model providers behind one interface (:mod:`neta_nb.providers.base`).

Vendor modules (``anthropic``, ``openai``) are the only importers of their SDKs and are
imported lazily, so the core works without either SDK installed: ``AnthropicProvider``
and ``OpenAIProvider`` are loaded from here on first access.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from .base import (
    ModelRequest,
    Provider,
    ProviderError,
    ResponseAssembler,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from .factory import create_provider, default_provider
from .models import ModelInfo, get_model_info, register_model
from .scripted.demo_script import DEMO_SCRIPT
from .scripted.scripted import Script, ScriptedProvider

if TYPE_CHECKING:
    from .anthropic import AnthropicProvider
    from .openai import OpenAIProvider

__all__ = [
    "DEMO_SCRIPT",
    "AnthropicProvider",
    "ModelInfo",
    "ModelRequest",
    "OpenAIProvider",
    "Provider",
    "ProviderError",
    "ResponseAssembler",
    "Script",
    "ScriptedProvider",
    "StreamDone",
    "StreamEvent",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingEnd",
    "ToolCallReady",
    "UsageUpdate",
    "create_provider",
    "default_provider",
    "get_model_info",
    "register_model",
]

_LAZY = {"AnthropicProvider": ".anthropic", "OpenAIProvider": ".openai"}


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        import importlib

        return getattr(importlib.import_module(_LAZY[name], __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
