"""An offline, deterministic model: :class:`ScriptedProvider`.

It is a real provider behind the same interface as the vendor ones, for demos, notebooks
under test and benchmarks. It needs no key and no network, and it streams the way a real
model does: thinking and text arrive in many small deltas (paced to a readable speed when
``chars_per_second`` is set), tool calls arrive complete, and every response reports
token usage.

A script is a list of responses; each response is a list of steps, written as plain dicts
(or the pydantic models below)::

    ScriptedProvider([
        [{"thinking": "The user wants a plan."},
         {"text": "Here is the plan."},
         {"tool_call": {"name": "todo", "args": {"todos": [...]}}}],
        [{"text": "All done."}],
    ])

Steps: ``{"thinking": str}``, ``{"text": str}``, ``{"tool_call": {"name", "args"}}``,
``{"usage": {...}}`` (override some of the computed usage numbers) and
``{"error": {"message", "retryable", "status_code"}}`` (fail the stream there, after what
came before it has streamed, as a vendor stream that breaks would).

A response may also be a function of the conversation, ``(messages) -> response`` (a
:class:`ScriptedResponse` or its bare list of steps), for a script that reacts to what
its tools returned — the built-in demo (:mod:`.demo_script`) answers from its real tool
results that way. A script with such a response has no JSON form.

Which response answers a request: the provider keeps no state. It counts the assistant
messages after the last user message in the request, so the script replays from its first
response for every user prompt and a resumed session continues where it was. Past the end
of the script it answers with :attr:`Script.closing_text` (or starts over, with
``on_exhausted="cycle"``).

Usage is computed, so it is deterministic and grows with the conversation the way a real
model's does: input tokens are the request's characters (system prompt, messages, tool
definitions) divided by four, output tokens the streamed characters divided by four.
With thinking level ``off`` in the request, thinking steps are skipped.
"""

from __future__ import annotations

import asyncio
import copy
import json
from collections.abc import AsyncIterator, Mapping, Sequence
from typing import Any

from ...messages import (
    Message,
    Usage,
    count_characters,
)
from ..base import (
    ModelRequest,
    Provider,
    ProviderError,
    StreamDone,
    StreamedSoFar,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UnusableUsage,
    UsageUpdate,
    usage_count,
)
from .demo_script import DEMO_SCRIPT
from .history_script import script_from_history
from .script_format import (
    ErrorStep,
    ResponseBuilder,
    Script,
    ScriptedResponse,
    ScriptError,
    ScriptToolCall,
    TextStep,
    ThinkingStep,
    ToolCallStep,
    UsageOverride,
    UsageStep,
    current_turn,
)

__all__ = [
    "ErrorStep",
    "ResponseBuilder",
    "Script",
    "ScriptError",
    "ScriptToolCall",
    "ScriptedProvider",
    "ScriptedResponse",
    "TextStep",
    "ThinkingStep",
    "ToolCallStep",
    "UsageOverride",
    "UsageStep",
    "current_turn",
    "estimate_tokens",
]

CHARS_PER_TOKEN = 4
"""The usual rule of thumb for English text; close enough for a demo's numbers."""
_UNPACED_CHUNK = 4
"""Characters per delta without pacing: many deltas, so streaming paths are exercised."""
_YIELD_EVERY = 16
"""Without pacing, hand control to the event loop this often so a cancel lands promptly."""
_PACED_TICK = 0.03
"""Seconds between paced deltas: about 33 updates per second, smooth without flooding."""


def estimate_tokens(characters: int) -> int:
    return (characters + CHARS_PER_TOKEN - 1) // CHARS_PER_TOKEN


