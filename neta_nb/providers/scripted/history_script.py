"""A stored conversation as a script for the offline model: each model call of each turn
answers as the stored one did — its thinking, text and tool calls (with their ids), its
reported usage, its stop reason, and a failure where the call failed — so a session
replayed through :class:`~neta_nb.providers.scripted.scripted.ScriptedProvider` streams what the
stored one streamed (``ScriptedProvider.from_history``).

A call is found by the prompt of the turn it answers — the n-th turn with that prompt
text — and its position in the turn. The request tells n, unless a compaction folded
earlier turns away: then the script counts the turns it has begun with that prompt (so a
script replays one conversation once; make another for another replay).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ...messages import Message, TextPart, ThinkingPart, ToolCallPart
from .script_format import (
    ErrorStep,
    Script,
    ScriptedResponse,
    ScriptError,
    ScriptToolCall,
    Step,
    TextStep,
    ThinkingStep,
    ToolCallStep,
    UsageOverride,
    UsageStep,
    current_turn,
)

__all__ = ["StoredTurn", "prompts_of", "script_from_history", "split_turns"]


class StoredTurn:
    """One turn of a stored conversation: its prompt and the messages that followed."""

    __slots__ = ("messages", "prompt")

    def __init__(self, prompt: Message, messages: list[Message]) -> None:
        self.prompt = prompt
        self.messages = messages

    @property
    def responses(self) -> list[Message]:
        return [m for m in self.messages if m.role == "assistant"]


def _is_prompt(message: Message) -> bool:
    return message.role == "user" and not message.metadata.compacted


def split_turns(messages: Sequence[Message]) -> list[StoredTurn]:
    """The turns of a conversation, each from its user prompt to the next one (an injected
    summary or plan is not a prompt)."""
    turns: list[StoredTurn] = []
    for message in messages:
        if _is_prompt(message):
            turns.append(StoredTurn(message, []))
        elif turns and not message.metadata.compacted:
            turns[-1].messages.append(message)
    return turns


def prompts_of(messages: Sequence[Message]) -> list[str]:
    """The user prompts of a conversation, in order."""
    return [turn.prompt.text for turn in split_turns(messages)]


def response_of(message: Message) -> ScriptedResponse:
    """What the offline model streams to answer as ``message`` did."""
    steps: list[Step] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart) and part.text:
            steps.append(ThinkingStep(thinking=part.text))
        elif isinstance(part, TextPart):
            steps.append(TextStep(text=part.text))
        elif isinstance(part, ToolCallPart):
            steps.append(ToolCallStep(tool_call=ScriptToolCall(
                name=part.name, args=dict(part.args), id=part.id)))
    meta = message.metadata
    if meta.usage is not None:
        steps.append(UsageStep(usage=UsageOverride(**meta.usage.model_dump())))
    if meta.interrupted == "error":
        steps.append(ErrorStep(error=ScriptError(message=meta.error or "The model call failed.",
                                                 retryable=False)))
    return ScriptedResponse(steps=steps, stop_reason=meta.stop_reason)


def script_from_history(messages: Sequence[Message], *,
                        closing_text: str = "(no stored answer for this request)") -> Script:
    """A script whose calls answer as the stored ``messages`` did (see the module)."""
    by_prompt: dict[str, list[list[ScriptedResponse]]] = {}
    for turn in split_turns(messages):
        by_prompt.setdefault(turn.prompt.text, []).append(
            [response_of(m) for m in turn.responses])
    longest = max((len(r) for turns in by_prompt.values() for r in turns), default=0)
    begun: dict[str, int] = {}  # turns this script has begun, by prompt text

    def answer(position: int) -> Any:
        def respond(conversation: Sequence[Message]) -> ScriptedResponse:
            prompt, _ = current_turn(conversation)
            text = prompt.text if prompt is not None else ""
            stored = by_prompt.get(text, [])
            if position == 0:
                begun[text] = begun.get(text, 0) + 1
            seen = sum(1 for m in conversation if _is_prompt(m) and m.text == text)
            if any(m.metadata.compacted for m in conversation):
                seen = max(seen, begun.get(text, 0))  # earlier turns were folded away
            responses = stored[min(seen, len(stored)) - 1] if stored else []
            if position < len(responses):
                return responses[position]
            return ScriptedResponse(steps=[TextStep(text=closing_text)])
        return respond

    return Script(responses=[answer(n) for n in range(longest)], closing_text=closing_text)
