"""The script format of the offline model (:class:`~neta_nb.providers.ScriptedProvider`):
a script is a list of responses, each a list of steps — thinking, text, a tool call, a
usage override or an error — written as plain dicts or these models; a response may
also be a function of the conversation. The built-in demos are written in it."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, Literal, TypeAlias

from pydantic import BaseModel, ConfigDict, Field, model_validator

from ...messages import Message

__all__ = ["ErrorStep", "ResponseBuilder", "Script", "ScriptError", "ScriptToolCall",
           "ScriptedResponse", "Step", "TextStep", "ThinkingStep", "ToolCallStep",
           "UsageOverride", "UsageStep", "current_turn"]


class _Step(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)


class ThinkingStep(_Step):
    thinking: str


class TextStep(_Step):
    text: str


class ScriptToolCall(_Step):
    name: str
    args: dict[str, Any] = Field(default_factory=dict)
    id: str | None = None
    """Fixed id; by default ``call_<turn>_<response>_<n>``, unique in a conversation."""


class ToolCallStep(_Step):
    tool_call: ScriptToolCall


class UsageOverride(_Step):
    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_read_tokens: int | None = None
    cache_write_tokens: int | None = None
    thinking_tokens: int | None = None


class UsageStep(_Step):
    usage: UsageOverride


class ScriptError(_Step):
    message: str = "The scripted model failed."
    retryable: bool = True
    status_code: int | None = None


class ErrorStep(_Step):
    error: ScriptError


Step = ThinkingStep | TextStep | ToolCallStep | UsageStep | ErrorStep


class ScriptedResponse(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    steps: list[Step]
    stop_reason: str | None = None
    """Default: ``tool_use`` when the response calls a tool, else ``end_turn``."""

    @model_validator(mode="before")
    @classmethod
    def _from_bare_steps(cls, value: Any) -> Any:
        # A response may be written as just its list of steps.
        return {"steps": value} if isinstance(value, list) else value


ResponseBuilder: TypeAlias = Callable[[Sequence[Message]], Any]
"""A response computed from the conversation the request carries; it returns a
:class:`ScriptedResponse` or anything that validates as one (a bare list of steps)."""


class Script(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)

    responses: list[ScriptedResponse | ResponseBuilder]
    on_exhausted: Literal["finish", "cycle"] = "finish"
    closing_text: str = "That is everything I had planned for this request."

    @classmethod
    def coerce(cls, value: Script | Mapping[str, Any] | Sequence[Any]) -> Script:
        """A script from a :class:`Script`, its dict form, or a bare list of responses
        (each a list of step dicts or a :class:`ScriptedResponse`)."""
        if isinstance(value, Script):
            return value
        if isinstance(value, Mapping):
            return cls.model_validate(value)
        return cls.model_validate({"responses": list(value)})


def current_turn(messages: Sequence[Message]) -> tuple[Message | None, list[Message]]:
    """The user prompt that started the conversation's current turn (None if there is
    none) and the messages after it.

    Messages the runtime injects (a compaction summary, the preserved plan) are not
    prompts: the turn they sit in goes on."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        if message.role == "user" and not message.metadata.compacted:
            return message, list(messages[index + 1:])
    return None, list(messages)
