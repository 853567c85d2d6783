"""Text made encodable: any string or JSON-like value that enters a conversation (a
prompt, what a model streams, what a tool returns) turned into one every encoder takes —
UTF-8 for the store, JSON for the widgets and a provider's request."""

from __future__ import annotations

import re
from typing import Any

__all__ = ["MAX_NESTING", "encodable", "encodable_value"]

_SURROGATE = re.compile("[\ud800-\udfff]")


def encodable(text: str) -> str:
    """``text`` with lone surrogates replaced by U+FFFD, so that it can be encoded as UTF-8
    (for the store, the widgets' JSON, a provider's request).

    Python hands out such strings for file names that are not valid UTF-8 (``os.listdir``
    decodes them with ``surrogateescape``), and JSON may carry escapes like ``"\\ud800"``;
    one of them used to crash the store write mid-turn. Text enters a conversation at
    three places, and each applies this: the user's prompt (``AgentSession.run``), what
    the model streams (``Turn.stream``) and what tools return or report
    (``ToolRunner``). ASCII, the common case, costs one C call.
    """
    if text.isascii():
        return text
    return _SURROGATE.sub("\ufffd", text)


MAX_NESTING = 64
"""How deep tool arguments may nest; deeper parts are replaced by a short text. Arguments
nested hundreds deep (seen from models looping) would fail the store's JSON encoder."""


def encodable_value(value: Any, depth: int = 0) -> Any:
    """:func:`encodable` applied to every string in JSON-like data (tool arguments), and
    nesting cut at :data:`MAX_NESTING`."""
    if isinstance(value, str):
        return encodable(value)
    if isinstance(value, dict | list | tuple) and depth >= MAX_NESTING:
        return f"[nested deeper than {MAX_NESTING} levels: cut]"
    if isinstance(value, dict):
        return {encodable(str(k)): encodable_value(v, depth + 1) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [encodable_value(v, depth + 1) for v in value]
    return value
