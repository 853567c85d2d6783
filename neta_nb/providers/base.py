"""The one interface every model provider implements.

A provider turns a :class:`ModelRequest` (system prompt, conversation, tool definitions,
thinking level) into an async stream of normalised :data:`StreamEvent` values. The runtime
never sees a vendor type: provider modules are the only importers of their SDKs.

Stream contract, for every provider:

* ``TextDelta`` / ``ThinkingDelta`` arrive as the model produces them (true streaming).
* ``ThinkingEnd`` closes a thinking block and carries its signature (or redacted data).
* ``ToolCallReady`` is emitted once per tool call, complete, when its arguments are known.
* ``UsageUpdate`` carries the usage *so far for this response*; the last one wins. Its
  counts come through :func:`usage_count`: a report with a count that is negative or not
  a number is unusable, and the update then says the response's usage is unknown
  (``usage=None``, ``unusable`` naming the count) — never a credit against the cost.
* ``StreamDone`` is the last event of a successful stream. A stream that fails, is cut, or
  ends without its terminal event raises :class:`ProviderError` instead.

:class:`ResponseAssembler` folds these events into message parts. Providers use it to
attach what streamed so far to a :class:`ProviderError`; the runtime uses the same class to
build the assistant message, so partial and complete messages are assembled one way.
"""

from __future__ import annotations

import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping
from dataclasses import asdict, dataclass, field, replace
from email.utils import parsedate_to_datetime
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

from ..messages import (
    MAX_TOKEN_COUNT,
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCallPart,
    ToolDefinition,
    Usage,
)
from ..stored_urls import storable_options, storable_url
from .endpoints import requests_go_to
from .prices import ModelPrice, price_of

if TYPE_CHECKING:
    from .models import ModelInfo

__all__ = [
    "ModelRequest",
    "Provider",
    "ProviderError",
    "ResponseAssembler",
    "StreamDone",
    "StreamEvent",
    "StreamedSoFar",
    "TextDelta",
    "ThinkingDelta",
    "ThinkingEnd",
    "ToolCallReady",
    "UnusableUsage",
    "UsageUpdate",
    "connection_error",
    "usage_count",
]


# Stream events are plain slotted dataclasses, not pydantic models: thousands are created
# per response and the runtime's per-delta budget is a few microseconds.
@dataclass(slots=True)
class TextDelta:
    text: str


@dataclass(slots=True)
class ThinkingDelta:
    text: str


@dataclass(slots=True)
class ThinkingEnd:
    signature: str | None = None
    redacted_data: str | None = None


@dataclass(slots=True)
class ToolCallReady:
    id: str
    name: str
    args: dict[str, Any]
    raw_args: str | None = None
    """The argument text as sent, when it was not a JSON object (``args`` is then ``{}``)."""


@dataclass(slots=True)
class UsageUpdate:
    usage: Usage | None
    """``None``: the server's report was unusable, so this response's usage is unknown."""
    unusable: str | None = None
    """What was unusable in the report (``completion_tokens=-1000000``), for the warning."""

    @classmethod
    def unknown(cls, error: UnusableUsage) -> UsageUpdate:
        return cls(None, error.detail)

    def checked(self) -> UsageUpdate:
        """This update, or an unknown one if a count of its usage is not one
        :func:`usage_count` takes (a provider that built :class:`Usage` itself, such as
        one of the user's, with a negative or absurd count)."""
        usage = self.usage
        if usage is None:
            return self
        for name, count in usage:
            try:
                usage_count(name, count)
            except UnusableUsage as error:
                return UsageUpdate.unknown(error)
        return self


class UnusableUsage(ValueError):
    """A usage count a server reported that is negative or not a number."""

    def __init__(self, name: str, value: object) -> None:
        self.detail = f"{name}={value!r}"[:80]
        super().__init__(f"unusable usage count {self.detail}")


def usage_count(name: str, value: object) -> int:
    """One token count of a server's usage report as a number of tokens: ``None`` (not
    reported) is 0; a whole number from 0 to :data:`~neta_nb.messages.MAX_TOKEN_COUNT` is
    itself (``12.0`` is 12). Anything else — a negative count, a count no call reaches
    (``10**400`` would overflow its cost), a fraction, a string, a bool, NaN — raises
    :class:`UnusableUsage`:
    the whole report is then unknown. Every provider builds :class:`Usage` from its
    server's counts through this one check."""
    if value is None:
        return 0
    if type(value) is int:
        if 0 <= value <= MAX_TOKEN_COUNT:
            return value
    elif isinstance(value, float) and value.is_integer() and 0 <= value <= MAX_TOKEN_COUNT:
        return int(value)
    raise UnusableUsage(name, value)


