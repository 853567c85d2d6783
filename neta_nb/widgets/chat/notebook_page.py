"""PageBridge: the notebook tools' way to the notebook, through a chat view on the page.

A chat view rendered on a JupyterLab or Notebook 7 page with the neta-nb extension says so
when it opens (``view_opened {view_id, notebook_bridge: true}``). A request of the notebook
tools (:class:`neta_nb.tools.notebook.NotebookPage`) goes to the newest such view as a
custom message ``{kind: "notebook_request", id, view_id, op, args}``; that view hands it to
the extension, which works on the notebook whose output area holds the view, and answers
with a ``notebook_reply {request_id, ok, result | error}`` request. A view that answers it
is in no notebook (JupyterLab's "New View for Output") is passed over from then on.

Messages from the kernel to the page can be lost on the way (a prototype's page missed the
first one of a turn in 3 of 5 runs), so a request without an answer is sent again every
:data:`RESEND_EVERY` seconds under the same id — the view runs an id once and answers a
repeat from what it remembered — and given up after its deadline with a clear error:
never waited on for ever. A run of a cell answers only when the cell has finished; its
repeats are ignored meanwhile.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Callable, Mapping
from typing import Any

from ...tools.notebook.page import PAGE_NEEDED, NotebookError

__all__ = ["PAGE_DEADLINE", "RESEND_EVERY", "PageBridge"]

RESEND_EVERY = 2.0
"""Seconds before a request without an answer is sent again."""
PAGE_DEADLINE = 30.0
"""Seconds a request other than a run waits for the page before giving up."""
VIEW_GRACE = 3.0
"""Seconds after a chat widget is made during which a request waits for its first view to
open (Run All starts the turn right after the cell that shows the chat, before the page
has drawn it); later, or once a view has opened, a request never waits for one."""
_NOT_IN_A_NOTEBOOK = frozenset({"no_notebook", "no_bridge"})
"""Answers of a view that cannot reach a notebook (and did nothing): passed over from then
on."""
_OFF_THE_PAGE = "not_on_page"
"""The answer of a view detached from the page for now (JupyterLab's windowed notebook
detaches a cell scrolled out of view): passed over for this request only."""


class PageBridge:
    """The open views of one chat widget that can reach the notebook, and the requests
    waiting for their answers."""

    def __init__(self, send: Callable[[dict[str, Any]], None]) -> None:
        self._send = send
        self._views: dict[str, bool] = {}  # view id -> has the extension, in opening order
        self._made = time.monotonic()
        self._seen_a_view = False
        self._first: asyncio.Event | None = None  # set when the first view opens
        self._waiting: dict[str, asyncio.Future[Mapping[str, Any]]] = {}

    @property
    def available(self) -> bool:
        return any(self._views.values())

    def opened(self, view_id: str, bridge: bool) -> None:
        self._views.pop(view_id, None)
        self._views[view_id] = bridge  # the newest view answers
        self._seen_a_view = True
        if self._first is not None:
            self._first.set()

    def closed(self, view_id: str) -> None:
        self._views.pop(view_id, None)

    def _view(self, passed: Mapping[str, str]) -> str | None:
        return next((view for view, bridge in reversed(self._views.items())
                     if bridge and view not in passed), None)

    async def request(self, op: str, args: dict[str, Any], *,
                      wait: float | None = None) -> dict[str, Any]:
        deadline = asyncio.get_running_loop().time() + (wait or PAGE_DEADLINE)
        await self._first_view()
        off_the_page: dict[str, str] = {}  # views detached for now -> what they said
        while True:
            view = self._view(off_the_page)
            if view is None and off_the_page:
                raise NotebookError(_OFF_THE_PAGE, next(iter(off_the_page.values())))
            if view is None:
                raise NotebookError("no_bridge", f"No chat view is open on a notebook page: "
                                    f"this {PAGE_NEEDED} with the chat shown.")
            reply = await self._ask(view, op, args, deadline, wait or PAGE_DEADLINE)
            if reply.get("ok"):
                result = reply.get("result")
                return dict(result) if isinstance(result, Mapping) else {}
            error = reply.get("error")
            error = error if isinstance(error, Mapping) else {}
            code = str(error.get("code") or "failed")
            if code == _OFF_THE_PAGE:
                # Scrolled out of a windowed notebook, say: nothing was done, another view
                # may answer, and this one answers again once it is back.
                off_the_page[view] = str(error.get("message")
                                         or "the chat view is not on the page now")
                continue
            if code in _NOT_IN_A_NOTEBOOK:
                # This view is on the page but in no notebook (JupyterLab's "New View for
                # Output"); nothing was done: another view may answer.
                self._views[view] = False
                continue
            raise NotebookError(code, str(error.get("message") or "the page refused"))

    async def _first_view(self) -> None:
        """Within :data:`VIEW_GRACE` of this widget's making, wait for its first view."""
        left = VIEW_GRACE - (time.monotonic() - self._made)
        if self._seen_a_view or left <= 0:
            return
        if self._first is None:
            self._first = asyncio.Event()
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(self._first.wait(), left)

    async def _ask(self, view: str, op: str, args: dict[str, Any], deadline: float,
                   limit: float) -> Mapping[str, Any]:
        """One request to one view, sent again under its id until answered. It stays with
        that view: sent to another, a run could run twice."""
        request_id = uuid.uuid4().hex
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Mapping[str, Any]] = loop.create_future()
        self._waiting[request_id] = future
        try:
            while True:
                if view not in self._views:
                    raise NotebookError("no_answer", f"The chat view asked to '{op}' closed "
                                        "before it answered.")
                self._send({"kind": "notebook_request", "id": request_id, "view_id": view,
                            "op": op, "args": args})
                left = deadline - loop.time()
                if left <= 0:
                    raise NotebookError("no_answer", f"The notebook page did not answer "
                                        f"'{op}' in {limit:.0f} s.")
                try:
                    return await asyncio.wait_for(asyncio.shield(future),
                                                  min(RESEND_EVERY, left))
                except TimeoutError:
                    continue
        finally:
            self._waiting.pop(request_id, None)
            if not future.done():
                future.cancel()

    def replied(self, reply: Mapping[str, Any]) -> bool:
        """An answer from a view; False for one nobody waits for (a repeat, or late)."""
        future = self._waiting.get(str(reply.get("request_id")))
        if future is None or future.done():
            return False
        future.set_result(reply)
        return True
