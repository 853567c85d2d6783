"""Finding and naming sessions (issue 32, item 2): ``search_sessions`` over titles and
message text, and ``rename_session`` — a title the user gives survives the session's own
saves, and blank brings the automatic one back."""

from __future__ import annotations

from pathlib import Path

import pytest

from neta_nb import SessionStore

from ..support.sessions import answer, make_session


async def _two_sessions(store_target: str | Path) -> tuple[SessionStore, str, str]:
    store = SessionStore(store_target)
    first, _, _ = make_session([answer("Revenue grew in the north REGION.")], store=store)
    await first.run("How did revenue do?")
    second, _, _ = make_session([answer("Churn is flat; 100% of cohorts kept.")],
                                store=store)
    await second.run("What about churn_rate?")
    first.flush()
    second.flush()
    return store, first.id, second.id


async def test_search_finds_titles_and_message_text_any_case(store_target: str | Path) -> None:
    store, revenue, churn = await _two_sessions(store_target)
    assert [r.id for r in store.search_sessions("revenue")] == [revenue]
    assert [r.id for r in store.search_sessions("north region")] == [revenue]  # every word
    assert [r.id for r in store.search_sessions("CHURN")] == [churn]
    assert store.search_sessions("north churn") == []
    assert {r.id for r in store.search_sessions("")} == {revenue, churn}
    assert len(store.search_sessions("", limit=1)) == 1
    store.close()


async def test_search_takes_wildcards_literally(store_target: str | Path) -> None:
    store, _, churn = await _two_sessions(store_target)
    assert [r.id for r in store.search_sessions("100%")] == [churn]
    assert [r.id for r in store.search_sessions("churn_rate")] == [churn]
    assert [r.id for r in store.search_sessions("%")] == [churn]  # "100%" has one
    assert [r.id for r in store.search_sessions("_")] == [churn]  # the title has one
    assert store.search_sessions("\\") == []
    # Only what was written counts, never the JSON's keys or ids.
    assert store.search_sessions("role") == store.search_sessions("m_") == []
    store.close()


async def test_search_lists_top_level_sessions_only(store_target: str | Path) -> None:
    store, revenue, _ = await _two_sessions(store_target)
    child = store.get_session(revenue)
    assert child is not None
    store.save_session(child.model_copy(update={"id": "s_child", "parent_id": revenue}))
    assert [r.id for r in store.search_sessions("revenue")] == [revenue]
    store.close()


async def test_a_users_title_survives_the_sessions_saves_and_blank_restores(
        store_target: str | Path) -> None:
    store = SessionStore(store_target)
    session, _, _ = make_session([answer("one"), answer("two")], store=store)
    await session.run("A first question")
    session.flush()
    record = store.rename_session(session.id, "  Quarterly\n review  ")
    assert (record.title, record.title_by_user) == ("Quarterly review", True)
    await session.run("Another question")  # the session saves its record again
    session.flush()
    again = store.get_session(session.id)
    assert again is not None and again.title == "Quarterly review"
    assert [r.id for r in store.search_sessions("quarterly")] == [session.id]
    back = store.rename_session(session.id, "   ")
    assert (back.title, back.title_by_user) == ("A first question", False)
    assert store.rename_session(session.id, "x" * 500).title == "x" * 200
    with pytest.raises(KeyError, match="no session"):
        store.rename_session("s_missing", "t")
    store.close()
