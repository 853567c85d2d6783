"""ScriptedProvider: the offline model's script format, demo, usage, pacing, cancellation."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest
from pydantic import ValidationError

import neta_nb
from neta_nb.messages import Message, Part, TextPart, ThinkingPart, ToolCallPart, Usage
from neta_nb.providers.base import (
    ModelRequest,
    ProviderError,
    ResponseAssembler,
    StreamDone,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UsageUpdate,
)
from neta_nb.providers.scripted.scripted import Script, ScriptedProvider, estimate_tokens


async def respond(provider: ScriptedProvider, messages: list[Message],
                  level: str = "medium") -> tuple[list[StreamEvent], ResponseAssembler]:
    events = [event async for event in provider.stream(
        ModelRequest(system_prompt="You are a demo.", messages=messages, think_level=level))]
    assembler = ResponseAssembler()
    for event in events:
        assembler.feed(event)
    return events, assembler


def reported(events: list[StreamEvent]) -> list[Usage]:
    """The usage updates of a response, every one a known usage."""
    usages = [e.usage for e in events if isinstance(e, UsageUpdate)]
    assert None not in usages
    return [usage for usage in usages if usage is not None]


async def run_turn(provider: ScriptedProvider, messages: list[Message],
                   level: str = "medium") -> list[list[StreamEvent]]:
    """Plays the script for the last user message as the runtime would, answering every
    tool call with a short result; returns each response's events."""
    responses: list[list[StreamEvent]] = []
    for _ in range(10):
        events, assembler = await respond(provider, messages, level)
        responses.append(events)
        messages.append(Message.assistant(assembler.parts, stop_reason=assembler.stop_reason))
        calls = [e for e in events if isinstance(e, ToolCallReady)]
        if not calls:
            return responses
        for call in calls:
            messages.append(Message.tool_result(call.id, call.name, f"result of {call.name}"))
    raise AssertionError("the script never finished")


def test_is_public_and_reports_its_model() -> None:
    provider = neta_nb.ScriptedProvider()

    assert provider.supplier == "scripted"
    assert provider.model_id == "scripted:demo"
    assert repr(provider) == "ScriptedProvider('scripted:demo')"
    assert provider.info.context_window == 200_000
    assert provider.info.capabilities == frozenset({"tools", "vision", "thinking", "pdf"})


async def test_demo_plays_the_whole_story() -> None:
    messages = [Message.user("Take a look at the data here.")]

    responses = await run_turn(ScriptedProvider(), messages)

    calls = [[(e.name, e.args) for e in events if isinstance(e, ToolCallReady)]
             for events in responses]
    assert [[name for name, _ in response] for response in calls] == [
        ["todo"], ["list_files"], ["todo", "profile_table"], ["todo"], []]
    plan = calls[0][0][1]
    assert plan["merge"] is False
    assert [item["status"] for item in plan["todos"]] == ["in_progress", "pending", "pending"]
    assert calls[1][0][1] == {"path": "."}
    assert calls[2][0][1]["merge"] is True
    assert [(i["id"], i["status"]) for i in calls[2][0][1]["todos"]] == [
        ("1", "completed"), ("2", "in_progress")]
    assert calls[2][1][1] == {}
    assert all(i["status"] == "completed" for i in calls[3][0][1]["todos"])

    answer = messages[-1].text
    for marker in ("## ", "\n- ", "|---|", "```python"):
        assert marker in answer
    # Every kind of stream event appears, and every response ends well.
    kinds = {type(event) for events in responses for event in events}
    assert kinds == {ThinkingDelta, ThinkingEnd, TextDelta, ToolCallReady, UsageUpdate,
                     StreamDone}
    assert [events[-1] for events in responses] == [StreamDone("tool_use")] * 4 + [
        StreamDone("end_turn")]
    # Thinking and text stream in many deltas, not in one piece.
    first = responses[0]
    assert sum(isinstance(e, ThinkingDelta) for e in first) > 20
    assert sum(isinstance(e, TextDelta) for e in first) > 3


