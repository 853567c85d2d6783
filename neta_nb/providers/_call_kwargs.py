"""Merging extra parameters into a vendor SDK's create call: the thinking parameters and a
provider's ``request_options``.

:func:`neta_nb.thinking.build_thinking_params` returns keyword arguments for the SDK call.
Most go straight in; a few need merging with what the provider already sets:
``max_tokens`` is a floor, ``extra_headers`` and ``extra_body`` are dictionaries to join.
A key the installed SDK's create method does not name travels in ``extra_body``, so a
parameter an SDK release drops still reaches the API unchanged.
"""

from __future__ import annotations

import inspect
from collections.abc import Callable, Mapping
from typing import Any

__all__ = ["merge_params"]

_MERGED_DICTS = ("extra_headers", "extra_body")


def merge_params(kwargs: dict[str, Any], thinking: Mapping[str, Any],
                 create: Callable[..., Any]) -> dict[str, Any]:
    """``kwargs`` for ``create`` with ``thinking`` merged in (``kwargs`` is not changed)."""
    merged = dict(kwargs)
    accepted = set(inspect.signature(create).parameters)
    for key, value in thinking.items():
        if key == "max_tokens":
            merged[key] = max(int(merged.get(key) or 0), int(value))
        elif key in _MERGED_DICTS:
            merged[key] = {**(merged.get(key) or {}), **value}
        elif key in accepted:
            merged[key] = value
        else:
            merged["extra_body"] = {**(merged.get("extra_body") or {}), key: value}
    return merged
