"""The end of what a stdio MCP server writes to its stderr, and no more than that.

Only the last lines of a server's stderr are ever read (to say why it failed), but a server
may write for as long as the kernel runs: a chatty one, gigabytes. So its stderr is a pipe
that a thread drains as the server writes, keeping the last :data:`TAIL_BYTES` and counting
what it dropped. The SDK passes ``errlog`` to ``subprocess`` as the child's stderr, so it
must be a file with a real descriptor: :attr:`StderrTail.errlog` is the pipe's write end.

A thread, not the event loop: the loop stands still while a notebook cell runs, and a
server whose stderr pipe (64 KB) fills blocks on its next write, mid-request. The read end
is non-blocking so that :meth:`StderrTail.ending` can take what the server wrote just
before it died, even if the thread has not woken up for it yet.
"""

from __future__ import annotations

import contextlib
import os
import selectors
import threading
from typing import TextIO

__all__ = ["TAIL_BYTES", "StderrTail"]

TAIL_BYTES = 32 * 1024
_CHUNK = 64 * 1024
_CHUNKS_AT_ONCE = 16
"""Read at most this many chunks while holding the lock (a pipe holds 64 KB; a server
writing faster than we read must not keep :meth:`StderrTail.ending` waiting)."""


class StderrTail:
    """A server's stderr, of which only the last ``limit`` bytes are kept."""

    def __init__(self, limit: int = TAIL_BYTES) -> None:
        self.limit = limit
        self.dropped = 0
        """Bytes the server wrote that are no longer kept."""
        self._kept = bytearray()
        self._lock = threading.Lock()
        read_end, write_end = os.pipe()
        os.set_blocking(read_end, False)
        self._read_end: int | None = read_end
        self._wake_read, self._wake_write = os.pipe()
        self.errlog: TextIO = open(write_end, "w", encoding="utf-8", errors="replace")  # noqa: SIM115 - the child's stderr until close()
        self._reader = threading.Thread(target=self._drain, args=(read_end,),
                                        name="mcp-server-stderr", daemon=True)
        self._reader.start()

    @property
    def kept(self) -> int:
        """How many bytes are held now (at most ``limit``)."""
        with self._lock:
            return len(self._kept)

    @property
    def closed(self) -> bool:
        return self.errlog.closed

    def ending(self, chars: int) -> str:
        """The last ``chars`` characters the server wrote, whitespace stripped."""
        with self._lock:
            if self._read_end is not None:
                self._take_available(self._read_end)
            text = bytes(self._kept).decode("utf-8", errors="replace")
        return text[-chars:].strip()

    def close(self) -> None:
        """Stop reading; what was kept stays readable. A server still writing then gets
        a broken pipe on its stderr, as it would once its reader is gone."""
        if self.errlog.closed:
            return
        with contextlib.suppress(OSError):
            self.errlog.close()
        with contextlib.suppress(OSError):
            os.write(self._wake_write, b"x")
        os.close(self._wake_write)
        self._reader.join(timeout=5)

    def _drain(self, read_end: int) -> None:
        """The reader thread: takes what the server writes until closed or every writer
        has closed the pipe."""
        try:
            with selectors.DefaultSelector() as selector:
                selector.register(read_end, selectors.EVENT_READ)
                selector.register(self._wake_read, selectors.EVENT_READ)
                ended = False
                while not ended:
                    ready = {key.fd for key, _ in selector.select()}
                    with self._lock:
                        ended = self._take_available(read_end) or self._wake_read in ready
        finally:
            with self._lock:
                self._read_end = None
                os.close(read_end)
            os.close(self._wake_read)

    def _take_available(self, read_end: int) -> bool:
        """Read what is in the pipe now, keeping the last ``limit`` bytes (the lock is
        held). True once the pipe has ended."""
        for _ in range(_CHUNKS_AT_ONCE):
            try:
                chunk = os.read(read_end, _CHUNK)
            except BlockingIOError:
                return False
            except OSError:
                return True
            if not chunk:
                return True
            self._kept += chunk
            excess = len(self._kept) - self.limit
            if excess > 0:
                del self._kept[:excess]
                self.dropped += excess
        return False
