"""What every neta_nb widget shares: the one JS bundle, the language trait, request/reply
custom messages, constructors that refuse unknown keyword arguments, and a mimebundle with
static fallbacks.

Requests: a view sends ``{kind, id, ...payload}`` and always gets exactly one
``{kind: "reply", id, ok, result | error}`` back (the JS side, ``request()`` in
``js/src/anywidget-binding.ts``, also gives up after a timeout). A widget answers a kind
with a method decorated ``@handles("kind")``; whatever that method raises becomes an error
reply, so a bug in a handler shows as an error where the user clicked instead of a button
that spins forever.

All widget classes load the same ESM bundle (``neta_nb/static/widgets.js``); its default
export picks the renderer named by the ``_component`` trait. Outside a live kernel
(nbconvert, GitHub, a reopened notebook without widget state) the ``text/plain``,
``text/markdown`` and ``text/html`` fallbacks show the card's content.
"""

from __future__ import annotations

import asyncio
import difflib
import functools
import html
import inspect
import json
import logging
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Generic, Literal, TypedDict, TypeVar, cast, overload

import anywidget
import traitlets

# Pure escaping helpers live in the core (the resolver's displays use them too); widget
# code keeps importing them from here.
from ..markup import code_span, escape_markdown, fenced, literal_markdown
from ..messages import encodable_value

__all__ = ["STATIC_DIR", "ErrorReply", "Lang", "NetaWidget", "OkReply", "Reply", "RequestError",
           "RequestHandler", "code_span", "escape_markdown", "fenced", "handles", "html_card",
           "literal_markdown"]

log = logging.getLogger(__name__)

STATIC_DIR = Path(__file__).resolve().parent.parent / "static"
_BUNDLE = STATIC_DIR / "widgets.js"
_STYLES = STATIC_DIR / "widgets.css"

Lang = Literal["en", "zh-CN"]

# Shown in place of a card when the package was installed without building its JS
# (the build hook normally guarantees the bundle exists).
_MISSING_BUNDLE_ESM = """
export default { render({ el }) {
  el.textContent = "neta_nb: the widget bundle is missing. Reinstall with Node.js and npm "
    + "available (pip install -e .), or run `npm ci && npm run build` in js/.";
} };
"""

class RequestError(Exception):
    """Raised by a request handler; its message goes back to the view as the error."""


# --- the request protocol -------------------------------------------------------------
# The replies mirror `Reply<T>` in js/src/anywidget-binding.ts.

class OkReply(TypedDict):
    """A request that was answered (TS: ``Reply<T>`` with ``ok: true``)."""

    kind: Literal["reply"]
    id: str
    ok: Literal[True]
    result: Mapping[str, object]


class ErrorReply(TypedDict):
    """A request that failed (TS: ``Reply<T>`` with ``ok: false``)."""

    kind: Literal["reply"]
    id: str
    ok: Literal[False]
    error: str


Reply = OkReply | ErrorReply

W = TypeVar("W", bound="NetaWidget")
# A request payload and a reply result: JSON objects on the wire, TypedDicts here.
Req = TypeVar("Req", bound=Mapping[str, object])
Res = TypeVar("Res", bound=Mapping[str, object])


class RequestHandler(Generic[W, Req, Res]):
    """A widget method that answers the view's requests of one ``kind``; made by
    :func:`handles`. On an instance it is the plain bound method (callable directly, as
    tests do); on the class it is this object, which :class:`NetaWidget` dispatches to."""

    def __init__(self, kind: str, function: Callable[[W, Req], Res]) -> None:
        self.kind = kind
        self.function = function
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type[NetaWidget], name: str) -> None:
        # Each class gets its own table (a copy of its base's), so a subclass can add or
        # override kinds without changing its parent's.
        if "_request_handlers" not in vars(owner):
            owner._request_handlers = dict(owner._request_handlers)
        handlers = cast("dict[str, RequestHandler[Any, Any, Any]]", owner._request_handlers)
        handlers[self.kind] = self

    @overload
    def __get__(self, instance: None, owner: type[Any]) -> RequestHandler[W, Req, Res]: ...

    @overload
    def __get__(self, instance: W, owner: type[Any]) -> Callable[[Req], Res]: ...

    def __get__(self, instance: W | None, owner: type[Any]
                ) -> RequestHandler[W, Req, Res] | Callable[[Req], Res]:
        if instance is None:
            return self
        return functools.partial(self.function, instance)

    def answer(self, widget: W, payload: Mapping[str, Any]) -> Res:
        # The payload is what the view sent: its TypedDict is the shape our TS sends, and
        # a handler still checks the fields it relies on (a crafted message can send
        # anything; a bad field is a RequestError with a message the user can read).
        return self.function(widget, cast(Req, payload))


