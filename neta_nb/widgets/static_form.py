"""The output that shows a widget's static form, kept current so that a saved notebook shows
the widget as it ended.

A widget displayed in a cell makes two outputs (see ``NetaWidget._ipython_display_``):

* the **widget view** (``application/vnd.jupyter.widget-view+json``), which a live
  frontend renders, with an empty ``text/plain`` (a viewer that draws no view shows the
  form's words once, not a line above the form saying the same);
* the **static form**: one rich ``text/html`` form and a short ``text/plain``, in a display
  with an id, updated in place (``update_display_data``) when the widget's state settles —
  a chat view at the end of each turn, a card when its traits change, at most once per
  :data:`REFRESH_INTERVAL`. This is what a notebook saved without widget state keeps, and
  what GitHub, nbviewer, nbconvert and a kernel-less reopen show.

Why two outputs and not one updated in place: JupyterLab (and Notebook 7, Voila, which use
its output area) handles an update of an output whose preferred type is the widget view by
calling the renderer's ``renderModel`` again, and the widget renderer then adds a *second*
view of the model to the output. An update of a plain HTML output has no such effect.
While a live view renders, a rule the widgets' loader adds to the page hides the static
form that follows it (``js/src/loader.ts``: an output holding a neta view, then an output
holding a ``neta-static-form``), so the page never shows both; where no view renders (no
kernel and no widget state, an export opened offline) nothing hides the form. The form's
HTML is the same for the same state (no ids in it), so an executed notebook compares
equal under nbval.

A display id is mapped to its output only by the page that ran the cell (JupyterLab keeps
the map with the cell's request, in memory): a page reloaded, or the notebook closed and
opened again while the kernel runs, drops every update. So the display id also names the
widget view the form follows (:func:`form_display_id`: ``neta-form:<model id>:<unique>``),
and the notebook bridge (``js/labextension/src/static-forms.ts``) writes an update its
page did not map into the output after that view. The update goes out once, whoever maps
it; nbclient and other frontends use the display id as any other.
"""

from __future__ import annotations

import dataclasses
import itertools
import time
import uuid
import weakref
from collections.abc import Callable, Sequence
from typing import Any

from .background_echo import echo_after_cell, kernel_parent
from .streaming import FrameThrottle, Scheduler, call_later_on_running_loop

__all__ = ["FORM_DISPLAY_PREFIX", "PLAIN_CHARS", "REFRESH_INTERVAL", "CellRun", "StaticForm",
           "display_view_and_form", "form_display_id", "requested_cell", "running_cell",
           "send_update", "short_plain"]

REFRESH_INTERVAL = 1.0
"""Seconds between two updates of one static form: it is the whole form each time (a card
that changes many times a second costs one update per second, and its last state is never
held back longer than that)."""

PLAIN_CHARS = 400
"""The ``text/plain`` of a static form: a line or two, for viewers that show nothing
richer (the rich form is the HTML)."""

FORM_DISPLAY_PREFIX = "neta-form:"
"""How the display id of a static form that follows a widget view begins (the notebook
bridge reads it: ``js/labextension/src/static-forms.ts``)."""

_WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"

_KEEP_DISPLAYS = 8
"""Displays of one widget kept current (a widget shown again and again in a loop keeps
its latest ones)."""


def send_update(bundle: dict[str, str], display_id: str) -> None:
    """``update_display_data`` of one display (nothing outside IPython: a script displayed
    nothing either)."""
    from IPython.core.interactiveshell import InteractiveShell
    from IPython.display import update_display

    if InteractiveShell.initialized():
        update_display(bundle, raw=True, display_id=display_id)  # type: ignore[no-untyped-call]


def form_display_id(view_model_id: str | None) -> str:
    """A new display id for a static form, naming the widget model whose view the form
    follows (a bare unique id where it follows none)."""
    unique = uuid.uuid4().hex
    return f"{FORM_DISPLAY_PREFIX}{view_model_id}:{unique}" if view_model_id else unique


@dataclasses.dataclass(frozen=True)
class CellRun:
    """A notebook cell's run: the cell's id and the run's number in this kernel (every
    widget one run displays shares it; a later run has a higher one)."""

    cell: str
    run: int


_run_numbers: dict[str, int] = {}  # execute request id -> its run's number
_next_run = itertools.count(1)
_KEEP_RUNS = 256


def running_cell() -> CellRun | None:
    """The notebook cell whose run is going on (JupyterLab and Notebook 7 name it in each
    execute request's metadata), or ``None`` (no kernel, no cell named)."""
    parent = kernel_parent()
    if parent is None:
        return None
    cell = _cell_id(parent)
    header = parent.get("header")
    request = header.get("msg_id") if isinstance(header, dict) else None
    if cell is None or not isinstance(request, str):
        return None
    number = _run_numbers.get(request)
    if number is None:
        number = _run_numbers[request] = next(_next_run)
        while len(_run_numbers) > _KEEP_RUNS:
            del _run_numbers[next(iter(_run_numbers))]
    return CellRun(cell, number)


