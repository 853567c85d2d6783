"""Cost in money and budgets (issue 32, items 3–4): the price table and overrides, the
cost of recorded usage through a real SDK against a hand computation, unknown prices as
unknown (never $0), sub-agents rolled up, costs stored and resumed, and budgets that warn
at 80 % and stop a turn like Stop at 100 %."""

from __future__ import annotations

import asyncio
import contextlib
import json
import sqlite3
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
from neta_nb.messages import Message, Usage
from neta_nb.providers.anthropic import AnthropicProvider
from neta_nb.providers.base import ProviderError, StreamDone, TextDelta, UsageUpdate
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.providers.prices import PRICES_AS_OF, price_of, set_price
from neta_nb.runtime.session.spending import BudgetExceededError

from ..providers.sse_server import AnthropicStream, OpenAIStream, SSEServer
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
    # The tool the fifth answer asked for never ran: its card says so (a card for every
    # call the user could see, as for a call that was running when the turn stopped).
    last = [m for m in session.messages if m.role == "assistant"][-1]
    (card,) = last.metadata.tool_executions
    assert (card.id, card.status) == ("c4", "cancelled") and "budget" in (card.result or "")
    assert [e.id for e in rec.of("tool_call")][-1] == "c4"
    assert rec.of("tool_result")[-1].id == "c4" and rec.of("tool_result")[-1].is_error
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


# --- found by review: each failed before its fix ----------------------------------------

ONE = ModelPrice(input=1.0, output=1.0)  # $1 per million tokens, in or out


def test_the_table_prices_a_models_snapshots_but_not_its_siblings() -> None:
    assert price_of("openai", "o1-pro") == ModelPrice(input=150.0, output=600.0)
    assert price_of("openai", "o1-mini-2024-09-12") == ModelPrice(input=1.1, output=4.4,
                                                                  cache_read=0.55)
    assert price_of("openai", "gpt-4o-2024-05-13") == ModelPrice(input=5.0, output=15.0)
    assert price_of("openai", "gpt-5-chat-latest") == price_of("openai", "gpt-5")
    assert price_of("openai", "gpt-5-codex") is None  # another model: unknown, not gpt-5's
    assert price_of("anthropic", "claude-3-5-sonnet-latest") == SONNET
    set_price("openai-compatible", "meta-llama/llama-3.1-8b", ONE)
    try:  # a prefix the user set covers what starts with it
        assert price_of("openai-compatible", "meta-llama/llama-3.1-8b-instruct") == ONE
    finally:
        set_price("openai-compatible", "meta-llama/llama-3.1-8b", None)
    for bad in (float("inf"), float("nan"), True, "1"):
        with pytest.raises(ValueError, match="must be a number"):
            ModelPrice(input=bad, output=1)  # type: ignore[arg-type]
    with pytest.raises(TypeError, match="price must be a ModelPrice"):
        create_provider("scripted", price={"input": 1, "output": 2})  # type: ignore[arg-type]


async def test_a_stopped_or_cut_call_is_counted_never_a_known_zero() -> None:
    from ..support.delegation import Gate

    gate = Gate()
    session, rec, provider = make_session([
        [UsageUpdate(Usage(input_tokens=50_000, output_tokens=1)), TextDelta("partial "), gate,
         TextDelta("more"), StreamDone("end_turn")],
        [TextDelta("cut, and no usage was reported before the cut"),
         ProviderError("connection reset")]], context_window=1_000_000)
    provider.price = ONE
    task = asyncio.ensure_future(session.run("x"))
    await gate.reached.wait()
    session.cancel()
    await task
    assert session.cost_usd == pytest.approx(0.050001)  # what message_start reported
    assert session.messages[-1].metadata.cost_usd == pytest.approx(0.050001)
    await session.run("y")
    assert session.cost_usd is None  # a call of unknown usage: unknown, not "$0 more"
    assert rec.of("token_update")[-1].current.unreported_calls == 1


