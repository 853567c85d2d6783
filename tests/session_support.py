"""A provider whose responses a test spells out event by event, and an event recorder.

ScriptedProvider covers demos; these tests need exact control (an error after the third
delta, a stream that never ends, a response chosen by what the request contained).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import AsyncIterator, Callable
from typing import Any

from neta_nb.messages import Usage
from neta_nb.providers.base import (
    ModelRequest,
    Provider,
    ProviderError,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.providers.models import ModelInfo

Step = StreamEvent | ProviderError | Callable[[], Any]


class FakeProvider(Provider):
    """Plays one list of steps per model call. A step is a stream event, an exception to
    raise, or a callable (sync or async) to run — e.g. an event to wait on."""

    def __init__(self, responses: list[list[Step]], *, context_window: int = 100_000,
                 supplier: str = "scripted", model: str = "fake") -> None:
        self.supplier = supplier
        self.model = model
        self.responses = list(responses)
        self.requests: list[ModelRequest] = []
        self._info = ModelInfo(supplier=supplier, model=model, context_window=context_window,
                               max_output_tokens=8192,
                               capabilities=frozenset({"tools", "thinking", "vision"}))

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # Keep a snapshot: the session's list object grows after the call.
        self.requests.append(dataclasses.replace(request, messages=list(request.messages),
                                                 tools=list(request.tools)))
        if not self.responses:
            raise AssertionError("the model was called more often than the test planned")
        for step in self.responses.pop(0):
            if isinstance(step, BaseException):
                raise step
            if callable(step) and not isinstance(step, type):
                outcome = step()
                if asyncio.iscoroutine(outcome):
                    await outcome
                continue
            yield step
            await asyncio.sleep(0)


def answer(text: str, *, usage: Usage | None = None, thinking: str | None = None,
           signature: str | None = "sig") -> list[Step]:
    steps: list[Step] = []
    if thinking is not None:
        steps += [ThinkingDelta(thinking[: len(thinking) // 2]),
                  ThinkingDelta(thinking[len(thinking) // 2:]), ThinkingEnd(signature)]
    steps += [TextDelta(text[: len(text) // 2]), TextDelta(text[len(text) // 2:])]
    steps += [UsageUpdate(usage or Usage(input_tokens=100, output_tokens=20)),
              StreamDone("end_turn")]
    return steps


def calls(*tool_calls: tuple[str, str, dict[str, Any]], raw: dict[str, str] | None = None,
          usage: Usage | None = None) -> list[Step]:
    steps: list[Step] = [ToolCallReady(call_id, name, args, (raw or {}).get(call_id))
                         for call_id, name, args in tool_calls]
    steps += [UsageUpdate(usage or Usage(input_tokens=120, output_tokens=30)),
              StreamDone("tool_use")]
    return steps


class Recorder:
    def __init__(self) -> None:
        self.events: list[Any] = []
        self._arrived: asyncio.Event | None = None

    def __call__(self, event: Any) -> None:
        self.events.append(event)
        if self._arrived is not None:
            self._arrived.set()

    async def wait_for(self, kind: str) -> None:
        """Wait (at most 10 s) until an event of type ``kind`` has been recorded."""
        async with asyncio.timeout(10):
            while kind not in self.types:
                self._arrived = asyncio.Event()
                await self._arrived.wait()

    @property
    def types(self) -> list[str]:
        return [e.type for e in self.events]

    def of(self, kind: str) -> list[Any]:
        return [e for e in self.events if e.type == kind]
