"""The history events (``turn_start``, ``message_appended``, ``message_updated``) make the
stream complete: a subscriber that saw them holds the session's history, in order, with
every change to a card, for a parent and its sub-agents alike. And the model's view is
sized as it grows (``History.view_characters``), so the context estimate never walks it."""

from __future__ import annotations

import asyncio
from typing import Any

from neta_nb import AgentSession
from neta_nb.events import SubagentEvent
from neta_nb.messages import Message, Usage, count_characters
from neta_nb.providers.base import StreamDone, TextDelta, ToolCallReady

from ..support.delegation import crew_catalog, delegations
from ..support.sessions import (
    FakeProvider,
    Recorder,
    answer,
    calls,
    count_up,
    make_session,
)
from .test_subagents import _crew


def history_from_events(events: list[Any]) -> list[Message]:
    """The history a subscriber rebuilds from the events alone."""
    messages: list[Message] = []
    for event in events:
        if event.type == "message_appended":
            assert event.index == len(messages), "appended out of place"
            messages.append(event.message.model_copy(deep=True))
        elif event.type == "message_updated":
            assert messages[event.index].id == event.message.id
            messages[event.index] = event.message.model_copy(deep=True)
    return messages


def dumps(messages: list[Message]) -> list[dict[str, Any]]:
    return [m.model_dump(mode="json") for m in messages]


async def test_a_turn_says_it_starts_and_each_message_once_in_order() -> None:
    session, rec, _ = make_session(
        [calls(("c1", "plus", {"a": 1, "b": 2})), answer("Three.")], extra=[count_up])
    seen = Recorder(history=True)
    session.subscribe(seen)
    await session.run("add")

    kinds = [e.type for e in seen.events]
    assert kinds[0] == "turn_start" and kinds[-1] == "done"
    assert kinds.index("message_appended") == 1  # the prompt comes right after
    appended = [e.message.id for e in seen.of("message_appended")]
    assert appended == [m.id for m in session.messages]
    assert dumps(history_from_events(seen.events)) == dumps(session.messages)
    # The card's changes came as updates of the assistant message that made the call.
    updates = seen.of("message_updated")
    assert updates and {e.index for e in updates} == {1}
    # The default Recorder keeps them apart, so what streams reads as before.
    assert "turn_start" not in rec.types and len(rec.history) == len(seen.of("turn_start")) + \
        len(appended) + len(updates)


async def test_a_cut_turn_is_whole_from_its_events_too() -> None:
    release = asyncio.Event()
    session, _, _ = make_session([[TextDelta("half an an"), release.wait]])
    seen = Recorder(history=True)
    session.subscribe(seen)
    task = session.start("go")
    await seen.wait_for("token")
    session.cancel()
    await task
    rebuilt = history_from_events(seen.events)
    assert dumps(rebuilt) == dumps(session.messages)
    assert rebuilt[-1].metadata.interrupted == "cancelled" and rebuilt[-1].text == "half an an"


async def test_a_skill_card_and_a_second_turn_keep_the_indices() -> None:
    session, _, _ = make_session(
        [calls(("k1", "count_up", {"steps": 3})), answer("Counted."), answer("Again.")],
        extra=[count_up])
    seen = Recorder(history=True)
    session.subscribe(seen)
    await session.run("count")
    await session.run("once more")
    assert [e.type for e in seen.events].count("turn_start") == 2
    assert dumps(history_from_events(seen.events)) == dumps(session.messages)


async def test_a_child_is_described_exactly_like_a_parent() -> None:
    agent, _, _ = _crew(
        [delegations(("d1", "researcher", "find facts")), answer("Done.")],
        researcher=[answer("Facts found.", usage=Usage(input_tokens=10, output_tokens=3))])
    session = AgentSession(agent, crew_catalog())
    seen = Recorder(history=True)
    session.subscribe(seen)
    await session.run("Plan and delegate")

    child_events = [e.event for e in seen.of("subagent_event") if e.id == "d1"]
    child = session.subagents["d1"]
    assert child_events[0].type == "turn_start"
    assert dumps(history_from_events(child_events)) == dumps(child.messages)
    assert dumps(history_from_events(seen.events)) == dumps(session.messages)
    # The parent's own history events carry only its own messages: the child's come
    # wrapped, never loose among the parent's.
    loose = {e.message.id for e in seen.events if e.type.startswith("message_")}
    assert loose == {m.id for m in session.messages}
    assert {e.event.message.id for e in seen.of("subagent_event")
            if type(e) is SubagentEvent and e.event.type == "message_appended"} == {
        m.id for m in child.messages}


async def test_the_view_size_is_kept_as_it_grows_and_after_a_compaction() -> None:
    """The running count equals a fresh count of the view whatever happened to it."""
    big = "x" * 3_000
    session, _, _ = make_session(
        [calls(("c1", "plus", {"a": 1, "b": 2})), answer(big), answer(big), answer(big),
         answer("summary of the old turns"), answer("after")],
        agent_options={"keep_recent_turns": 1})
    for prompt in ("one", "two", "three"):
        await session.run(prompt)
        history = session.state.history
        assert history.view_characters == count_characters(session.model_view)
    assert await session.compact() is not None
    assert session.state.history.view_characters == count_characters(session.model_view)
    await session.run("four")
    assert session.state.history.view_characters == count_characters(session.model_view)


async def test_a_server_without_usage_gets_an_estimate_from_the_running_count() -> None:
    """The context share of a server that reports no usage reads the whole request and
    answer, as counting the history anew would."""
    provider = FakeProvider([[ToolCallReady("c1", "plus", {"a": 1, "b": 2}),
                              StreamDone("tool_use")],
                             [TextDelta("y" * 4_000), StreamDone("end_turn")]])
    session, rec, _ = make_session([])
    session.provider = provider
    await session.run("p" * 8_000)
    request = provider.requests[-1]
    tools = sum(len(t.name) + len(t.description) + len(__import__("json").dumps(t.parameters))
                for t in request.tools)
    expected = (len(request.system_prompt) + tools
                + count_characters(session.model_view)) // 4
    assert rec.of("token_update")[-1].context.used_tokens == expected
    assert rec.of("token_update")[-1].context.estimate == "unreported"
