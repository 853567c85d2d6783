"""The processes of stdio MCP servers: which child a connection spawned, ending every one
still alive when the kernel exits (``atexit``, and on SIGTERM, which skips ``atexit``),
and what a dead server's process says about why it ended (its stderr:
:mod:`neta_nb.tools.mcp.mcp_stderr`)."""

from __future__ import annotations

import atexit
import contextlib
import os
import signal
import threading
from collections.abc import Sequence

import psutil

__all__ = ["LIVE_PIDS", "child_pids", "end_live_servers", "end_servers_on_sigterm",
           "exit_reason", "new_server_pid"]

LIVE_PIDS: set[int] = set()


def child_pids() -> set[int]:
    try:
        return {child.pid for child in psutil.Process().children()}
    except psutil.Error:
        return set()


def new_server_pid(before: set[int]) -> int | None:
    """The stdio server just spawned: a new child that leads its own session (the SDK
    starts servers with ``start_new_session``)."""
    for pid in sorted(child_pids() - before):
        try:
            if os.getsid(pid) == pid:
                return pid
        except OSError:
            continue
    return None


def end_live_servers(pids: Sequence[int] | None = None) -> None:
    """At interpreter exit: end every stdio server still running, with its children."""
    for pid in list(pids if pids is not None else LIVE_PIDS):
        try:
            process = psutil.Process(pid)
            family = [process, *process.children(recursive=True)]
        except psutil.Error:
            continue
        for member in family:
            with contextlib.suppress(psutil.Error):
                member.terminate()
        _, alive = psutil.wait_procs(family, timeout=2)
        for member in alive:
            with contextlib.suppress(psutil.Error):
                member.kill()


atexit.register(end_live_servers)


def end_servers_on_sigterm() -> None:
    """Python's default SIGTERM ends the interpreter without running ``atexit``, and a
    Jupyter kernel that does not stop when asked is sent one: end the servers first, then
    die of the signal as before. Only where nobody else handles SIGTERM (their handler
    decides how the interpreter ends) and only from the main thread (the only one that
    may set handlers)."""
    if threading.current_thread() is not threading.main_thread() \
            or signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL:
        return

    def on_sigterm(signum: int, _frame: object) -> None:
        end_live_servers()
        signal.signal(signum, signal.SIG_DFL)
        os.kill(os.getpid(), signum)

    signal.signal(signal.SIGTERM, on_sigterm)


def exit_reason(pid: int | None) -> str:
    """Why a server's connection closed, as far as this side can tell from its process."""
    reason = "the connection closed"
    if pid is not None:
        # The pipe may close a moment before the process is seen to end.
        reason = "it closed its output"
        try:
            gone = psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            gone = True
        except psutil.Error:
            gone = False
        if gone:
            reason = "its process ended"
    return reason

