"""OpenAI, DeepSeek and any OpenAI-compatible server through streaming Chat Completions
(``pip install 'neta-nb[openai]'``).

This module is the only importer of the ``openai`` SDK besides :mod:`.openai_fim` (inline
completion's fill-in-the-middle call). One class serves three suppliers:

* ``openai``: ``OPENAI_API_KEY`` / ``OPENAI_BASE_URL``.
* ``deepseek``: ``DEEPSEEK_API_KEY`` / ``DEEPSEEK_BASE_URL`` (default DeepSeek's public API).
* ``openai-compatible``: Ollama, vLLM, llama.cpp server, LM Studio… ``base_url`` (or
  ``OPENAI_BASE_URL``) is required; the key may be a placeholder, local servers ignore it.

Streaming: text deltas as they come; reasoning deltas (``reasoning_content`` from
DeepSeek and vLLM, ``reasoning`` from Ollama and others) as thinking, closed with an
unsigned thinking end when the answer or a tool call starts; tool calls assembled by
their ``index`` across chunks (parallel calls interleave) and reported when the choice
finishes; usage from the final ``stream_options.include_usage`` chunk, with cached prompt
tokens split out so ``input + cache_read`` is the prompt.

The stream counts as complete once the choice reports a ``finish_reason``. The usage
chunk after it is optional (some compatible servers never send one); a stream that ends
before a ``finish_reason`` raises a retryable :class:`ProviderError` with what streamed.

DeepSeek's thinking mode wants ``reasoning_content`` back, but only within a user turn
that used tools: its documentation says reasoning from a turn that called tools must be
sent back in every later request, while reasoning from a turn without tool calls is
ignored. So for ``deepseek`` (and when ``send_reasoning_content=True``) every assistant
message of a user turn that contains a tool call carries its reasoning; others do not.
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

try:
    import httpx2
    import openai
    from openai.types import CompletionUsage
    from openai.types.chat import ChatCompletionChunk
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("The OpenAI provider needs the openai SDK: "
                      "pip install 'neta-nb[openai]'") from error

from ..messages import (
    DocumentPart,
    FileTextPart,
    ImagePart,
    MentionPart,
    Message,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    unseen_images_text,
)
from ..thinking import build_thinking_params
from ._call_kwargs import merge_params
from ._tool_arguments import parse_tool_arguments
from .base import (
    ModelRequest,
    Provider,
    ProviderError,
    StreamDone,
    StreamedSoFar,
    StreamEvent,
    TextDelta,
    ThinkingDelta,
    ThinkingEnd,
    ToolCallReady,
    UnusableUsage,
    UsageUpdate,
    connection_error,
    usage_count,
)
from .endpoints import VENDOR_URLS

__all__ = ["DEEPSEEK_BASE_URL", "OpenAIProvider", "to_openai_messages"]

log = logging.getLogger(__name__)

DEEPSEEK_BASE_URL = VENDOR_URLS["deepseek"]
LOCAL_SERVER_KEY = "not-needed"
"""Sent to OpenAI-compatible servers given no key: the SDK insists on one, they ignore it."""

_VENDORS = {"openai": "OpenAI", "deepseek": "DeepSeek",
            "openai-compatible": "OpenAI-compatible server"}
"""The suppliers this provider serves, each with how an error names who failed."""
_SUPPLIERS = tuple(_VENDORS)
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_FATAL_STREAM_ERROR_TYPES = frozenset({"invalid_request_error", "authentication_error",
                                       "permission_error", "not_found_error"})
_FINISH_REASONS = {"stop": "end_turn", "tool_calls": "tool_use", "function_call": "tool_use",
                   "length": "max_tokens", "content_filter": "refusal"}
_REASONING_FIELDS = ("reasoning_content", "reasoning")


class OpenAIProvider(Provider):
    """Chat Completions models of ``supplier`` (``openai``, ``deepseek`` or
    ``openai-compatible``)."""

    def __init__(self, model: str, *, supplier: str = "openai", api_key: str | None = None,
                 base_url: str | None = None, max_tokens: int | None = None,
                 max_retries: int = 3, timeout: float = 600.0,
                 send_reasoning_content: bool | None = None,
                 context_window: int | None = None,
                 request_options: Mapping[str, Any] | None = None,
                 tool_results_as_user: bool = False) -> None:
        if supplier not in _SUPPLIERS:
            raise ValueError(f"unknown supplier {supplier!r} for OpenAIProvider; "
                             f"expected one of {', '.join(_SUPPLIERS)}")
        self.supplier = supplier
        self.model = model
        self.max_tokens = max_tokens
        self.send_reasoning_content = (supplier == "deepseek" if send_reasoning_content is None
                                       else send_reasoning_content)
        key, url = _credentials(supplier, api_key, base_url)
        self.base_url = url
        self.context_window = context_window
        self.request_options = dict(request_options or {})
        self.tool_results_as_user = tool_results_as_user
        self._window_asked = False
        # The key lives only inside the SDK client; this object's repr never shows it.
        self._client = openai.AsyncOpenAI(api_key=key, base_url=url, max_retries=max_retries,
                                          timeout=timeout, http_client=self._http_client())

    def _http_client(self) -> openai.DefaultAsyncHttpxClient:
        """The SDK's own default client, waiting for :meth:`before_request` before each
        request and telling :meth:`heard_response` of each response (a 429 reaches a
        batch run's limiter before the SDK retries it)."""
        return openai.DefaultAsyncHttpxClient(event_hooks=self.http_event_hooks())

    def rebuild_options(self) -> dict[str, Any] | None:
        if type(self) is not OpenAIProvider:  # a subclass may hold more: sent pickled
            return None
        return {"api_key": self._client.api_key, "max_tokens": self.max_tokens,
                "send_reasoning_content": self.send_reasoning_content,
                "max_retries": self._client.max_retries, "timeout": self._client.timeout}

    def request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of the ``chat.completions.create`` call for ``request``."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "messages": to_openai_messages(request.system_prompt, request.messages,
                                           send_reasoning_content=self.send_reasoning_content,
                                           tool_results_as_user=self.tool_results_as_user,
                                           vision=self.info.supports("vision")),
            "stream_options": {"include_usage": True},
        }
        if request.tools:
            kwargs["tools"] = [{"type": "function", "function": {
                "name": tool.name, "description": tool.description,
                "parameters": tool.parameters}} for tool in request.tools]
        max_tokens = request.max_tokens or self.max_tokens
        if max_tokens:
            # OpenAI's reasoning models reject `max_tokens`; compatible servers and DeepSeek
            # know only `max_tokens`.
            key = "max_completion_tokens" if self.supplier == "openai" else "max_tokens"
            kwargs[key] = max_tokens
        thinking = build_thinking_params(self.supplier, self.model, request.think_level)
        create = self._client.chat.completions.create
        return merge_params(merge_params(kwargs, thinking, create), self.request_options,
                            create)

    async def discover_context_window(self) -> None:
        """For an ``openai-compatible`` model the table does not know and no
        ``context_window`` was given: ask the server once (see :mod:`.window_discovery`)."""
        if (self._window_asked or self.supplier != "openai-compatible"
                or self.context_window is not None or not self.info.assumed
                or self.base_url is None):
            return
        self._window_asked = True
        from .window_discovery import discover_context_window

        try:
            found = await discover_context_window(self.base_url, self.model,
                                                  api_key=self._client.api_key)
        except Exception:  # discovery never fails a session
            log.debug("context window discovery failed", exc_info=True)
            return
        if found is not None:
            log.info("%s: context window %d tokens (%s)", self.model_id, found.tokens,
                     found.source)
            self.discovered_context_window = found.tokens

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        kwargs = self.request_kwargs(request)
        streamed = StreamedSoFar()
        try:
            stream = await self._client.chat.completions.create(**kwargs, stream=True)
        except (openai.OpenAIError, httpx2.HTTPError) as error:
            raise _provider_error(error, streamed, started=False, supplier=self.supplier,
                                  base_url=self.base_url) from error

        reader = _ChunkReader()
        try:
            async with stream:
                async for chunk in stream:
                    for event in reader.read(chunk):
                        streamed.events.append(event)
                        yield event
        except (openai.OpenAIError, httpx2.HTTPError) as error:
            raise _provider_error(error, streamed, started=True, supplier=self.supplier,
                                  base_url=self.base_url, usage=reader.usage) from error
        if reader.finish_reason is None:
            raise ProviderError("OpenAI-compatible stream ended before a finish_reason",
                                retryable=True, partial=streamed.parts(),
                                usage=reader.usage)
        yield StreamDone(_FINISH_REASONS.get(reader.finish_reason, reader.finish_reason))


