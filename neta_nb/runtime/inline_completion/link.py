"""``neta_nb.inline_completion(...)``: switches inline completion on for the notebook
this kernel serves, and the kernel's end of its link to the page.

The kernel opens a comm (target :data:`COMM_TARGET`) carrying the settings; the
notebook bridge (``js/labextension/src/inline-completion.ts``) registers JupyterLab's
inline completion provider for that kernel's notebook while the comm is open. The page
sends ``complete`` requests (the cell's text around the cursor, the code cells above, the
cell's last error) and ``cancel``; the kernel adds its variables (:mod:`.context`) and
answers with ``chunk``, ``done`` or ``error`` messages from a thread of the completer
(:mod:`.completer`), so the kernel is never kept waiting by a model. Where the kernel has
subshells (ipykernel 7), JupyterLab sends the requests on one, so they are answered while
a cell runs; elsewhere they wait for the running cell, and the page shows nothing
meanwhile. ``.off()`` closes the comm: the page stops asking.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Mapping
from typing import Any, Literal

from comm import create_comm

from ...providers.base import Provider
from ...providers.factory import create_provider, default_provider
from ...providers.prices import ModelPrice
from ..session.spending import format_usd
from .completer import InlineCompleter
from .context import CompletionContext, CompletionRequest

__all__ = ["COMM_TARGET", "InlineCompletion", "inline_completion"]

COMM_TARGET = "neta_nb.inline_completion"
PROTOCOL = 1

_active: InlineCompletion | None = None
_numbers = itertools.count(1)


def inline_completion(model: str | Provider | None = None, *, debounce_ms: int = 250,
                      max_tokens: int = 64, fim: bool | Literal["infill"] | None = None,
                      budget_usd: float | None = None, base_url: str | None = None,
                      api_key: str | None = None, price: ModelPrice | None = None,
                      markdown: bool = False) -> InlineCompletion:
    """Switch inline completion on in this kernel's notebook (JupyterLab 4 and Notebook 7):
    ghost text at the cursor of a code cell, Tab accepts, Esc dismisses.

    ``model``: a provider or ``supplier:model`` spec (``create_provider``'s; ``None``: the
    default model); ``base_url``, ``api_key`` and ``price`` as ``create_provider`` takes
    them. ``debounce_ms``: the pause in typing before a request. ``max_tokens``: the
    longest suggestion. ``fim``: ask fill-in-the-middle (``/completions`` with ``suffix``,
    as Ollama and DeepSeek's beta API serve it); ``"infill"``: llama.cpp's ``/infill``;
    ``None`` asks ``/completions`` of an OpenAI-compatible server at a ``base_url`` and
    falls back to the chat API where that server has none; ``False``: the chat API.
    ``budget_usd``: completion stops once its calls cost this much. ``markdown``: also
    suggest in markdown cells. Switching on again replaces the previous switch-on. Returns
    the handle: ``.off()`` switches it off.
    """
    if not isinstance(debounce_ms, int) or isinstance(debounce_ms, bool) or not (
            0 <= debounce_ms <= 10_000):
        raise ValueError(f"debounce_ms must be a whole number of milliseconds from 0 to "
                         f"10000, got {debounce_ms!r}")
    if model is None and base_url is None and api_key is None:
        provider = default_provider()
        if provider.supplier == "scripted":
            raise ValueError("inline completion needs a model: no API key is set for a "
                             "default one; pass model= (and base_url= for a local server), "
                             "e.g. inline_completion('openai-compatible:qwen', "
                             "base_url='http://127.0.0.1:8012/v1', fim='infill')")
        if price is not None:
            provider.price = price
    else:
        provider = create_provider(model if model is not None else "openai-compatible:default",
                                   base_url=base_url, api_key=api_key, price=price)
    completer = InlineCompleter(provider, max_tokens=max_tokens, fim=fim,
                                budget_usd=budget_usd)
    global _active
    if _active is not None:
        _active.off()
    _active = InlineCompletion(completer, debounce_ms=debounce_ms, markdown=markdown)
    return _active


def _user_namespace() -> Mapping[str, Any] | None:
    try:
        from IPython import get_ipython
    except ImportError:
        return None
    shell = get_ipython()
    namespace = getattr(shell, "user_ns", None)
    return namespace if isinstance(namespace, dict) else None


class InlineCompletion:
    """Inline completion switched on (``neta_nb.inline_completion``): ``.off()`` switches
    it off; :attr:`cost_usd` and :attr:`calls` say what it spent."""

    def __init__(self, completer: InlineCompleter, *, debounce_ms: int, markdown: bool,
                 namespace: Callable[[], Mapping[str, Any] | None] = _user_namespace) -> None:
        self.completer = completer
        self.debounce_ms = debounce_ms
        self.markdown = markdown
        self._namespace = namespace
        self.requests = 0
        """Requests the page sent."""
        self.last_context: CompletionContext | None = None
        """The latest request's context, as the model got it."""
        self.on = True
        self._comm = create_comm(target_name=COMM_TARGET, data=self.settings())
        if hasattr(self._comm, "_reply_subshell_for"):
            # ipykernel 7 routes a comm's incoming messages to the subshell its last
            # outgoing one was sent from (for a widget awaiting its reply) — here the main
            # shell, which runs the cells. These requests start on the page, which sends
            # them on a subshell of their own: keep that one, so they are answered while a
            # cell runs.
            self._comm._reply_subshell_for = lambda _data, default: default
        self._comm.on_msg(self._on_message)
        self._comm.on_close(lambda _msg: self._closed())

    def settings(self) -> dict[str, Any]:
        """What the page is told at switch-on."""
        provider = self.completer.provider
        return {"protocol": PROTOCOL, "debounce_ms": self.debounce_ms,
                "max_tokens": self.completer.max_tokens, "markdown": self.markdown,
                "model": provider.model_id, "instance": next(_numbers)}

    def off(self) -> None:
        """Switch inline completion off: the page stops asking, a request in flight is
        cancelled. Calling it again does nothing."""
        if not self.on:
            return
        self._closed()
        self._comm.close()

    @property
    def cost_usd(self) -> float | None:
        """What the completion calls cost (``None``: unknown — no price, or a server that
        reported no usage)."""
        spend = self.completer.spend
        if spend.calls == 0:
            return 0.0
        return spend.value

    @property
    def calls(self) -> int:
        """Model calls made (cancelled ones before any usage came are not counted)."""
        return self.completer.spend.calls

    def _closed(self) -> None:
        global _active
        self.on = False
        self.completer.close()
        if _active is self:
            _active = None

    def _on_message(self, message: Mapping[str, Any]) -> None:
        content = message.get("content", {}).get("data", {})
        if not isinstance(content, Mapping):
            return
        kind, request_id = content.get("kind"), content.get("id")
        if not isinstance(request_id, str):
            return
        if kind == "cancel":
            self.completer.cancel(request_id)
            return
        if kind != "complete":
            self._comm.send({"kind": "error", "id": request_id,
                             "message": f"unknown inline completion message {kind!r}"})
            return
        if not self.on:
            return
        try:
            request = CompletionRequest.from_message(content)
        except ValueError as error:
            self._comm.send({"kind": "error", "id": request_id, "message": str(error)})
            return
        self.requests += 1
        context = CompletionContext.build(request, self._namespace())
        self.last_context = context
        self.completer.complete(request_id, context, self._send)

    def _send(self, data: dict[str, Any]) -> None:
        if self.on:
            self._comm.send(data)

    def __repr__(self) -> str:
        state = "on" if self.on else "off"
        cost = self.cost_usd
        spent = "cost unknown" if cost is None else format_usd(cost)
        return (f"InlineCompletion({state}, model={self.completer.provider.model_id!r}, "
                f"{'fill-in-the-middle' if self.completer.fim else 'chat'}, "
                f"debounce {self.debounce_ms} ms, at most {self.completer.max_tokens} "
                f"tokens, {self.calls} calls, {spent})")
