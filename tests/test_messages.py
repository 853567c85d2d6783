"""Tests for neta_nb.messages: lossless JSON round trips, usage arithmetic and views."""

from __future__ import annotations

import json

import pytest
from pydantic import ValidationError

from neta_nb.messages import (
    Message,
    MessageMetadata,
    SkillExecution,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    ToolExecution,
    ToolResultPart,
    Usage,
    dump_messages,
    load_messages,
    new_id,
)


def full_history() -> list[Message]:
    """One message of every kind, every part type and every metadata field set."""
    usage = Usage(input_tokens=1200, output_tokens=340, cache_read_tokens=800,
                  cache_write_tokens=64, thinking_tokens=120)
    return [
        Message.user("Plan the release, 中文 too ✓"),
        Message(
            id="m_assistant",
            role="assistant",
            created_at=1_764_000_000.123456,
            parts=[
                ThinkingPart(text="First, think.", signature="sig-abc"),
                TextPart(text="Let me plan."),
                ThinkingPart(redacted_data="ENCRYPTED=="),
                ThinkingPart(text="Then think again."),
                ToolCallPart(id="call_1", name="todo",
                             args={"todos": [{"id": "1", "content": "x",
                                              "status": "pending"}], "merge": False}),
                ToolCallPart(id="call_2", name="search", raw_args="{not json"),
            ],
            metadata=MessageMetadata(
                usage=usage,
                model="anthropic:claude-sonnet-4-6",
                stop_reason="tool_use",
                interrupted="cancelled",
                error="stream cut",
                skill_executions=[SkillExecution(
                    id="s1", name="report", label="Write report", status="done",
                    percent=100.0, step="render", detail="page 3", result="ok")],
                tool_executions=[ToolExecution(
                    id="call_2", name="search", label="Search", args={"q": "a"},
                    status="error", result="bad arguments")],
                compacted=True,
            ),
        ),
        Message.tool_result("call_1", "todo", '{"todos": []}'),
        Message.tool_result("call_2", "search", "invalid JSON", is_error=True),
    ]


def test_round_trip_is_lossless() -> None:
    history = full_history()
    text = dump_messages(history)
    loaded = load_messages(text)
    assert loaded == history
    assert dump_messages(loaded) == text
    assert load_messages(text.encode()) == history


def test_round_trip_keeps_part_order_and_types() -> None:
    loaded = load_messages(dump_messages(full_history()))
    assert [type(p) for p in loaded[1].parts] == [
        ThinkingPart, TextPart, ThinkingPart, ThinkingPart, ToolCallPart, ToolCallPart]
    assert isinstance(loaded[2].parts[0], ToolResultPart)


def test_dumped_json_uses_type_discriminators() -> None:
    data = json.loads(dump_messages(full_history()))
    assert [p["type"] for p in data[1]["parts"]] == [
        "thinking", "text", "thinking", "thinking", "tool_call", "tool_call"]
    assert data[2]["parts"][0] == {"type": "tool_result", "tool_call_id": "call_1",
                                   "name": "todo", "content": '{"todos": []}',
                                   "is_error": False, "images": []}


def test_unknown_fields_and_part_types_are_rejected() -> None:
    with pytest.raises(ValidationError):
        load_messages('[{"role": "user", "parts": [{"type": "image", "url": "x"}]}]')
    with pytest.raises(ValidationError):
        load_messages('[{"role": "user", "surprise": 1}]')
    with pytest.raises(ValidationError):
        load_messages('[{"role": "system"}]')


def test_constructors() -> None:
    user = Message.user("hi")
    assert (user.role, user.parts) == ("user", [TextPart(text="hi")])
    assistant = Message.assistant([TextPart(text="a")], model="m", stop_reason="end_turn")
    assert assistant.role == "assistant"
    assert assistant.metadata == MessageMetadata(model="m", stop_reason="end_turn")
    tool = Message.tool_result("c1", "search", "result", is_error=True)
    assert tool.role == "tool"
    assert tool.parts == [ToolResultPart(tool_call_id="c1", name="search", content="result",
                                         is_error=True)]


def test_ids_are_unique_and_prefixed() -> None:
    assert new_id("m_").startswith("m_")
    assert len(new_id()) == 16
    assert len({new_id() for _ in range(1000)}) == 1000
    assert Message.user("a").id != Message.user("a").id
    assert Message.user("a").id.startswith("m_")


def test_metadata_defaults_are_not_shared() -> None:
    first, second = Message.user("a"), Message.user("b")
    first.metadata.skill_executions.append(SkillExecution(id="s", name="n", label="l"))
    assert second.metadata.skill_executions == []
    assert MessageMetadata().tool_executions is not MessageMetadata().tool_executions


# --- Usage ------------------------------------------------------------------------------


def test_usage_totals() -> None:
    usage = Usage(input_tokens=100, output_tokens=40, cache_read_tokens=1000,
                  cache_write_tokens=20, thinking_tokens=30)
    assert usage.total_tokens == 140
    assert usage.context_tokens == 1120
    assert Usage().total_tokens == 0
    assert Usage().context_tokens == 0


def test_usage_addition_adds_every_field() -> None:
    a = Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3, cache_write_tokens=4,
              thinking_tokens=5)
    b = Usage(input_tokens=10, output_tokens=20, cache_read_tokens=30, cache_write_tokens=40,
              thinking_tokens=50)
    assert a + b == Usage(input_tokens=11, output_tokens=22, cache_read_tokens=33,
                          cache_write_tokens=44, thinking_tokens=55)
    assert a + Usage() == a
    assert sum([a, b, a], Usage()) == Usage(input_tokens=12, output_tokens=24,
                                            cache_read_tokens=36, cache_write_tokens=48,
                                            thinking_tokens=60)
    # Addition makes a new value; the operands stay as they were.
    assert a == Usage(input_tokens=1, output_tokens=2, cache_read_tokens=3,
                      cache_write_tokens=4, thinking_tokens=5)


def test_usage_serialises_its_fields_only() -> None:
    assert Usage(input_tokens=1).model_dump() == {
        "input_tokens": 1, "output_tokens": 0, "cache_read_tokens": 0,
        "cache_write_tokens": 0, "thinking_tokens": 0}


# --- views ----------------------------------------------------------------------------


def test_text_joins_text_parts_only() -> None:
    message = full_history()[1]
    assert message.text == "Let me plan."
    two = Message.assistant([TextPart(text="a"), ThinkingPart(text="t"), TextPart(text="b")])
    assert two.text == "ab"
    assert Message(role="assistant").text == ""


def test_thinking_joins_non_empty_thinking_with_blank_lines() -> None:
    assert full_history()[1].thinking == "First, think.\n\nThen think again."
    assert Message.user("x").thinking == ""


def test_tool_call_and_result_views() -> None:
    history = full_history()
    assert [c.id for c in history[1].tool_calls] == ["call_1", "call_2"]
    assert history[1].tool_calls[1].args == {}
    assert history[1].tool_calls[1].raw_args == "{not json"
    assert history[1].tool_results == []
    assert [r.tool_call_id for r in history[2].tool_results] == ["call_1"]


def test_tool_name() -> None:
    history = full_history()
    assert history[2].tool_name == "todo"
    assert history[3].tool_name == "search"
    assert history[0].tool_name is None
    assert history[1].tool_name is None


def test_tool_definition() -> None:
    definition = ToolDefinition(name="t", description="d", parameters={"type": "object"})
    assert ToolDefinition.model_validate_json(definition.model_dump_json()) == definition
    with pytest.raises(ValidationError):
        ToolDefinition(name="t", description="d")  # type: ignore[call-arg]