def _credentials(supplier: str, api_key: str | None,
                 base_url: str | None) -> tuple[str | None, str | None]:
    if supplier == "deepseek":
        key = api_key or os.environ.get("DEEPSEEK_API_KEY") or None
        if key is None:
            # Given no key, the SDK would send OPENAI_API_KEY — OpenAI's key, to DeepSeek.
            raise ValueError("a deepseek provider needs DEEPSEEK_API_KEY (or api_key=); "
                             "OPENAI_API_KEY is OpenAI's key and is not sent to DeepSeek")
        return key, base_url or os.environ.get("DEEPSEEK_BASE_URL") or DEEPSEEK_BASE_URL
    key = api_key or os.environ.get("OPENAI_API_KEY") or None
    url = base_url or os.environ.get("OPENAI_BASE_URL") or None
    if supplier == "openai-compatible":
        if url is None:
            raise ValueError("an openai-compatible provider needs base_url (or OPENAI_BASE_URL),"
                             " e.g. http://localhost:11434/v1 for Ollama")
        key = key or LOCAL_SERVER_KEY
    return key, url


class _ToolCallBuffer:
    __slots__ = ("arguments", "call_id", "name")

    def __init__(self) -> None:
        self.call_id = ""
        self.name = ""
        self.arguments: list[str] = []


