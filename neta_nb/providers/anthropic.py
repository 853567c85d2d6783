"""Claude through the Anthropic Messages API, streaming (``pip install 'neta-nb[anthropic]'``).

This module is the only importer of the ``anthropic`` SDK. It maps the conversation to
Messages API blocks, asks for thinking with :func:`neta_nb.thinking.build_thinking_params`,
and turns the raw event stream into :mod:`neta_nb.providers.base` events as they arrive:
thinking and text deltas, a thinking block's signature when the block stops, a tool call
once its partial JSON is complete, usage from ``message_start`` and ``message_delta``.

History mapping, as the API requires it with tools and thinking:

* assistant parts keep their order; a signed thinking part goes back as a ``thinking``
  block with its signature, a redacted one as ``redacted_thinking``. A thinking part
  without a signature (from another provider, or a stream cut before the signature) is
  dropped: the API rejects unsigned thinking, and replaying it as text would put words in
  the model's mouth.
* consecutive ``tool`` messages become one user message of ``tool_result`` blocks;
  a user prompt right after them joins that message, after the results.
* empty text parts are dropped, and so are messages left with no content.

Retries: the SDK retries the initial request on 408/409/429/5xx/529 and connection errors
(``max_retries``), honouring ``retry-after``/``retry-after-ms``. Once the stream has
started nothing is retried silently, since text was already shown: a failure raises
:class:`~neta_nb.providers.base.ProviderError` carrying what streamed so far.
"""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Mapping
from typing import Any

try:
    import anthropic
    import httpx2
    from anthropic import types as wire
except ImportError as error:  # pragma: no cover - exercised only without the extra
    raise ImportError("The Anthropic provider needs the anthropic SDK: "
                      "pip install 'neta-nb[anthropic]'") from error

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

__all__ = ["AnthropicProvider", "to_anthropic_messages"]

DEFAULT_MAX_TOKENS = 8192
_RETRYABLE_STATUS = frozenset({408, 409, 429})
_RETRYABLE_ERROR_TYPES = frozenset({"overloaded_error", "rate_limit_error", "api_error",
                                    "timeout_error"})
_STOP_REASONS = {"end_turn": "end_turn", "stop_sequence": "end_turn", "tool_use": "tool_use",
                 "max_tokens": "max_tokens", "refusal": "refusal", "pause_turn": "pause_turn",
                 "model_context_window_exceeded": "max_tokens"}


