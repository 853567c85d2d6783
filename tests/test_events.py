"""Tests for neta_nb.events: every event and command parses from JSON with the exact field
names of DESIGN §4, and malformed input is rejected."""

from __future__ import annotations

import json
import typing
from typing import Any

import pytest
from pydantic import BaseModel, ValidationError

from neta_nb import events
from neta_nb.events import (
    ApproveCommand,
    ContextUsage,
    SetThinkingLevelCommand,
    ThinkingDeltaEvent,
    TokenEvent,
    TokenUpdateEvent,
    TurnUsage,
    parse_command,
    parse_event,
    thinking_delta_event,
    token_event,
)
from neta_nb.messages import Message, TextPart

# One complete example per event type, written as a UI would receive it.
_MESSAGE = Message(id="m_1", role="user", parts=[TextPart(text="Profile sales.csv")],
                   created_at=1764633600.0)

EVENT_EXAMPLES: dict[str, dict[str, Any]] = {
    "token": {"type": "token", "text": "Hel"},
    "thinking_delta": {"type": "thinking_delta", "text": "Let me see"},
    "thinking_done": {"type": "thinking_done"},
    "tool_call": {"type": "tool_call", "id": "c1", "name": "search", "label": "Search",
                  "args": {"q": "jupyter", "n": 3}},
    "tool_result": {"type": "tool_result", "id": "c1", "name": "search", "result": "3 hits",
                    "is_error": False,
                    "outputs": [{"type": "display", "media_type": "text/html",
                                 "data": None, "sha256": None, "name": None, "size": 9,
                                 "width": 0, "height": 0, "text": "<b>3</b> h"}]},
    "skill_start": {"type": "skill_start", "id": "s1", "name": "report",
                    "label": "Write report"},
    "progress": {"type": "progress", "id": "s1", "percent": 42.5, "step": "render",
                 "detail": "page 2 of 5"},
    "skill_end": {"type": "skill_end", "id": "s1", "name": "report", "status": "done",
                  "result": "report.pdf"},
    "todo_update": {"type": "todo_update",
                    "todos": [{"id": "1", "content": "Plan", "status": "in_progress"}],
                    "summary": {"total": 1, "pending": 0, "in_progress": 1, "completed": 0,
                                "cancelled": 0}},
    "token_update": {"type": "token_update",
                     "current": {"input_tokens": 1200, "output_tokens": 340,
                                 "total_tokens": 1540, "api_calls": 3,
                                 "unreported_calls": 1, "cost_usd": 0.0087,
                                 "cost_split": {"input": 0.0036, "output": 0.0051},
                                 "session_cost_usd": 0.0412},
                     "context": {"used_tokens": 64000, "max_tokens": 200000,
                                 "percent": 32.0, "estimate": "compaction",
                                 "window_assumed": False}},
    "approval_request": {"type": "approval_request", "id": "c2", "name": "shell",
                         "args": {"cmd": "ls"},
                         "proposal": {"kind": "edit", "cell_id": "a1", "before": "x = 1",
                                      "after": "x = 2", "diff": ["-x = 1", "+x = 2"]},
                         "preview": {"code": "ls", "language": "shell", "cell_id": None,
                                     "cell_label": None, "cut": 0, "summary": "",
                                     "cells": [{"cell_id": "a1", "cell_label": "[1]",
                                                "first_line": "x = 1"}],
                                     "cells_left_out": 0}},
    "compaction": {"type": "compaction", "tokens_before": 150000, "tokens_after": 20000,
                   "messages_folded": 40},
    "done": {"type": "done", "stop_reason": "end_turn"},
    "error": {"type": "error", "message": "overloaded", "retryable": True},
    "warning": {"type": "warning", "message": "Not saved yet: the disk is full — retrying.",
                "code": "store_behind_disk_full", "params": {}, "cleared": False},
    "subagent_start": {"type": "subagent_start", "id": "c3", "agent": "researcher",
                       "task": "Find the release date"},
    "subagent_event": {"type": "subagent_event", "id": "c3",
                       "event": {"type": "token", "text": "It was"}},
    "subagent_end": {"type": "subagent_end", "id": "c3", "agent": "researcher",
                     "status": "done", "result": "2024-05-01",
                     "usage": {"input_tokens": 10, "output_tokens": 4, "total_tokens": 14,
                               "api_calls": 1, "unreported_calls": 0, "cost_usd": None,
                               "cost_split": None, "session_cost_usd": None}},
    "turn_start": {"type": "turn_start"},
    "message_appended": {"type": "message_appended", "index": 0,
                         "message": _MESSAGE.model_dump(mode="json")},
    "message_updated": {"type": "message_updated", "index": 0,
                        "message": _MESSAGE.model_dump(mode="json")},
}

