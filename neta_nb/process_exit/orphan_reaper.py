"""A program, never imported by the package: it ends the process groups a kernel started
(outside agents, stdio MCP servers) when that kernel dies in a way that runs no code of
its own — SIGKILL, the out-of-memory killer, a crash.

:mod:`neta_nb.process_exit` starts it once per process, in a session of its own, holding
the write end of its stdin. It reads lines: ``+<pid> <start time>`` (watch the group led
by ``pid``) and ``-<pid>`` (it ended; forget it). The end of its stdin means the kernel is
gone: each watched group is killed with its descendants (found first, while the tree is
whole), and the program exits. A group whose leader now has another start time is a new
one under a reused pid and is left alone.

It runs with ``python -I`` on this file alone: no package import (psutil if it is there,
else the groups alone)."""

from __future__ import annotations

import contextlib
import os
import signal
import sys
from collections.abc import Iterable
from typing import Any


def _watch(lines: Iterable[str]) -> dict[int, float]:
    groups: dict[int, float] = {}
    for line in lines:
        word, _, started = line.strip().partition(" ")
        with contextlib.suppress(ValueError):
            if word.startswith("+"):
                groups[int(word[1:])] = float(started or 0)
            elif word.startswith("-"):
                groups.pop(int(word[1:]), None)
    return groups


def _end(groups: dict[int, float]) -> None:
    psutil: Any = None
    with contextlib.suppress(ImportError):  # a dependency of neta_nb: there, but not needed
        import psutil
    for pid, started in groups.items():
        descendants = []
        if psutil is not None:
            try:
                leader = psutil.Process(pid)
                if started and abs(leader.create_time() - started) > 0.01:
                    continue  # another process under the same pid
                descendants = leader.children(recursive=True)
            except psutil.Error:
                pass  # the leader is gone; its group may not be
        with contextlib.suppress(OSError):
            os.killpg(pid, signal.SIGKILL)
        for child in descendants:
            with contextlib.suppress(Exception):
                child.kill()


def main() -> None:
    # A Ctrl+C meant for the notebook server must not end the watch early.
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    _end(_watch(sys.stdin))


if __name__ == "__main__":
    main()
