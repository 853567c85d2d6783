"""What a model call costs in money: :class:`ModelPrice` (USD per million tokens) and the
table of the vendors' list prices shipped as data (``prices.json``, dated).

A model's price is the one given to its provider (``create_provider(..., price=...)``),
else one set for it with :func:`set_price`, else the table's — looked up like the model
table (exact id, else the longest entry the id starts with; an ``openai-compatible``
model in the OpenAI and DeepSeek tables). A model with no known price has none: its cost
is unknown (``None``), never zero — a local server's model is free only if the user says
so (``price=ModelPrice(input=0, output=0)``).
"""

from __future__ import annotations

import json
import math
import re
from dataclasses import dataclass
from importlib import resources
from typing import Any, Final

from ..messages import Usage

__all__ = ["PRICES_AS_OF", "ModelPrice", "price_of", "set_price", "user_prices"]

PER = 1_000_000
"""Prices are per million tokens."""


@dataclass(frozen=True, slots=True)
class ModelPrice:
    """A model's price in USD per million tokens. ``cache_read`` / ``cache_write``: tokens
    read from or written into the prompt cache (``None``: billed as input);
    ``thinking``: reasoning tokens where a vendor prices them apart from the answer
    (``None``: billed as output, which includes them)."""

    input: float
    output: float
    cache_read: float | None = None
    cache_write: float | None = None
    thinking: float | None = None

    def __post_init__(self) -> None:
        for name in ("input", "output", "cache_read", "cache_write", "thinking"):
            value = getattr(self, name)
            if value is not None and not (isinstance(value, (int, float))
                                          and not isinstance(value, bool)
                                          and math.isfinite(value) and value >= 0):
                raise ValueError(f"ModelPrice.{name} must be a number ≥ 0 (USD per million "
                                 f"tokens), got {value!r}")

    def cost(self, usage: Usage) -> float:
        """USD for a call that used ``usage``: the sum of :meth:`split`."""
        return sum(self.split(usage).values())

    def split(self, usage: Usage) -> dict[str, float]:
        """The cost by kind of token (what the token stats' hover shows); ``output``
        includes the thinking, at its own price when it has one."""
        read = self.input if self.cache_read is None else self.cache_read
        write = self.input if self.cache_write is None else self.cache_write
        output = usage.output_tokens * self.output
        if self.thinking is not None:
            thinking = min(usage.thinking_tokens, usage.output_tokens)
            output += thinking * (self.thinking - self.output)
        return {"input": usage.input_tokens * self.input / PER,
                "cache_read": usage.cache_read_tokens * read / PER,
                "cache_write": usage.cache_write_tokens * write / PER,
                "output": output / PER}


def _load() -> tuple[str, dict[tuple[str, str], ModelPrice]]:
    text = resources.files(__package__ or "neta_nb.providers").joinpath(
        "prices.json").read_text("utf-8")
    data: dict[str, Any] = json.loads(text)
    table = {(supplier, model): ModelPrice(**fields)
             for supplier, models in data["prices"].items()
             for model, fields in models.items()}
    return str(data["as_of"]), table


_AS_OF, _TABLE = _load()
PRICES_AS_OF: Final[str] = _AS_OF
"""When the shipped table's prices were taken from the vendors' pages (ISO date)."""
_SET: dict[tuple[str, str], ModelPrice] = {}
_SEARCH_ORDER: dict[str, tuple[str, ...]] = {
    "openai-compatible": ("openai-compatible", "openai", "deepseek"),
}


def set_price(supplier: str, model: str, price: ModelPrice | None) -> None:
    """Price ``model`` of ``supplier`` (a prefix, as in the table) for every provider
    made afterwards without a price of its own; ``None`` removes a price set here."""
    key = (supplier.strip().lower(), model.strip().lower().rsplit("/", 1)[-1])
    if price is not None and not isinstance(price, ModelPrice):
        raise TypeError(f"price must be a ModelPrice, got {type(price).__name__}")
    if price is None:
        _SET.pop(key, None)
    else:
        _SET[key] = price


def user_prices() -> dict[tuple[str, str], ModelPrice]:
    """The prices :func:`set_price` set in this process, by ``(supplier, model)`` as it
    keeps them: another process (a batch run's Ray worker) sets them again."""
    return dict(_SET)


def price_of(supplier: str, model: str) -> ModelPrice | None:
    """The price of ``model``: set with :func:`set_price`, else the table's, else
    ``None``."""
    supplier_key = supplier.strip().lower()
    model_key = model.strip().lower().rsplit("/", 1)[-1]
    # A prefix the user set covers every id that starts with it (their intent); the
    # shipped table's cover only the same model's snapshots and tags.
    for table, strict in ((_SET, False), (_TABLE, True)):
        for candidate in _SEARCH_ORDER.get(supplier_key, (supplier_key,)):
            found = _longest(table, candidate, model_key, strict=strict)
            if found is not None:
                return found
    return None


_SAME_MODEL = re.compile(r"(-\d.*|-latest|[:@].*)?")
"""What may follow a table entry in the same model's id: a version or date
(``-20250929``, ``-4-5``), ``-latest``, or a tag (``:8b``, ``@2025``). ``o1-pro`` or
``gpt-5-pro`` are other models with other prices: not ``o1``'s or ``gpt-5``'s."""


def _longest(table: dict[tuple[str, str], ModelPrice], supplier: str, model: str, *,
             strict: bool) -> ModelPrice | None:
    best: tuple[int, ModelPrice] | None = None
    for (entry_supplier, prefix), price in table.items():
        if (entry_supplier == supplier and model.startswith(prefix)
                and (not strict or _SAME_MODEL.fullmatch(model[len(prefix):]))
                and (best is None or len(prefix) > best[0])):
            best = (len(prefix), price)
    return best[1] if best is not None else None