class _ChunkReader:
    """Turns chat completion chunks into normalised events."""

    __slots__ = ("_calls", "_in_reasoning", "finish_reason", "usage")

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.finish_reason: str | None = None
        self._in_reasoning = False
        self._calls: dict[int, _ToolCallBuffer] = {}

    # Complex on purpose (C901): one branch per kind of streamed chunk field.
    def read(self, chunk: ChatCompletionChunk) -> list[StreamEvent]:  # noqa: C901
        events: list[StreamEvent] = []
        for choice in chunk.choices:
            if choice.index != 0:
                continue
            delta = choice.delta
            reasoning = _reasoning_text(delta)
            if reasoning:
                self._in_reasoning = True
                events.append(ThinkingDelta(reasoning))
            if delta.content or delta.refusal or delta.tool_calls:
                self._end_reasoning(events)
            if delta.content:
                events.append(TextDelta(delta.content))
            if delta.refusal:
                events.append(TextDelta(delta.refusal))
            for position, call in enumerate(delta.tool_calls or ()):
                # Some servers leave out `index` when they send each call whole.
                index = call.index if call.index is not None else len(self._calls) + position
                buffer = self._calls.setdefault(index, _ToolCallBuffer())
                if call.id:
                    buffer.call_id = call.id
                if call.function is not None:
                    if call.function.name:
                        buffer.name = _merged_name(buffer.name, call.function.name)
                    if call.function.arguments:
                        buffer.arguments.append(call.function.arguments)
            if choice.finish_reason is not None:
                self.finish_reason = choice.finish_reason
                self._end_reasoning(events)
                events.extend(self._ready_calls())
        if chunk.usage is not None:
            try:
                self.usage = _usage(chunk.usage)
            except UnusableUsage as error:
                # The last report wins, as for a valid one: a later valid chunk counts.
                self.usage = None
                events.append(UsageUpdate.unknown(error))
            else:
                events.append(UsageUpdate(self.usage))
        return events

    def _end_reasoning(self, events: list[StreamEvent]) -> None:
        if self._in_reasoning:
            self._in_reasoning = False
            events.append(ThinkingEnd())

    def _ready_calls(self) -> list[StreamEvent]:
        ready: list[StreamEvent] = []
        for index in sorted(self._calls):
            buffer = self._calls[index]
            args, raw_args = parse_tool_arguments("".join(buffer.arguments))
            ready.append(ToolCallReady(id=buffer.call_id or f"call_{index}", name=buffer.name,
                                       args=args, raw_args=raw_args))
        self._calls.clear()
        return ready


def _merged_name(so_far: str, piece: str) -> str:
    """The call's name after one more chunk named it. OpenAI sends the name once; some
    servers (llama-cpp-python) send the whole name again in every chunk, others the name
    so far: a name that repeats or extends what came is the name, only a new fragment is
    appended."""
    if piece == so_far or piece.startswith(so_far):
        return piece
    return so_far + piece


