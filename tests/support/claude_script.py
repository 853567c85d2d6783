"""Claude Code's model, scripted: a test names a script in its prompt (``SCRIPT:name``)
and the local Messages API stand-in (tests/providers/sse_server.py) answers each call of
that conversation with the script's next step — a tool call, or text; any other call (a
title, a check) gets a short text. Used by the tests that drive the real Claude Code
(over ACP, and as a client of the notebook's MCP server)."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from typing import Any

from ..providers.sse_server import AnthropicStream, RecordedRequest, ScriptedHTTPResponse

__all__ = ["ModelScript", "Step", "text", "tool_use"]

Step = Callable[[], ScriptedHTTPResponse]
"""One model response of a script."""


def _script_of(request: RecordedRequest) -> tuple[str | None, int]:
    """The script a model call belongs to (``SCRIPT:name`` in the latest prompt that
    names one: a continued session holds the earlier ones) and its step: how many tool
    results came since that prompt."""
    messages = request.json.get("messages", [])
    for index in range(len(messages) - 1, -1, -1):
        found = re.findall(r"SCRIPT:(\w+)", json.dumps(messages[index]))
        if found and messages[index].get("role") == "user":
            results = sum(1 for m in messages[index:] if isinstance(m.get("content"), list)
                          for block in m["content"] if block.get("type") == "tool_result")
            return found[-1], results
    return None, 0


class ModelScript:
    """Answers each model call from the script its conversation names; a call of no
    script (a title, a check) gets a short text."""

    def __init__(self) -> None:
        self.scripts: dict[str, list[Step]] = {}

    def __call__(self, request: RecordedRequest) -> ScriptedHTTPResponse:
        name, step = _script_of(request)
        steps = self.scripts.get(name or "", [])
        if step < len(steps):
            return steps[step]()
        return AnthropicStream().text(["ok"]).finish().response()


def tool_use(tool_id: str, name: str, args: dict[str, Any], *,
             thinking: list[str] | None = None) -> Step:
    def step() -> ScriptedHTTPResponse:
        stream = AnthropicStream()
        if thinking:
            stream.thinking(thinking)
        return stream.tool_use(tool_id, name, [json.dumps(args)]).finish("tool_use").response()
    return step


def text(*pieces: str) -> Step:
    return lambda: AnthropicStream().text(list(pieces)).finish().response()
