"""What a turn running in the background sends must also reach the cell that runs later.

A turn started with ``session.start()`` runs as a task of the cell that started it, and
ipykernel (7+) keeps a request's parent header in a context variable: every message the
task sends names that cell, however long ago it finished. JupyterLab does not mind (widget
messages go by comm id, display updates by display id), but nbclient — ``jupyter nbconvert
--execute``, papermill — records only the messages of the cell it is running. A notebook
executed that way kept its widgets as they were when the starting cell ended: the
quickstart's second turn (``task = session.start(...)``, then ``await task`` in the next
cell) was missing from the chat's static form and from the saved widget state.

So a widget notes each such send (:func:`echo_after_cell`: the latest static form, the
traits it synced) with the request it went out under, and when a cell finishes
(IPython's ``post_run_cell``, which runs under that cell's request) whatever went out under
another request is sent once more, now under this one. Sends of the cell itself are
dropped from the list when it ends: their request is the one that was recorded. Outside a
kernel nothing is noted.
"""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Callable, Iterator
from typing import Any

__all__ = ["current_request", "echo_after_cell", "echo_noted", "echoing", "kernel_parent"]

log = logging.getLogger(__name__)

# Per key, the requests its sends went out under since the last cell ended, and the latest
# send: a send of the running cell does not hide an earlier one of a background turn.
_pending: dict[object, tuple[set[str], Callable[[], None]]] = {}
_hooked: list[Any] = []  # the IPython shell whose post_run_cell calls _after_cell
_echoing = False


def kernel_parent() -> dict[str, Any] | None:
    """The kernel request that messages sent now would name as their parent (its header,
    metadata...), or ``None`` outside a kernel."""
    try:
        from ipykernel.kernelbase import Kernel
    except ImportError:  # pragma: no cover - ipykernel is a dependency of the widgets
        return None
    if not Kernel.initialized():
        return None
    parent = Kernel.instance().get_parent()  # type: ignore[no-untyped-call]
    return parent if isinstance(parent, dict) else None


def current_request() -> str | None:
    """The id of the kernel request that messages sent now would name as their parent
    (``None`` outside a kernel)."""
    parent = kernel_parent()
    header = parent.get("header") if parent is not None else None
    request = header.get("msg_id") if isinstance(header, dict) else None
    return request if isinstance(request, str) and request else None


def echoing() -> bool:
    """True while the echoes of a finished cell are being sent (they are not noted
    again)."""
    return _echoing


def echo_after_cell(key: object, send: Callable[[], None]) -> None:
    """``send`` just sent the latest state of ``key`` (hashable: a widget's form, its
    traits) under the current request; call it again after the next cell that finishes
    under another request than its own. A later note for the same key replaces this
    ``send``; it is called if any of the notes since the last cell went out under another
    request (``send`` sends the key's latest state, whatever went out before)."""
    if _echoing:
        return
    request = current_request()
    if request is None or not _hook():
        return
    noted = _pending.get(key)
    requests = noted[0] if noted is not None else set()
    requests.add(request)
    _pending[key] = (requests, send)


def echo_noted(key: object) -> bool:
    """Whether a send of ``key`` is noted for the end of the running cell."""
    return key in _pending


def _hook() -> bool:
    try:
        from IPython import get_ipython
    except ImportError:  # pragma: no cover
        return False
    shell = get_ipython()
    if shell is None:
        return False
    if not any(hooked is shell for hooked in _hooked):
        shell.events.register("post_run_cell", _after_cell)
        _hooked.append(shell)
    return True


@contextlib.contextmanager
def _sending_echoes() -> Iterator[None]:
    global _echoing
    _echoing = True
    try:
        yield
    finally:
        _echoing = False


def _after_cell(_result: object = None) -> None:
    now = current_request()
    pending = list(_pending.items())
    _pending.clear()
    with _sending_echoes():
        for _key, (requests, send) in pending:
            if requests == {now}:
                continue  # sent under this cell's own request only: already recorded
            try:
                send()
            except Exception:  # a closed widget, a kernel shutting down: never the cell's
                log.exception("re-sending a widget's state after the cell failed")
