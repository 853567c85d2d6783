"""What the ``python`` tool's code prints, captured per call and bounded while it is kept.

Swapping ``sys.stdout`` for the length of a call (``contextlib.redirect_stdout`` around an
``await``) is process-wide: two calls that overlap — two chats in one kernel, two
sub-agents delegated in one response — restore in the wrong order, leave a dead buffer as
``sys.stdout`` (every later ``print`` of the kernel vanishes) and read each other's
output. Instead a :class:`_Router` is put in front of each stream once and stays there:
it writes to the capture of the call running in the current context — a context
variable, so tasks the code creates and its top-level ``await`` keep it, and so does
work it hands to a thread pool (``run_in_executor``, ``pool.submit``: the submitted
function runs in the submitter's context, as ``asyncio.to_thread`` does) — or of a
thread the code started itself, and to the stream it stands in front of for everyone
else. A pool's worker threads belong to no call: they serve whoever submits next.

The streams stay the kernel's: code that closes ``sys.stdout`` (or ``sys.stderr``)
closes its call's capture — its later writes fail as on a closed file, the kernel's
``print`` works on — ``detach()`` and ``buffer`` are not offered to it (as by a
``StringIO``), and a stream the code put in place of the router (``sys.stdout = ...``,
never put back) is replaced by the router again when the call ends.

A capture keeps a bounded head and tail of the text and counts what fell between
(:class:`BoundedText`): a runaway print loop costs the kernel a few tens of kilobytes,
not its memory.
"""

from __future__ import annotations

import contextlib
import contextvars
import io
import sys
import threading
import weakref
from collections import deque
from collections.abc import Callable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from concurrent.futures.thread import _worker as _pool_worker
from contextvars import ContextVar
from typing import Any, TextIO

__all__ = ["BoundedText", "capture_output"]

class BoundedText:
    """The first ``head`` and the last ``tail`` characters written, and how many fell
    between them (``dropped``)."""

    def __init__(self, head: int, tail: int) -> None:
        self._head_limit, self._tail_limit = head, tail
        self._head: list[str] = []
        self._head_size = 0
        self._tail: deque[str] = deque()
        self._tail_size = 0
        self.dropped = 0
        self.open = True
        """False once the call ended: what is written after goes to the kernel's stream."""
        self.closed: set[str] = set()
        """The streams (``stdout``, ``stderr``) the call's code closed: writes to them fail."""
        self._lock = threading.Lock()  # threads the code started print at the same time

    def write(self, text: str) -> int:
        if not isinstance(text, str):
            raise TypeError(f"write() argument must be str, not {type(text).__name__}")
        with self._lock:
            return self._write(text)

    def _write(self, text: str) -> int:
        written = len(text)
        room = self._head_limit - self._head_size
        if room > 0:
            self._head.append(text[:room])
            self._head_size += min(room, written)
            text = text[room:]
        if text:
            self._keep_tail(text)
        return written

    def _keep_tail(self, text: str) -> None:
        if len(text) >= self._tail_limit:  # one write larger than the tail: only its end
            self.dropped += self._tail_size + len(text) - self._tail_limit
            self._tail.clear()
            self._tail.append(text[len(text) - self._tail_limit:])
            self._tail_size = self._tail_limit
            return
        self._tail.append(text)
        self._tail_size += len(text)
        excess = self._tail_size - self._tail_limit
        while excess > 0:
            first = self._tail[0]
            if len(first) <= excess:
                self._tail.popleft()
                cut = len(first)
            else:
                self._tail[0] = first[excess:]
                cut = excess
            self._tail_size -= cut
            self.dropped += cut
            excess -= cut

    def text(self) -> str:
        """What was kept; a line in the middle says how much was cut."""
        with self._lock:
            head, tail, dropped = "".join(self._head), "".join(self._tail), self.dropped
        if not dropped:
            return head + tail
        return f"{head}\n[... {dropped:,} characters cut ...]\n{tail}"


# The capture of the call whose code runs in this context, and of the threads it started.
_current: ContextVar[BoundedText | None] = ContextVar("neta_nb_python_output", default=None)
_threads: weakref.WeakKeyDictionary[threading.Thread, BoundedText] = (
    weakref.WeakKeyDictionary())
_install_lock = threading.Lock()
_threads_wrapped = False


def _capture_here() -> BoundedText | None:
    capture = _current.get()
    if capture is None and _threads:
        capture = _threads.get(threading.current_thread())
    return capture if capture is not None and capture.open else None