async def test_a_budget_holds_for_the_known_spend_when_some_is_unknown() -> None:
    per_call = by_hand(Usage(input_tokens=100, output_tokens=20), SONNET)
    session, rec, provider = make_session(
        [[TextDelta("no usage"), StreamDone("end_turn")],  # a server that skipped usage
         answer("one"), answer("two"), answer("three")],
        agent_options={"budget_usd": per_call * 1.5})
    provider.price = SONNET
    await session.run("a")
    assert session.cost_usd is None
    await session.run("b")
    await session.run("c")
    assert rec.of("done")[-1].stop_reason == "budget"  # the known part crossed it
    codes = [w.code for w in rec.of("warning")]
    assert codes.count("budget_partly_unknown") == 1
    with pytest.raises(BudgetExceededError):
        await session.run("d")


async def test_sums_of_float_costs_reach_the_budget_and_percentages_round() -> None:
    session, rec, provider = make_session(
        [answer("a", usage=Usage(input_tokens=700_000)),
         answer("b", usage=Usage(input_tokens=100_000)), answer("c")],
        agent_options={"budget_usd": 0.80})
    provider.price = ONE
    await session.run("one")  # $0.70: 88 %
    assert [w.params["percent"] for w in rec.of("warning")] == ["88"]
    await session.run("two")  # $0.70 + $0.10 = 0.7999999999999999
    assert rec.of("done")[-1].stop_reason == "budget"
    with pytest.raises(BudgetExceededError, match=r"\$0\.800 of \$0\.800"):
        await session.run("three")


async def test_budgets_set_after_creation_are_checked_too() -> None:
    session, _, provider = make_session([answer("x")])
    provider.price = ONE
    for bad in (float("nan"), 0, -1, True, "0.5"):
        session.agent.budget_usd = bad  # type: ignore[assignment]
        with pytest.raises(ValueError, match="budget_usd is USD"):
            await session.run("x")
    assert session.messages == []


async def test_a_child_stopped_by_its_own_budget_is_not_reported_done() -> None:
    child = FakeProvider([answer("found", usage=Usage(input_tokens=100_000))], model="child")
    child.price = ONE
    planner = FakeProvider([delegations(("d1", "researcher", "look")), answer("done")])
    agent = Agent("planner", model=planner, tools=AgentToolConfig(),
                  subagents=[Agent("researcher", model=child, description="looks",
                                   turn_budget_usd=0.05)])
    session = AgentSession(agent, crew_catalog())
    await asyncio.wait_for(session.run("go"), 10)
    result = session.messages[2].tool_results[0]
    assert result.is_error and "reached its budget" in result.content