def _reasoning_text(delta: object) -> str:
    # Not in the SDK's types: servers add it as an extra field, which the SDK keeps.
    for field_name in _REASONING_FIELDS:
        value = getattr(delta, field_name, None)
        if isinstance(value, str) and value:
            return value
    return ""


def _usage(usage: CompletionUsage) -> Usage:
    """The chunk's usage as :class:`Usage`; raises :class:`UnusableUsage` when a count is
    negative or not a number (see :func:`usage_count`)."""
    prompt = usage_count("prompt_tokens", usage.prompt_tokens)
    details = usage.prompt_tokens_details
    cached = usage_count("cached_tokens", details.cached_tokens) if details is not None else 0
    # DeepSeek reports its cache as extra fields instead of prompt_tokens_details.
    deepseek_hits = usage_count("prompt_cache_hit_tokens",
                                getattr(usage, "prompt_cache_hit_tokens", None))
    if not cached:
        cached = deepseek_hits
    completion = usage.completion_tokens_details
    cache_write = (usage_count("cache_write_tokens", details.cache_write_tokens)
                   if details is not None else 0)
    return Usage(input_tokens=max(prompt - cached - cache_write, 0),
                 output_tokens=usage_count("completion_tokens", usage.completion_tokens),
                 cache_read_tokens=cached, cache_write_tokens=cache_write,
                 thinking_tokens=(usage_count("reasoning_tokens", completion.reasoning_tokens)
                                  if completion else 0))


def _provider_error(error: Exception, streamed: StreamedSoFar, *, started: bool,
                    supplier: str, base_url: str | None,
                    usage: Usage | None = None) -> ProviderError:
    """The one place SDK and transport exceptions become :class:`ProviderError`
    (``supplier`` and ``base_url``: the provider's, for where a connection failed)."""
    partial = streamed.parts()
    if isinstance(error, openai.APIStatusError):
        status = error.status_code
        return ProviderError(f"OpenAI API error {status}: {_detail(error)}",
                             retryable=status in _RETRYABLE_STATUS or status >= 500,
                             status_code=status, partial=partial, usage=usage)
    if isinstance(error, openai.APIConnectionError | httpx2.TransportError):
        return connection_error(_VENDORS[supplier], error, supplier=supplier,
                                base_url=base_url, started=started, partial=partial,
                                usage=usage)
    if isinstance(error, openai.APIError):
        # An error object inside a 200 stream.
        return ProviderError(f"OpenAI stream error: {error.message}",
                             retryable=error.type not in _FATAL_STREAM_ERROR_TYPES,
                             partial=partial, usage=usage)
    return ProviderError(f"OpenAI request failed: {error}", retryable=False, partial=partial,
                         usage=usage)


def _detail(error: openai.APIStatusError) -> str:
    body = error.body
    if isinstance(body, dict):
        inner = body.get("error", body)
        if isinstance(inner, dict) and isinstance(inner.get("message"), str):
            return str(inner["message"])
    return error.message


# --- history mapping -------------------------------------------------------------------


# Complex on purpose (C901): one branch per message and part kind.
def to_openai_messages(system_prompt: str, messages: list[Message], *,  # noqa: C901
                       send_reasoning_content: bool = False,
                       tool_results_as_user: bool = False,
                       vision: bool = True) -> list[dict[str, Any]]:
    """The conversation as Chat Completions ``messages``: the system prompt first, one
    ``tool`` message per result, tool call arguments as JSON text (the model's own text
    when it was not valid JSON).

    ``tool_results_as_user`` sends the results of one step as a single ``user`` message
    instead, each under a line naming the tool and call: for servers whose chat template
    drops ``tool`` messages, so the model would never read a result.

    Images: Chat Completions takes images only in user messages. A user's attached images
    are ``image_url`` parts (data URLs) of their message; the figures tools made follow
    the step's ``tool`` messages as one ``user`` message — a text part naming the call,
    then its ``image_url`` parts. A model without ``vision`` gets, in the tool message and
    in place of each attachment, a line saying what the images were."""
    result: list[dict[str, Any]] = []
    if system_prompt:
        result.append({"role": "system", "content": system_prompt})
    tool_turns = _assistant_messages_in_tool_turns(messages) if send_reasoning_content else set()
    pending_images: list[dict[str, Any]] = []  # figures of the step's results, sent after them

    def flush_images() -> None:
        if pending_images:
            result.append({"role": "user", "content": list(pending_images)})
            pending_images.clear()

    for position, message in enumerate(messages):
        if message.role != "tool":
            flush_images()
        if message.role == "user":
            content = _user_content(message, vision)
            if content:
                result.append({"role": "user", "content": content})
        elif message.role == "tool":
            results = [part for part in message.parts if isinstance(part, ToolResultPart)]
            for part in results:
                if vision and any(image.available for image in part.images):
                    pending_images.append({"type": "text", "text": (
                        f"Images from tool call {part.tool_call_id} ({part.name}):")})
                    pending_images.extend(_image_url(image) for image in part.images
                                          if image.available)
            if tool_results_as_user and results:
                result.append({"role": "user", "content": "\n\n".join(
                    _result_as_text(p, vision) for p in results)})
                continue
            for part in results:
                result.append({"role": "tool", "tool_call_id": part.tool_call_id,
                               "content": _tool_text(part, vision)})
        else:
            entry = _assistant_entry(message, with_reasoning=position in tool_turns)
            if entry is not None:
                result.append(entry)
    flush_images()
    return result