# DESIGN §4, verbatim: the fields of each event besides `type`.
DESIGN_FIELDS: dict[str, set[str]] = {
    "token": {"text"},
    "thinking_delta": {"text"},
    "thinking_done": set(),
    "tool_call": {"id", "name", "label", "args"},
    "tool_result": {"id", "name", "result", "is_error", "outputs"},
    "skill_start": {"id", "name", "label"},
    "progress": {"id", "percent", "step", "detail"},
    "skill_end": {"id", "name", "status", "result"},
    "todo_update": {"todos", "summary"},
    "token_update": {"current", "context"},
    "approval_request": {"id", "name", "args"},
    "compaction": {"tokens_before", "tokens_after", "messages_folded"},
    "done": {"stop_reason"},
    "error": {"message", "retryable"},
    "warning": {"message"},  # DESIGN §8
    "subagent_start": {"id", "agent", "task"},  # DESIGN §8
    "subagent_event": {"id", "event"},
    "subagent_end": {"id", "agent", "status", "result", "usage"},
    # DESIGN §4: the stream is complete (the history events)
    "turn_start": set(),
    "message_appended": {"index", "message"},
    "message_updated": {"index", "message"},
}

# Fields beyond the design's, each with a default, so an event of the design's own shape
# still parses (see test_an_event_of_the_design_shape_parses).
EXTENSION_FIELDS: dict[str, set[str]] = {
    "warning": {"code", "params", "cleared"},
    # A proposed notebook edit waiting for the user's decision (the notebook tools), and
    # what a call will run as its tool shows it (Tool.approval_preview).
    "approval_request": {"proposal", "preview"},
}

COMMAND_EXAMPLES: dict[str, dict[str, Any]] = {
    "send": {"type": "send", "text": "hello"},
    "stop": {"type": "stop", "subagent": "c3"},
    "set_thinking_level": {"type": "set_thinking_level", "level": "high"},
    "approve": {"type": "approve", "id": "c2", "decision": "allow_once", "subagent": ["d1"],
                "text": "x = 3"},
}

COMMAND_FIELDS: dict[str, set[str]] = {
    "send": {"text"},
    "stop": {"subagent"},
    "set_thinking_level": {"level"},
    "approve": {"id", "decision", "subagent", "text"},
}


def union_members(annotated: Any) -> list[type[BaseModel]]:
    union = typing.get_args(annotated)[0]
    return list(typing.get_args(union))


def type_tag(model: type[BaseModel]) -> str:
    (tag,) = typing.get_args(model.model_fields["type"].annotation)
    return str(tag)


def test_the_event_union_holds_exactly_the_design_events() -> None:
    assert sorted(type_tag(m) for m in union_members(events.Event)) == sorted(DESIGN_FIELDS)


def test_the_command_union_holds_exactly_the_design_commands() -> None:
    assert sorted(type_tag(m) for m in union_members(events.Command)) == sorted(COMMAND_FIELDS)


def test_event_classes_are_final() -> None:
    """The delta path tells kinds by ``type(event) is …`` (see the events module): an
    event subclass would slip past every such test."""
    assert [m.__name__ for m in union_members(events.Event) if m.__subclasses__()] == []


@pytest.mark.parametrize("model", union_members(events.Event), ids=type_tag)
def test_event_fields_are_the_design_names(model: type[BaseModel]) -> None:
    tag = type_tag(model)
    assert set(model.model_fields) == ({"type"} | DESIGN_FIELDS[tag]
                                       | EXTENSION_FIELDS.get(tag, set()))


