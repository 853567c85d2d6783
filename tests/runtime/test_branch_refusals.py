"""A refused retry or edit changes nothing: an unknown ``@`` mention, a spent budget, a
running turn or compaction, an unknown message, no event loop — each is found before the
rewind, and the session, its stored rows (no branch is kept either) and its chat view are
exactly as they were."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from neta_nb import AgentSession, SessionStore
from neta_nb.messages import Usage
from neta_nb.providers.prices import ModelPrice
from neta_nb.runtime.mentions.mentions import MentionError
from neta_nb.runtime.session.spending import BudgetExceededError
from neta_nb.widgets import ChatView

from ..support.sessions import answer, make_session

PRICE = ModelPrice(input=3.0, output=15.0)
CALL = Usage(input_tokens=1000, output_tokens=200)
PER_CALL = 0.006


def _rows(store: SessionStore) -> list[tuple[str, str]]:
    """Every stored row, byte for byte (a record's updated_at is in its data)."""
    return [(row[0], row[1]) for table in ("sessions", "messages")
            for row in store.database.execute(f"SELECT id, data FROM {table} ORDER BY id")]


async def _two_turns(tmp_path: Path, **options: Any
                     ) -> tuple[AgentSession, SessionStore, ChatView]:
    store = SessionStore(tmp_path / "s.db")
    session, _rec, provider = make_session(
        [answer(t, usage=CALL) for t in ("one", "two", "again")], store=store, **options)
    provider.price = PRICE
    chat = ChatView(session)
    await session.run("first")
    await session.run("second")
    session.flush()
    return session, store, chat


def _unchanged(session: AgentSession, store: SessionStore, chat: ChatView,
               refused: Callable[[], object], error: type[Exception], match: str) -> None:
    before = ([m.model_dump_json() for m in session.messages], session.cost_usd,
              session.usage, session.think_level, list(chat.messages), _rows(store))
    with pytest.raises(error, match=match):
        refused()
    session.flush()
    after = ([m.model_dump_json() for m in session.messages], session.cost_usd,
             session.usage, session.think_level, list(chat.messages), _rows(store))
    assert after == before
    assert not session.running


async def test_an_edit_with_an_unknown_mention_changes_nothing(tmp_path: Path) -> None:
    session, store, chat = await _two_turns(tmp_path)
    second = session.messages[2]
    _unchanged(session, store, chat, lambda: session.edit(second.id, "now @nowhere_at_all"),
               MentionError, "nowhere_at_all")
    # The same edit with a mention that resolves runs, from the rewound history.
    session.namespace["somewhere"] = 42
    await session.edit(second.id, "now @somewhere")
    assert [m.text for m in session.messages][:3] == ["first", "one", "now @somewhere"]
    chat.close()
    store.close()


async def test_a_retry_the_budget_refuses_changes_nothing(tmp_path: Path) -> None:
    session, store, chat = await _two_turns(tmp_path)
    # A retry of the second prompt keeps one call and the one it replaces stays paid:
    # two calls, $0.012, within $0.015, not within $0.006 or $0.009 (though the kept
    # history, $0.006, is).
    session.agent.budget_usd = PER_CALL
    _unchanged(session, store, chat, session.retry, BudgetExceededError, "budget")
    session.agent.budget_usd = PER_CALL * 1.5
    _unchanged(session, store, chat, session.retry, BudgetExceededError, "went back over")
    session.agent.budget_usd = PER_CALL * 2.5
    await session.retry()
    assert [m.text for m in session.messages] == ["first", "one", "second", "again"]
    chat.close()
    store.close()


async def test_a_retry_or_edit_at_an_unknown_message_or_without_a_loop_changes_nothing(
        tmp_path: Path) -> None:
    session, store, chat = await _two_turns(tmp_path)
    _unchanged(session, store, chat, lambda: session.retry("m_nope"), KeyError, "no message")
    _unchanged(session, store, chat, lambda: session.edit("m_nope", "x"), KeyError,
               "no message")
    _unchanged(session, store, chat, lambda: session.edit(session.messages[1].id, "x"),
               ValueError, "not a prompt")

    def outside_the_loop() -> None:
        # What a plain script would do: no running event loop in this thread.
        error: list[BaseException] = []

        def call() -> None:
            try:
                session.retry()
            except BaseException as exc:  # handed to the test's thread
                error.append(exc)

        import threading

        thread = threading.Thread(target=call)
        thread.start()
        thread.join()
        raise error[0]

    _unchanged(session, store, chat, outside_the_loop, RuntimeError, "event loop")
    chat.close()
    store.close()


async def test_a_message_id_that_is_not_a_string_is_refused_by_name(tmp_path: Path) -> None:
    """An id of another type (a list from a widget's message, an index) is a TypeError
    saying what is wanted, for every going back, and changes nothing."""
    session, store, chat = await _two_turns(tmp_path)
    bads: list[Any] = [["m_x"], 1, None]
    for bad in bads:
        for refused in (lambda bad=bad: session.fork(bad),
                        lambda bad=bad: session.rewind(bad),
                        lambda bad=bad: session.edit(bad, "x")):
            _unchanged(session, store, chat, refused, TypeError,
                       "a message id is a str")
    _unchanged(session, store, chat, lambda: session.retry(bads[0]), TypeError,
               "a message id is a str")
    chat.close()
    store.close()


async def test_a_rewind_retry_or_edit_waits_for_a_compaction(tmp_path: Path) -> None:
    gate = asyncio.Event()
    store = SessionStore(tmp_path / "s.db")
    session, _rec, provider = make_session(
        [answer(t) for t in ("one", "two", "three")] + [[gate.wait, *answer("summary")]],
        store=store, agent_options={"keep_recent_turns": 1})
    chat = ChatView(session)
    for prompt in ("a", "b", "c"):
        await session.run(prompt)
    compacting = asyncio.create_task(session.compact())
    await asyncio.sleep(0.05)  # the summarising call is waiting
    assert provider.responses == []
    first = session.messages[0]
    for refused in (lambda: session.rewind(first.id), session.retry,
                    lambda: session.edit(first.id, "x")):
        _unchanged(session, store, chat, refused, RuntimeError, "compacting")
    gate.set()
    assert await compacting is not None
    chat.close()
    store.close()
