"""The processes of stdio MCP servers: which child a connection spawned, ending every one
still alive when the kernel exits (:mod:`neta_nb.process_exit`: at exit and on SIGTERM),
and what a dead server's process says about why it ended (its stderr:
:mod:`neta_nb.tools.mcp.mcp_stderr`)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Sequence

import psutil

from ...process_exit import end_at_exit

__all__ = ["LIVE_PIDS", "child_pids", "end_live_servers", "exit_reason", "new_server_pid"]

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


end_at_exit(end_live_servers)


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

