"""What must end with this process: the programs it started and left running (stdio MCP
servers, outside agents over ACP) are ended when the interpreter exits — ``atexit`` — and
when it is sent SIGTERM, which skips ``atexit``: a Jupyter kernel that does not stop when
asked is sent one, and would otherwise leave them orphaned.

A death that runs no code at all (SIGKILL, the out-of-memory killer) is covered by a
watchdog: :func:`end_with_this_process` names a process group to a small program
(:mod:`neta_nb.process_exit.orphan_reaper`) that sees this process die through the end of a pipe and
kills the group then. A watchdog that is gone (someone killed it) is replaced at the next
word for it, and the new one is told every group still watched; a forked child keeps no
copy of the watchdog's pipe (while it held one, the watchdog would not see this process
die) and watches none of its parent's groups."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import subprocess
import sys
import threading
from collections.abc import Callable
from pathlib import Path

__all__ = ["end_at_exit", "end_with_this_process", "release", "watchdog_pid"]

_ENDINGS: list[Callable[[], None]] = []
_REAPER = Path(__file__).with_name("orphan_reaper.py")
_reaper: subprocess.Popen[bytes] | None = None
_reaper_pid_of: int | None = None
"""The process that started the reaper: a forked child has no reaper of its own."""
_reaper_lock = threading.Lock()
_watched: dict[int, str] = {}
"""The groups watched now (pid -> the line that told the watchdog): what a watchdog
started anew is told."""


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


def end_with_this_process(pid: int) -> None:
    """Have the process group led by ``pid`` killed, with its descendants, if this process
    dies without running any code (SIGKILL); :func:`release` once it has ended. Where no
    watchdog can be started, this does nothing: exit and SIGTERM still end the group
    (:func:`end_at_exit`)."""
    try:
        import psutil

        started = psutil.Process(pid).create_time()
    except Exception:  # gone already, or no psutil: the group alone
        started = 0.0
    line = f"+{pid} {started}\n"
    with _reaper_lock:
        _watched[pid] = line
        _tell(line)


def release(pid: int) -> None:
    """The group led by ``pid`` has ended: the watchdog forgets it (its pid may be
    reused)."""
    with _reaper_lock:
        _watched.pop(pid, None)
        _tell(f"-{pid}\n", start=False)


def _tell(line: str, *, start: bool = True) -> None:
    """Tell the watchdog ``line`` (under :data:`_reaper_lock`). A watchdog that is gone
    (killed by someone) is replaced, and the new one is told every group still watched:
    a group told only to the dead one would be left behind."""
    global _reaper, _reaper_pid_of
    for _attempt in range(2):
        told = line
        if _reaper is None or _reaper_pid_of != os.getpid():
            if not start or sys.platform == "win32":
                return
            try:
                # A session of its own: a signal sent to the kernel's group (Ctrl+C in the
                # server's terminal) does not reach it. Its stdin's write end stays here
                # only (not inherited by the programs started later, nor kept by a
                # forked child: _after_fork_in_child).
                _reaper = subprocess.Popen([sys.executable, "-I", str(_REAPER)],
                                           stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                           stderr=subprocess.DEVNULL, start_new_session=True,
                                           close_fds=True)
            except OSError:
                _reaper = None
                return
            _reaper_pid_of = os.getpid()
            told = "".join(_watched.values())
        assert _reaper.stdin is not None
        try:
            _reaper.stdin.write(told.encode())
            _reaper.stdin.flush()
            return
        except (OSError, ValueError):  # the watchdog is gone: another one, told all
            _let_go(_reaper)
            _reaper = None


def _let_go(reaper: subprocess.Popen[bytes]) -> None:
    """Close the pipe of a watchdog that is gone (its last line unsent), and reap it."""
    with contextlib.suppress(Exception):  # the flush of what it did not read fails
        if reaper.stdin is not None:
            reaper.stdin.close()
    reaper.poll()


def _after_fork_in_child() -> None:
    """A forked child (``multiprocessing``'s workers) gets a copy of the watchdog's pipe:
    while it held it, the watchdog would not see this process die. The child closes it,
    and watches none of its parent's groups (a watchdog of its own would kill them when
    the child ends); its lock may have been held by a thread the child does not have."""
    global _reaper_lock
    _reaper_lock = threading.Lock()
    _watched.clear()
    reaper = _reaper
    if reaper is not None and reaper.stdin is not None:
        with contextlib.suppress(Exception):
            reaper.stdin.close()


if sys.platform != "win32":
    os.register_at_fork(after_in_child=_after_fork_in_child)


def watchdog_pid() -> int | None:
    """The pid of this process's watchdog program, while it runs (it lives as long as
    this process: a count of the programs this process started leaves it out)."""
    reaper = _reaper
    if reaper is None or _reaper_pid_of != os.getpid() or reaper.poll() is not None:
        return None
    return reaper.pid