async def test_usage_is_realistic_and_deterministic() -> None:
    messages = [Message.user("Take a look at the data here.")]
    responses = await run_turn(ScriptedProvider(), messages)

    finals = [reported(events)[-1] for events in responses]
    inputs = [usage.input_tokens for usage in finals]
    assert inputs == sorted(inputs)  # grows every call
    assert len(set(inputs)) == len(inputs)
    assistant_messages = [m for m in messages if m.role == "assistant"]
    for usage, message in zip(finals, assistant_messages, strict=True):
        thinking = sum(len(p.text) for p in message.parts if isinstance(p, ThinkingPart))
        text = sum(len(p.text) for p in message.parts if isinstance(p, TextPart))
        calls = sum(len(p.name) + len(json.dumps(p.args))
                    for p in message.parts if isinstance(p, ToolCallPart))
        assert usage.output_tokens == estimate_tokens(thinking + text + calls)
        assert usage.thinking_tokens == estimate_tokens(thinking)
    # The same conversation gives the same numbers.
    again = await run_turn(ScriptedProvider(), [Message.user("Take a look at the data here.")])
    assert [[e for e in events if isinstance(e, UsageUpdate)] for events in again] == [
        [e for e in events if isinstance(e, UsageUpdate)] for events in responses]


async def test_script_replays_for_each_user_prompt_with_unique_ids() -> None:
    provider = ScriptedProvider()
    messages = [Message.user("first")]
    await run_turn(provider, messages)
    first_ids = [p.id for m in messages for p in m.tool_calls]
    messages.append(Message.user("second"))

    responses = await run_turn(provider, messages)

    assert len(responses) == 5
    all_ids = [p.id for m in messages for p in m.tool_calls]
    assert first_ids[:2] == ["call_1_0_0", "call_1_1_0"]
    assert all_ids[len(first_ids):][:2] == ["call_2_0_0", "call_2_1_0"]
    assert len(set(all_ids)) == len(all_ids)


async def test_resume_continues_where_the_conversation_stopped() -> None:
    messages = [Message.user("go"),
                Message.assistant([ToolCallPart(id="x", name="todo", args={})]),
                Message.tool_result("x", "todo", "ok")]

    events, _ = await respond(ScriptedProvider(), messages)

    assert [e.name for e in events if isinstance(e, ToolCallReady)] == ["list_files"]


async def test_thinking_level_off_skips_thinking() -> None:
    events, assembler = await respond(ScriptedProvider(), [Message.user("go")], level="off")

    assert not any(isinstance(e, ThinkingDelta | ThinkingEnd) for e in events)
    assert assembler.parts[0] == TextPart(text="Let me plan this before I start.")


async def test_user_scripts_from_plain_dicts() -> None:
    provider = ScriptedProvider([
        [{"thinking": "hm"}, {"text": "Calling."},
         {"tool_call": {"name": "read_file", "args": {"path": "a"}}},
         {"usage": {"input_tokens": 1000, "cache_read_tokens": 900}}],
        [{"text": "Done."}],
    ])

    events, assembler = await respond(provider, [Message.user("go")])

    assert assembler.parts == [ThinkingPart(text="hm"), TextPart(text="Calling."),
                               ToolCallPart(id="call_1_0_0", name="read_file",
                                            args={"path": "a"})]
    final_usage = reported(events)[-1]
    assert final_usage.input_tokens == 1000
    assert final_usage.cache_read_tokens == 900
    assert final_usage.output_tokens == estimate_tokens(len("hm") + len("Calling.")
                                                        + len("read_file")
                                                        + len('{"path": "a"}'))


async def test_fixed_ids_and_stop_reason() -> None:
    provider = ScriptedProvider({"responses": [{"steps": [
        {"tool_call": {"name": "python", "args": {}, "id": "fixed"}}],
        "stop_reason": "pause_turn"}]})

    events, _ = await respond(provider, [Message.user("go")])

    assert ToolCallReady(id="fixed", name="python", args={}) in events
    assert events[-1] == StreamDone("pause_turn")


@pytest.mark.parametrize(("mode", "expected"), [
    ("finish", "That is everything I had planned for this request."), ("cycle", "one")])
async def test_after_the_script_runs_out(mode: str, expected: str) -> None:
    provider = ScriptedProvider({"responses": [[{"text": "one"}]], "on_exhausted": mode})
    messages = [Message.user("go"), Message.assistant([TextPart(text="one")])]

    _, assembler = await respond(provider, messages)

    assert assembler.parts == [TextPart(text=expected)]


