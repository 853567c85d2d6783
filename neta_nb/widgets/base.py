"""What every neta_nb widget shares: the loader of the one JS bundle, the language trait,
request/reply custom messages, constructors that refuse unknown keyword arguments, and a
mimebundle with a static form.

Requests: a view sends ``{kind, id, ...payload}`` and always gets exactly one
``{kind: "reply", id, ok, result | error}`` back (the JS side, ``request()`` in
``js/src/anywidget-binding.ts``, also gives up after a timeout). A widget answers a kind
with a method decorated ``@handles("kind")``; whatever that method raises becomes an error
reply, so a bug in a handler shows as an error where the user clicked instead of a button
that spins forever.

All widget classes load the same ESM bundle (``neta_nb/static/widgets.js``), which reaches
the page once per kernel through a shared model (``neta_nb.widgets.bundle``: each widget's own
``_esm`` is a small loader); its default export picks the renderer named by the ``_component``
trait. Outside a live kernel (nbconvert, GitHub, a reopened notebook without widget state) the
static form shows the card's content: one rich ``text/html`` form and a short
``text/plain`` line (one rich form, not three copies of the same content).
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
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar, Generic, Literal, NoReturn, TypeVar, cast, overload

import anywidget
import traitlets
from ipywidgets import Layout, widget_serialization  # type: ignore[import-untyped]
from ipywidgets.widgets.trait_types import InstanceDict  # type: ignore[import-untyped]

from ..encodable import encodable_value

# Pure escaping helpers live in the core (the resolver's displays use them too); widget
# code keeps importing them from here.
from ..escaping import code_span, escape_markdown, fenced, literal_markdown
from .background_echo import current_request, echo_after_cell, echo_noted, echoing
from .bundle import STATIC_DIR, WidgetBundle, loader_source, shared_bundle
from .static_form import StaticForm, display_view_and_form, running_cell, short_plain
from .wire import ErrorReply, OkReply, Reply

__all__ = ["STATIC_DIR", "ErrorReply", "Lang", "NetaWidget", "OkReply", "Reply", "RequestError",
           "RequestHandler", "Requests", "code_span", "escape_markdown", "fenced", "handles",
           "html_card", "literal_markdown"]

log = logging.getLogger(__name__)

Lang = Literal["en", "zh-CN"]

class RequestError(Exception):
    """Raised by a request handler; its message goes back to the view as the error."""


# --- the request protocol -------------------------------------------------------------
# The replies (OkReply | ErrorReply, in .wire) mirror `Reply<T>` in js/src/anywidget-binding.ts.

W = TypeVar("W")
# A request payload and a reply result: JSON objects on the wire, TypedDicts here.
Req = TypeVar("Req", bound=Mapping[str, object])
# A handler that must wait (on the page, say) returns an awaitable of its result.
Res = TypeVar("Res", bound=Mapping[str, object] | Awaitable[Mapping[str, object]])


class RequestHandler(Generic[W, Req, Res]):
    """A method that answers the view's requests of one ``kind`` — a widget's, or one of
    the :class:`Requests` objects a widget hands a job to; made by :func:`handles`. On an
    instance it is the plain bound method (callable directly, as tests do); on the class
    it is this object, which :class:`NetaWidget` dispatches to."""

    def __init__(self, kind: str, function: Callable[[W, Req], Res]) -> None:
        self.kind = kind
        self.function = function
        self.__doc__ = function.__doc__

    def __set_name__(self, owner: type[NetaWidget | Requests], name: str) -> None:
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


class Requests:
    """An object that answers some of a widget's requests: a job of the widget with an
    object of its own (its ``@handles`` methods, as a widget's). The widget names it in
    :attr:`NetaWidget._request_delegates`."""

    _request_handlers: ClassVar[Mapping[str, RequestHandler[Any, Any, Any]]] = {}


BUFFERS_KEY = "__buffers__"
"""Where a request's binary buffers are in the payload a handler gets (a key no view sends)."""

SHOWN_CELLS = 8
"""Cells a widget names as having displayed it (``NetaWidget._shown_in``): those of the
newest runs."""


def handles(kind: str) -> Callable[[Callable[[W, Req], Res]], RequestHandler[W, Req, Res]]:
    """Register the decorated method as the answer to requests of ``kind``. Its payload
    and result are typed (TypedDicts mirroring the TS side), and mypy checks them."""

    def register(function: Callable[[W, Req], Res]) -> RequestHandler[W, Req, Res]:
        return RequestHandler(kind, function)

    return register


def _reraise(error: Exception) -> NoReturn:
    raise error


def _waited(widget: NetaWidget, kind: str, request_id: str,
            done: asyncio.Future[Reply]) -> Reply:
    """The reply of an answer that waited; an error reply when what it waited for was
    cancelled instead (the view still gets its one reply)."""
    if done.cancelled():
        stopped = RequestError(f"the {kind!r} request was stopped before it was answered")
        return widget._answered(kind, request_id, functools.partial(_reraise, stopped))
    return done.result()


def _error_text(error: BaseException) -> str:
    """What the view shows for a handler's exception: a RequestError is a message meant for
    the user; anything else is a bug, named by its type."""
    if isinstance(error, RequestError):
        return str(error)
    message = str(error)
    return f"{type(error).__name__}: {message}" if message else type(error).__name__


_FRONTEND_DEFAULTS: dict[str, Any] = {"_dom_classes": [], "tabbable": None, "tooltip": None,
                                      "_view_count": None}
"""ipywidgets traits whose default the frontend's ``DOMWidgetModel`` has too: left out of
a widget's opening when unchanged (each widget's ``comm_open`` is the wire cost of
displaying it)."""


class NetaWidget(anywidget.AnyWidget):
    """Base of the neta_nb widgets. Subclasses set ``_component`` and their traits, and
    implement :meth:`_fallback_text` (short) and :meth:`_fallback_html` (the rich form)."""

    # Every class carries the loader only; the code is the state of the shared bundle
    # model this trait names (see widgets/bundle.py). No ``_css``: the loader adds the styles.
    _esm = loader_source()
    _bundle = traitlets.Instance(WidgetBundle, help="The shared code model (one per kernel)."
                                 ).tag(sync=True, **widget_serialization)

    # A Layout model only once it is used. ipywidgets gives every DOM widget one up front:
    # a comm of its own whose state is ~40 nulls (1.6 KB on the wire per widget, again on
    # every page reload and in saved widget state), and our views style themselves. Until
    # ``widget.layout`` is first read (or given), the state has no ``layout`` key and the
    # view gets the frontend's default (none); the first read creates the model and sends
    # the reference (``_send_created_layout``), so ``card.layout.width = "50%"`` works. A
    # view drawn before that takes the new model on through the bundle (anywidget's views
    # do not follow ``change:layout``: js/src/layout-after-render.ts).
    layout = InstanceDict(Layout, allow_none=True).tag(sync=True, **widget_serialization)

    _component = traitlets.Unicode("").tag(sync=True)
    _shown_in = traitlets.Dict(
        help="{model_id, cells: {cell id: run}}: this widget's model id, and the notebook "
             "cells that displayed it with the number of the run that did (see "
             "static_form.running_cell); empty until a cell displays it. A page reloaded from "
             "a notebook saved before that run shows there what was saved (or an older "
             "widget); the notebook bridge then offers this live widget in its place "
             "(js/labextension/src/reattach.ts).").tag(sync=True)
    lang = traitlets.Enum(("en", "zh-CN"), default_value="en",
                          help="Label language: 'en' or 'zh-CN'.").tag(sync=True)

    _static_traits: ClassVar[tuple[str, ...]] = ()
    """Traits whose change updates the static form of a displayed widget (throttled); a
    widget with a better moment to update it (the chat view: the end of a turn) calls
    ``self._static_form.refresh_now()`` instead."""

    # kind -> handler, filled by @handles in each class body (see RequestHandler).
    _request_handlers: ClassVar[Mapping[str, RequestHandler[Any, Any, Any]]] = {}
    _request_delegates: ClassVar[Mapping[str, type[Requests]]] = {}
    """The :class:`Requests` objects that answer the kinds the widget's own table lacks:
    attribute name → their class (known to the class, so :meth:`request_kinds` is)."""

    @classmethod
    def request_kinds(cls) -> frozenset[str]:
        """Every kind of request the widget answers, its delegates' included."""
        kinds = set(cls._request_handlers)
        for delegate in cls._request_delegates.values():
            kinds.update(delegate._request_handlers)
        return frozenset(kinds)

    def _handler_for(self, kind: str) -> tuple[Any, RequestHandler[Any, Any, Any]] | None:
        handler = self._request_handlers.get(kind)
        if handler is not None:
            return self, handler
        for name, delegate in self._request_delegates.items():
            handler = delegate._request_handlers.get(kind)
            if handler is not None:
                return getattr(self, name), handler
        return None

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

    @traitlets.default("layout")
    def _default_layout(self) -> Layout:
        return Layout()

    @traitlets.default("_bundle")
    def _default_bundle(self) -> WidgetBundle:
        return shared_bundle()

    def __init__(self, **kwargs: Any) -> None:
        self._kernel_loop: asyncio.AbstractEventLoop | None = None
        self._kernel_thread: int | None = None
        self._unechoed: set[str] = set()  # the keys sent since the last echo
        self.remember_kernel_loop()
        super().__init__(**kwargs)
        self.observe(self._send_created_layout, names="layout", type="default")
        self._static_form = StaticForm(self._static_parts, echo_wanted=self._echo_wanted)
        if self._static_traits:
            self.observe(lambda _change: self._static_form.refresh(),
                         names=list(self._static_traits))
        self.on_msg(self._on_custom_message)

    # --- the lazy layout ------------------------------------------------------------

    def get_state(self, key: Any = None, drop_defaults: bool = False) -> dict[str, Any]:
        whole = key is None
        if whole and not self.has_layout:
            key = [name for name in self.keys if name != "layout"]
        state: dict[str, Any] = super().get_state(key, drop_defaults=drop_defaults)
        if whole:
            # The whole state (a widget's opening, a page's request for it): ipywidgets'
            # DOM options at their defaults are the frontend model's defaults too.
            for name, default in _FRONTEND_DEFAULTS.items():
                if name in state and (state[name] == default
                                      or (default == [] and state[name] == ())):
                    del state[name]
        return state

    @property
    def has_layout(self) -> bool:
        """Whether this widget has a ``Layout`` model yet (see ``layout``)."""
        return "layout" in self._trait_values

    def _send_created_layout(self, _change: Any) -> None:
        if self.comm is not None:
            self.send_state("layout")

    # --- state sent from a background turn -----------------------------------------

    def send_state(self, key: Any = None) -> None:
        super().send_state(key)
        if echoing() or self.comm is None:
            return
        # Sent from a turn running in the background, this names the cell that started it:
        # the keys are sent again after the next cell, so nbconvert's saved widget state
        # has them (see _after_cell).
        if current_request() is None:
            return
        # Every key since the last echo, whichever request it went out under: the running
        # cell's own sends do not drop those of a turn in the background (the echo sends
        # each key's current value; one the cell already sent costs a few bytes again).
        # A cell that ended with only its own sends noted drops them (nothing went out).
        if not echo_noted((self, "state")):
            self._unechoed = set()
        self._unechoed.update(self.keys if key is None else [key] if isinstance(key, str)
                              else key)
        echo_after_cell((self, "state"), self._echo_state)

    def _echo_state(self) -> None:
        keys = sorted(name for name in self._unechoed if name in self.keys)
        self._unechoed = set()
        if keys and self.comm is not None and self._echo_wanted():
            super().send_state(keys)

    def _echo_wanted(self) -> bool:
        """Whether a background turn's sends are worth sending again after a cell (see
        ``neta_nb.widgets.background_echo``). A widget that knows a live view of it is open says no:
        that page got them already (it goes by comm and display id, not by cell); only a frontend
        that records by cell and draws no view (nbclient) needs them."""
        return True

    # --- requests from views -------------------------------------------------------

    def remember_kernel_loop(self) -> None:
        """Record the running loop of the calling thread, if any, as the kernel loop
        (a notebook cell runs on it) — see :meth:`_on_custom_message`."""
        try:
            self._kernel_loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._kernel_thread = threading.get_ident()

    def _on_custom_message(self, widget: object, content: Any,
                           buffers: Sequence[bytes | memoryview]) -> None:
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
        reply = self._respond(kind, request_id, content)
        if isinstance(reply, asyncio.Future):  # an answer that waits (on the page, say)
            reply.add_done_callback(lambda done: self.send(_waited(self, kind, request_id, done)))
            return
        self.send(reply)

    def _reply(self, kind: str, request_id: str, content: Mapping[str, Any]) -> Reply:
        """The reply to a request its handler answers at once (see :meth:`_respond`)."""
        reply = self._respond(kind, request_id, content)
        if isinstance(reply, asyncio.Future):
            raise TypeError(f"the {kind!r} request is answered later: use _respond")
        return reply

    def _respond(self, kind: str, request_id: str,
                 content: Mapping[str, Any]) -> Reply | asyncio.Future[Reply]:
        """The one reply to a request: every way a handler can fail is an error reply. A
        handler that returns an awaitable (it asks the page, say) is answered when that is
        done, by a task on the running loop."""
        found = self._handler_for(kind)
        if found is None:
            return {"kind": "reply", "id": request_id, "ok": False,
                    "error": f"unknown request kind {kind!r}"}
        answerer, handler = found
        try:
            result = handler.answer(answerer, content)
        except Exception as error:
            return self._answered(kind, request_id, functools.partial(_reraise, error))
        if not inspect.isawaitable(result):
            return self._answered(kind, request_id, lambda: result)
        waited = result

        async def later() -> Reply:
            try:
                value = await waited
            except Exception as error:
                return self._answered(kind, request_id, functools.partial(_reraise, error))
            return self._answered(kind, request_id, lambda: value)

        return asyncio.ensure_future(later())

    def _answered(self, kind: str, request_id: str, answer: Callable[[], Any]) -> Reply:
        """The reply carrying what ``answer`` gives, or the error it raises."""
        try:
            result = answer()
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

    # --- static form ----------------------------------------------------------------

    def _fallback_text(self) -> str:
        """The widget as a few lines of text (cut to ``PLAIN_CHARS`` in the static form)."""
        return repr(self)

    def _fallback_html(self) -> str:
        """The widget as self-contained HTML (inline styles, model text escaped): what a
        viewer without the live widget shows."""
        return f"<pre>{html.escape(self._fallback_text())}</pre>"

    def _static_parts(self) -> tuple[str, str]:
        return self._fallback_html(), self._fallback_text()

    def refresh_static_form(self) -> None:
        """Draw the static form again soon: something it shows changed outside the
        widget's traits (a session renamed from the session list)."""
        self._static_form.refresh()

    def _repr_mimebundle_(self, **kwargs: Any) -> tuple[dict[str, Any], dict[str, Any]] | None:
        """The widget view with a one-line ``text/plain``: what a page that cannot draw the
        view shows of a widget displayed without its static form (``_ipython_display_``
        shows the form as an output of its own, and leaves this line out)."""
        bundle = super()._repr_mimebundle_(**kwargs)
        if bundle is None:
            return None
        data, metadata = bundle
        return {**data, "text/plain": short_plain(self._view_text(), 120)}, metadata

    def _view_text(self) -> str:
        """The line a page shows in place of the view when it cannot draw it, where the view
        is shown without its static form (``_repr_mimebundle_`` on its own)."""
        return repr(self)

    def _ipython_display_(self) -> None:
        """Displayed in a cell: the widget view, then its static form as an output of its
        own that is kept current (see ``neta_nb.widgets.static_form``)."""
        shown = running_cell()
        if shown is not None:
            cells = {**self._shown_in.get("cells", {}), shown.cell: shown.run}
            newest = sorted(cells.items(), key=lambda item: item[1])[-SHOWN_CELLS:]
            self._shown_in = {"model_id": self.model_id, "cells": dict(newest)}
        display_view_and_form(self._repr_mimebundle_(), self._static_form)

    def close(self) -> None:
        form = getattr(self, "_static_form", None)
        if form is not None:
            form.cancel()
        super().close()


def html_card(title: str, body: str, *, accent: str = "#1976d2") -> str:
    """A self-contained HTML card for static viewers (inline styles: no stylesheet is
    loaded there). ``title`` and ``body`` must already be escaped HTML."""
    return (
        f'<div class="neta-static" style="border:1px solid #d0d7de;border-left:3px solid '
        f'{accent};border-radius:8px;padding:8px 12px;margin:4px 0;font-family:system-ui,'
        f'sans-serif;font-size:13px;line-height:1.5">'
        f'<div style="font-weight:600">{title}</div>{body}</div>'
    )