BUFFERS_KEY = "__buffers__"
"""Where a request's binary buffers are in the payload a handler gets (a key no view sends)."""


def handles(kind: str) -> Callable[[Callable[[W, Req], Res]], RequestHandler[W, Req, Res]]:
    """Register the decorated method as the answer to requests of ``kind``. Its payload
    and result are typed (TypedDicts mirroring the TS side), and mypy checks them."""

    def register(function: Callable[[W, Req], Res]) -> RequestHandler[W, Req, Res]:
        return RequestHandler(kind, function)

    return register


def _error_text(error: BaseException) -> str:
    """What the view shows for a handler's exception: a RequestError is a message meant for
    the user; anything else is a bug, named by its type."""
    if isinstance(error, RequestError):
        return str(error)
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


class NetaWidget(anywidget.AnyWidget):
    """Base of the neta_nb widgets. Subclasses set ``_component`` and their traits, and
    implement :meth:`_fallback_text`, :meth:`_fallback_markdown` and :meth:`_fallback_html`."""

    _esm = _BUNDLE if _BUNDLE.is_file() else _MISSING_BUNDLE_ESM
    _css = _STYLES if _STYLES.is_file() else ""

    _component = traitlets.Unicode("").tag(sync=True)
    lang = traitlets.Enum(("en", "zh-CN"), default_value="en",
                          help="Label language: 'en' or 'zh-CN'.").tag(sync=True)

    # kind -> handler, filled by @handles in each class body (see RequestHandler).
    _request_handlers: ClassVar[Mapping[str, RequestHandler[Any, Any, Any]]] = {}

    def __new__(cls, *args: Any, **kwargs: Any) -> Any:
        # Checked before the instance exists: raising from __init__ would leave a half-built
        # widget whose __del__ -> close() trips over attributes it never got.
        cls._check_keyword_arguments(kwargs)
        return super().__new__(cls, *args, **kwargs)

    @classmethod
    def _check_keyword_arguments(cls, kwargs: Mapping[str, Any]) -> None:
        """A keyword that is neither a trait nor a constructor parameter is a typo: traitlets
        would only warn and drop it (``TodoCard(todoz=...)`` drew an empty card)."""
        own, accepted = cls._keyword_names()
        unknown = [name for name in kwargs if name not in accepted]
        if not unknown:
            return
        name = unknown[0]
        close = difflib.get_close_matches(
            name, sorted(n for n in accepted if not n.startswith("_")), n=1)
        hint = (f"; did you mean {close[0]!r}?" if close
                else f"; this widget takes {', '.join(sorted(own))}")
        raise TypeError(f"{cls.__name__}() got an unexpected keyword argument {name!r}{hint}")

    @classmethod
    @functools.cache
    def _keyword_names(cls) -> tuple[frozenset[str], frozenset[str]]:
        """(this widget's own public names, every name its constructor accepts): the
        parameters of each constructor up the chain (a subclass forwards ``**kwargs``) and
        every trait, including the ipywidgets ones (``layout``, ``tooltip``…)."""
        own: set[str] = {"layout"}
        for klass in cls.__mro__:
            if klass.__module__.split(".")[0] in ("ipywidgets", "anywidget", "traitlets"):
                break
            own.update(name for name in vars(klass)
                       if isinstance(vars(klass)[name], traitlets.TraitType))
            init = vars(klass).get("__init__")
            if init is None or klass is NetaWidget:
                continue
            for parameter in inspect.signature(init).parameters.values():
                if parameter.kind in (parameter.POSITIONAL_OR_KEYWORD, parameter.KEYWORD_ONLY):
                    own.add(parameter.name)
        own.discard("self")
        accepted = own | set(cls.class_trait_names())
        return frozenset(n for n in own if not n.startswith("_")), frozenset(accepted)

    def __init__(self, **kwargs: Any) -> None:
        self._kernel_loop: asyncio.AbstractEventLoop | None = None
        self._kernel_thread: int | None = None
        self.remember_kernel_loop()
        super().__init__(**kwargs)
        self.on_msg(self._on_custom_message)

    # --- requests from views -------------------------------------------------------

    def remember_kernel_loop(self) -> None:
        """Record the running loop of the calling thread, if any, as the kernel loop
        (a notebook cell runs on it) — see :meth:`_on_custom_message`."""
        try:
            self._kernel_loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._kernel_thread = threading.get_ident()

    def _on_custom_message(self, widget: object, content: Any, buffers: Sequence[bytes]) -> None:
        # JupyterLab may deliver widget messages on a kernel *subshell* (ipykernel 7 runs
        # each subshell in a thread of its own, with its own event loop). Sessions, their
        # approval futures and their tasks live on the kernel's main loop and are not
        # thread-safe: resolving an approval from another thread schedules the turn's
        # wake-up without waking the loop (seen here: an "Allow once" click hung the
        # turn). So every request is handled on the loop the widget was created on.
        if buffers and isinstance(content, Mapping):
            # Binary buffers (attached files) reach the handler with the payload, as bytes.
            content = {**content, BUFFERS_KEY: [bytes(buffer) for buffer in buffers]}
        loop = self._kernel_loop
        if (loop is None or loop.is_closed() or not loop.is_running()
                or threading.get_ident() == self._kernel_thread):
            self._handle_request(content)
            return
        loop.call_soon_threadsafe(self._handle_request, content)

    def _handle_request(self, content: Any) -> None:
        if not isinstance(content, Mapping):
            return
        kind, request_id = content.get("kind"), content.get("id")
        if not isinstance(kind, str) or not isinstance(request_id, str):
            return  # not a request (replies and batches travel the same channel)
        self.send(self._reply(kind, request_id, content))

    def _reply(self, kind: str, request_id: str, content: Mapping[str, Any]) -> Reply:
        """The one reply to a request: every way a handler can fail is an error reply."""
        handler = self._request_handlers.get(kind)
        if handler is None:
            return {"kind": "reply", "id": request_id, "ok": False,
                    "error": f"unknown request kind {kind!r}"}
        try:
            result = handler.answer(self, content)
            # Checked here, strictly (no NaN, nothing the kernel's packer would coerce or
            # reject): a reply that fails to serialise inside send() would be no reply.
            try:
                json.dumps(result, allow_nan=False, ensure_ascii=False).encode("utf-8")
            except UnicodeEncodeError:
                # A lone surrogate (text cut mid-character by a tool): shown as U+FFFD.
                result = encodable_value(result)
        except RequestError as error:
            return {"kind": "reply", "id": request_id, "ok": False, "error": _error_text(error)}
        except Exception as error:
            log.exception("%s: the %r request failed", type(self).__name__, kind)
            return {"kind": "reply", "id": request_id, "ok": False,
                    "error": _error_text(error)}
        return {"kind": "reply", "id": request_id, "ok": True, "result": result}

    # --- static fallbacks ----------------------------------------------------------

    def _fallback_text(self) -> str:
        return repr(self)

    def _fallback_markdown(self) -> str:
        return escape_markdown(self._fallback_text())

    def _fallback_html(self) -> str:
        return f"<pre>{html.escape(self._fallback_text())}</pre>"

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        # The widget view stays in the bundle (a live frontend prefers it); the static forms
        # are what nbconvert, GitHub and kernel-less viewers show.
        data = {
            **data,
            "text/plain": self._fallback_text(),
            "text/markdown": self._fallback_markdown(),
            "text/html": self._fallback_html(),
        }
        return data, metadata


def html_card(title: str, body: str, *, accent: str = "#1976d2") -> str:
    """A self-contained HTML card for static viewers (inline styles: no stylesheet is
    loaded there). ``title`` and ``body`` must already be escaped HTML."""
    return (
        f'<div class="neta-static" style="border:1px solid #d0d7de;border-left:3px solid '
        f'{accent};border-radius:8px;padding:8px 12px;margin:4px 0;font-family:system-ui,'
        f'sans-serif;font-size:13px;line-height:1.5">'
        f'<div style="font-weight:600">{title}</div>{body}</div>'
    )
