"""What each known model can do: context window, output limit, capabilities.

The table is data, looked up by supplier and model id. A model id matches its exact entry
or, failing that, the longest entry it starts with, so dated snapshots
(``claude-sonnet-4-5-20250929``) and size variants (``gpt-4o-2024-08-06``) find their
family. Models served through an OpenAI-compatible endpoint are looked up in the OpenAI
and DeepSeek tables too (a vLLM server may serve ``deepseek-reasoner``); ``vendor/model``
routing prefixes are ignored. Anything still unknown gets :data:`DEFAULT_MODEL_INFO`'s
numbers: a 128k context and tools only, the safe assumptions for an OpenAI-compatible
server.

:func:`register_model` adds or overrides an entry, e.g. for a local model with a larger
context than the default.

Thinking *levels* are not here: they live with the thinking parameters in
:mod:`neta_nb.thinking`. ``"thinking"`` in :attr:`ModelInfo.capabilities` only says the
model can stream reasoning at all.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Literal

__all__ = [
    "DEFAULT_MODEL_INFO",
    "Capability",
    "ModelInfo",
    "get_model_info",
    "register_model",
    "registered_models",
]

Capability = Literal["tools", "vision", "thinking", "pdf"]


@dataclass(frozen=True, slots=True)
class ModelInfo:
    supplier: str
    model: str
    context_window: int
    """Tokens the prompt plus the answer may occupy."""
    max_output_tokens: int
    """The largest ``max_tokens`` the model accepts."""
    capabilities: frozenset[str] = frozenset({"tools"})
    """``tools``, ``vision``, ``thinking``, ``pdf`` (reads PDF documents): what the tool
    resolver filters on and what attachments a prompt may carry."""
    assumed: bool = False
    """The figures are :data:`DEFAULT_MODEL_INFO`'s, not this model's: the table does not
    know it (and nobody gave or reported its window)."""

    def supports(self, capability: str) -> bool:
        return capability in self.capabilities


DEFAULT_MODEL_INFO = ModelInfo(supplier="", model="", context_window=128_000,
                               max_output_tokens=8_192, capabilities=frozenset({"tools"}),
                               assumed=True)

_TOOLS = frozenset({"tools"})
_TOOLS_VISION = frozenset({"tools", "vision"})
_TOOLS_THINKING = frozenset({"tools", "thinking"})
_ALL = frozenset({"tools", "vision", "thinking"})

# (supplier, model prefix) -> (context window, max output tokens, capabilities).
# Numbers are the vendors' published limits for the standard (non-beta) context.
_KNOWN: dict[tuple[str, str], tuple[int, int, frozenset[str]]] = {
    # Anthropic: every Claude 3+ model takes tools and images; 3.7 and later think.
    ("anthropic", "claude-3-5-haiku"): (200_000, 8_192, _TOOLS_VISION),
    ("anthropic", "claude-3-5-sonnet"): (200_000, 8_192, _TOOLS_VISION),
    ("anthropic", "claude-3-haiku"): (200_000, 4_096, _TOOLS_VISION),
    ("anthropic", "claude-3-opus"): (200_000, 4_096, _TOOLS_VISION),
    ("anthropic", "claude-3-7-sonnet"): (200_000, 64_000, _ALL),
    ("anthropic", "claude-sonnet-4"): (200_000, 64_000, _ALL),
    ("anthropic", "claude-opus-4"): (200_000, 32_000, _ALL),
    ("anthropic", "claude-opus-4-5"): (200_000, 64_000, _ALL),
    ("anthropic", "claude-opus-4-6"): (200_000, 128_000, _ALL),
    ("anthropic", "claude-opus-4-7"): (200_000, 128_000, _ALL),
    ("anthropic", "claude-haiku-4-5"): (200_000, 64_000, _ALL),
    ("anthropic", "claude-"): (200_000, 64_000, _ALL),
    # OpenAI
    ("openai", "gpt-4o"): (128_000, 16_384, _TOOLS_VISION),
    ("openai", "gpt-4o-mini"): (128_000, 16_384, _TOOLS_VISION),
    ("openai", "gpt-4.1"): (1_047_576, 32_768, _TOOLS_VISION),
    ("openai", "gpt-5"): (400_000, 128_000, _ALL),
    ("openai", "gpt-5-chat"): (128_000, 16_384, _TOOLS_VISION),
    ("openai", "o1"): (200_000, 100_000, _ALL),
    ("openai", "o1-mini"): (128_000, 65_536, frozenset({"thinking"})),
    ("openai", "o3"): (200_000, 100_000, _ALL),
    ("openai", "o3-mini"): (200_000, 100_000, _TOOLS_THINKING),
    ("openai", "o4-mini"): (200_000, 100_000, _ALL),
    ("openai", "gpt-oss"): (131_072, 131_072, _TOOLS_THINKING),
    # DeepSeek
    ("deepseek", "deepseek-chat"): (128_000, 8_192, _TOOLS),
    ("deepseek", "deepseek-reasoner"): (128_000, 65_536, _TOOLS_THINKING),
    ("deepseek", "deepseek-v4"): (1_000_000, 65_536, _TOOLS_THINKING),
    ("deepseek", "deepseek-r1"): (128_000, 32_768, _TOOLS_THINKING),
    # The offline scripted model shows everything the UI can show.
    ("scripted", ""): (200_000, 32_000, _ALL),
}

# Claude reads PDFs from 3.5 Sonnet on; the scripted model accepts everything.
_NO_PDF = frozenset({("anthropic", "claude-3-haiku"), ("anthropic", "claude-3-opus")})


def _with_pdf(key: tuple[str, str], caps: frozenset[str]) -> frozenset[str]:
    if key[0] in ("anthropic", "scripted") and key not in _NO_PDF:
        return caps | {"pdf"}
    return caps


_registry: dict[tuple[str, str], ModelInfo] = {
    key: ModelInfo(supplier=key[0], model=key[1], context_window=window,
                   max_output_tokens=output, capabilities=_with_pdf(key, caps))
    for key, (window, output, caps) in _KNOWN.items()
}

# Where to look for a supplier's models, in order.
_SEARCH_ORDER: dict[str, tuple[str, ...]] = {
    "openai-compatible": ("openai-compatible", "openai", "deepseek"),
}


_BUILT_IN = dict(_registry)


def register_model(info: ModelInfo) -> None:
    """Add ``info`` to the table, replacing any entry for the same supplier and model.

    ``info.model`` is matched as a prefix like the built-in entries, so registering
    ``("openai-compatible", "llama3")`` covers ``llama3:8b`` too.
    """
    _registry[(info.supplier.lower(), info.model.lower())] = info


def registered_models() -> list[ModelInfo]:
    """What :func:`register_model` added or changed in this process: another process (a
    batch run's Ray worker) registers them again."""
    return [info for key, info in _registry.items() if _BUILT_IN.get(key) != info]


def get_model_info(supplier: str, model: str) -> ModelInfo:
    """The entry for ``model`` of ``supplier``: exact id, else longest known prefix, else
    :data:`DEFAULT_MODEL_INFO` (128k context, tools only) under the asked-for names."""
    supplier_key = supplier.strip().lower()
    model_key = model.strip().lower().rsplit("/", 1)[-1]
    for table_supplier in _SEARCH_ORDER.get(supplier_key, (supplier_key,)):
        found = _lookup(table_supplier, model_key)
        if found is not None:
            return replace(found, supplier=supplier, model=model)
    return replace(DEFAULT_MODEL_INFO, supplier=supplier, model=model)


def _lookup(supplier: str, model: str) -> ModelInfo | None:
    exact = _registry.get((supplier, model))
    if exact is not None:
        return exact
    best: ModelInfo | None = None
    best_length = -1
    for (entry_supplier, prefix), info in _registry.items():
        if entry_supplier == supplier and model.startswith(prefix) and len(prefix) > best_length:
            best, best_length = info, len(prefix)
    return best
