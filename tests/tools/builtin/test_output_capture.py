"""The python tool's output capture (``output_capture.py``) against what model-written
code does with threads and streams: executor pools shared between calls, threads printing
at the same time, ``sys.stdout`` copied."""

from __future__ import annotations

import asyncio
import concurrent.futures
import copy
import inspect
import io
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import pytest

from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import python
from neta_nb.tools.builtin.output_capture import BoundedText, capture_output


async def run(code: str, namespace: dict[str, Any] | None = None) -> str:
    return await python.invoke({"code": code}, ToolContext(namespace=namespace))


async def test_run_in_executor_output_is_captured_in_every_call() -> None:
    loop = asyncio.get_running_loop()
    pool = concurrent.futures.ThreadPoolExecutor(1)
    loop.set_default_executor(pool)  # not started yet: the first call starts its thread
    code = ("import asyncio\n"
            "await asyncio.get_running_loop().run_in_executor(None, print, WORD)")
    try:
        assert await run(code, {"WORD": "first"}) == "Output:\nfirst"
        assert await run(code, {"WORD": "second"}) == "Output:\nsecond"
    finally:
        pool.shutdown(wait=True)


async def test_a_shared_pool_does_not_carry_one_calls_output_into_another() -> None:
    pool = concurrent.futures.ThreadPoolExecutor(1)
    a_ready, a_may_end = asyncio.Event(), asyncio.Event()
    namespace: dict[str, Any] = {"pool": pool, "a_ready": a_ready, "a_may_end": a_may_end}
    try:
        a = asyncio.ensure_future(run(
            "pool.submit(int).result()\n"  # A is the first to use the notebook's pool
            "a_ready.set()\nawait a_may_end.wait()\n'a done'", namespace))
        await a_ready.wait()
        b = await run("import asyncio\n"
                      "await asyncio.get_running_loop().run_in_executor(pool, print, 'B')",
                      namespace)
        a_may_end.set()
        assert await a == "Result:\n'a done'"
        assert b == "Output:\nB"
    finally:
        pool.shutdown(wait=True)


def _line_of(function: Callable[..., Any], text: str) -> int:
    lines, start = inspect.getsourcelines(function)
    return start + next(index for index, line in enumerate(lines) if text in line)


class _PauseAt:
    """A tracer that holds its thread the first time it reaches ``line`` of
    ``BoundedText._keep_tail``, until released."""

    def __init__(self, line: int) -> None:
        self.line = line
        self.reached = threading.Event()
        self.release = threading.Event()
        self._held = False

    def __call__(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code is BoundedText._keep_tail.__code__:
            return self._in_keep_tail
        return None

    def _in_keep_tail(self, frame: FrameType, event: str, arg: Any) -> Any:
        if event == "line" and frame.f_lineno == self.line and not self._held:
            self._held = True
            self.reached.set()
            self.release.wait(10)
        return self._in_keep_tail


def test_threads_the_code_started_can_print_at_the_same_time() -> None:
    # The interleaving is forced with a tracer instead of left to chance: thread 1 has
    # read the oldest piece of the tail, thread 2 then cuts the tail for one long write.
    first = _PauseAt(_line_of(BoundedText._keep_tail, "if len(first) <= excess"))
    second = _PauseAt(_line_of(BoundedText._keep_tail, "self._tail.append(text[len(text)"))
    failures: list[BaseException] = []

    def prints(tracer: _PauseAt, text: str) -> None:
        sys.settrace(tracer)
        try:
            sys.stdout.write(text)
        except BaseException as exc:
            failures.append(exc)
        finally:
            sys.settrace(None)

    with capture_output(head=0, tail=10) as captured:
        sys.stdout.write("aaaa")
        sys.stdout.write("bbbbbb")
        one = threading.Thread(target=prints, args=(first, "cccc"))
        two = threading.Thread(target=prints, args=(second, "d" * 20))
        one.start()
        assert first.reached.wait(10)
        two.start()
        # Without a lock thread two gets inside _keep_tail too; with one it waits there
        # for thread one (which the tracer holds), and this wait runs out.
        interleaved = second.reached.wait(2)
        first.release.set()
        one.join(10)
        second.release.set()
        two.join(10)
    assert failures == []
    assert not interleaved
    assert captured.text().endswith("d" * 10)


async def test_sys_stdout_can_still_be_copied_once_the_router_stands_in_front() -> None:
    original, sys.stdout = sys.stdout, io.StringIO()
    try:
        await run("pass")  # installs the router in front of the StringIO
        copied = copy.copy(sys.stdout)  # works for the StringIO itself
    finally:
        sys.stdout = original
    assert copied is not None


CLOSES = """
import sys
print('before')
sys.stdout.close()
sys.stderr.write(f'closed: {sys.stdout.closed}\\n')
try:
    print('after')
except ValueError as exc:
    sys.stderr.write(f'refused: {exc}\\n')
sys.stderr.close()
try:
    sys.stderr.write('never')
except ValueError:
    pass
"""

DETACHES = """
import io, sys
for stream in (sys.stdout, sys.stderr):
    try:
        stream.detach()
    except io.UnsupportedOperation as exc:
        print('detach refused:', exc)
print('buffer offered:', hasattr(sys.stdout, 'buffer') or hasattr(sys.stderr, 'buffer'))
"""

REPLACES = """
import io, sys
print('mine')
sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
print('into its own buffer')
"""

WITH = """
import sys
with sys.stdout as out:
    print('inside', out is sys.stdout)
print('closed:', sys.stdout.closed, file=sys.stderr)
"""


@pytest.mark.parametrize(("code", "output"), [
    (CLOSES, "before\nclosed: True\nrefused: I/O operation on closed file."),
    (DETACHES, "detach refused: detach: the python tool captures this stream\n"
               "detach refused: detach: the python tool captures this stream\n"
               "buffer offered: False"),
    (REPLACES, "mine"),
    (WITH, "inside True\nclosed: True")], ids=["close", "detach", "replace", "with"])
async def test_code_that_closes_detaches_or_replaces_its_streams_leaves_the_kernels(
        capsys: pytest.CaptureFixture[str], code: str, output: str) -> None:
    await run("pass")  # the routers stand in front of the streams from the first call
    stdout_before, stderr_before = sys.stdout, sys.stderr
    streams = [vars(stream)["_stream"] for stream in (stdout_before, stderr_before)]

    assert await run(code) == f"Output:\n{output}"

    assert (sys.stdout, sys.stderr) == (stdout_before, stderr_before)
    assert not any(stream.closed for stream in streams)
    print("the kernel prints")
    sys.stderr.write("and writes to stderr\n")
    out, err = capsys.readouterr()
    assert (out, err) == ("the kernel prints\n", "and writes to stderr\n")
    # The next call captures as before.
    assert await run("print('next')") == "Output:\nnext"
