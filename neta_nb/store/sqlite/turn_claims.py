"""TurnClaim: an operating-system lock a process holds while it runs a session's turn.

The store's record says who owns a running turn, but that record is a database write: it
waits behind another program's lock or a full disk (the session's writes are retried in
the background, store_writer.py), and meanwhile a second kernel resuming the session
would find no owner and take the live turn over. The claim does not wait: it is an
``flock`` on a small file beside the database, taken before the turn streams, released
when it ends — and dropped by the operating system when the process dies, so a killed
kernel never leaves a claim behind. The file holds the owner (pid, start time, host) so
the refusal can say which process has the turn.

Where ``flock`` does not exist (Windows) or the file cannot be made (a read-only
directory), there is no claim and the store's record is the only guard, as before.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from pathlib import Path
from typing import Literal

from ..process_owner import ProcessOwner, busy_error

try:
    import fcntl
except ImportError:  # pragma: no cover - not POSIX
    fcntl = None  # type: ignore[assignment]

__all__ = ["TurnClaim"]

log = logging.getLogger(__name__)


def _claim_path(store_path: Path, session_id: str) -> Path | None:
    if str(store_path) == ":memory:":
        return None  # one process only: nobody else can resume it
    # Any session id, whatever its characters, is one plain file name.
    digest = hashlib.sha256(session_id.encode("utf-8", "replace")).hexdigest()[:32]
    return store_path.with_name(store_path.name + ".turns") / digest


class TurnClaim:
    """This process's claim on one session's running turn."""

    def __init__(self, fd: int) -> None:
        self._fd: int | None = fd

    @classmethod
    def take(cls, store_path: Path, session_id: str) -> TurnClaim | None:
        """Claim the turn; ``None`` where no claim can be made (see the module note).
        Raises :class:`SessionBusyError` if another process holds it."""
        path = _claim_path(store_path, session_id)
        if path is None or fcntl is None:
            return None
        try:
            path.parent.mkdir(exist_ok=True)
            fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o600)
        except OSError as exc:
            log.info("session %s: no turn claim beside the store (%s)", session_id, exc)
            return None
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except BlockingIOError:
            holder = _holder(fd)
            os.close(fd)
            raise busy_error(session_id, holder) from None
        except OSError as exc:
            os.close(fd)
            log.info("session %s: no turn claim beside the store (%s)", session_id, exc)
            return None
        with contextlib.suppress(OSError):  # the name is a courtesy; the lock is the claim
            os.ftruncate(fd, 0)
            os.pwrite(fd, ProcessOwner.current().model_dump_json().encode(), 0)
        return cls(fd)

    @staticmethod
    def check(store_path: Path, session_id: str, *,
              action: Literal["resume", "delete"] = "resume") -> None:
        """Raise :class:`SessionBusyError` if a turn of the session holds its claim (in
        another process or in this one: the lock is per open file)."""
        path = _claim_path(store_path, session_id)
        if path is None or fcntl is None or not path.exists():
            return
        try:
            fd = os.open(path, os.O_RDONLY)
        except OSError:
            return
        try:
            fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
        except BlockingIOError:
            raise busy_error(session_id, _holder(fd), action=action) from None
        except OSError:
            return
        finally:
            os.close(fd)  # closing drops the probe's own lock

    def release(self) -> None:
        if self._fd is not None:
            fd, self._fd = self._fd, None
            os.close(fd)  # the lock goes with the descriptor


def _holder(fd: int) -> ProcessOwner | None:
    with contextlib.suppress(OSError, ValueError):
        return ProcessOwner.model_validate_json(os.pread(fd, 4096, 0))
    return None

