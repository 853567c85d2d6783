"""Batch runs in the kernel: results in input order whatever the concurrency, one limiter
for every call (in flight, rate, Retry-After pauses heard from real HTTP responses),
retries of what may succeed later, failed rows as rows, output models, cancel."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel

from neta_nb import Agent, SessionStore, create_provider
from neta_nb.batch import BatchRun, RateLimiter, parse_rate
from neta_nb.providers.base import ProviderError

from ..providers.sse_server import OpenAIStream, RecordedRequest, SSEServer, error_response
from ..support.batch import RowModel, label_of
from ..support.timing import wait_until

pd: Any = pytest.importorskip("pandas")  # untyped


def tickets(n: int) -> list[str]:
    return [f"ticket {i}: the printer on floor {i % 7} is jammed" for i in range(n)]


async def test_results_come_in_input_order_and_equal_a_one_at_a_time_run() -> None:
    inputs = tickets(40)
    sequential = await Agent("a", model=RowModel()).map(inputs, "Classify: {input}",
                                                        concurrency=1)
    model = RowModel(delay=0.01)
    frame = await Agent("a", model=model).map(inputs, "Classify: {input}", concurrency=6)
    assert list(frame.columns) == ["input", "answer", "status", "error", "attempts", "usage",
                                   "session_id"]
    assert list(frame["input"]) == inputs
    assert list(frame["answer"]) == list(sequential["answer"]) == [
        label_of(f"Classify: {text}") for text in inputs]
    assert set(frame["status"]) == {"done"} and set(frame["attempts"]) == {1}
    assert model.most_in_flight == 6  # the limiter's bound, and it was used
    assert frame["usage"][0]["output_tokens"] == 8
    assert frame["session_id"].is_unique


async def test_a_dataframe_fills_the_template_and_keeps_its_columns() -> None:
    df = pd.DataFrame({"id": [3, 1, 2], "body": ["broken screen", "no wifi", "late refund"],
                       "score": [0.5, float("nan"), 2.0]})
    frame = await Agent("a", model=RowModel()).map(df, "Ticket {id}: {body}", concurrency=2)
    assert list(frame.columns[:3]) == ["id", "body", "score"]
    assert list(frame["id"]) == [3, 1, 2]
    assert frame["answer"][1] == label_of("Ticket 1: no wifi")
    assert pd.isna(frame["score"][1])


def test_inputs_and_templates_are_checked_before_anything_runs() -> None:
    agent = Agent("a", model=RowModel())
    with pytest.raises(ValueError, match="names 'title', which the inputs do not have"):
        agent.map([{"body": "x"}], "About {title}: {body}").result()
    with pytest.raises(TypeError, match="DataFrame, a list of strings or a list of dicts"):
        agent.map("one string", "x").result()
    with pytest.raises(ValueError, match="not a rate like"):
        agent.map(["a"], rate_limit="fast")
    with pytest.raises(ValueError, match="max_attempts"):
        agent.map(["a"], max_attempts=0)


def test_a_script_gets_its_results_without_an_event_loop() -> None:
    run = Agent("a", model=RowModel()).map(["x", "y"])  # no template: the string is the prompt
    frame = run.result()
    assert list(frame["answer"]) == [label_of("x"), label_of("y")]
    assert run.result() is frame  # once


async def test_transient_failures_are_retried_and_a_permanent_one_fails_its_row_only() -> None:
    def fail(prompt: str, call: int) -> ProviderError | None:
        if prompt.endswith("flaky") and call <= 2:
            return ProviderError("overloaded", retryable=True, status_code=529)
        if prompt.endswith("always busy"):
            return ProviderError("rate limited", retryable=True, status_code=429)
        if prompt.endswith("bad"):
            return ProviderError("invalid request", retryable=False, status_code=400)
        return None

    model = RowModel(fail=fail)
    run = Agent("a", model=model).map(["ok", "flaky", "bad", "always busy", "ok too"],
                                      max_attempts=3, concurrency=3)
    frame = await run
    by_input = frame.set_index("input")
    assert by_input.loc["flaky", "status"] == "done" and by_input.loc["flaky", "attempts"] == 3
    assert by_input.loc["bad", "status"] == "failed" and by_input.loc["bad", "attempts"] == 1
    assert "invalid request" in by_input.loc["bad", "error"]
    assert model.calls["bad"] == 1  # not retried
    assert by_input.loc["always busy", "status"] == "failed"
    assert by_input.loc["always busy", "attempts"] == 3 and model.calls["always busy"] == 3
    assert list(by_input.loc[["ok", "ok too"], "status"]) == ["done", "done"]
    assert run.counts["retried"] == 4 and run.counts["failed"] == 2


class Verdict(BaseModel):
    category: str
    urgent: bool


async def test_an_output_model_becomes_columns_and_a_bad_answer_a_row_error() -> None:
    def answer(prompt: str) -> str:
        if "gibberish" in prompt:
            return "I am not sure."
        if "half" in prompt:
            return '```json\n{"category": "billing"}\n```'
        return f'Here you go: {{"category": "{prompt.split()[-1]}", "urgent": true}}'

    frame = await Agent("a", model=RowModel(answer=answer)).map(
        ["hardware", "gibberish", "half"], output=Verdict)
    assert list(frame.columns[:4]) == ["input", "answer", "category", "urgent"]
    assert (frame["category"][0], frame["urgent"][0]) == ("hardware", True)
    assert list(frame["status"]) == ["done", "failed", "failed"]
    assert "holds no JSON object for Verdict" in frame["error"][1]
    assert "urgent" in frame["error"][2] and pd.isna(frame["category"][1])


async def test_the_rate_limit_holds_for_every_call_of_the_run() -> None:
    starts: list[float] = []

    def record(prompt: str, call: int) -> None:
        starts.append(time.monotonic())
        return

    before = time.monotonic()
    await Agent("a", model=RowModel(fail=record)).map(tickets(30), rate_limit="20/s",
                                                       concurrency=10)
    assert len(starts) == 30
    # A bucket of 20 refilled at 20/s: no half second holds more than 20 + 10 starts.
    for first in starts:
        assert sum(1 for t in starts if first <= t < first + 0.5) <= 30
    # The 10 past the first 20 waited for tokens: the 30th start comes half a second after
    # the bucket was filled at the latest. Measured from before the run, not from the first
    # start: the bucket refills while a slow machine starts the first calls.
    assert starts[-1] - before >= 0.49


async def test_the_limiter_pauses_everyone_for_a_retry_after() -> None:
    limiter = RateLimiter(4, parse_rate("100/s"))
    limiter.pause(0.3)
    paused_at = time.monotonic()
    async with limiter.call():
        assert time.monotonic() - paused_at >= 0.29
    await limiter.unpaused()
    assert limiter.pauses == 1 and limiter.in_flight == 0


# --- real HTTP: the OpenAI SDK against a local server answering 429 with Retry-After -----

RETRY_AFTER = 0.1


def _prompt(request: RecordedRequest) -> str:
    return str(request.json["messages"][-1]["content"])


def _answer(text: str) -> Any:
    return (OpenAIStream(model="local").text([text[: len(text) // 2], text[len(text) // 2:]])
            .finish("stop").response(chunk_delay=0.0))


async def test_a_thousand_rows_against_a_server_that_answers_429_with_retry_after() -> None:
    inputs = tickets(1000)
    refused: list[float] = []  # when each 429 was sent
    seen: dict[str, int] = {}

    def respond(request: RecordedRequest) -> Any:
        prompt = _prompt(request)
        seen[prompt] = seen.get(prompt, 0) + 1
        if seen[prompt] == 1 and hash(prompt) % 10 == 0:  # ~10 % refused once
            refused.append(time.monotonic())
            return error_response(429, {"error": {"type": "rate_limit", "message": "slow"}},
                                  headers={"retry-after": str(RETRY_AFTER)})
        return _answer(label_of(prompt))

    sent: list[float] = []  # when each HTTP request (the SDK's retries too) went out
    heard: list[float] = []  # when the client heard each 429

    async with SSEServer() as server:
        server.responder = respond
        provider = create_provider("openai-compatible:local", base_url=f"{server.base_url}/v1")
        gate, listen = type(provider).before_request, type(provider).heard_response

        async def before_request(self: Any) -> None:
            await gate(self)
            sent.append(time.monotonic())

        def heard_response(self: Any, status: int, headers: Any) -> None:
            if status == 429:
                heard.append(time.monotonic())
            listen(self, status, headers)

        provider.before_request = before_request.__get__(provider)  # type: ignore[method-assign]
        provider.heard_response = heard_response.__get__(provider)  # type: ignore[method-assign]
        run = Agent("a", model=provider).map(inputs, "Classify: {input}", concurrency=8)
        frame = await run
        most = server.most_in_flight
    assert list(frame["status"]) == ["done"] * 1000, frame[frame.status != "done"].head()
    assert list(frame["answer"]) == [label_of(f"Classify: {text}") for text in inputs]
    assert 50 <= len(refused) <= 150
    assert most <= 8
    # No request went out inside a pause — neither another row's nor the SDK's own retry
    # of the refused one: each waited until the Retry-After since the 429 was heard.
    assert len(heard) == len(refused) and len(sent) == 1000 + len(refused)
    for at in heard:
        inside = [t for t in sent if at < t < at + RETRY_AFTER - 1e-3]
        assert not inside, f"{len(inside)} requests inside the pause that began at {at}"
    assert run.limiter.pauses >= 1
    assert run.counts == {"queued": 0, "running": 0, "done": 1000, "failed": 0, "retried": 0}


# --- cancel -------------------------------------------------------------------------------

async def test_cancel_stops_the_run_and_leaves_the_rest_for_resume(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel(delay=0.05))
    run = agent.map(tickets(60), concurrency=4, store=store)
    await wait_until(lambda: run.counts["done"] >= 10, within=30)
    run.cancel()
    frame = await run
    done = int((frame["status"] == "done").sum())
    assert 10 <= done < 60 and set(frame["status"]) == {"done", "cancelled"}
    assert store.get_session(run.run_id).child_count == done  # type: ignore[union-attr]
    resumed = BatchRun.resume(run.run_id, store=store, agent=agent)
    final = await resumed
    assert list(final["status"]) == ["done"] * 60
    finished = frame["status"] == "done"  # kept as they were: not run again
    assert list(final["session_id"][finished]) == list(frame["session_id"][finished])
    assert store.get_session(run.run_id).child_count == 60  # type: ignore[union-attr]


def test_a_run_id_in_the_store_with_other_inputs_is_refused(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    agent = Agent("a", model=RowModel())
    agent.map(["a", "b"], store=store, run_id="r1").result()
    with pytest.raises(ValueError, match="other inputs"):
        agent.map(["a", "b", "c"], store=store, run_id="r1")
    again = agent.map(["a", "b"], store=store, run_id="r1")  # the same: resumed, all done
    assert list(again.result()["status"]) == ["done", "done"]
    assert json.loads(json.dumps(store.get_session("r1").title))  # type: ignore[union-attr]
