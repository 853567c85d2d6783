"""Money and tokens after rewind, retry, edit and fork, on a priced model: the session's
figures — in memory and in its stored record (the session list shows its cost) — are
those of a session that ran only the kept history; every call is counted once, in the
session whose history holds it. Its budget counts that and what it paid for the turns it
went back over (tests/runtime/test_branch_budget.py)."""

from __future__ import annotations

from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, AgentToolConfig, SessionStore
from neta_nb.messages import Message, Usage
from neta_nb.providers.prices import ModelPrice
from neta_nb.runtime.session.spending import BudgetExceededError, Spending
from neta_nb.runtime.usage_meter import UsageMeter

from ..support.delegation import crew_catalog, delegations
from ..support.sessions import FakeProvider, answer, make_session

PRICE = ModelPrice(input=3.0, output=15.0)
CALL = Usage(input_tokens=1000, output_tokens=200)
PER_CALL = 0.006  # 1000 × $3 + 200 × $15 per million


def _priced(store: SessionStore | None, texts: list[str], **options: object
            ) -> tuple[AgentSession, FakeProvider]:
    session, _rec, provider = make_session([answer(t, usage=CALL) for t in texts],
                                           store=store, **options)  # type: ignore[arg-type]
    provider.price = PRICE
    return session, provider


def _figures(session: AgentSession) -> tuple[float | None, Usage]:
    return session.cost_usd, session.usage


def _stored_cost(store: SessionStore, session: AgentSession) -> float | None:
    session.flush()
    record = store.get_session(session.id)
    assert record is not None
    return record.cost_usd


def _only(messages: list[Message]) -> tuple[float | None, Usage]:
    """The figures of a session that ran only ``messages``."""
    meter, spending = UsageMeter(10_000), Spending(lambda _event: None)
    spending.price = PRICE
    meter.restore(messages, [])
    spending.restore(messages, [])
    return spending.spent.value, meter.total


async def test_a_rewind_leaves_the_cost_and_tokens_of_the_kept_history(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _ = _priced(store, ["one", "two", "three"])
    await session.run("first")
    await session.run("second")
    assert session.cost_usd == pytest.approx(2 * PER_CALL)
    second = session.messages[2]

    kept = session.rewind(second.id)
    assert session.cost_usd == pytest.approx(PER_CALL)
    assert session.usage == CALL
    assert _figures(session) == _only(session.messages)
    assert _stored_cost(store, session) == pytest.approx(PER_CALL)
    # What the rewind replaced is the branch's, counted there once.
    assert kept is not None and kept.cost_usd == pytest.approx(2 * PER_CALL)
    assert kept.usage == CALL + CALL

    # Again: a turn and a rewind to its prompt.
    await session.run("second, again")
    assert session.cost_usd == pytest.approx(2 * PER_CALL)
    session.rewind(session.messages[2].id)
    assert session.cost_usd == pytest.approx(PER_CALL)
    assert session.usage == CALL
    assert _stored_cost(store, session) == pytest.approx(PER_CALL)

    resumed = AgentSession.resume(session.id, store, catalog=session.catalog,
                                  agent=session.agent)
    assert resumed.cost_usd == pytest.approx(PER_CALL) and resumed.usage == CALL
    assert _stored_cost(store, resumed) == pytest.approx(PER_CALL)
    store.close()


async def test_retry_and_edit_count_each_call_once() -> None:
    session, _ = _priced(None, ["one", "two", "three", "four"])
    await session.run("first")
    await session.retry()
    assert session.cost_usd == pytest.approx(PER_CALL)
    await session.run("second")
    await session.edit(session.messages[2].id, "second, edited")
    assert [m.text for m in session.messages] == ["first", "two", "second, edited", "four"]
    assert session.cost_usd == pytest.approx(2 * PER_CALL)
    assert session.usage == CALL + CALL
    assert _figures(session) == _only(session.messages)


async def test_a_rewound_turn_stays_paid_against_the_budget_and_counts_once() -> None:
    # Two calls are within the budget, three are not: a retry of the second turn runs
    # (two calls paid when it starts) and its call, the third paid, reaches the budget.
    session, rec, _ = make_session([answer(t, usage=CALL) for t in ("one", "two", "two again")],
                                   agent_options={"budget_usd": PER_CALL * 2.5})
    session.provider.price = PRICE
    await session.run("first")
    await session.run("second")
    await session.retry()
    assert session.cost_usd == pytest.approx(2 * PER_CALL)
    assert session.spent_usd == pytest.approx(3 * PER_CALL)
    assert rec.of("done")[-1].stop_reason == "budget"
    # The replaced turn was paid: a second retry is refused, as is a third turn.
    with pytest.raises(BudgetExceededError):
        session.retry()
    with pytest.raises(BudgetExceededError):
        await session.run("third")
    assert session.cost_usd == pytest.approx(2 * PER_CALL)


async def test_a_fork_and_a_rewind_count_sub_agents_once() -> None:
    child = FakeProvider([answer("found", usage=CALL)], model="child")
    child.price = PRICE
    planner = FakeProvider([delegations(("d1", "researcher", "look")),
                            answer("done", usage=CALL), answer("done again", usage=CALL),
                            answer("more", usage=CALL)])
    planner.price = PRICE
    agent = Agent("planner", model=planner, tools=AgentToolConfig(),
                  subagents=[Agent("researcher", model=child, description="looks")])
    session = AgentSession(agent, crew_catalog())
    await session.run("go")
    delegating = session.messages[1].metadata.usage
    assert delegating is not None
    called = PRICE.cost(delegating)  # the call that delegated
    assert session.cost_usd == pytest.approx(called + 2 * PER_CALL)  # the child's, "done"
    done = next(m for m in session.messages if m.text == "done")
    fork = session.fork(done.id)
    assert fork.cost_usd == pytest.approx(called + 2 * PER_CALL)

    # Back to before "done": the delegation and the child's run stay, counted once.
    session.rewind(done.id)
    assert session.cost_usd == pytest.approx(called + PER_CALL)
    await session.run("and now")
    assert session.cost_usd == pytest.approx(called + 2 * PER_CALL)  # "done again"
    assert fork.cost_usd == pytest.approx(called + 2 * PER_CALL)  # the fork's own
    await fork.run("from the fork")  # the planner's next answer, "more"
    assert fork.cost_usd == pytest.approx(called + 3 * PER_CALL)


async def test_a_rewind_gives_back_no_budget_and_warns_no_more() -> None:
    session, rec, provider = make_session([answer(t, usage=CALL) for t in ("1", "2", "2b")],
                                          agent_options={"budget_usd": PER_CALL * 2.2})
    provider.price = PRICE
    await session.run("first")
    await session.run("second")  # 91 % of the budget: warned
    assert [w.code for w in rec.of("warning")] == ["budget_warning_session"]
    session.rewind(session.messages[2].id)  # still 91 % paid: no new warning
    await session.run("second, again")  # 136 %: reached, saying what went back
    # (The answer that crossed it is whole: the warning says nothing was cut.)
    assert [w.code for w in rec.of("warning")] == ["budget_warning_session",
                                                   "budget_reached_session_answered_rewound"]
    assert rec.of("done")[-1].stop_reason == "budget"