@pytest.mark.parametrize("tag", sorted(EXTENSION_FIELDS))
def test_an_event_of_the_design_shape_parses(tag: str) -> None:
    design_only = {key: value for key, value in EVENT_EXAMPLES[tag].items()
                   if key not in EXTENSION_FIELDS[tag]}
    assert type_tag(type(parse_event(design_only))) == tag


@pytest.mark.parametrize("model", union_members(events.Command), ids=type_tag)
def test_command_fields_are_the_design_names(model: type[BaseModel]) -> None:
    assert set(model.model_fields) == {"type"} | COMMAND_FIELDS[type_tag(model)]


def test_token_update_nested_field_names() -> None:
    assert set(TurnUsage.model_fields) == {"input_tokens", "output_tokens", "total_tokens",
                                           "api_calls", "unreported_calls", "cost_usd",
                                           "cost_split", "session_cost_usd"}
    assert set(ContextUsage.model_fields) == {"used_tokens", "max_tokens", "percent",
                                              "estimate", "window_assumed"}


def test_token_update_of_an_older_sender_still_parses() -> None:
    # The fields added for unreported usage have defaults that mean "as before": reported
    # figures, a known window.
    event = parse_event({"type": "token_update",
                         "current": {"input_tokens": 1, "output_tokens": 2, "total_tokens": 3,
                                     "api_calls": 1},
                         "context": {"used_tokens": 3, "max_tokens": 100, "percent": 3.0}})
    assert isinstance(event, TokenUpdateEvent)
    assert event.current.unreported_calls == 0
    assert event.context.estimate is None and event.context.window_assumed is False


@pytest.mark.parametrize("name", sorted(EVENT_EXAMPLES))
def test_every_event_parses_from_json_text_bytes_and_dict(name: str) -> None:
    data = EVENT_EXAMPLES[name]
    from_text = parse_event(json.dumps(data))
    assert type_tag(type(from_text)) == name
    assert parse_event(json.dumps(data).encode()) == from_text
    assert parse_event(data) == from_text
    # Nothing is lost: dumping gives back exactly what was sent.
    assert from_text.model_dump(mode="json") == data
    assert parse_event(from_text.model_dump_json()) == from_text


def test_token_update_parses_into_nested_models() -> None:
    event = parse_event(EVENT_EXAMPLES["token_update"])
    assert isinstance(event, TokenUpdateEvent)
    assert event.current == TurnUsage(input_tokens=1200, output_tokens=340, total_tokens=1540,
                                      api_calls=3, unreported_calls=1, cost_usd=0.0087,
                                      cost_split={"input": 0.0036, "output": 0.0051},
                                      session_cost_usd=0.0412)
    assert event.context.percent == 32.0


@pytest.mark.parametrize(("data", "expected"), [
    ({"type": "tool_result", "id": "c", "name": "n", "result": "r"}, {"is_error": False}),
    ({"type": "progress", "id": "s", "percent": 5}, {"step": None, "detail": None}),
    ({"type": "skill_end", "id": "s", "name": "n", "status": "error"}, {"result": None}),
    ({"type": "error", "message": "m"}, {"retryable": False}),
])
def test_optional_fields_default(data: dict[str, Any], expected: dict[str, Any]) -> None:
    dumped = parse_event(data).model_dump()
    assert {key: dumped[key] for key in expected} == expected


@pytest.mark.parametrize(("data", "message"), [
    ({"text": "no type"}, "Unable to extract tag using discriminator 'type'"),
    ({"type": "thinking", "text": "retired event"}, "does not match any of the expected tags"),
    ({"type": "TOKEN", "text": "wrong case"}, "does not match any of the expected tags"),
    ({"type": "send", "text": "a command is not an event"},
     "does not match any of the expected tags"),
])
def test_discriminator_errors(data: dict[str, Any], message: str) -> None:
    with pytest.raises(ValidationError, match=message):
        parse_event(data)