@dataclass(slots=True)
class StreamDone:
    stop_reason: str
    """Normalised: ``end_turn``, ``tool_use``, ``max_tokens``, ``refusal`` or the provider's own."""


StreamEvent = TextDelta | ThinkingDelta | ThinkingEnd | ToolCallReady | UsageUpdate | StreamDone


@dataclass
class ModelRequest:
    system_prompt: str
    messages: list[Message]
    tools: list[ToolDefinition] = field(default_factory=list)
    think_level: str = "off"
    max_tokens: int | None = None
    purpose: str = "chat"
    """``chat`` for the agent's own calls; ``summary`` when the runtime asks the model to
    summarise older turns (context compaction). Vendor models treat both alike; the
    scripted model answers a summary request with a summary instead of its script."""


def retry_after_seconds(headers: Mapping[str, str]) -> float | None:
    """The wait a response asks for: ``retry-after-ms``, else ``retry-after`` (seconds or
    an HTTP date); ``None`` when it names none (or an absurd one, over an hour)."""
    lowered = {key.lower(): value for key, value in headers.items()}
    seconds: float | None = None
    try:
        if "retry-after-ms" in lowered:
            seconds = float(lowered["retry-after-ms"]) / 1000
        elif "retry-after" in lowered:
            value = lowered["retry-after"].strip()
            try:
                seconds = float(value)
            except ValueError:
                seconds = parsedate_to_datetime(value).timestamp() - time.time()
    except (TypeError, ValueError, OverflowError):
        return None
    if seconds is None or seconds != seconds or seconds > 3600:
        return None
    return max(0.0, seconds)


