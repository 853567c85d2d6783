"""AgentProcess: an outside agent's process — started in a process group of its own, its
stderr drained into a bounded tail, and ended by killing that whole group and every
descendant (the agent and whatever it started: a shell command, an MCP server, Codex's
native binary, which ignores the end of its stdin).

Every live group is known to this module, so the kernel's exit ends them too, SIGTERM
included, and a watchdog ends them when the kernel is SIGKILLed
(:mod:`neta_nb.process_exit`): no agent outlives the process that started it.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import signal
from collections import deque
from collections.abc import Mapping, Sequence
from pathlib import Path

import psutil

from ...process_exit import end_at_exit, end_with_this_process, release

__all__ = ["CLOSE_GRACE", "STDERR_LINES", "STDOUT_LINE_LIMIT", "AgentProcess", "AgentStartError"]

STDERR_LINES = 200
"""Lines of the agent's stderr kept (the latest); a crash shows the last few."""
_STDERR_LINE_CHARS = 1_000
STDOUT_LINE_LIMIT = 64 * 1024 * 1024
"""The longest JSON-RPC line read from the agent (a file's whole text travels in one; the
SDK's default of 64 KiB cuts it)."""
CLOSE_GRACE = 1.5
"""Seconds an agent gets to exit by itself once its stdin is closed (Codex never does)."""
_SHOWN_LINES = 12
"""Lines of stderr a crash report quotes."""

_live: dict[int, AgentProcess] = {}
"""The running agents by pid, ended at the interpreter's exit."""


class AgentStartError(RuntimeError):
    """The agent's command could not be started (not found, not executable)."""


class AgentProcess:
    """One run of an outside agent's command (see the module)."""

    def __init__(self, command: Sequence[str], *, env: Mapping[str, str | None] | None,
                 cwd: Path) -> None:
        self.command = list(command)
        self._env = env
        self._cwd = cwd
        self._process: asyncio.subprocess.Process | None = None
        self._stderr: deque[str] = deque(maxlen=STDERR_LINES)
        self._drain: asyncio.Task[None] | None = None

    @property
    def pid(self) -> int | None:
        return self._process.pid if self._process is not None else None

    @property
    def running(self) -> bool:
        return self._process is not None and self._process.returncode is None

    @property
    def returncode(self) -> int | None:
        return self._process.returncode if self._process is not None else None

    async def start(self) -> tuple[asyncio.StreamWriter, asyncio.StreamReader]:
        """Start the command; its stdin and stdout, for the protocol."""
        environment = dict(os.environ)
        for name, value in (self._env or {}).items():
            if value is None:
                environment.pop(name, None)
            else:
                environment[name] = value
        try:
            process = await asyncio.create_subprocess_exec(
                *self.command, stdin=asyncio.subprocess.PIPE, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=environment, cwd=str(self._cwd),
                limit=STDOUT_LINE_LIMIT, start_new_session=True)
        except OSError as error:
            raise AgentStartError(f"could not start {self.command[0]!r}: "
                                  f"{error.strerror or error}") from error
        self._process = process
        _live[process.pid] = self
        end_at_exit(_end_all)  # at exit, and on SIGTERM where this is the main thread
        end_with_this_process(process.pid)  # and when this process is SIGKILLed
        assert process.stdin is not None
        assert process.stdout is not None
        self._drain = asyncio.get_running_loop().create_task(
            self._drain_stderr(process.stderr), name=f"neta_nb agent stderr {process.pid}")
        return process.stdin, process.stdout

    async def _drain_stderr(self, stream: asyncio.StreamReader | None) -> None:
        if stream is None:
            return
        with contextlib.suppress(Exception):
            while True:
                line = await stream.readline()
                if not line:
                    return
                self._stderr.append(line.decode("utf-8", "replace").rstrip()[:_STDERR_LINE_CHARS])

    async def wait(self) -> int:
        """Until the process exits; its exit status."""
        assert self._process is not None
        return await self._process.wait()

    def stderr_tail(self, lines: int = _SHOWN_LINES) -> list[str]:
        """The last ``lines`` non-empty lines the agent wrote to stderr."""
        kept = [line for line in self._stderr if line.strip()]
        return kept[-lines:]

    def _descendants(self) -> list[psutil.Process]:
        process = self._process
        if process is None:
            return []
        try:
            return psutil.Process(process.pid).children(recursive=True)
        except psutil.Error:
            return []

    def kill(self, descendants: list[psutil.Process] | None = None) -> None:
        """End the process and its whole group at once (never waits). Its descendants
        are found first, while the tree is whole (or given: found earlier): one that
        started a session of its own (a detached shell) is not in the group."""
        process = self._process
        if process is None:
            return
        _live.pop(process.pid, None)
        if descendants is None:
            descendants = self._descendants()
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(process.pid, signal.SIGKILL)
        for child in descendants:
            with contextlib.suppress(psutil.Error):
                child.kill()
        release(process.pid)
        if process.returncode is None:
            with contextlib.suppress(ProcessLookupError):
                process.kill()
        if self._drain is not None:
            self._drain.cancel()

    async def close(self, grace: float = CLOSE_GRACE) -> None:
        """End the process gently, then surely: its stdin is closed (an agent writes what
        it keeps of its session, then exits), and after ``grace`` seconds whatever is
        left of it and all it started is killed (:meth:`kill`); then it is reaped."""
        process = self._process
        if process is None:
            return
        descendants = self._descendants()
        if process.returncode is None and process.stdin is not None:
            with contextlib.suppress(Exception):
                process.stdin.close()
            with contextlib.suppress(Exception):
                await asyncio.wait_for(process.wait(), grace)
        self.kill(descendants)
        with contextlib.suppress(Exception):
            await asyncio.wait_for(process.wait(), 5)


def _end_all() -> None:
    for agent in list(_live.values()):
        agent.kill()
