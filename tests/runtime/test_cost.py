"""Cost in money and budgets (issue 32, items 3–4): the price table and overrides, the
cost of recorded usage through a real SDK against a hand computation, unknown prices as
unknown (never $0), sub-agents rolled up, costs stored and resumed, and budgets that warn
at 80 % and stop a turn like Stop at 100 %."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from neta_nb import (
    Agent,
    AgentSession,
    AgentToolConfig,
    ModelPrice,
    SessionStore,
    ToolCatalog,
    create_provider,
)
from neta_nb.messages import Usage
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.base import StreamDone, TextDelta
from neta_nb.providers.prices import PRICES_AS_OF, price_of, set_price
from neta_nb.runtime.budget import BudgetExceededError

from ..providers.sse_server import AnthropicStream, SSEServer
from ..support.delegation import crew_catalog, delegations
from ..support.sessions import (
    FakeProvider,
    Recorder,
    answer,
    assert_valid_history,
    calls,
    make_session,
    plus,
)

SONNET = ModelPrice(input=3.0, output=15.0, cache_read=0.3, cache_write=3.75)


def by_hand(usage: Usage, price: ModelPrice) -> float:
    read = price.input if price.cache_read is None else price.cache_read
    write = price.input if price.cache_write is None else price.cache_write
    return (usage.input_tokens * price.input + usage.output_tokens * price.output
            + usage.cache_read_tokens * read + usage.cache_write_tokens * write) / 1e6


def test_the_table_is_dated_and_finds_families_and_overrides() -> None:
    assert PRICES_AS_OF[:4].isdigit()
    assert price_of("anthropic", "claude-sonnet-4-5-20250929") == SONNET
    assert price_of("anthropic", "claude-opus-4-5-20251101") == ModelPrice(
        input=5.0, output=25.0, cache_read=0.5, cache_write=6.25)
    assert price_of("anthropic", "claude-opus-4-1") == ModelPrice(
        input=15.0, output=75.0, cache_read=1.5, cache_write=18.75)
    assert price_of("openai", "gpt-5-mini-2025-08-07") == ModelPrice(
        input=0.25, output=2.0, cache_read=0.025)
    assert price_of("openai-compatible", "deepseek-chat") is not None
    assert price_of("openai-compatible", "llama3:8b") is None
    assert price_of("scripted", "demo") is None
    set_price("openai-compatible", "llama3", ModelPrice(input=0, output=0))
    try:
        assert price_of("openai-compatible", "llama3:8b") == ModelPrice(input=0, output=0)
    finally:
        set_price("openai-compatible", "llama3", None)
    assert price_of("openai-compatible", "llama3:8b") is None
    with pytest.raises(ValueError, match="must be a number ≥ 0"):
        ModelPrice(input=-1, output=1)


def test_a_given_price_wins_over_the_table() -> None:
    mine = ModelPrice(input=1, output=2)
    provider = create_provider("anthropic:claude-sonnet-4-5", api_key="k", price=mine)
    assert provider.price == mine
    assert create_provider("anthropic:claude-sonnet-4-5", api_key="k").price == SONNET
    assert create_provider("openai-compatible:llama3", base_url="http://127.0.0.1:9/v1",
                           api_key="k").price is None


async def test_recorded_usage_through_the_sdk_costs_what_the_table_says() -> None:
    """Two calls (a tool call, then the answer) streamed by the real Anthropic SDK from
    the local SSE server, with cache reads and writes: the session's cost equals the hand
    computation from the table (±0.1 %)."""
    async with SSEServer() as sse:
        sse.add(
            AnthropicStream(input_tokens=1200, cache_read=30_000, cache_write=4_000)
            .tool_use("toolu_1", "plus", ['{"a": 2, "b": 3}'])
            .finish("tool_use", output_tokens=80).response(),
            AnthropicStream(input_tokens=1300, cache_read=34_000, cache_write=0)
            .text(["It is ", "5."]).finish(output_tokens=950).response())
        provider = AnthropicProvider("claude-sonnet-4-5-20250929", api_key="test-key",
                                     base_url=sse.base_url, max_retries=0)
        catalog = ToolCatalog.default()
        catalog.register(plus)
        session = AgentSession(Agent("a", model=provider, tools=AgentToolConfig()), catalog)
        rec = Recorder()
        session.subscribe(rec)
        await session.run("two plus three")
    first = Usage(input_tokens=1200, output_tokens=80, cache_read_tokens=30_000,
                  cache_write_tokens=4_000)
    second = Usage(input_tokens=1300, output_tokens=950, cache_read_tokens=34_000)
    expected = by_hand(first, SONNET) + by_hand(second, SONNET)
    assert session.cost_usd == pytest.approx(expected, rel=1e-3)
    last = rec.of("token_update")[-1].current
    assert last.cost_usd == pytest.approx(expected, rel=1e-3)
    assert last.session_cost_usd == pytest.approx(expected, rel=1e-3)
    split = last.cost_split
    assert split is not None
    assert split["cache_read"] == pytest.approx((30_000 + 34_000) * 0.3 / 1e6)
    assert split["cache_write"] == pytest.approx(4_000 * 3.75 / 1e6)
    assert sum(split.values()) == pytest.approx(expected)
    costs = [m.metadata.cost_usd for m in session.messages if m.role == "assistant"]
    assert costs == [pytest.approx(by_hand(first, SONNET)),
                     pytest.approx(by_hand(second, SONNET))]


async def test_an_unpriced_model_has_an_unknown_cost_never_zero() -> None:
    session, rec, _ = make_session([answer("hi")])
    await session.run("x")
    assert session.cost_usd is None
    update = rec.of("token_update")[-1].current
    assert update.cost_usd is None and update.session_cost_usd is None
    assert session.messages[-1].metadata.cost_usd is None
    assert '"cost_usd"' not in session.messages[-1].model_dump_json()


async def test_a_call_without_usage_makes_the_turn_cost_unknown() -> None:
    session, rec, provider = make_session([
        calls(("c1", "plus", {"a": 1, "b": 1})),
        [TextDelta("two"), StreamDone("end_turn")]])  # a server that reports no usage
    provider.price = SONNET
    await session.run("x")
    assert rec.of("token_update")[0].current.cost_usd is not None
    assert rec.of("token_update")[-1].current.cost_usd is None
    assert session.cost_usd is None


async def test_sub_agents_costs_roll_up_with_the_split_visible() -> None:
    child = FakeProvider([answer("found", usage=Usage(input_tokens=1000, output_tokens=100))],
                         model="child")
    child.price = ModelPrice(input=1.0, output=5.0)
    planner = FakeProvider([delegations(("d1", "researcher", "look")),
                            answer("done", usage=Usage(input_tokens=2000, output_tokens=10))])
    planner.price = SONNET
    agent = Agent("planner", model=planner, tools=AgentToolConfig(),
                  subagents=[Agent("researcher", model=child, description="looks")])
    session = AgentSession(agent, crew_catalog())
    rec = Recorder()
    session.subscribe(rec)
    await session.run("go")
    own = (by_hand(Usage(input_tokens=120, output_tokens=30), SONNET)
           + by_hand(Usage(input_tokens=2000, output_tokens=10), SONNET))
    theirs = (1000 * 1.0 + 100 * 5.0) / 1e6
    last = rec.of("token_update")[-1].current
    assert last.cost_usd == pytest.approx(own + theirs)
    assert last.cost_split["subagents"] == pytest.approx(theirs)
    assert session.cost_usd == pytest.approx(own + theirs)
    record = session.messages[1].metadata.tool_executions[0].subagent
    assert record is not None and record.cost_usd == pytest.approx(theirs)


async def test_costs_are_stored_and_come_back_on_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session, _, provider = make_session([answer("one"), answer("two")], store=store)
    provider.price = SONNET
    await session.run("a")
    await session.run("b")
    session.flush()
    spent = session.cost_usd
    assert spent == pytest.approx(2 * by_hand(Usage(input_tokens=100, output_tokens=20),
                                              SONNET))
    record = store.get_session(session.id)
    assert record is not None and record.cost_usd == pytest.approx(spent)
    again = AgentSession.resume(session.id, store, catalog=session.catalog,
                                agent=session.agent)
    assert again.cost_usd == pytest.approx(spent)
    store.close()


async def test_a_turn_budget_warns_at_80_percent_and_stops_like_stop_at_100() -> None:
    # Each call costs 100 in + 20 out at $3/$15 per million = $0.0006.
    per_call = by_hand(Usage(input_tokens=100, output_tokens=20), SONNET)
    responses: list[list[Any]] = [
        calls((f"c{n}", "plus", {"a": n, "b": 1}),
              usage=Usage(input_tokens=100, output_tokens=20)) for n in range(10)]
    session, rec, provider = make_session(
        responses, agent_options={"turn_budget_usd": per_call * 4.5})
    provider.price = SONNET
    await asyncio.wait_for(session.run("keep adding"), 10)
    done = rec.of("done")[-1]
    assert done.stop_reason == "budget"
    warnings = [e for e in rec.of("warning") if e.code and e.code.startswith("budget")]
    assert [w.code for w in warnings] == ["budget_warning_turn", "budget_reached_turn"]
    assert len(provider.requests) == 5  # the call that crossed ran; none after it
    assert_valid_history(session.messages)
    assert not session.running
    # A turn budget is per turn: the next one runs.
    provider.responses = [answer("fine")]
    await session.run("again")
    assert rec.of("done")[-1].stop_reason == "end_turn"


async def test_a_session_budget_stops_and_refuses_the_next_turn_until_raised() -> None:
    per_call = by_hand(Usage(input_tokens=100, output_tokens=20), SONNET)
    session, rec, provider = make_session(
        [answer("one"), answer("two"), answer("three"), answer("four")],
        agent_options={"budget_usd": per_call * 1.2})
    provider.price = SONNET
    await session.run("a")
    assert rec.of("done")[-1].stop_reason == "end_turn"
    assert [w.code for w in rec.of("warning")] == ["budget_warning_session"]
    await session.run("b")
    assert rec.of("done")[-1].stop_reason == "budget"
    assert session.messages[-1].text == "two"  # the partial (here whole) answer is kept
    with pytest.raises(BudgetExceededError, match="budget"):
        await session.run("c")
    session.agent.budget_usd = per_call * 10
    await session.run("c")
    assert rec.of("done")[-1].stop_reason == "end_turn"


async def test_sub_agents_count_against_their_parents_budget() -> None:
    child = FakeProvider([answer("found", usage=Usage(input_tokens=100_000, output_tokens=0)),
                          answer("again")], model="child")
    child.price = ModelPrice(input=1.0, output=5.0)  # $0.10 for the child's call
    planner = FakeProvider([delegations(("d1", "researcher", "look")), answer("done")])
    planner.price = ModelPrice(input=0, output=0)
    agent = Agent("planner", model=planner, tools=AgentToolConfig(), turn_budget_usd=0.05,
                  subagents=[Agent("researcher", model=child, description="looks")])
    session = AgentSession(agent, crew_catalog())
    rec = Recorder()
    session.subscribe(rec)
    await asyncio.wait_for(session.run("go"), 10)
    assert rec.of("done")[-1].stop_reason == "budget"
    assert_valid_history(session.messages)


async def test_a_budget_needs_a_price() -> None:
    session = AgentSession(Agent("a", model=FakeProvider([answer("x")]), budget_usd=1.0),
                           ToolCatalog.default())
    with pytest.raises(ValueError, match="no price for scripted:fake"):
        await session.run("x")
    assert not session.running and session.messages == []


def test_budgets_are_stored_with_the_agent() -> None:
    agent = Agent("a", model="scripted", budget_usd=2.5, turn_budget_usd=0.5)
    again = Agent.from_record(agent.to_record(agent.create_provider()), ToolCatalog.default())
    assert (again.budget_usd, again.turn_budget_usd) == (2.5, 0.5)
    with pytest.raises(ValueError, match="budget"):
        Agent("a", budget_usd=-1)