class ProviderError(Exception):
    """The one error a provider raises for a failed call.

    ``retryable`` says whether trying the same request again makes sense (rate limits,
    overload, server errors, a dropped stream); ``partial`` holds the parts that streamed
    before the failure, so nothing the user already saw is lost.
    """

    def __init__(
        self,
        message: str,
        *,
        retryable: bool = False,
        status_code: int | None = None,
        partial: list[Part] | None = None,
        usage: Usage | None = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.retryable = retryable
        self.status_code = status_code
        self.partial: list[Part] = partial or []
        self.usage = usage

    def __repr__(self) -> str:
        return (f"ProviderError({self.message!r}, retryable={self.retryable}, "
                f"status_code={self.status_code})")


def connection_error(vendor: str, error: BaseException, *, supplier: str,
                     base_url: str | None, started: bool, partial: list[Part] | None = None,
                     usage: Usage | None = None) -> ProviderError:
    """The :class:`ProviderError` for a server that could not be reached, or whose
    connection broke during the stream (``started``). It names the address a provider of
    ``supplier`` with ``base_url`` sends to (as
    :func:`~neta_nb.providers.endpoints.requests_go_to` gives it: no credentials) and what
    to check: a local server that is not running, or runs on another port, is the usual
    cause — the vendor's own API is up, so there it is the network."""
    address, public = requests_go_to(supplier, base_url)
    where = address or "the server"
    reason = _connection_failure(error)
    if started:
        what = f"the connection to {where} broke during the stream ({reason})"
    else:
        what = f"could not connect to {where} ({reason})"
    hint = "is this machine online?" if public else "is the server running?"
    return ProviderError(f"{vendor} connection failed: {what} — {hint}", retryable=True,
                         partial=partial, usage=usage)


def _connection_failure(error: BaseException) -> str:
    """What went wrong below an SDK's connection error ("Connection error."): the chain
    of causes ends in the socket's own error."""
    chain: list[BaseException] = []
    current: BaseException | None = error
    while current is not None and current not in chain and len(chain) < 12:
        chain.append(current)
        current = current.__cause__ or current.__context__
    if any(isinstance(cause, ConnectionRefusedError) for cause in chain):
        return "connection refused"
    if any(isinstance(cause, TimeoutError) for cause in chain):
        return "timed out"
    texts = [str(cause).strip() for cause in chain if str(cause).strip()]
    return texts[-1] if texts else type(error).__name__


class Provider(ABC):
    """A model behind one vendor's API (or the offline scripted model)."""

    supplier: str
    """``anthropic``, ``openai``, ``deepseek``, ``openai-compatible`` or ``scripted``."""
    model: str
    base_url: str | None = None
    """The API address in use (``None``: the SDK's default)."""
    context_window: int | None = None
    """Overrides the model table's window (a local server runs a model with any window)."""
    request_options: Mapping[str, Any] = MappingProxyType({})
    """Merged into every request body (e.g. ``{"top_k": 40}`` for a local server)."""
    discovered_context_window: int | None = None
    """The window the server reported (:meth:`discover_context_window`), used when
    :attr:`context_window` is not set."""
    tool_results_as_user: bool = False
    """Send tool results as user messages, for servers whose chat template drops
    ``tool`` messages (only the OpenAI-compatible provider has such servers)."""
    not_resumable: str | None = None
    """Why a stored session of this provider cannot be continued in another kernel
    (``None``: it can): stored with the settings, so that ``resume`` says it."""
    says_its_cost: bool = False
    """The model's side may say what its calls cost (an outside agent's running total):
    a budget then needs no price, and counts what it says."""
    _price: ModelPrice | None = None

    @property
    def price(self) -> ModelPrice | None:
        """What a call costs (USD per million tokens): the price given to this provider
        (``create_provider(..., price=...)`` or assigned here), else one set with
        ``prices.set_price``, else the shipped table's; ``None``: unknown."""
        return self._price if self._price is not None else price_of(self.supplier,
                                                                      self.model)

    @price.setter
    def price(self, price: ModelPrice | None) -> None:
        if price is not None and not isinstance(price, ModelPrice):
            raise TypeError(f"price must be a ModelPrice (USD per million tokens), got "
                            f"{type(price).__name__}")
        self._price = price

    rate_listener: Callable[[float], None] | None = None
    """Told the seconds of a ``Retry-After`` the moment a response carrying one arrives
    (429, 503, 529) — before the SDK retries that request — so a batch run's limiter
    pauses every call of the run, not only the one that was refused."""

    request_gate: Callable[[], Awaitable[None]] | None = None
    """Awaited by the HTTP client before it sends each request — the SDK's own retries
    included — so a pause another call's ``Retry-After`` started holds every request."""

    async def before_request(self) -> None:
        """What the HTTP client awaits before each request (see :attr:`request_gate`)."""
        gate = self.request_gate
        if gate is not None:
            await gate()

    def http_event_hooks(self) -> dict[str, list[Callable[[Any], Awaitable[None]]]]:
        """The hooks an SDK's HTTP client calls around each request: wait for
        :meth:`before_request`, tell :meth:`heard_response`."""
        async def before(_request: Any) -> None:
            await self.before_request()

        async def heard(response: Any) -> None:
            self.heard_response(response.status_code, response.headers)

        return {"request": [before], "response": [heard]}

    def heard_response(self, status: int, headers: Mapping[str, str]) -> None:
        """What the HTTP client calls for each response (see :attr:`rate_listener`)."""
        listener = self.rate_listener
        if listener is not None and status in (429, 503, 529):
            seconds = retry_after_seconds(headers)
            if seconds is not None:
                listener(seconds)

    @abstractmethod
    def stream(self, request: ModelRequest) -> AsyncIterator[StreamEvent]:
        """Stream one model response. Raises :class:`ProviderError` on failure."""

    async def discover_context_window(self) -> None:
        """Ask the server for its context window if nothing else knows it, once; sets
        :attr:`discovered_context_window`. Never raises. Most suppliers' windows are in
        the model table: this does nothing for them."""
        return

    @property
    def info(self) -> ModelInfo:
        """Context window and capabilities of this model: the model table's entry, with
        :attr:`context_window` if set, else with :attr:`discovered_context_window` if the
        server reported one."""
        from .models import get_model_info

        info = get_model_info(self.supplier, self.model)
        window = self.context_window or self.discovered_context_window
        return info if window is None else replace(info, context_window=window,
                                                   assumed=False)

    def settings(self) -> dict[str, Any]:
        """What rebuilds this provider with ``create_provider`` — never a key. Stored with
        a session, so that ``resume`` talks to the same server the same way. ``base_url``
        is stored without what may be a secret (:func:`~neta_nb.stored_urls.storable_url`),
        ``request_options`` without headers and secret-named options
        (:func:`~neta_nb.stored_urls.storable_options`); ``base_url_withheld`` and
        ``request_options_withheld`` then name what a resume must be given again."""
        url = storable_url(self.base_url)
        options, options_withheld = storable_options(self.request_options)
        settings: dict[str, Any] = {
            "supplier": self.supplier, "model": self.model, "base_url": url.url,
            "context_window": self.context_window, "request_options": options,
            "tool_results_as_user": self.tool_results_as_user}
        if url.withheld:
            settings["base_url_withheld"] = list(url.withheld)
        if options_withheld:
            settings["request_options_withheld"] = list(options_withheld)
        if self._price is not None:  # a price the user gave comes back on resume
            settings["price"] = asdict(self._price)
        if self.not_resumable is not None:
            settings["not_resumable"] = self.not_resumable
        return settings

    def rebuild_options(self) -> dict[str, Any] | None:
        """What rebuilds this provider in another process (a batch run's Ray workers)
        besides :meth:`settings`: the key its client uses (``api_key``) and the
        constructor options settings do not hold — for
        :func:`~neta_nb.providers.factory.provider_from_settings`. ``None`` (here): settings
        do not rebuild it (the offline model, a class of the user's), and it travels as
        itself, pickled."""
        return None

    @property
    def model_id(self) -> str:
        """``supplier:model``, the form :class:`~neta_nb.Agent` accepts."""
        return f"{self.supplier}:{self.model}"

    def __repr__(self) -> str:
        # Never include keys or clients: reprs end up in notebooks and logs.
        return f"{type(self).__name__}({self.model_id!r})"


class StreamedSoFar:
    """The events a provider has yielded for the current response, kept so that a failure
    can carry what streamed (``ProviderError.partial``). The success path only appends;
    the events are folded into parts when a failure needs them — the runtime assembles the
    same events itself, so assembling here too would do the work twice per delta."""

    __slots__ = ("events",)

    def __init__(self) -> None:
        self.events: list[StreamEvent] = []

    def parts(self) -> list[Part]:
        assembler = ResponseAssembler()
        for event in self.events:
            assembler.feed(event)
        return assembler.snapshot()


class ResponseAssembler:
    """Folds stream events into ordered message parts.

    Text and thinking deltas are collected in lists and joined once per block, so a long
    stream costs O(total length), not O(n²) of growing strings.
    """

    __slots__ = ("_call_ids", "_chunks", "_kind", "parts", "stop_reason", "unusable_usage",
                 "usage")

    def __init__(self) -> None:
        self.parts: list[Part] = []
        self.usage: Usage | None = None
        self.unusable_usage: str | None = None
        """What the server reported that was unusable (:attr:`UsageUpdate.unusable`)."""
        self.stop_reason: str | None = None
        self._kind: str | None = None  # "text" | "thinking" while a block is open
        self._chunks: list[str] = []
        self._call_ids: set[str] = set()

    def feed(self, event: StreamEvent) -> None:
        if isinstance(event, TextDelta):
            if self._kind != "text":
                self._close()
                self._kind = "text"
            self._chunks.append(event.text)
        elif isinstance(event, ThinkingDelta):
            if self._kind != "thinking":
                self._close()
                self._kind = "thinking"
            self._chunks.append(event.text)
        elif isinstance(event, ThinkingEnd):
            text = "".join(self._chunks) if self._kind == "thinking" else ""
            if self._kind != "thinking":
                self._close()
            self._kind, self._chunks = None, []
            self.parts.append(ThinkingPart(text=text, signature=event.signature,
                                           redacted_data=event.redacted_data))
        elif isinstance(event, ToolCallReady):
            self._close()
            self.parts.append(ToolCallPart(id=self._unique_call_id(event.id), name=event.name,
                                           args=event.args, raw_args=event.raw_args))
        elif isinstance(event, UsageUpdate):
            event = event.checked()
            self.usage = event.usage
            if event.unusable is not None:
                self.unusable_usage = event.unusable
        elif isinstance(event, StreamDone):
            self._close()
            self.stop_reason = event.stop_reason

    def add_text(self, text: str, *, thinking: bool = False) -> None:
        """What ``feed(TextDelta(text))`` (``ThinkingDelta`` when ``thinking``) does,
        without an event made for it: for a stream whose pieces come as plain text (an
        outside agent's chunks)."""
        kind = "thinking" if thinking else "text"
        if self._kind != kind:
            self._close()
            self._kind = kind
        self._chunks.append(text)

    @property
    def in_thinking(self) -> bool:
        return self._kind == "thinking"

    def snapshot(self) -> list[Part]:
        """The parts so far, including an unfinished block (for partial messages)."""
        parts = list(self.parts)
        if self._kind == "text" and self._chunks:
            parts.append(TextPart(text="".join(self._chunks)))
        elif self._kind == "thinking" and self._chunks:
            parts.append(ThinkingPart(text="".join(self._chunks)))
        return parts

    def _unique_call_id(self, call_id: str) -> str:
        """Some servers repeat a call id within one response (or send none): each call
        needs its own id, for its card and for the result that answers it."""
        unique, n = call_id or "call", 1
        while unique in self._call_ids:
            n += 1
            unique = f"{call_id or 'call'}_{n}"
        self._call_ids.add(unique)
        return unique

    def _close(self) -> None:
        if self._kind == "text":
            self.parts.append(TextPart(text="".join(self._chunks)))
        elif self._kind == "thinking":
            # A thinking block closed without its end event (OpenAI-style reasoning has no
            # signature): keep the text, unsigned.
            self.parts.append(ThinkingPart(text="".join(self._chunks)))
        self._kind, self._chunks = None, []
