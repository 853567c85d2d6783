"""Money paid stays paid: after a rewind, retry or edit, ``cost_usd`` is the kept history's,
and what counts against ``budget_usd`` — ``spent_usd`` — is that plus what the session paid
for the turns it went back over, each call once. It is stored with the session (a resumed
session refuses at the same point), a fork starts without it, and the budget's warnings
and refusals say how much of what they count it is. Each call below costs $0.006."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from neta_nb import AgentSession, SessionStore
from neta_nb.messages import Usage
from neta_nb.providers.base import StreamDone, TextDelta
from neta_nb.providers.prices import ModelPrice
from neta_nb.runtime.session.spending import BudgetExceededError
from neta_nb.store.records import RewoundSpend, SessionRecord

from ..support.sessions import FakeProvider, Recorder, answer, make_session

PRICE = ModelPrice(input=3.0, output=15.0)
CALL = Usage(input_tokens=1000, output_tokens=200)
PER_CALL = 0.006  # 1000 × $3 + 200 × $15 per million


def _priced(texts: list[str], store: SessionStore | None = None
            ) -> tuple[AgentSession, Recorder, FakeProvider]:
    session, rec, provider = make_session([answer(t, usage=CALL) for t in texts], store=store)
    provider.price = PRICE
    return session, rec, provider


async def _retried(store: SessionStore | None = None) -> tuple[AgentSession, Recorder]:
    """Two turns and a retry of the second: kept $0.012, gone back over $0.006."""
    session, rec, _ = _priced(["one", "two", "two again", "three", "four", "five"], store)
    await session.run("first")
    await session.run("second")
    await session.retry()
    assert [m.text for m in session.messages] == ["first", "one", "second", "two again"]
    return session, rec


async def test_a_retry_is_refused_when_kept_and_gone_back_over_pass_the_budget() -> None:
    session, _ = await _retried()
    assert session.cost_usd == pytest.approx(2 * PER_CALL)
    assert session.spent_usd == pytest.approx(3 * PER_CALL)
    # Kept after another retry: one call, $0.006, within $0.015; paid by then: three
    # calls, $0.018, two of them for turns gone back over.
    session.agent.budget_usd = 2.5 * PER_CALL
    before = [m.model_dump_json() for m in session.messages]
    attempts: list[Callable[[], object]] = [
        session.retry, lambda: session.edit(session.messages[2].id, "other")]
    for refused in attempts:
        with pytest.raises(BudgetExceededError) as error:
            refused()
        assert str(error.value).startswith(
            "This session has spent its budget ($0.0180 of $0.0150, counting $0.0120 "
            "paid for turns it went back over")
    with pytest.raises(BudgetExceededError, match=r"counting \$0\.0060 paid"):
        await session.run("third")  # no rewind: what was paid so far
    assert [m.model_dump_json() for m in session.messages] == before
    assert session.spent_usd == pytest.approx(3 * PER_CALL)
    # Under $0.021 a new turn starts from $0.018 paid (its call passes the budget).
    session.agent.budget_usd = 3.5 * PER_CALL
    await session.run("third")
    with pytest.raises(BudgetExceededError, match=r"\$0\.0240 of \$0\.0210, counting "
                                                  r"\$0\.0060 paid for turns it went back"):
        await session.run("fourth")
    assert session.cost_usd == pytest.approx(3 * PER_CALL)


async def test_rewinds_over_overlapping_turns_count_each_call_once() -> None:
    session, _, _ = _priced(["a1", "a2", "a3", "a4", "a3b", "a2b", "a2c"])
    for prompt in ("p1", "p2", "p3", "p4"):
        await session.run(prompt)
    assert session.spent_usd == pytest.approx(4 * PER_CALL)
    p2, p3 = session.messages[2], session.messages[4]

    session.rewind(p3.id)  # drops a3, a4
    assert (session.cost_usd, session.spent_usd) == pytest.approx((2 * PER_CALL, 4 * PER_CALL))
    await session.run("p3 again")  # a3b
    assert (session.cost_usd, session.spent_usd) == pytest.approx((3 * PER_CALL, 5 * PER_CALL))
    # Over the same place again, and further: a2 and a3b are newly dropped; a3 and a4,
    # dropped before, are not counted again.
    session.rewind(p2.id)
    assert [m.text for m in session.messages] == ["p1", "a1"]
    assert (session.cost_usd, session.spent_usd) == pytest.approx((PER_CALL, 5 * PER_CALL))
    assert session.state.spending.rewound.calls == 4
    await session.run("p2 again")  # a2b
    await session.retry()  # a2b dropped, a2c
    assert [m.text for m in session.messages] == ["p1", "a1", "p2 again", "a2c"]
    assert session.state.spending.rewound.calls == 5  # a2, a3, a4, a3b, a2b
    assert (session.cost_usd, session.spent_usd) == pytest.approx((2 * PER_CALL, 7 * PER_CALL))


async def test_what_was_gone_back_over_is_stored_and_resumed(store_target: str | Path
                                                             ) -> None:
    store = SessionStore(store_target)
    session, _, _ = _priced(["one", "two", "two again"], store)
    await session.run("first")
    await session.run("second")
    kept = session.rewind(session.messages[2].id)  # as a retry does, then its turn
    assert kept is not None
    kept.flush()  # the branch is stored before the database goes
    await session.run("second")
    session.flush()
    record = store.get_session(session.id)
    assert record is not None and record.cost_usd == pytest.approx(2 * PER_CALL)
    assert record.rewound.usd == pytest.approx(PER_CALL)
    assert (record.rewound.calls, record.rewound.unknown) == (1, False)

    resumed = AgentSession.resume(session.id, store, catalog=session.catalog,
                                  agent=session.agent)
    assert resumed.cost_usd == pytest.approx(2 * PER_CALL)
    assert resumed.spent_usd == pytest.approx(3 * PER_CALL)
    # The same budget refuses the resumed session where it refuses the original.
    resumed.agent.budget_usd = 2.5 * PER_CALL
    with pytest.raises(BudgetExceededError, match=r"counting \$0\.0060 paid for turns"):
        await resumed.run("third")
    with pytest.raises(BudgetExceededError, match=r"counting \$0\.0120 paid for turns"):
        resumed.retry()
    resumed.flush()
    again = store.get_session(session.id)
    assert again is not None and again.rewound.calls == 1  # stored as it was
    store.close()


def test_a_record_from_before_it_was_kept_has_nothing_gone_back_over() -> None:
    old = SessionRecord(id="s_old").model_dump(mode="json")
    del old["rewound"]
    assert SessionRecord.model_validate(old).rewound == RewoundSpend()


async def test_an_unknown_cost_gone_back_over_stays_unknown(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    unreported = [TextDelta("two"), StreamDone("end_turn")]  # no usage: cost unknown
    session, _, provider = make_session([answer("one", usage=CALL), unreported], store=store)
    provider.price = PRICE
    await session.run("first")
    await session.run("second")
    assert session.cost_usd is None
    session.rewind(session.messages[2].id)
    assert session.cost_usd == pytest.approx(PER_CALL)
    assert session.spent_usd is None  # never 0 for what was not known
    session.flush()
    resumed = AgentSession.resume(session.id, store, catalog=session.catalog,
                                  agent=session.agent)
    assert resumed.cost_usd == pytest.approx(PER_CALL) and resumed.spent_usd is None
    store.close()


async def test_a_fork_starts_with_none_of_what_its_parent_went_back_over(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _ = await _retried(store)
    fork = session.fork(session.messages[-1].id)
    assert fork.cost_usd == pytest.approx(2 * PER_CALL)
    assert fork.spent_usd == pytest.approx(2 * PER_CALL)
    assert session.spent_usd == pytest.approx(3 * PER_CALL)  # the parent's is unchanged
    fork.flush()
    stored = store.get_session(fork.id)
    assert stored is not None and stored.rewound == RewoundSpend()
    # Under a budget of $0.015 the fork ($0.012) may go on; its parent ($0.018) may not.
    session.agent.budget_usd = 2.5 * PER_CALL
    with pytest.raises(BudgetExceededError):
        await session.run("more")
    await fork.run("from the fork")
    assert fork.cost_usd == fork.spent_usd == pytest.approx(3 * PER_CALL)
    store.close()


async def test_the_warning_and_the_stop_say_what_was_paid_for_turns_gone_back_over() -> None:
    session, rec = await _retried()
    session.agent.budget_usd = 5 * PER_CALL  # paid: $0.018, 60 %
    await session.run("third")  # 80 %
    await session.run("fourth")  # 100 %
    warnings = [w for w in rec.of("warning") if w.code and w.code.startswith("budget")]
    assert [(w.code, w.message) for w in warnings] == [
        ("budget_warning_session_rewound",
         "This session has used 80% of its budget: $0.0240 of $0.0300, counting $0.0060 "
         "paid for turns it went back over (retry, edit, rewind), which stays spent."),
        ("budget_reached_session_answered_rewound",
         "This session reached its budget ($0.0300 of $0.0300, counting $0.0060 "
         "paid for turns it went back over: retry, edit, rewind) with this answer: the "
         "answer is complete, nothing was cut. Raise agent.budget_usd or start a new "
         "session to go on.")]
    assert warnings[0].params["rewound"] == "$0.0060"
    assert session.cost_usd == pytest.approx(4 * PER_CALL)


async def test_a_rewind_to_before_a_compaction_counts_its_summary_as_paid() -> None:
    session, _, _ = make_session([answer(t, usage=CALL) for t in ("a1", "a2", "a3", "summary")],
                                 agent_options={"keep_recent_turns": 1})
    session.provider.price = PRICE
    for prompt in ("p1", "p2", "p3"):
        await session.run(prompt)
    assert await session.compact() is not None
    assert (session.cost_usd, session.spent_usd) == pytest.approx((4 * PER_CALL, 4 * PER_CALL))
    session.rewind(session.messages[4].id)  # p3: a3 and the summary of p1..a3 go
    assert session.compactions == []
    assert (session.cost_usd, session.spent_usd) == pytest.approx((2 * PER_CALL, 4 * PER_CALL))
    assert session.state.spending.rewound.calls == 2


def test_a_damaged_stored_rewound_sum_is_unknown_never_a_credit() -> None:
    from neta_nb.store.records import SessionRecord

    for damaged in ({"usd": -5.0, "calls": 2}, {"usd": float("nan"), "calls": 1},
                    {"usd": 0.5, "calls": -3}):
        record = SessionRecord.model_validate({"id": "s_x", "rewound": damaged})
        assert record.rewound.unknown is True
        assert record.rewound.usd == 0.0 and record.rewound.calls >= 0
    kept = SessionRecord.model_validate({"id": "s_x", "rewound": {"usd": 0.25, "calls": 2}})
    assert (kept.rewound.usd, kept.rewound.calls, kept.rewound.unknown) == (0.25, 2, False)
