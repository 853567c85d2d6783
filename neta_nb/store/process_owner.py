"""Which process runs a session's turn, and whether it is still alive.

A turn in flight is owned by the kernel running it. A second notebook resuming that
session would treat the live turn as dead (taking its draft, interleaving its messages),
and a kernel that died left its session "running" forever. The store therefore records the
owner of a running turn — process id *and* the process's start time, so a recycled pid
(common in containers, where pids restart from 1) is never mistaken for the owner.
"""

from __future__ import annotations

import getpass
import os
import socket
from typing import Literal

import psutil
from pydantic import BaseModel

from ..labels import t

__all__ = ["ProcessOwner", "SessionBusyError", "busy_error", "current_user"]


def current_user() -> str:
    """Whose sessions this process writes: the JupyterHub user when the kernel runs
    under JupyterHub, else the operating system's user."""
    hub_user = os.environ.get("JUPYTERHUB_USER", "").strip()
    if hub_user:
        return hub_user
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # a uid with no name (some containers)
        return f"uid {os.getuid()}" if hasattr(os, "getuid") else "unknown"


class SessionBusyError(RuntimeError):
    """The session's turn is running in a live process (another kernel, or this one):
    resuming it here would take over a turn that is not dead, deleting it would leave the
    turn writing into a session that is gone. ``str()`` is the English message;
    :meth:`message` says it in the language of a view (the label ``code`` with
    ``params``)."""

    def __init__(self, code: str, **params: object) -> None:
        self.code, self.params = code, params
        super().__init__(t(code, **params))

    def message(self, lang: str = "en") -> str:
        return t(self.code, lang, **self.params)


class ProcessOwner(BaseModel):
    """A process: its id, when it started (seconds since the epoch), its host and the
    user it runs for."""

    pid: int
    started: float
    host: str
    user: str = ""

    @classmethod
    def current(cls) -> ProcessOwner:
        return cls(pid=os.getpid(), started=_start_time(os.getpid()) or 0.0,
                   host=socket.gethostname(), user=current_user())

    @property
    def is_current(self) -> bool:
        return self.pid == os.getpid() and self.host == socket.gethostname()

    def is_alive(self) -> bool:
        """True while this very process runs. A process on another host cannot be
        checked from here and counts as alive (the safe answer: nothing is taken over)."""
        if self.host != socket.gethostname():
            return True
        started = _start_time(self.pid)
        # Start times are read from the same clock at a granularity of clock ticks.
        return started is not None and abs(started - self.started) < 1.0

    def describe(self) -> str:
        return f"process {self.pid} on {self.where}"

    @property
    def where(self) -> str:
        """Its host, and the user it runs for when known: ``host (user alice)``."""
        return self.host + (f" (user {self.user})" if self.user else "")

    def check_not_busy(self, session_id: str, *,
                       action: Literal["resume", "delete"] = "resume") -> None:
        """Raise :class:`SessionBusyError` if this owner, running a turn of the session,
        is alive."""
        if self.is_alive():
            raise busy_error(session_id, self, action=action)


def busy_error(session_id: str, owner: ProcessOwner | None, *,
               action: Literal["resume", "delete"] = "resume") -> SessionBusyError:
    """The refusal to resume or delete a session whose turn ``owner`` runs (unknown:
    ``None``)."""
    where = "elsewhere" if owner is None else "here" if owner.is_current else "process"
    params: dict[str, object] = {"session": repr(session_id)}
    if owner is not None and where == "process":
        params.update(pid=owner.pid, host=owner.where)
    return SessionBusyError(f"session_busy_{action}_{where}", **params)


def _start_time(pid: int) -> float | None:
    """When process ``pid`` started, or ``None`` if it is gone (a killed process not yet
    reaped, a zombie, counts as gone)."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE:
            return None
        return float(process.create_time())
    except (psutil.NoSuchProcess, psutil.AccessDenied, psutil.ZombieProcess):
        return None
