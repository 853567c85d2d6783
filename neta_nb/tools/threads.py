"""ToolThreads: the worker threads one session's sync tools run on.

Sync handlers run off the event loop so the kernel keeps serving Stop and progress while
they work. Threads cannot be killed: a call that times out or is stopped leaves its
thread running until the handler returns by itself. On asyncio's default executor —
shared by the whole process and ``min(32, cores + 4)`` threads, six on two cores — six
stuck tools made every later sync call time out until the kernel restarted.

Here each call gets an idle thread or a new one
(:class:`~neta_nb.daemon_threads.DaemonThreads`), so a stuck thread never delays the next
call; threads are daemons, so a stuck one never keeps the kernel from exiting; idle
threads end after a while. Past ``max_busy`` threads still running (stuck ones count),
new calls are refused with a message that says how to recover.
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
from collections.abc import Callable
from functools import partial
from typing import Any

from ..daemon_threads import DaemonThreads

__all__ = ["ToolThreads", "ToolThreadsExhausted"]


class ToolThreadsExhausted(RuntimeError):
    """Too many sync tool calls are still running to start another one."""


class ToolThreads:
    """A growing set of daemon threads for sync tool handlers
    (:class:`~neta_nb.daemon_threads.DaemonThreads`), refusing past ``max_busy``."""

    def __init__(self, *, max_busy: int = 32, idle_timeout: float = 30.0) -> None:
        self.max_busy = max_busy
        self._threads = DaemonThreads("neta_nb tool", idle_timeout=idle_timeout)

    @property
    def busy(self) -> int:
        """Calls whose handler has not returned yet (stuck ones included)."""
        return self._threads.busy

    async def run(self, function: Callable[..., Any], /, *args: Any, **kwargs: Any) -> Any:
        """Run ``function(*args, **kwargs)`` on a pool thread and await its result.
        Cancelling the await abandons the call; its thread finishes on its own."""
        if self._threads.busy >= self.max_busy:  # only the loop's thread submits
            raise ToolThreadsExhausted(
                f"{self._threads.busy} sync tool calls are still running in the background "
                "(calls that timed out or were stopped keep their thread until they "
                "return), so no new one can start. Wait for them to finish, or "
                "restart the kernel to end them.")
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        context = contextvars.copy_context()

        def job() -> Callable[[], None]:
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
            return partial(_deliver, loop, future, result, error)

        try:
            self._threads.submit(job)
        except RuntimeError as exc:
            raise ToolThreadsExhausted(f"No thread could be started for the tool "
                                       f"({exc}); restart the kernel to free threads.") \
                from exc
        return await future


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
