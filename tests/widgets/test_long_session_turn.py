"""A turn costs the same late in a long session as early: nothing a turn does — the session,
its store writes, the chat view's projection, batches, traits and static form — walks the
whole history. Checked by counting calls, not by timing: every function (the package's,
the standard library's, builtins) is called about as often in a turn after 600 messages as
in one after 200, where one pass over the history per turn would call something hundreds
of times more. ``benchmarks/long_session_turns.py`` times the same at 16,000 messages."""

from __future__ import annotations

import sys
import threading
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from types import FrameType
from typing import Any

import pytest

from neta_nb import SessionStore
from neta_nb.widgets import ChatView, static_form

from ..support.sessions import answer, calls, make_session

CALLS_PER_TURN = 4
EARLY, LATE, MEASURED = 21, 61, 3
"""Turns 21–23 (the chat's drawn window and static form are full by then) against turns
61–63 (three times the history)."""
MESSAGES_PER_TURN = 2 + 2 * CALLS_PER_TURN
GROWTH = (LATE - EARLY) * MESSAGES_PER_TURN
"""The late turns' history is this many messages longer: a pass over it in each of the
three turns measured calls something ~3× this much more often. What timers decide (the
chat's batches, the event loop's wake-ups) moves a count by a few dozen at most."""

ANSWER = ("The **North** region grew fastest.\n\n```python\ndf.groupby('region').sum()\n```\n\n"
          "| region | change |\n|---|---|\n| North | +4.2 % |\n| South | +1.8 % |")


class Calls:
    """Calls per function — the package's, the standard library's, builtins — on every
    thread (the store's writer included), while :meth:`counting`."""

    def __init__(self) -> None:
        self.counts: Counter[str] = Counter()
        self.on = False
        self._lock = threading.Lock()

    def profile(self, frame: FrameType, event: str, arg: Any) -> None:
        if not self.on:
            return
        if event == "call":
            code = frame.f_code
            key = f"{code.co_filename}:{code.co_firstlineno} {code.co_name}"
        elif event == "c_call":
            key = f"{getattr(arg, '__module__', None)}.{getattr(arg, '__qualname__', arg)}"
        else:
            return
        with self._lock:
            self.counts[key] += 1

    @contextmanager
    def counting(self) -> Iterator[Counter[str]]:
        self.counts = Counter()
        self.on = True
        sys.setprofile(self.profile)
        try:
            yield self.counts
        finally:
            sys.setprofile(None)
            self.on = False


def turn(n: int) -> list[list[Any]]:
    """Turn ``n``'s responses: four with thinking and one tool call each, then the answer."""
    return [*(calls((f"t{n}c{k}", "plus", {"a": n, "b": k})) for k in range(CALLS_PER_TURN)),
            answer(f"Turn {n}. {ANSWER}", thinking="Group by region, then compare.")]


async def test_a_turn_late_in_a_long_session_touches_no_more_than_an_early_one(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    calls_seen = Calls()
    threading.setprofile(calls_seen.profile)  # the store's writer thread, started later
    try:
        counts = await long_session(tmp_path, monkeypatch, calls_seen)
    finally:
        threading.setprofile(None)
    early, late = counts[EARLY], counts[LATE]
    assert sum(early.values()) > 1_000  # the profile saw the turns
    grown = {key: (early[key], late[key]) for key in late
             if late[key] - early[key] > GROWTH}
    assert grown == {}, f"called more per turn as the session grew (early, late): {grown}"


async def long_session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                       calls_seen: Calls) -> dict[int, Counter[str]]:
    """Runs the session's turns with a store and a chat view shown, and gives the calls
    of the turns measured."""
    store = SessionStore(tmp_path / "sessions.db")
    last = LATE + MEASURED - 1
    session, _, _ = make_session([step for n in range(1, last + 1) for step in turn(n)],
                                 store=store)
    chat = ChatView(session)
    chat._view_opened({"view_id": "page"})
    # Shown in a cell: its static form is sent again at the end of every turn.
    chat._static_form.display_ids = ["neta-form:test"]
    updates: list[int] = []
    monkeypatch.setattr(static_form, "send_update",
                        lambda bundle, display_id: updates.append(len(bundle["text/html"])))
    counts: dict[int, Counter[str]] = {}
    for n in range(1, last + 1):
        if n in (EARLY, LATE):
            session.flush()
            with calls_seen.counting() as counted:
                for m in range(n, n + MEASURED):
                    assert (await session.run(f"Question {m}")) is not None
            counts[n] = Counter(counted)
        elif not EARLY <= n < EARLY + MEASURED and not LATE <= n < LATE + MEASURED:
            assert (await session.run(f"Question {n}")) is not None
    assert len(session.messages) == last * MESSAGES_PER_TURN
    assert store.count_messages(session.id) == len(session.messages)
    assert updates, "the static form was never sent: the test measures less than a turn does"
    return counts