class _Router:
    """Stands in front of a stream: a running call's capture gets what is written in its
    context, the stream gets the rest. Everything else is the stream's own (``encoding``,
    ``fileno``, ``isatty``...)."""

    def __init__(self, stream: TextIO, name: str) -> None:
        self._stream = stream
        self._name = name  # which of the call's streams it is: "stdout" or "stderr"

    def write(self, text: str) -> int:
        capture = _capture_here()
        if capture is None:
            return self._stream.write(text)
        if self._name in capture.closed:
            raise ValueError("I/O operation on closed file.")
        return capture.write(text)

    def writelines(self, lines: Any) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        capture = _capture_here()
        if capture is None:
            self._stream.flush()
        elif self._name in capture.closed:
            raise ValueError("I/O operation on closed file.")

    # A call's code closes, detaches or reaches under its capture, never the kernel's
    # stream: every later print of the kernel (cells included) goes through that stream.
    def close(self) -> None:
        capture = _capture_here()
        if capture is None:
            self._stream.close()
        else:
            capture.closed.add(self._name)

    # A stream is its own context manager (``with sys.stdout:`` closes it at the end):
    # dunder methods are looked up on the type, never through __getattr__.
    def __enter__(self) -> _Router:
        if self.closed:
            raise ValueError("I/O operation on closed file.")
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.close()

    @property
    def closed(self) -> bool:
        capture = _capture_here()
        return bool(self._stream.closed) if capture is None else self._name in capture.closed

    def detach(self) -> Any:
        stream: Any = self._stream  # a text stream; a TextIO may not say it can detach
        if _capture_here() is None:
            return stream.detach()
        raise io.UnsupportedOperation("detach: the python tool captures this stream")

    def __getattr__(self, name: str) -> Any:
        # Through __dict__: a copy made without __init__ (copy.copy) has no stream yet,
        # and reading self._stream here would come back to __getattr__ for ever.
        stream = self.__dict__.get("_stream")
        if stream is None:
            raise AttributeError(name)
        if name == "buffer" and _capture_here() is not None:
            raise AttributeError("buffer: the python tool captures this stream as text")
        return getattr(stream, name)


def _wrap_threads() -> None:
    """A thread started by captured code writes to the same capture (threads do not
    inherit context variables); work submitted to a thread pool runs in the submitter's
    context. Installed once, on the first capture."""
    global _threads_wrapped
    if _threads_wrapped:
        return
    start, submit = threading.Thread.start, ThreadPoolExecutor.submit

    def start_in_capture(self: threading.Thread) -> None:
        capture = _capture_here()
        # A pool's worker serves every later submitter: it is no call's own thread.
        if capture is not None and getattr(self, "_target", None) is not _pool_worker:
            _threads[self] = capture
        start(self)

    def submit_in_context(self: ThreadPoolExecutor, fn: Callable[..., Any], /,
                          *args: Any, **kwargs: Any) -> Future[Any]:
        if _capture_here() is None:
            return submit(self, fn, *args, **kwargs)
        return submit(self, contextvars.copy_context().run, fn, *args, **kwargs)

    threading.Thread.start = start_in_capture  # type: ignore[method-assign]
    ThreadPoolExecutor.submit = submit_in_context  # type: ignore[method-assign,assignment]
    _threads_wrapped = True


_STREAMS = ("stdout", "stderr")


def _install() -> dict[str, _Router]:
    """The routers in front of the streams now, put there if they are not."""
    routers: dict[str, _Router] = {}
    with _install_lock:
        _wrap_threads()
        for name in _STREAMS:
            stream = getattr(sys, name)
            # Someone may have put another stream in place since (a cell's %%capture, a
            # kernel restart of its streams): stand in front of whatever is there now.
            if stream is not None and not isinstance(stream, _Router):
                stream = _Router(stream, name)
                setattr(sys, name, stream)
            if isinstance(stream, _Router):
                routers[name] = stream
    return routers


def _put_back(routers: dict[str, _Router]) -> None:
    """A call ends: a stream its code put in place of a router (``sys.stdout = ...``)
    and left there gives way to the router again. A router found there instead (one put
    in front of a cell's ``%%capture`` meanwhile) is a stream of the kernel's: kept."""
    with _install_lock:
        for name, router in routers.items():
            if not isinstance(getattr(sys, name), _Router):
                setattr(sys, name, router)


@contextlib.contextmanager
def capture_output(*, head: int, tail: int) -> Iterator[BoundedText]:
    """Capture stdout and stderr written in this context (and by threads started in it)
    until the block ends, keeping the first ``head`` and last ``tail`` characters; other
    tasks and threads print as usual. The kernel's streams are in place when it ends
    (see the module's docstring)."""
    routers = _install()
    capture = BoundedText(head, tail)
    token = _current.set(capture)
    try:
        yield capture
    finally:
        capture.open = False  # what the code left running prints where it always would
        _current.reset(token)
        _put_back(routers)