class AnthropicProvider(Provider):
    """Claude models. The key comes from ``api_key`` or ``ANTHROPIC_API_KEY``; the endpoint
    from ``base_url`` or ``ANTHROPIC_BASE_URL`` (a proxy or gateway)."""

    supplier = "anthropic"

    def __init__(self, model: str, *, api_key: str | None = None, base_url: str | None = None,
                 max_tokens: int = DEFAULT_MAX_TOKENS, max_retries: int = 3,
                 timeout: float = 600.0, context_window: int | None = None,
                 request_options: Mapping[str, Any] | None = None) -> None:
        self.model = model
        self.max_tokens = max_tokens
        self.base_url = base_url or os.environ.get("ANTHROPIC_BASE_URL") or None
        self.context_window = context_window
        self.request_options = dict(request_options or {})
        # The key lives only inside the SDK client; this object's repr never shows it.
        self._client = anthropic.AsyncAnthropic(
            api_key=api_key or os.environ.get("ANTHROPIC_API_KEY") or None,
            base_url=self.base_url, max_retries=max_retries, timeout=timeout,
            http_client=self._http_client())

    def _http_client(self) -> anthropic.DefaultAsyncHttpxClient:
        """The SDK's own default client, waiting for :meth:`before_request` before each
        request and telling :meth:`heard_response` of each response (a 429 reaches a
        batch run's limiter before the SDK retries it)."""
        return anthropic.DefaultAsyncHttpxClient(event_hooks=self.http_event_hooks())

    def rebuild_options(self) -> dict[str, Any] | None:
        if type(self) is not AnthropicProvider:  # a subclass may hold more: sent pickled
            return None
        return {"api_key": self._client.api_key, "max_tokens": self.max_tokens,
                "max_retries": self._client.max_retries, "timeout": self._client.timeout}

    def request_kwargs(self, request: ModelRequest) -> dict[str, Any]:
        """The keyword arguments of the ``messages.create`` call for ``request``."""
        kwargs: dict[str, Any] = {
            "model": self.model,
            "max_tokens": request.max_tokens or self.max_tokens,
            "messages": to_anthropic_messages(request.messages,
                                              vision=self.info.supports("vision")),
        }
        if request.system_prompt:
            kwargs["system"] = request.system_prompt
        if request.tools:
            kwargs["tools"] = [{"name": tool.name, "description": tool.description,
                                "input_schema": tool.parameters} for tool in request.tools]
        thinking = build_thinking_params(self.supplier, self.model, request.think_level)
        create = self._client.messages.create
        return merge_params(merge_params(kwargs, thinking, create), self.request_options,
                            create)

    async def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        kwargs = self.request_kwargs(request)
        streamed = StreamedSoFar()
        try:
            stream = await self._client.messages.create(**kwargs, stream=True)
        except (anthropic.AnthropicError, httpx2.HTTPError) as error:
            raise _provider_error(error, streamed, started=False, supplier=self.supplier,
                                  base_url=self.base_url) from error

        reader = _EventReader()
        try:
            async with stream:
                async for raw in stream:
                    for event in reader.read(raw):
                        streamed.events.append(event)
                        yield event
        except (anthropic.AnthropicError, httpx2.HTTPError) as error:
            raise _provider_error(error, streamed, started=True, supplier=self.supplier,
                                  base_url=self.base_url, usage=reader.usage) from error
        if not reader.finished:
            raise ProviderError("Anthropic stream ended before message_stop",
                                retryable=True, partial=streamed.parts(),
                                usage=reader.usage)


