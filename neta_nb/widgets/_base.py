"""What every neta_nb widget shares: the one JS bundle, the language trait, request/reply
custom messages, and a mimebundle with static fallbacks.

All widget classes load the same ESM bundle (``neta_nb/static/widgets.js``); its default
export picks the renderer named by the ``_component`` trait. Outside a live kernel
(nbconvert, GitHub, a reopened notebook without widget state) the ``text/plain``,
``text/markdown`` and ``text/html`` fallbacks show the card's content.
"""

from __future__ import annotations

import asyncio
import html
import re
import threading
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, ClassVar, Literal

import anywidget
import traitlets

__all__ = ["STATIC_DIR", "Lang", "NetaWidget", "RequestError", "code_span", "escape_markdown",
           "fenced", "html_card", "literal_markdown"]

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

RequestHandler = Callable[[Mapping[str, Any]], Any]


class RequestError(Exception):
    """Raised by a request handler; its message goes back to the view as the error."""


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def code_span(text: str) -> str:
    """``text`` as an inline code span that no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def escape_markdown(text: str) -> str:
    """Text that renders literally inside markdown: markdown punctuation is backslashed and
    HTML special characters become entities (so raw HTML in model text stays text)."""
    escaped = "".join(f"\\{ch}" if ch in "\\`*_{}[]()#+-.!|~>" else ch for ch in text)
    return escaped.replace("&", "&amp;").replace("<", "&lt;")


def literal_markdown(text: str) -> str:
    """Multi-line text that renders literally, its line breaks kept (hard breaks).

    Static viewers (GitHub, nbconvert, a notebook reopened without widget state) may not
    sanitize markdown, and even those that do load its images: model text written as live
    markdown there would fetch ``![](https://host/?d=…)`` on sight."""
    return "  \n".join(escape_markdown(line) for line in text.splitlines())


class NetaWidget(anywidget.AnyWidget):
    """Base of the neta_nb widgets. Subclasses set ``_component`` and their traits, and
    implement :meth:`_fallback_text`, :meth:`_fallback_markdown` and :meth:`_fallback_html`."""

    _esm = _BUNDLE if _BUNDLE.is_file() else _MISSING_BUNDLE_ESM
    _css = _STYLES if _STYLES.is_file() else ""

    _component = traitlets.Unicode("").tag(sync=True)
    lang = traitlets.Enum(("en", "zh-CN"), default_value="en",
                          help="Label language: 'en' or 'zh-CN'.").tag(sync=True)

    # kind -> method name; a view sends {kind, id, ...} and gets {kind: "reply", id, ok, ...}.
    _request_kinds: ClassVar[Mapping[str, str]] = {}

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
            return
        method_name = self._request_kinds.get(kind)
        if method_name is None:
            self.send({"kind": "reply", "id": request_id, "ok": False,
                       "error": f"unknown request kind {kind!r}"})
            return
        handler: RequestHandler = getattr(self, method_name)
        try:
            result = handler(content)
        except RequestError as error:
            self.send({"kind": "reply", "id": request_id, "ok": False, "error": str(error)})
            return
        self.send({"kind": "reply", "id": request_id, "ok": True, "result": result})

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
