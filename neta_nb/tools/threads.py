"""ToolThreads: the worker threads one session's sync tools run on.

Sync handlers run off the event loop so the kernel keeps serving Stop and progress while
they work. Threads cannot be killed: a call that times out or is stopped leaves its
thread running until the handler returns by itself. On asyncio's default executor —
shared by the whole process and ``min(32, cores + 4)`` threads, six on two cores — six
stuck tools made every later sync call time out until the kernel restarted.

Here each call gets an idle thread or a new one, so a stuck thread never delays the next
call; threads are daemons, so a stuck one never keeps the kernel from exiting; idle
threads end after a while. Past ``max_busy`` threads still running (stuck ones count),
new calls are refused with a message that says how to recover.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import queue
import threading
from collections.abc import Callable
from typing import Any

__all__ = ["ToolThreads", "ToolThreadsExhausted"]


class ToolThreadsExhausted(RuntimeError):
    """Too many sync tool calls are still running to start another one."""


_Work = tuple[contextvars.Context, Callable[..., Any], tuple[Any, ...], dict[str, Any],
              asyncio.AbstractEventLoop, "asyncio.Future[Any]"]


class ToolThreads:
    """A growing pool of daemon threads for sync tool handlers."""

    def __init__(self, *, max_busy: int = 32, idle_timeout: float = 30.0) -> None:
        self.max_busy = max_busy
        self._idle_timeout = idle_timeout
        self._work: queue.SimpleQueue[_Work] = queue.SimpleQueue()
        self._lock = threading.Lock()
        # Threads waiting for work and not yet promised to a submitted call.
        self._idle = 0
        self._busy = 0

    @property
    def busy(self) -> int:
        """Calls whose handler has not returned yet (stuck ones included)."""
        return self._busy

    async def run(self, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``function(*args, **kwargs)`` on a pool thread and await its result.
        Cancelling the await abandons the call; its thread finishes on its own."""
        with self._lock:
            if self._busy >= self.max_busy:
                raise ToolThreadsExhausted(
                    f"{self._busy} sync tool calls are still running in the background "
                    "(calls that timed out or were stopped keep their thread until they "
                    "return), so no new one can start. Wait for them to finish, or "
                    "restart the kernel to end them.")
            self._busy += 1
            spawn = self._idle == 0
            if not spawn:
                self._idle -= 1  # promise this call to a waiting thread
        if spawn:
            # Started before the work is queued: a thread that cannot start leaves no
            # work behind for another thread to run later.
            try:
                threading.Thread(target=self._serve, name="neta_nb tool", daemon=True).start()
            except RuntimeError as exc:
                with self._lock:
                    self._busy -= 1
                raise ToolThreadsExhausted(f"No thread could be started for the tool "
                                           f"({exc}); restart the kernel to free threads.") \
                    from exc
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._work.put((contextvars.copy_context(), function, args, kwargs, loop, future))
        return await future

    def _serve(self) -> None:
        while True:
            try:
                work = self._work.get(timeout=self._idle_timeout)
            except queue.Empty:
                with self._lock:
                    if self._idle > 0:  # not promised to a call on its way: retire
                        self._idle -= 1
                        return
                continue
            context, function, args, kwargs, loop, future = work
            result: Any = None
            error: BaseException | None = None
            try:
                result = context.run(function, *args, **kwargs)
            except Exception as exc:
                error = exc
            except BaseException as exc:
                # SystemExit from a handler: an error of that call, not of the awaiting
                # task (raised there, it would end the event loop).
                error = RuntimeError(f"the handler raised {exc!r}")
            # Free before the caller hears: whoever awaited the call sees it counted out.
            with self._lock:
                self._busy -= 1
                self._idle += 1
            _deliver(loop, future, result, error)
            del work, context, function, args, kwargs, future, result, error


def _deliver(loop: asyncio.AbstractEventLoop, future: asyncio.Future[Any], result: Any,
             error: BaseException | None) -> None:
    def settle() -> None:
        if future.done():  # the call was abandoned (timeout, Stop)
            return
        if error is not None:
            future.set_exception(error)
        else:
            future.set_result(result)

    with contextlib.suppress(RuntimeError):  # a closed loop: nobody is waiting any more
        loop.call_soon_threadsafe(settle)