class _EventReader:
    """Turns raw Messages API stream events into normalised events, block by block."""

    __slots__ = ("_blocks", "finished", "stop_reason", "unusable", "usage")

    def __init__(self) -> None:
        self.usage: Usage | None = None
        self.unusable: str | None = None
        self.stop_reason: str | None = None
        self.finished = False
        self._blocks: dict[int, _Block] = {}

    def read(self, raw: object) -> list[StreamEvent]:
        if isinstance(raw, wire.RawContentBlockDeltaEvent):
            return self._delta(raw)
        if isinstance(raw, wire.RawContentBlockStartEvent):
            return self._start(raw)
        if isinstance(raw, wire.RawContentBlockStopEvent):
            return self._stop(raw.index)
        if isinstance(raw, wire.RawMessageStartEvent):
            return self._usage(raw.message.usage, Usage())
        if isinstance(raw, wire.RawMessageDeltaEvent):
            return self._message_delta(raw)
        if isinstance(raw, wire.RawMessageStopEvent):
            self.finished = True
            return [StreamDone(_STOP_REASONS.get(self.stop_reason or "end_turn",
                                                 self.stop_reason or "end_turn"))]
        return []

    def _start(self, raw: wire.RawContentBlockStartEvent) -> list[StreamEvent]:
        block = raw.content_block
        if isinstance(block, wire.TextBlock):
            self._blocks[raw.index] = _Block("text")
            return [TextDelta(block.text)] if block.text else []
        if isinstance(block, wire.ThinkingBlock):
            self._blocks[raw.index] = _Block("thinking", signature=block.signature or None)
            return [ThinkingDelta(block.thinking)] if block.thinking else []
        if isinstance(block, wire.RedactedThinkingBlock):
            return [ThinkingEnd(redacted_data=block.data)]
        if isinstance(block, wire.ToolUseBlock):
            entry = _Block("tool_use", tool_id=block.id, name=block.name)
            if block.input:
                # A server may send the whole input up front instead of JSON deltas.
                entry.pieces.append(json.dumps(block.input))
            self._blocks[raw.index] = entry
        # Server-side tool blocks (web search and the like) are not ours to run.
        return []

    def _delta(self, raw: wire.RawContentBlockDeltaEvent) -> list[StreamEvent]:
        delta = raw.delta
        if isinstance(delta, wire.TextDelta):
            return [TextDelta(delta.text)] if delta.text else []
        if isinstance(delta, wire.ThinkingDelta):
            return [ThinkingDelta(delta.thinking)] if delta.thinking else []
        block = self._blocks.get(raw.index)
        if block is None:
            return []
        if isinstance(delta, wire.SignatureDelta):
            block.signature = delta.signature
        elif isinstance(delta, wire.InputJSONDelta):
            block.pieces.append(delta.partial_json)
        return []

    def _stop(self, index: int) -> list[StreamEvent]:
        block = self._blocks.pop(index, None)
        if block is None:
            return []
        if block.kind == "thinking":
            return [ThinkingEnd(signature=block.signature)]
        if block.kind == "tool_use":
            args, raw_args = parse_tool_arguments("".join(block.pieces))
            return [ToolCallReady(id=block.tool_id, name=block.name, args=args,
                                  raw_args=raw_args)]
        return []

    def _message_delta(self, raw: wire.RawMessageDeltaEvent) -> list[StreamEvent]:
        if raw.delta.stop_reason is not None:
            self.stop_reason = raw.delta.stop_reason
        # message_delta counts are cumulative; fields it leaves out keep message_start's.
        return self._usage(raw.usage, self.usage or Usage())

    def _usage(self, reported: wire.Usage | wire.MessageDeltaUsage,
               base: Usage) -> list[StreamEvent]:
        """The usage so far after a report: each count it gives, else ``base``'s. Once a
        report of this response was unusable its usage stays unknown (a later report
        that leaves counts out would fill them from nothing)."""
        if self.unusable is not None:
            return [UsageUpdate(None, self.unusable)]
        details = reported.output_tokens_details
        try:
            self.usage = Usage(
                input_tokens=_first("input_tokens", reported.input_tokens, base.input_tokens),
                output_tokens=_first("output_tokens", reported.output_tokens,
                                     base.output_tokens),
                cache_read_tokens=_first("cache_read_input_tokens",
                                         reported.cache_read_input_tokens,
                                         base.cache_read_tokens),
                cache_write_tokens=_first("cache_creation_input_tokens",
                                          reported.cache_creation_input_tokens,
                                          base.cache_write_tokens),
                thinking_tokens=_first("thinking_tokens",
                                       details.thinking_tokens if details else None,
                                       base.thinking_tokens))
        except UnusableUsage as error:
            self.usage, self.unusable = None, error.detail
            return [UsageUpdate.unknown(error)]
        return [UsageUpdate(self.usage)]


class _Block:
    __slots__ = ("kind", "name", "pieces", "signature", "tool_id")

    def __init__(self, kind: str, *, tool_id: str = "", name: str = "",
                 signature: str | None = None) -> None:
        self.kind = kind
        self.tool_id = tool_id
        self.name = name
        self.signature = signature
        self.pieces: list[str] = []


def _first(name: str, value: object, fallback: int) -> int:
    return fallback if value is None else usage_count(name, value)