class ScriptedProvider(Provider):
    """The offline model. ``script=None`` plays the built-in demo,
    :data:`~neta_nb.providers.scripted.demo_script.DEMO_SCRIPT`."""

    supplier = "scripted"

    def __init__(self, script: Script | Mapping[str, Any] | Sequence[Any] | None = None, *,
                 chars_per_second: float = 0.0, model: str = "demo",
                 context_window: int | None = None) -> None:
        if chars_per_second < 0:
            raise ValueError("chars_per_second must be >= 0")
        self.model = model
        self.context_window = context_window  # e.g. a small window to show compaction
        if script is None:
            script = DEMO_SCRIPT
        self.script = Script.coerce(script)
        self.chars_per_second = chars_per_second

    @classmethod
    def from_history(cls, messages: Sequence[Message], *, model: str | None = None,
                     **options: Any) -> ScriptedProvider:
        """The offline model answering as the stored conversation ``messages`` did: each
        call of each turn streams the stored response (see :mod:`.history_script`).
        ``model``: its name; by default the stored responses' model name (the part after
        ``supplier:``), so a replayed scripted session is stored under the same one."""
        if model is None:
            names = {m.metadata.model for m in messages if m.role == "assistant"}
            stored = names.pop() if len(names) == 1 else None
            model = stored.split(":", 1)[-1] if stored else "replay"
        return cls(script_from_history(messages), model=model, **options)

    def choose_response(self, messages: Sequence[Message]) -> tuple[int, ScriptedResponse]:
        """The index and response that answer a conversation ending in ``messages``."""
        _, turn = current_turn(messages)
        index = sum(1 for message in turn if message.role == "assistant")
        responses = self.script.responses
        if index < len(responses):
            return index, _built(responses[index], messages)
        if self.script.on_exhausted == "cycle" and responses:
            return index, _built(responses[index % len(responses)], messages)
        return index, ScriptedResponse(steps=[TextStep(text=self.script.closing_text)])

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        if request.purpose == "summary":
            async for summary_event in self._summarise(request):
                yield summary_event
            return
        index, response = self.choose_response(request.messages)
        turn = sum(1 for message in request.messages if message.role == "user")
        thinking_on = request.think_level != "off"
        input_tokens = estimate_tokens(_request_characters(request))
        usage = Usage(input_tokens=input_tokens)
        yield UsageUpdate(usage)

        streamed = StreamedSoFar()
        output_chars = thinking_chars = calls = 0
        override: dict[str, int] = {}
        pacer = _Pacer(self.chars_per_second)
        for step in response.steps:
            if isinstance(step, ThinkingStep):
                if not thinking_on:
                    continue
                for piece in pacer.pieces(step.thinking):
                    await pacer.wait(len(piece))
                    event: StreamEvent = ThinkingDelta(piece)
                    streamed.events.append(event)
                    yield event
                thinking_chars += len(step.thinking)
                output_chars += len(step.thinking)
                # No signature: a scripted block must never pass for a vendor-signed one.
                end = ThinkingEnd()
                streamed.events.append(end)
                yield end
            elif isinstance(step, TextStep):
                for piece in pacer.pieces(step.text):
                    await pacer.wait(len(piece))
                    event = TextDelta(piece)
                    streamed.events.append(event)
                    yield event
                output_chars += len(step.text)
            elif isinstance(step, ToolCallStep):
                call = step.tool_call
                call_id = call.id or f"call_{turn}_{index}_{calls}"
                calls += 1
                arguments = json.dumps(call.args)
                await pacer.wait(len(arguments))
                output_chars += len(call.name) + len(arguments)
                # A deep copy: the runtime owns its arguments; the script stays as written.
                ready = ToolCallReady(id=call_id, name=call.name, args=copy.deepcopy(call.args))
                streamed.events.append(ready)
                yield ready
            elif isinstance(step, UsageStep):
                override.update(step.usage.model_dump(exclude_none=True))
            else:
                update = _usage(input_tokens, output_chars, thinking_chars, override)
                if update.usage is None:
                    yield update  # the response's usage is unknown, as from a server
                raise ProviderError(step.error.message, retryable=step.error.retryable,
                                    status_code=step.error.status_code,
                                    partial=streamed.parts(), usage=update.usage)

        yield _usage(input_tokens, output_chars, thinking_chars, override)
        stop_reason = response.stop_reason or ("tool_use" if calls else "end_turn")
        yield StreamDone(stop_reason)


    async def _summarise(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """A deterministic summary of the transcript it is given: the requests the user
        made, in order, and how much was folded (a scripted model cannot understand it)."""
        transcript = "\n".join(m.text for m in request.messages)
        asks = [line[len("User: "):] for line in transcript.split("\n\n")
                if line.startswith("User: ")]
        bullets = "\n".join(f"- The user asked: {' '.join(ask.split())[:160]}" for ask in asks)
        text = (f"{bullets}\n" if bullets else "") + (
            f"- {len(transcript):,} characters of earlier conversation were folded here.")
        pacer = _Pacer(self.chars_per_second)
        for piece in pacer.pieces(text):
            await pacer.wait(len(piece))
            yield TextDelta(piece)
        yield _usage(estimate_tokens(_request_characters(request)), len(text), 0, {})
        yield StreamDone("end_turn")


class _Pacer:
    """Splits text into deltas and spaces them out at ``chars_per_second``."""

    __slots__ = ("_chunk", "_delay_per_char", "_since_yield")

    def __init__(self, chars_per_second: float) -> None:
        self._delay_per_char = 1.0 / chars_per_second if chars_per_second > 0 else 0.0
        # Paced: as many characters per delta as the speed gives per tick, at least one.
        self._chunk = (max(1, round(chars_per_second * _PACED_TICK)) if chars_per_second > 0
                       else _UNPACED_CHUNK)
        self._since_yield = 0

    def pieces(self, text: str) -> list[str]:
        size = self._chunk
        return [text[i:i + size] for i in range(0, len(text), size)]

    async def wait(self, characters: int) -> None:
        if self._delay_per_char:
            await asyncio.sleep(characters * self._delay_per_char)
            return
        self._since_yield += 1
        if self._since_yield >= _YIELD_EVERY:
            self._since_yield = 0
            await asyncio.sleep(0)


def _usage(input_tokens: int, output_chars: int, thinking_chars: int,
           override: Mapping[str, int]) -> UsageUpdate:
    """The computed usage with the script's numbers over it, checked as a server's report
    is: a negative number in a script makes the response's usage unknown."""
    values = {"input_tokens": input_tokens, "output_tokens": estimate_tokens(output_chars),
              "thinking_tokens": estimate_tokens(thinking_chars)}
    values.update(override)
    try:
        return UsageUpdate(Usage(**{name: usage_count(name, value)
                                    for name, value in values.items()}))
    except UnusableUsage as error:
        return UsageUpdate.unknown(error)


def _built(response: ScriptedResponse | ResponseBuilder,
           messages: Sequence[Message]) -> ScriptedResponse:
    if isinstance(response, ScriptedResponse):
        return response
    return ScriptedResponse.model_validate(response(messages))


def _request_characters(request: ModelRequest) -> int:
    tools = sum(len(tool.name) + len(tool.description) + len(json.dumps(tool.parameters))
                for tool in request.tools)
    return len(request.system_prompt) + tools + count_characters(request.messages)
