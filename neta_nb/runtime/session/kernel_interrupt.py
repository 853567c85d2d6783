"""KernelInterrupt: Kernel ▸ Interrupt stops the turns that run outside a cell.

An awaited ``session.run`` is stopped by ipykernel itself: while a cell executes, its
SIGINT handler cancels (or raises ``KeyboardInterrupt`` in) the cell, and the turn closes
as cancelled. A turn started without a cell — the chat's Send, or ``session.start`` from a
cell that has since finished — runs as a task on the kernel's loop while the kernel is
idle, and an idle ipykernel ignores SIGINT (``SIG_IGN``): the interrupt did nothing.

While a top-level turn of this process runs, this module's one watch puts a SIGINT
handler of its own where the handler is ``SIG_IGN`` — only there: a handler someone else
set (ipykernel's during a cell, Python's ``default_int_handler`` in a script or a
terminal) is never replaced, so Ctrl+C outside a kernel behaves as before. It is checked
when a turn begins and every :data:`RECHECK_SECONDS` while turns run (ipykernel swaps
its handlers around each cell and comm message, and puts back the one it found). When
the last turn ends the watch puts ``SIG_IGN`` back where the handler is its own — at the
next look, or after the cell that holds it ends (ipykernel restores it then); meanwhile a handler of
ours does nothing while no turn runs, as ``SIG_IGN`` did.

The handler stops every running turn the way an interrupt stops an awaited run: Stop
(the partial answer kept, marked ``cancelled``; running tools abandoned and their cards
closed; sub-agents stopped with their parent), and the one plain line of
:data:`~.turn.INTERRUPTED_LINE` said as a warning, which the chat shows under the
conversation. It only schedules that, thread-safely, on each turn's loop.

Decisions:

- An interrupt while a cell executes belongs to that cell (ipykernel's handler is the one
  in place; it is not wrapped): an awaited ``run`` in it stops, turns started from the
  chat go on. Once the cell has ended, the next interrupt stops them.
- Sub-agents are not watched themselves: stopping their top-level turn stops them.
- ``signal.signal`` works on the main thread only: the handler is installed from a turn's
  loop when that loop runs on the main thread (ipykernel's). A loop on another thread (a
  subshell, a batch worker) cannot install it; its turns are still stopped when a turn on
  the main thread's loop has installed it.
"""

from __future__ import annotations

import asyncio
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType

from ...events import WarningEvent
from .turn import INTERRUPTED_LINE

__all__ = ["RECHECK_SECONDS", "KernelInterrupt", "interrupts"]

RECHECK_SECONDS = 0.25
"""How often, while turns run, the watch looks whether ipykernel left SIGINT ignored
again (after a cell or a comm message): the longest an interrupt can go unseen."""


class KernelInterrupt:
    """The process's watch over running top-level turns (see the module's docstring):
    ``add`` when a turn begins, ``discard`` when it ends. The stop callables, their loops,
    the recheck timer and whether the handler is installed are its state."""

    def __init__(self) -> None:
        self._turns: dict[object, tuple[Callable[[], None], asyncio.AbstractEventLoop]] = {}
        self._timer: asyncio.TimerHandle | None = None
        self._installed = False
        """The handler was put in place of ``SIG_IGN`` and not taken back yet (ipykernel
        may hold it during a cell, to restore it afterwards)."""
        self._handler = self._on_sigint
        """Bound once: the handler in place is known by its identity."""

    def add(self, key: object, stop: Callable[[], None]) -> None:
        """Watch the turn ``key`` (on the running loop) until :meth:`discard`; an
        interrupt calls ``stop`` on that loop."""
        loop = asyncio.get_running_loop()
        self._turns[key] = (stop, loop)
        if self._timer is None and _in_a_kernel() and _on_main_thread():
            self._check(loop)

    def discard(self, key: object) -> None:
        """The turn ``key`` ended (the next look puts ``SIG_IGN`` back when none runs)."""
        self._turns.pop(key, None)

    def _check(self, loop: asyncio.AbstractEventLoop) -> None:
        """While turns run: the handler where SIGINT is ignored. Once none runs: ``SIG_IGN``
        back where the handler is ours. Looked at again soon until both hold."""
        current = signal.getsignal(signal.SIGINT)
        if self._turns:
            if current is signal.SIG_IGN:
                signal.signal(signal.SIGINT, self._handler)
                self._installed = True
        elif current is self._handler or current is signal.SIG_IGN:
            # Ours taken back, or ignored again by someone else: nothing to wait for. (Any
            # other handler may be a cell's, which puts ours back when it ends.)
            if current is self._handler:
                signal.signal(signal.SIGINT, signal.SIG_IGN)
            self._installed = False
        self._timer = (loop.call_later(RECHECK_SECONDS, self._check, loop)
                       if self._turns or self._installed else None)

    def _on_sigint(self, _signum: int, _frame: FrameType | None) -> None:
        # Runs on the main thread between two bytecodes, maybe inside the loop's own
        # code: it only schedules the stops, each on its turn's loop.
        for stop, loop in list(self._turns.values()):
            if not loop.is_closed():
                loop.call_soon_threadsafe(stop)


def _in_a_kernel() -> bool:
    """Whether this process is an ipykernel (a script's Ctrl+C is left alone)."""
    app = sys.modules.get("ipykernel.kernelapp")
    return app is not None and bool(app.IPKernelApp.initialized())


def _on_main_thread() -> bool:
    return threading.current_thread() is threading.main_thread()


def interrupted_warning() -> WarningEvent:
    """The one plain line a turn stopped by an interrupt ends with."""
    return WarningEvent(message=INTERRUPTED_LINE, code="interrupted_turn")


interrupts = KernelInterrupt()
"""The process's one watch (signals belong to the process)."""