def _provider_error(error: Exception, streamed: StreamedSoFar, *, started: bool,
                    supplier: str, base_url: str | None,
                    usage: Usage | None = None) -> ProviderError:
    """The one place SDK and transport exceptions become :class:`ProviderError`
    (``supplier`` and ``base_url``: the provider's, for where a connection failed)."""
    partial = streamed.parts()
    if isinstance(error, anthropic.APIStatusError):
        detail = error.api_message or error.message
        if error.status_code >= 400:
            status = error.status_code
            return ProviderError(f"Anthropic API error {status}: {detail}",
                                 retryable=status in _RETRYABLE_STATUS or status >= 500,
                                 status_code=status, partial=partial, usage=usage)
        # An `error` event inside a 200 stream: its type says whether to retry.
        error_type = error.type
        return ProviderError(f"Anthropic stream error ({error_type or 'unknown'}): {detail}",
                             retryable=error_type is None or error_type in _RETRYABLE_ERROR_TYPES,
                             partial=partial, usage=usage)
    if isinstance(error, anthropic.APIConnectionError | httpx2.TransportError):
        return connection_error("Anthropic", error, supplier=supplier, base_url=base_url,
                                started=started, partial=partial, usage=usage)
    return ProviderError(f"Anthropic request failed: {error}", retryable=False,
                         partial=partial, usage=usage)


# --- history mapping -------------------------------------------------------------------


def to_anthropic_messages(messages: list[Message], *,
                          vision: bool = True) -> list[dict[str, Any]]:
    """The conversation as Messages API ``messages`` (see the module docstring).

    Images (attachments, figures in tool results) go as ``image`` blocks — a tool's inside
    its ``tool_result`` content, after the text — and PDFs as ``document`` blocks; for a
    model without ``vision`` each image becomes a line saying what it was."""
    result: list[dict[str, Any]] = []
    for message in messages:
        role = "assistant" if message.role == "assistant" else "user"
        blocks = (_assistant_blocks(message) if message.role == "assistant"
                  else _user_blocks(message, vision))
        if not blocks:
            continue
        if result and result[-1]["role"] == role:
            result[-1]["content"].extend(blocks)
        else:
            result.append({"role": role, "content": blocks})
    return result


def _assistant_blocks(message: Message) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ThinkingPart):
            if part.redacted_data:
                blocks.append({"type": "redacted_thinking", "data": part.redacted_data})
            elif part.signature:
                blocks.append({"type": "thinking", "thinking": part.text,
                               "signature": part.signature})
        elif isinstance(part, TextPart):
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ToolCallPart):
            blocks.append({"type": "tool_use", "id": part.id, "name": part.name,
                           "input": part.args})
    return blocks


def _user_blocks(message: Message, vision: bool) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    for part in message.parts:
        if isinstance(part, ToolResultPart):
            block: dict[str, Any] = {"type": "tool_result", "tool_use_id": part.tool_call_id,
                                     "content": _tool_result_content(part, vision)}
            if part.is_error:
                block["is_error"] = True
            blocks.append(block)
        elif isinstance(part, TextPart) and part.text:
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, FileTextPart | MentionPart):
            blocks.append({"type": "text", "text": part.prompt_text()})
        elif isinstance(part, ImagePart):
            if vision and part.data is not None:
                blocks.append(_image_block(part))
            else:
                blocks.append({"type": "text", "text": unseen_images_text([part], "image")})
        elif isinstance(part, DocumentPart):
            if part.data is not None:
                blocks.append({"type": "document", "title": part.name or "document.pdf",
                               "source": {"type": "base64", "media_type": part.media_type,
                                          "data": part.data}})
            else:
                blocks.append({"type": "text", "text": f"[document {part.name} no longer "
                               "available: the stored file is missing]"})
    return blocks


def _image_block(part: ImagePart) -> dict[str, Any]:
    return {"type": "image", "source": {"type": "base64", "media_type": part.media_type,
                                        "data": part.data}}


def _tool_result_content(part: ToolResultPart, vision: bool) -> str | list[dict[str, Any]]:
    """Plain text, or text and image blocks when the tool made figures."""
    if not part.images:
        return part.content
    seen = [image for image in part.images if vision and image.available]
    unseen = [image for image in part.images if image not in seen]
    text = part.content
    if unseen:
        text = f"{text}\n\n{unseen_images_text(unseen)}"
    if not seen:
        return text
    return [{"type": "text", "text": text}, *(_image_block(image) for image in seen)]
