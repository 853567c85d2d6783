"""What bounds the tool calls of one response, and the cut a long result gets (the
``delegate`` result of a sub-agent is bounded the same way)."""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["ToolLimits", "bound_result"]


@dataclass(frozen=True, slots=True)
class ToolLimits:
    """What bounds the calls of one response (from the agent's definition)."""

    timeout: float
    """Seconds a tool may run, unless the tool sets its own."""
    max_result_chars: int
    """Longest result the model reads; see :func:`bound_result`."""


def bound_result(text: str, limit: int) -> str:
    """``text`` cut to ``limit`` characters, saying so, so the model knows it saw a part
    and how to see more."""
    if len(text) <= limit:
        return text
    return (f"{text[:limit]}\n\n[Result cut: the first {limit:,} of {len(text):,} "
            "characters are shown. Ask for less at a time (a range, a filter, a summary) "
            "to see the rest.]")
