"""What must end with this process: the programs it started and left running (stdio MCP
servers, outside agents over ACP) are ended when the interpreter exits — ``atexit`` — and
when it is sent SIGTERM, which skips ``atexit``: a Jupyter kernel that does not stop when
asked is sent one, and would otherwise leave them orphaned."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Callable

__all__ = ["end_at_exit"]

_ENDINGS: list[Callable[[], None]] = []


def end_at_exit(ending: Callable[[], None]) -> None:
    """Call ``ending`` when the process exits or is sent SIGTERM (once per function, in
    the order registered). SIGTERM is taken only where nobody else handles it (their
    handler decides how the interpreter ends) and only from the main thread (the only one
    that may set handlers); each call tries again, so a registration made on another
    thread is covered by a later one made on the main thread."""
    if ending not in _ENDINGS:
        _ENDINGS.append(ending)
        atexit.register(ending)
    if threading.current_thread() is threading.main_thread() \
            and signal.getsignal(signal.SIGTERM) is signal.SIG_DFL:
        signal.signal(signal.SIGTERM, _on_sigterm)


def _on_sigterm(signum: int, _frame: object) -> None:
    """End what was registered, then die of the signal as before."""
    for ending in list(_ENDINGS):
        with contextlib.suppress(Exception):  # the next one must still run
            ending()
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)