@pytest.mark.parametrize("data", [
    {"type": "token"},                                            # missing field
    {"type": "token", "text": "a", "extra": 1},                   # unknown field
    {"type": "token", "text": 5},                                 # wrong type
    {"type": "skill_end", "id": "s", "name": "n", "status": "running"},
    {"type": "token_update", "current": {"input_tokens": 1, "bogus": 2},
     "context": {}},
    {"type": "todo_update", "todos": [{"id": 1}], "summary": {}},
    {"type": "thinking_done", "text": ""},
])
def test_malformed_events_are_rejected(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_event(data)


def test_invalid_json_is_rejected() -> None:
    with pytest.raises(ValidationError, match="Invalid JSON"):
        parse_event('{"type": "token", "text": ')


def test_events_are_frozen() -> None:
    event = parse_event(EVENT_EXAMPLES["token"])
    assert isinstance(event, events.TokenEvent)
    with pytest.raises(ValidationError, match="frozen"):
        event.text = "changed"  # type: ignore[misc]


def test_events_have_their_type_by_default() -> None:
    assert events.DoneEvent(stop_reason="end_turn").type == "done"
    assert events.ThinkingDoneEvent().model_dump() == {"type": "thinking_done"}


# --- commands -------------------------------------------------------------------------------


@pytest.mark.parametrize("name", sorted(COMMAND_EXAMPLES))
def test_every_command_parses(name: str) -> None:
    data = COMMAND_EXAMPLES[name]
    command = parse_command(json.dumps(data))
    assert type_tag(type(command)) == name
    assert parse_command(data) == command
    assert parse_command(json.dumps(data).encode()) == command
    assert command.model_dump(mode="json") == data


@pytest.mark.parametrize("level", ["off", "minimal", "low", "medium", "high", "adaptive"])
def test_set_thinking_level_accepts_every_level(level: str) -> None:
    command = parse_command({"type": "set_thinking_level", "level": level})
    assert isinstance(command, SetThinkingLevelCommand)
    assert command.level == level


@pytest.mark.parametrize("decision", ["allow_once", "allow_always", "reject"])
def test_approve_accepts_every_decision(decision: str) -> None:
    command = parse_command({"type": "approve", "id": "c", "decision": decision})
    assert isinstance(command, ApproveCommand)
    assert command.decision == decision


@pytest.mark.parametrize("data", [
    {"type": "set_thinking_level", "level": "max"},
    {"type": "set_thinking_level"},
    {"type": "approve", "id": "c", "decision": "allow"},
    {"type": "send"},
    {"type": "stop", "now": True},
    {"type": "token", "text": "an event is not a command"},
    {"level": "high"},
])
def test_malformed_commands_are_rejected(data: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        parse_command(data)


def test_a_grandchild_event_parses_wrapped_twice_and_round_trips() -> None:
    data = {"type": "subagent_event", "id": "c1",
            "event": {"type": "subagent_event", "id": "c2",
                      "event": {"type": "tool_call", "id": "t1", "name": "search",
                                "label": "Search", "args": {"q": "x"}}}}
    parsed = parse_event(data)
    assert isinstance(parsed, events.SubagentEvent)
    assert isinstance(parsed.event, events.SubagentEvent)
    assert isinstance(parsed.event.event, events.ToolCallEvent)
    assert json.loads(parsed.model_dump_json()) == data
    with pytest.raises(ValidationError):
        parse_event({"type": "subagent_event", "id": "c1", "event": {"type": "nope"}})


@pytest.mark.parametrize(("fast", "validated"), [
    (token_event("abc"), TokenEvent(text="abc")),
    (token_event(""), TokenEvent(text="")),
    (thinking_delta_event("hm ✓"), ThinkingDeltaEvent(text="hm ✓")),
])
def test_a_prevalidated_delta_event_is_the_validated_event(fast: Any, validated: Any) -> None:
    assert type(fast) is type(validated) and fast == validated
    assert fast.model_dump_json() == validated.model_dump_json()
    assert fast.model_dump(exclude_unset=True) == validated.model_dump(exclude_unset=True)
    assert fast.model_fields_set == validated.model_fields_set
    assert repr(fast) == repr(validated) and hash(fast) == hash(validated)
    with pytest.raises(ValidationError):
        fast.text = "changed"
    assert parse_event(fast.model_dump_json()) == validated
