"""Parsing the argument text of a streamed tool call.

Both vendors stream a tool call's arguments as JSON text in pieces. A model sometimes sends
text that is not a JSON object (cut off, malformed, a bare list): the call is still
reported, with empty ``args`` and the text in ``raw_args``, so the runtime can answer the
model with an error that quotes what it sent instead of failing the turn.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["parse_tool_arguments"]


def parse_tool_arguments(text: str) -> tuple[dict[str, Any], str | None]:
    """``(args, raw_args)``: the parsed object and ``None``, or ``{}`` and the text as
    sent when it is not a JSON object. Empty text means no arguments."""
    if not text.strip():
        return {}, None
    try:
        value = json.loads(text)
    except ValueError:
        return {}, text
    if not isinstance(value, dict):
        return {}, text
    return value, None
