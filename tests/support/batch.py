"""A model for batch-run tests: it answers each prompt with a function of that prompt (so
a run at any concurrency gives the answers a one-at-a-time run gives), counts how many
calls are in flight at once, and fails the calls a test names."""

from __future__ import annotations

import asyncio
import os
import time
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
    UsageUpdate,
)
from neta_nb.providers.models import ModelInfo


def label_of(prompt: str) -> str:
    """The answer the row model gives: deterministic in the prompt."""
    return f"label[{sum(map(ord, prompt)) % 97}] for {prompt[-24:]}"


class RowModel(Provider):
    """``fail(prompt, call_number) -> ProviderError | None`` decides failures; ``delay``
    seconds per call keep several in flight."""

    supplier = "scripted"

    def __init__(self, *, delay: float = 0.0,
                 fail: Callable[[str, int], ProviderError | None] | None = None,
                 answer: Callable[[str], str] = label_of) -> None:
        self.model = "rows"
        self.delay = delay
        self._fail = fail
        self._answer = answer
        self.calls: dict[str, int] = {}
        self.in_flight = 0
        self.most_in_flight = 0
        self._info = ModelInfo(supplier="scripted", model="rows", context_window=100_000,
                               max_output_tokens=4096, capabilities=frozenset({"tools"}))

    @property
    def info(self) -> ModelInfo:
        return self._info

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        prompt = request.messages[-1].text
        number = self.calls[prompt] = self.calls.get(prompt, 0) + 1
        self.in_flight += 1
        self.most_in_flight = max(self.most_in_flight, self.in_flight)
        try:
            await asyncio.sleep(self.delay)
            failure = self._fail(prompt, number) if self._fail else None
            if failure is not None:
                raise failure
            yield TextDelta(self._answer(prompt))
            yield UsageUpdate(Usage(input_tokens=40, output_tokens=8))
            yield StreamDone("end_turn")
        finally:
            self.in_flight -= 1


class LoggedRowModel(RowModel):
    """A :class:`RowModel` that appends when each call starts (``time.monotonic()``, the
    machine's clock) to a file: calls made in other processes (a Ray run's workers) can
    be counted by the test."""

    def __init__(self, log: str, **options: Any) -> None:
        super().__init__(**options)
        self.log = log

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        # One short O_APPEND write per call: lines of several processes never mix.
        handle = os.open(self.log, os.O_WRONLY | os.O_APPEND | os.O_CREAT)
        try:
            os.write(handle, f"{time.monotonic()}\n".encode())
        finally:
            os.close(handle)
        async for event in super().stream(request):
            yield event


def logged_starts(log: str) -> list[float]:
    with open(log) as file:
        return sorted(float(line) for line in file if line.strip())


def fail_storing_row(run: Any, idx: int, monkeypatch: Any) -> None:
    """Make storing row ``idx``'s result fail as a full or broken disk does
    (``sqlite3.OperationalError``); the other rows store as usual."""
    import sqlite3

    finish = run.rows.finish

    def failing_finish(row: int, *args: Any, **kwargs: Any) -> bool:
        if row == idx:
            raise sqlite3.OperationalError("disk I/O error")
        return bool(finish(row, *args, **kwargs))

    monkeypatch.setattr(run.rows, "finish", failing_finish)