async def test_resume_keeps_what_was_spent_even_when_prices_change(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    provider = FakeProvider([[TextDelta("no usage"), StreamDone("end_turn")], answer("b")])
    provider.price = ONE
    session = AgentSession(Agent("a", model=provider), ToolCatalog.default(), store)
    await session.run("a")
    await session.run("b")
    session.flush()
    assert session.cost_usd is None
    again = AgentSession.resume(session.id, store, catalog=session.catalog,
                                agent=session.agent)
    assert again.cost_usd is None  # a call of unknown cost stays unknown after resume
    store.close()


async def test_a_budgeted_session_replays_offline(tmp_path: Path) -> None:
    from neta_nb import ScriptedProvider, replay

    store = SessionStore(tmp_path / "s.db")
    provider = FakeProvider([answer("one")])
    provider.price = ONE
    session = AgentSession(Agent("a", model=provider, budget_usd=1.0),
                           ToolCatalog.default(), store)
    await session.run("a")
    session.flush()
    report = await replay(session.id, store=store, model=ScriptedProvider.from_history(
        store.load_messages(session.id)))
    assert report.turns[0].same_answer
    store.close()


def _adding_call(n: int, prompt: Any, completion: Any) -> Any:
    """One streamed ``plus`` call reporting ``prompt``/``completion`` tokens as given."""
    stream = OpenAIStream(model="qwen").tool_call_start(0, f"c{n}", "plus")
    stream.tool_call_args(0, '{"a": 1, "b": 1}').finish("tool_calls")
    return stream.usage(prompt, completion).done().response()


async def _keep_adding(sse: SSEServer) -> tuple[AgentSession, Recorder]:
    """A turn of ``plus`` calls against ``sse`` (priced as Sonnet, $0.05 a turn) to its
    end; the session and what it emitted."""
    provider = OpenAIProvider("qwen", supplier="openai-compatible", api_key="k",
                              base_url=sse.base_url, max_retries=0, context_window=32_000)
    provider.price = SONNET
    catalog = ToolCatalog.default()
    catalog.register(plus)
    session = AgentSession(Agent("a", model=provider, tools=AgentToolConfig(),
                                 turn_budget_usd=0.05), catalog)
    rec = Recorder()
    session.subscribe(rec)
    await asyncio.wait_for(session.run("keep adding"), 20)
    return session, rec


async def test_negative_usage_from_a_server_is_unknown_and_budgets_still_stop() -> None:
    """An OpenAI-compatible server reporting ``completion_tokens: -1000000`` (streamed by
    the real SDK): those calls' usage and cost are unknown, never a credit that keeps the
    budget from stopping; the user is told once; the later calls' valid usage reaches the
    turn budget, which stops the turn."""
    tool_call = _adding_call
    # A valid call: 10 000 in + 1 000 out at $3/$15 per million = $0.045.
    valid = by_hand(Usage(input_tokens=10_000, output_tokens=1_000), SONNET)
    async with SSEServer() as sse:
        sse.add(tool_call(0, 100, -1_000_000), tool_call(1, -5, 40),
                tool_call(2, 10_000, 1_000), tool_call(3, 10_000, 1_000),
                *[tool_call(n, 10_000, 1_000) for n in range(4, 30)])
        session, rec = await _keep_adding(sse)
        served = len(sse.requests)
    assert rec.of("done")[-1].stop_reason == "budget"
    assert served == 4  # the fourth call crossed the budget; none after it
    answers = [m for m in session.messages if m.role == "assistant"]
    assert [m.metadata.usage is None for m in answers] == [True, True, False, False]
    assert [m.metadata.cost_usd for m in answers] == [
        None, None, pytest.approx(valid), pytest.approx(valid)]
    assert session.cost_usd is None  # some calls' cost is unknown: never a known sum
    update = rec.of("token_update")[-1].current
    assert update.unreported_calls == 2 and update.cost_usd is None
    assert update.input_tokens == 20_000 and update.output_tokens == 2_000
    codes = [w.code for w in rec.of("warning")]
    assert codes.count("usage_unusable") == 1  # once a session, not once a call
    (said,) = [w for w in rec.of("warning") if w.code == "usage_unusable"]
    assert said.params == {"detail": "completion_tokens=-1000000"}
    assert "budget_reached_turn" in codes


async def test_a_negative_usage_stored_before_is_unknown_on_resume(tmp_path: Path) -> None:
    """A session stored while a server's negative usage still counted as a credit: on
    resume that call's usage and cost are unknown, and the session budget still stops at
    the calls of known cost."""
    db = tmp_path / "s.db"
    store = SessionStore(db)
    per_call = by_hand(Usage(input_tokens=100, output_tokens=20), SONNET)
    session, _, provider = make_session([answer("one")], store=store,
                                        agent_options={"budget_usd": per_call * 1.5})
    provider.price = SONNET
    await session.run("a")
    assert session.flush(10)
    # As stored before: completion_tokens -1,000,000 priced into a negative cost.
    with contextlib.closing(sqlite3.connect(db)) as connection, connection:
        seq, text = connection.execute(
            "SELECT seq, data FROM messages WHERE session_id = ? ORDER BY seq DESC",
            (session.id,)).fetchone()
        data = json.loads(text)
        data["metadata"]["usage"]["output_tokens"] = -1_000_000
        data["metadata"]["cost_usd"] = -149.97
        connection.execute("UPDATE messages SET data = ? WHERE session_id = ? AND seq = ?",
                           (json.dumps(data), session.id, seq))
    provider.responses = [answer("two"), answer("three")]
    again = AgentSession.resume(session.id, SessionStore(db), catalog=session.catalog,
                                agent=session.agent)
    assert again.messages[-1].metadata.usage is None
    assert again.messages[-1].metadata.cost_usd is None
    assert again.cost_usd is None  # unknown, never -$149.97
    rec = Recorder()
    again.subscribe(rec)
    await again.run("b")
    await again.run("c")
    assert rec.of("done")[-1].stop_reason == "budget"  # the known part reached it
    with pytest.raises(BudgetExceededError):
        await again.run("d")
    store.close()


async def test_a_providers_own_negative_usage_is_unknown_too() -> None:
    """A provider of the user's that builds Usage itself, negative counts and all: the
    runtime takes the call's usage as unknown, for an answer and for a summary."""
    negative = Usage(input_tokens=100, output_tokens=-1_000_000)
    session, rec, provider = make_session(
        [answer("one", usage=negative), answer("two"), answer("three"),
         [TextDelta("- summary"), UsageUpdate(negative), StreamDone("end_turn")]],
        agent_options={"keep_recent_turns": 1, "compact_at": None})
    provider.price = SONNET
    await session.run("a")
    assert session.messages[-1].metadata.usage is None
    assert session.cost_usd is None
    assert rec.of("token_update")[-1].current.unreported_calls == 1
    await session.run("b")
    await session.run("c")
    assert await session.compact() is not None
    assert session.compactions[-1].usage is None and session.compactions[-1].cost_usd is None
    said = [w.params for w in rec.of("warning") if w.code == "usage_unusable"]
    assert said == [{"detail": "output_tokens=-1000000"}]


@pytest.mark.parametrize("huge", [10**400, 10**30, 1e308], ids=["1e400", "1e30", "1e308f"])
async def test_a_count_no_call_reaches_is_unknown_not_a_crash_or_infinity(huge: Any) -> None:
    """A server reporting a count beyond any call (``10**400`` overflows a float, ``1e308``
    prices into infinity, neither is exact in the widget's numbers): that call's usage is
    unknown and said once, the turn goes on, and later valid usage still reaches the
    budget."""
    tool_call = _adding_call
    async with SSEServer() as sse:
        sse.add(tool_call(0, 100, huge),
                *[tool_call(n, 10_000, 1_000) for n in range(1, 30)])
        session, rec = await _keep_adding(sse)
        served = len(sse.requests)
    assert rec.of("done")[-1].stop_reason == "budget"
    assert served == 3  # two valid calls of $0.045 each crossed the budget
    answers = [m for m in session.messages if m.role == "assistant"]
    assert answers[0].metadata.usage is None and answers[0].metadata.cost_usd is None
    said = [w.params["detail"] for w in rec.of("warning") if w.code == "usage_unusable"]
    assert len(said) == 1 and said[0].startswith("completion_tokens=")


def test_a_providers_own_usage_is_checked_as_a_servers_is() -> None:
    """Usage a provider of the user's built itself with a count pydantic let through (by
    assignment or model_construct: NaN, a string, a count beyond any call) is unknown,
    as the same count from a server would be; stored, it reads back as unknown."""
    bads: list[Any] = [float("nan"), "100", 10**30, -1]
    for bad in bads:
        usage = Usage.model_construct(input_tokens=10, output_tokens=bad)
        update = UsageUpdate(usage).checked()
        assert update.usage is None
        assert update.unusable == f"output_tokens={bad!r}"
    good = Usage(input_tokens=10, output_tokens=5)
    assert UsageUpdate(good).checked().usage == good
    stored = Message.model_validate({"role": "assistant", "parts": [], "metadata": {
        "usage": {"input_tokens": 10**30}, "cost_usd": 1.0}})
    assert stored.metadata.usage is None