def requested_cell(kernel: Any) -> str | None:
    """The id of the notebook cell ``kernel``'s current execute request runs, when a
    notebook page sent it: JupyterLab and Notebook 7 name it in the request's metadata
    (``cellId``); nbclient (papermill, nbconvert), a console and
    ``kernel.requestExecute`` name none (``None``, as for no kernel)."""
    get_parent = getattr(kernel, "get_parent", None)
    return _cell_id(get_parent() if callable(get_parent) else None)


def _cell_id(parent: Any) -> str | None:
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell if isinstance(cell, str) and cell else None


def short_plain(text: str, limit: int = PLAIN_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying so."""
    return text if len(text) <= limit else text[:limit].rstrip() + "…"


def display_view_and_form(bundle: Any, form: StaticForm) -> None:
    """Show a widget in the running cell: its view (``bundle``, a widget's
    ``_repr_mimebundle_()``: the data, or ``(data, metadata)``) with an empty ``text/plain``
    — the form after it carries the words, so a page that draws no view (GitHub, nbviewer,
    a notebook reopened without widget state) shows them once — then ``form``."""
    from IPython.display import display

    view_model_id = None
    if bundle is not None:
        data, metadata = bundle if isinstance(bundle, tuple) else (bundle, {})
        display({**data, "text/plain": ""}, metadata=metadata,  # type: ignore[no-untyped-call]
                raw=True)
        view = data.get(_WIDGET_VIEW)
        view_model_id = view.get("model_id") if isinstance(view, dict) else None
    form.display(view_model_id if isinstance(view_model_id, str) else None)


class StaticForm(FrameThrottle):
    """The static-form displays of one widget. ``render()`` gives ``(html, plain)`` of the
    widget as it is now."""

    def __init__(self, render: Callable[[], tuple[str, str]], *,
                 echo_wanted: Callable[[], bool] = lambda: True,
                 interval: float = REFRESH_INTERVAL,
                 clock: Callable[[], float] = time.monotonic,
                 schedule: Scheduler = call_later_on_running_loop) -> None:
        super().__init__(interval=interval, clock=clock, schedule=schedule)
        self._render = render
        self._echo_wanted = echo_wanted
        self.display_ids: list[str] = []
        self._pending = False
        self._followers: weakref.WeakSet[StaticForm] = weakref.WeakSet()
        self._sources: tuple[StaticForm, ...] = ()

    def follow(self, sources: Sequence[StaticForm]) -> None:
        """Refresh whenever one of ``sources`` does (instead of those followed so far): a
        form that draws other widgets' forms (a :class:`~neta_nb.widgets.layout.SideBySide`
        of a session list and a chat). An earlier follower of the very same sources — the
        same cell run again, whose old row stays open — stops following them: its display
        was replaced, and updating it would send the whole form again for nothing."""
        for source in self._sources:
            source._followers.discard(self)
        self._sources = tuple(sources)
        for source in self._sources:
            for earlier in [f for f in source._followers if f._sources == self._sources]:
                earlier.follow(())
            source._followers.add(self)

    def bundle(self) -> dict[str, str]:
        """The static form's mimebundle: the rich HTML form and a short plain text."""
        rich, plain = self._render()
        return {"text/html": f'<div class="neta-static-form">{rich}</div>',
                "text/plain": short_plain(plain)}

    def display(self, view_model_id: str | None = None) -> None:
        """Show the static form as a new output of the running cell, after the view of the
        widget model ``view_model_id`` (see :func:`form_display_id`)."""
        from IPython.display import display

        display_id = form_display_id(view_model_id)
        display(self.bundle(), raw=True, display_id=display_id)  # type: ignore[no-untyped-call]
        self.display_ids = [*self.display_ids, display_id][-_KEEP_DISPLAYS:]

    def refresh(self) -> None:
        """Update the displays to the widget's present state, soon (throttled)."""
        if self._followers:  # rare (a SideBySide): no copy made on every refresh
            for follower in list(self._followers):
                follower.refresh()
        if not self.display_ids:
            return
        self._pending = True
        self._schedule()

    def refresh_now(self) -> None:
        """Update them now (the end of a turn)."""
        if self._followers:
            for follower in list(self._followers):
                follower.refresh_now()
        if self.display_ids:
            self._pending = True
            self.flush()

    def _take(self) -> dict[str, str] | None:
        if not self._pending:
            return None
        self._pending = False
        return self.bundle()

    def _deliver(self, seq: int, payload: Any) -> None:
        self._send(payload)
        # Sent from a turn running in the background, this names the cell that started
        # it: sent again after the next cell, so nbconvert records it (see _after_cell).
        echo_after_cell(self, lambda: self._echo(payload))

    def _echo(self, payload: dict[str, str]) -> None:
        if self._echo_wanted():
            self._send(payload)

    def _send(self, payload: dict[str, str]) -> None:
        for display_id in self.display_ids:
            send_update(payload, display_id)

    def cancel(self) -> None:
        self._cancel_timer()
        self._pending = False