def _image_url(image: ImagePart) -> dict[str, Any]:
    return {"type": "image_url",
            "image_url": {"url": f"data:{image.media_type};base64,{image.data}"}}


def _tool_text(part: ToolResultPart, vision: bool) -> str:
    unseen = [image for image in part.images if not (vision and image.available)]
    if not unseen:
        return part.content
    return f"{part.content}\n\n{unseen_images_text(unseen)}"


def _user_content(message: Message, vision: bool) -> str | list[dict[str, Any]]:
    """Plain text for a prompt without attachments (what every server accepts; the blocks
    of its ``@`` mentions after it), parts otherwise."""
    if not message.attachments:
        blocks = [part.prompt_text() for part in message.parts if isinstance(part, MentionPart)]
        return "\n\n".join([message.text, *blocks]) if blocks else message.text
    parts: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, TextPart) and part.text:
            parts.append({"type": "text", "text": part.text})
        elif isinstance(part, FileTextPart | MentionPart):
            parts.append({"type": "text", "text": part.prompt_text()})
        elif isinstance(part, ImagePart):
            parts.append(_image_url(part) if vision and part.available else
                         {"type": "text", "text": unseen_images_text([part], "image")})
        elif isinstance(part, DocumentPart):
            parts.append({"type": "text",
                          "text": f"[document {part.name} not shown to this model]"})
    return parts


def _result_as_text(part: ToolResultPart, vision: bool = True) -> str:
    status = "error" if part.is_error else "result"
    return (f"[{status} of tool call {part.tool_call_id} ({part.name})]\n"
            f"{_tool_text(part, vision)}")


def _assistant_entry(message: Message, *, with_reasoning: bool) -> dict[str, Any] | None:
    text = "".join(p.text for p in message.parts if isinstance(p, TextPart))
    calls = [{"id": part.id, "type": "function", "function": {
                 "name": part.name,
                 "arguments": part.raw_args if part.raw_args is not None
                 else json.dumps(part.args, ensure_ascii=False)}}
             for part in message.parts if isinstance(part, ToolCallPart)]
    if not text and not calls:
        return None
    # An assistant message that only calls tools carries empty text, not `null`: OpenAI
    # allows both, but llama-cpp-python answers `null` with a 500.
    entry: dict[str, Any] = {"role": "assistant", "content": text}
    if calls:
        entry["tool_calls"] = calls
    if with_reasoning:
        reasoning = "".join(p.text for p in message.parts if isinstance(p, ThinkingPart))
        if reasoning:
            entry["reasoning_content"] = reasoning
    return entry


def _assistant_messages_in_tool_turns(messages: list[Message]) -> set[int]:
    """Positions of assistant messages in user turns (user prompt to user prompt) where
    some assistant message called a tool."""
    positions: set[int] = set()
    turn: list[int] = []
    turn_used_tools = False
    for position, message in enumerate([*messages, Message.user("")]):
        if message.role == "user":
            if turn_used_tools:
                positions.update(turn)
            turn, turn_used_tools = [], False
        elif message.role == "assistant":
            turn.append(position)
            turn_used_tools = turn_used_tools or bool(message.tool_calls)
    return positions