async def test_error_step_fails_the_stream_with_what_streamed() -> None:
    provider = ScriptedProvider([[{"text": "Half an answer"},
                                  {"error": {"message": "overloaded", "status_code": 529}}]])
    seen: list[StreamEvent] = []

    async def consume() -> None:
        async for event in provider.stream(ModelRequest("", [Message.user("go")])):
            seen.append(event)

    with pytest.raises(ProviderError) as caught:
        await consume()

    error = caught.value
    assert (error.message, error.retryable, error.status_code) == ("overloaded", True, 529)
    partial: list[Part] = [TextPart(text="Half an answer")]
    assert error.partial == partial
    assert error.usage is not None
    assert error.usage.output_tokens == estimate_tokens(len("Half an answer"))
    assert not any(isinstance(e, StreamDone) for e in seen)


def test_invalid_scripts_are_rejected() -> None:
    with pytest.raises(ValidationError):
        ScriptedProvider([[{"speak": "hi"}]])
    with pytest.raises(ValidationError):
        ScriptedProvider([[{"tool_call": {"args": {}}}]])
    with pytest.raises(ValueError, match="chars_per_second"):
        ScriptedProvider(chars_per_second=-1)


def test_a_data_script_round_trips_through_json() -> None:
    script = Script.coerce([[{"thinking": "Plan."}, {"text": "Hi."},
                             {"tool_call": {"name": "todo", "args": {"todos": []}}}],
                            [{"usage": {"input_tokens": 3}}, {"text": "Done."}]])
    assert Script.model_validate_json(script.model_dump_json()) == script


async def test_a_response_can_be_computed_from_the_conversation() -> None:
    seen: list[list[str]] = []

    def echo(messages: Any) -> list[dict[str, str]]:
        seen.append([message.role for message in messages])
        return [{"text": f"The tool said: {messages[-1].tool_results[0].content}"}]

    provider = ScriptedProvider([[{"tool_call": {"name": "clock", "args": {}}}], echo])
    messages = [Message.user("What time is it?")]

    await run_turn(provider, messages)

    assert messages[-1].text == "The tool said: result of clock"
    assert seen == [["user", "assistant", "tool"]]


async def test_pacing_sleeps_for_the_characters_streamed(monkeypatch: pytest.MonkeyPatch) -> None:
    sleeps: list[float] = []
    real_sleep = asyncio.sleep

    async def recording_sleep(delay: float, *args: Any) -> None:
        sleeps.append(delay)
        await real_sleep(0)

    monkeypatch.setattr(asyncio, "sleep", recording_sleep)
    text = "x" * 300
    provider = ScriptedProvider([[{"text": text}]], chars_per_second=100)

    events, _ = await respond(provider, [Message.user("go")])

    deltas = [e for e in events if isinstance(e, TextDelta)]
    assert len(deltas) == 100  # 3 characters per tick at 100 chars/s
    assert sum(sleeps) == pytest.approx(3.0)


async def test_unpaced_streams_many_small_deltas() -> None:
    provider = ScriptedProvider([[{"text": "abcdefghij"}]])

    events, _ = await respond(provider, [Message.user("go")])

    assert [e.text for e in events if isinstance(e, TextDelta)] == ["abcd", "efgh", "ij"]


async def test_cancel_stops_an_unpaced_stream_promptly() -> None:
    provider = ScriptedProvider([[{"text": "y" * 400_000}]])
    started = asyncio.Event()
    seen = 0

    async def consume() -> None:
        nonlocal seen
        async for _ in provider.stream(ModelRequest("", [Message.user("go")])):
            seen += 1
            started.set()

    task = asyncio.create_task(consume())
    await started.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert seen < 100  # of 100,000 deltas: the cancel landed at the next yield point


def test_usage_type_is_the_shared_one() -> None:
    assert isinstance(Usage(), neta_nb.Usage)


async def test_a_negative_usage_in_a_script_is_unknown_as_from_a_server() -> None:
    provider = ScriptedProvider([[{"text": "Hi."}, {"usage": {"output_tokens": -1_000_000}}]])
    failing = ScriptedProvider([[{"text": "Half"}, {"usage": {"cache_read_tokens": -1}},
                                 {"error": {"message": "overloaded"}}]])

    events, assembler = await respond(provider, [Message.user("go")])

    assert events[-2] == UsageUpdate(None, "output_tokens=-1000000")
    assert assembler.usage is None
    with pytest.raises(ProviderError) as caught:
        await respond(failing, [Message.user("go")])
    assert caught.value.usage is None
