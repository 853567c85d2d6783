"""The context figure counts what the model will read: a cut answer without usage, and
what was appended before a kernel died, still count toward the next call's estimate."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

from neta_nb import AgentSession, SessionStore, tool
from neta_nb.messages import Usage
from neta_nb.providers.base import ProviderError, StreamDone, TextDelta, UsageUpdate

from ..support.sessions import answer, calls, make_session


def summary(text: str) -> list[Any]:
    return [TextDelta(text), UsageUpdate(Usage(input_tokens=50, output_tokens=10)),
            StreamDone("end_turn")]


async def test_a_cut_answer_counts_toward_the_next_calls_estimate() -> None:
    gate, streamed = asyncio.Event(), asyncio.Event()
    long_text = "y" * 3_000  # ~750 tokens in a 1,000-token window
    session, _, provider = make_session(
        [answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
         [TextDelta(long_text), streamed.set, gate.wait]],
        context_window=1_000, agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    task = session.start("q2")
    await asyncio.wait_for(streamed.wait(), 5)
    session.cancel()
    await task
    assert session.model_view[-1].text == long_text  # the model will read it
    provider.responses += [summary("- summary"), answer("three")]
    await session.run("q3")
    assert provider.requests[2].purpose == "summary", [r.purpose for r in provider.requests]


@tool(core=True)
def big_result() -> str:
    """Returns a lot of text."""
    return "x" * 3_000


async def test_resume_keeps_the_characters_appended_since_the_last_usage(
        tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    # q2: the model calls big_result (3,000 characters, ~750 tokens on top of the 350
    # reported); the calls after it fail, and the session is resumed elsewhere.
    session, _, provider = make_session(
        [answer("one", usage=Usage(input_tokens=100, output_tokens=10)),
         calls(("d", "big_result", {}), usage=Usage(input_tokens=300, output_tokens=50)),
         [ProviderError("overloaded", retryable=True)],
         [ProviderError("overloaded", retryable=True)]],
        extra=[big_result], store=store, context_window=1_000,
        agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    resumed = AgentSession.resume(session.id, store=store, agent=session.agent,
                                  catalog=session.catalog)
    provider.responses += [summary("- summary"), answer("three")]
    await resumed.run("q3")
    assert provider.requests[-2].purpose == "summary", [r.purpose for r in provider.requests]


def unreported(text: str) -> list[Any]:
    """An answer from a server that sends no usage."""
    return [TextDelta(text), StreamDone("end_turn")]


async def test_compaction_works_from_the_estimate_when_no_usage_is_ever_reported() -> None:
    long_text = "z" * 32_000  # ~8,000 tokens an answer, in a 20,000-token window
    session, rec, provider = make_session(
        [unreported(long_text), unreported(long_text)], context_window=20_000,
        agent_options={"keep_recent_turns": 1})
    await session.run("q1")
    await session.run("q2")
    estimated = rec.of("token_update")[-1].context
    assert estimated.estimate == "unreported" and estimated.percent > 80
    assert session.usage.total_tokens == 0

    provider.responses += [unreported("- summary"), unreported("three")]
    await session.run("q3")

    assert [r.purpose for r in provider.requests][-2:] == ["summary", "chat"]
    after_compaction, after_answer = (e.context for e in rec.of("token_update")[-2:])
    assert after_compaction.estimate == "compaction"
    assert after_compaction.used_tokens < estimated.used_tokens // 2
    assert after_answer.estimate == "unreported"
    assert "error" not in rec.types
