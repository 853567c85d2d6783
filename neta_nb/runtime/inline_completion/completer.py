"""InlineCompleter: runs a kernel's inline completion requests one at a time, each on a
thread of its own, so the kernel never waits for a model.

A new request cancels the one in flight (its HTTP request is aborted, its late text never
sent); so does :meth:`InlineCompleter.cancel`. A request streams ``chunk`` messages and
ends with one ``done`` or one ``error`` message (``send`` delivers them to the page). The
model is asked fill-in-the-middle (:mod:`.fim`) where the server has it — an
OpenAI-compatible server at a ``base_url`` of the user's, unless told otherwise — and as a
chat model otherwise, through the provider's own stream. Each call is a ``chat`` span
when tracing is on (contents only when asked, as for a session's calls), and its cost is
counted in :attr:`InlineCompleter.spend` at the provider's price; a ``budget_usd``
reached stops further requests with an error message.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import os
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, Literal

from ...messages import Message, TextPart, Usage
from ...providers.base import ModelRequest, Provider, TextDelta, UsageUpdate
from ..session.spending import Spend, format_usd, reached
from ..tracing.tracing import NO_SPAN, turn_tracer
from .context import CHAT_SYSTEM_PROMPT, CompletionContext

if TYPE_CHECKING:
    from ...providers.openai_fim import FimCall

__all__ = ["InlineCompleter", "Send", "serves_fim"]

_ABORT_WAIT = 2.0
"""Seconds a request waits for the one it replaced to close its connection."""

Send = Callable[[dict[str, Any]], None]
"""Delivers one message to the page (a comm's ``send``)."""


def serves_fim(provider: Provider) -> bool:
    """Whether ``provider`` is asked fill-in-the-middle by default: an OpenAI-compatible
    server at an address of the user's (llama.cpp, vLLM, a proxy)."""
    return provider.supplier == "openai-compatible" and bool(provider.base_url)


class _Running:
    """One request: cancelled at most once, from any thread."""

    def __init__(self, request_id: str) -> None:
        self.id = request_id
        self.cancelled = threading.Event()
        self.call: FimCall | None = None
        self.chat: concurrent.futures.Future[Any] | None = None
        self.thread: threading.Thread | None = None
        self.lock = threading.Lock()

    def cancel(self) -> None:
        with self.lock:
            self.cancelled.set()
            call, chat = self.call, self.chat
        if call is not None:
            call.abort()
        if chat is not None:
            chat.cancel()


class InlineCompleter:
    """The completion requests of one page link (one kernel, one switch-on)."""

    def __init__(self, provider: Provider, *, max_tokens: int = 64,
                 fim: bool | Literal["infill"] | None = None,
                 budget_usd: float | None = None, timeout: float = 30.0) -> None:
        if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
            raise ValueError(f"max_tokens must be a positive whole number, got {max_tokens!r}")
        if budget_usd is not None and not (isinstance(budget_usd, int | float)
                                           and budget_usd >= 0):
            raise ValueError(f"budget_usd must be a number of dollars >= 0, got {budget_usd!r}")
        self.provider = provider
        self.max_tokens = max_tokens
        self.budget_usd = budget_usd
        self.timeout = timeout
        if fim not in (None, True, False, "infill"):
            raise ValueError(f"fim must be True, False, None or 'infill', got {fim!r}")
        self.fim = serves_fim(provider) if fim is None else bool(fim)
        self._endpoint = "infill" if fim == "infill" else "completions"
        self._fim_asked = fim is not None and fim is not False
        self.spend = Spend()
        """What the completion calls cost (unknown once one call's cost is)."""
        self.last_latency: float | None = None
        """Seconds from the latest request to its first text (``None``: none yet)."""
        self._lock = threading.Lock()
        self._current: _Running | None = None
        self._threads: list[threading.Thread] = []

    # --- requests ----------------------------------------------------------------------
    def complete(self, request_id: str, context: CompletionContext, send: Send) -> None:
        """Start answering ``context``; cancels the request in flight."""
        running = _Running(request_id)
        with self._lock:
            previous, self._current = self._current, running
        if previous is not None:
            previous.cancel()
        if self.budget_usd is not None and reached(self.spend.usd, self.budget_usd):
            send({"kind": "error", "id": request_id,
                  "message": f"inline completion stopped: its budget of "
                             f"{format_usd(self.budget_usd)} is spent"})
            return
        thread = running.thread = threading.Thread(
            target=self._run, args=(running, context, send, previous),
            name="neta-nb-inline-completion", daemon=True)
        self._threads = [t for t in self._threads if t.is_alive()] + [thread]
        thread.start()

    def cancel(self, request_id: str | None = None) -> None:
        """Cancel the request in flight (only if it is ``request_id``, when given)."""
        with self._lock:
            running = self._current
            if running is None or (request_id is not None and running.id != request_id):
                return
            self._current = None
        running.cancel()

    def close(self) -> None:
        """Cancel what is in flight; no request is answered after this."""
        self.cancel()

    def wait_idle(self, timeout: float = 10.0) -> None:
        """Wait until no request thread runs (tests, benchmarks)."""
        deadline = time.monotonic() + timeout
        for thread in list(self._threads):
            thread.join(max(0.0, deadline - time.monotonic()))

    # --- one request, on its thread ----------------------------------------------------
    def _run(self, running: _Running, context: CompletionContext, send: Send,
             previous: _Running | None) -> None:
        started = time.monotonic()
        if previous is not None and previous.thread is not None:
            # One request in flight at a time: the aborted one's connection closes first.
            previous.thread.join(_ABORT_WAIT)
        if running.cancelled.is_set():
            return
        answered: list[str] = []

        def piece(text: str) -> None:
            if running.cancelled.is_set():
                return
            if not answered:
                self.last_latency = time.monotonic() - started
            answered.append(text)
            send({"kind": "chunk", "id": running.id, "text": text})

        tracer = turn_tracer()
        span = tracer.chat(self.provider, self._request(context)) if tracer.on else NO_SPAN
        try:
            usage = self._ask(running, context, piece)
        except Exception as error:  # any failure is a quiet message on the page
            tracer.end_chat(span, None, error=_message(error))
            if not running.cancelled.is_set():
                send({"kind": "error", "id": running.id, "message": _message(error)})
            return
        finally:
            with self._lock:
                if self._current is running:
                    self._current = None
        reported = None if isinstance(usage, _Unreported) else usage
        answer = (Message.assistant([TextPart(text="".join(answered))]) if tracer.content
                  else None)
        tracer.end_chat(span, answer, usage=reported,
                        error="cancelled" if running.cancelled.is_set() else None)
        if not running.cancelled.is_set():
            send({"kind": "done", "id": running.id})
        self._count(usage)

    def _request(self, context: CompletionContext) -> ModelRequest:
        """The request as the chat API gets it, and as a ``chat`` span records it (its
        contents only when tracing is asked to hold them): for FIM, the prompt and suffix
        with the cursor between them."""
        if self.fim:
            return ModelRequest(system_prompt="", max_tokens=self.max_tokens,
                                messages=[Message.user(f"{context.fim_prompt()}<CURSOR>"
                                                       f"{context.suffix}")])
        return ModelRequest(system_prompt=CHAT_SYSTEM_PROMPT, max_tokens=self.max_tokens,
                            messages=[Message.user(context.chat_prompt())])

    def _ask(self, running: _Running, context: CompletionContext,
             piece: Callable[[str], None]) -> Usage | _Unreported | None:
        if self.fim:
            usage = self._ask_fim(running, context, piece)
            if not isinstance(usage, _Refused):
                return usage
            self.fim = False  # this server has no FIM: a chat model from now on
        return self._ask_chat(running, context, piece)

    def _ask_fim(self, running: _Running, context: CompletionContext,
                 piece: Callable[[str], None]) -> Usage | _Unreported | _Refused | None:
        # The openai extra's module, imported here: a chat model needs no SDK of OpenAI's,
        # and without it this raises the ImportError that names the extra.
        from ...providers.openai_fim import FimCall, FimUnsupportedError

        provider = self.provider
        try:
            if not provider.base_url:
                raise FimUnsupportedError("fill-in-the-middle needs a server address "
                                          "(base_url)")
            options = provider.rebuild_options() or {}
            call = FimCall(provider.base_url, model=provider.model,
                           prompt=context.fim_prompt(), suffix=context.suffix,
                           max_tokens=self.max_tokens, api_key=options.get("api_key"),
                           timeout=self.timeout, endpoint=self._endpoint,
                           extra=context.fim_extra())
            with running.lock:
                if running.cancelled.is_set():
                    return _UNREPORTED
                running.call = call
            usage = call.run(piece)
        except FimUnsupportedError:
            if self._fim_asked:
                raise
            return _REFUSED
        return _UNREPORTED if usage is None and call.aborted else usage

    def _ask_chat(self, running: _Running, context: CompletionContext,
                  piece: Callable[[str], None]) -> Usage | _Unreported | None:
        request = self._request(context)
        fences = _FenceFilter(piece)

        async def stream() -> Usage | None:
            usage: Usage | None = None
            async for event in self.provider.stream(request):
                if isinstance(event, TextDelta):
                    fences.feed(event.text)
                elif isinstance(event, UsageUpdate):
                    usage = event.usage
            fences.end()
            return usage

        chat = asyncio.run_coroutine_threadsafe(stream(), _CHAT_LOOP.get())
        with running.lock:
            if running.cancelled.is_set():
                chat.cancel()
            running.chat = chat
        try:
            return chat.result()
        except concurrent.futures.CancelledError:
            return _UNREPORTED

    def _count(self, usage: Usage | _Unreported | None) -> None:
        if isinstance(usage, _Unreported):
            return  # cancelled before the server reported anything: nothing known to add
        price = self.provider.price
        self.spend.add(price.cost(usage) if price is not None and usage is not None else None)


class _ChatLoop:
    """The event loop that inline completion's chat requests run on: one for the process,
    on a daemon thread of its own (none of them waits for the kernel's loop, busy while
    a cell runs). One loop, not one per request: a provider's HTTP client keeps the
    connections it opened for the next request, and a connection opened on a loop that
    has ended fails the request that reuses it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._loop: asyncio.AbstractEventLoop | None = None
        self._pid = 0

    def get(self) -> asyncio.AbstractEventLoop:
        """The loop, started on first use (again in a forked child: the parent's thread
        is not in it)."""
        with self._lock:
            if self._loop is None or self._pid != os.getpid():
                self._loop, self._pid = asyncio.new_event_loop(), os.getpid()
                threading.Thread(target=self._loop.run_forever, daemon=True,
                                 name="neta-nb-inline-completion-chat").start()
            return self._loop


_CHAT_LOOP = _ChatLoop()


class _Unreported:
    """A call cancelled before its usage came: counted as no call (what it used is
    unknown, and a server that stops generating bills only what it generated)."""


_UNREPORTED = _Unreported()


class _Refused:
    """The server has no fill-in-the-middle (and it was not asked for by name): the
    request goes to the chat API."""


_REFUSED = _Refused()


class _FenceFilter:
    """Drops a chat model's code fence around its answer (```` ```python ````… ```` ``` ````),
    passing the rest on as it streams."""

    def __init__(self, emit: Callable[[str], None]) -> None:
        self._emit = emit
        self._head: str | None = ""  # the start, until it is known not to be a fence
        self._held = ""  # a possible closing fence at the end

    def feed(self, text: str) -> None:
        if self._head is not None:
            self._head += text
            if "\n" not in self._head and len(self._head) < 16 and "```".startswith(
                    self._head.lstrip()[:3]):
                return
            head, self._head = self._head, None
            if head.lstrip().startswith("```"):
                head = head.lstrip()[3:].partition("\n")[2]
            text = head
        text = self._held + text
        cut = text.rfind("```")
        if cut != -1 and not text[cut + 3:].strip():
            self._held, text = text[cut:], text[:cut]
        else:
            self._held = ""
        if text:
            self._emit(text)

    def end(self) -> None:
        if self._head:
            self._emit(self._head)
        self._held = ""


def _message(error: Exception) -> str:
    text = str(error) or type(error).__name__
    return text if len(text) <= 300 else text[:299] + "…"
