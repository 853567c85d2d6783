"""Handle a view's messages on the kernel's event-loop thread.

JupyterLab may deliver widget messages on a kernel *subshell* (ipykernel 7 runs each
subshell in a thread of its own, with its own event loop). A session's turn, its futures
(approvals) and its task (Stop) live on the kernel's main loop and are not thread-safe:
resolving an approval from another thread schedules the turn's wake-up without waking the
loop, and the turn stalls until some other message arrives. Measured here: an "Allow
once" click arrived on a subshell thread and the turn hung.

:class:`KernelLoopDispatch` remembers the loop the widget was created on (a notebook cell
runs on it) and moves every incoming custom message onto that loop's thread before
handling it; replies and state changes then happen where the session lives.
"""

from __future__ import annotations

import asyncio
import threading
from collections.abc import Sequence
from typing import Any

from ._base import NetaWidget

__all__ = ["KernelLoopDispatch"]


class KernelLoopDispatch(NetaWidget):
    """A :class:`NetaWidget` whose request handlers always run on the kernel loop."""

    def __init__(self, **kwargs: Any) -> None:
        self._kernel_loop: asyncio.AbstractEventLoop | None = None
        self._kernel_thread: int | None = None
        self.remember_kernel_loop()
        super().__init__(**kwargs)

    def remember_kernel_loop(self) -> None:
        """Record the running loop of the calling thread, if any, as the kernel loop."""
        try:
            self._kernel_loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        self._kernel_thread = threading.get_ident()

    def _on_custom_message(self, widget: object, content: Any, buffers: Sequence[bytes]) -> None:
        loop = self._kernel_loop
        if (loop is None or loop.is_closed() or not loop.is_running()
                or threading.get_ident() == self._kernel_thread):
            super()._on_custom_message(widget, content, buffers)
            return
        loop.call_soon_threadsafe(super()._on_custom_message, widget, content, buffers)
