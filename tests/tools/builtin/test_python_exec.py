"""The python tool: runs in the notebook's namespace, returns output, value and errors."""

from __future__ import annotations

import asyncio
import sys
import threading
import tracemalloc
from typing import Any

import pytest

from neta_nb.tools import AgentToolConfig, ToolCatalog, ToolContext, resolve_tools
from neta_nb.tools.builtin import python
from neta_nb.tools.builtin.python_exec import MAX_OUTPUT_CHARS


async def run(code: str, namespace: dict[str, Any] | None = None) -> str:
    return await python.invoke({"code": code}, ToolContext(namespace=namespace))


async def test_output_and_last_expression() -> None:
    assert await run("print('hello')\n1 + 1") == "Output:\nhello\n\nResult:\n2"
    assert await run("x = 3") == "(no output)"
    assert await run("None") == "(no output)"
    assert await run("'text'") == "Result:\n'text'"


async def test_runs_in_the_given_namespace_and_keeps_state() -> None:
    namespace: dict[str, Any] = {"df_rows": 10}
    assert await run("total = df_rows * 2\ntotal", namespace) == "Result:\n20"
    assert namespace["total"] == 20
    assert set(namespace) == {"__builtins__", "df_rows", "total"}
    assert await run("total + 1", namespace) == "Result:\n21"


async def test_errors_are_reported_with_the_output_so_far() -> None:
    text = await run("print('before')\ndef f():\n    return 1 / 0\nf()")
    assert text.startswith("Output:\nbefore\n\nError:\nTraceback (most recent call last):\n")
    assert '  File "<python tool>", line 4, in <module>\n    f()' in text
    assert '  File "<python tool>", line 3, in f\n    return 1 / 0' in text
    assert text.endswith("ZeroDivisionError: division by zero")
    assert "python_exec.py" not in text


async def test_syntax_errors_are_reported() -> None:
    text = await run("def broken(:\n  pass")
    assert text.startswith("Error:\n")
    assert "SyntaxError" in text


async def test_system_exit_does_not_escape() -> None:
    assert (await run("raise SystemExit(3)")).endswith("SystemExit: 3")


async def test_stderr_is_captured_too() -> None:
    assert await run("import sys\nsys.stderr.write('warn\\n')\npass") == "Output:\nwarn"


async def test_top_level_await() -> None:
    assert await run("import asyncio\nawait asyncio.sleep(0)\n'awaited'") == (
        "Result:\n'awaited'")


async def test_runs_on_the_event_loop_thread() -> None:
    namespace: dict[str, Any] = {"threading": threading}
    await run("where = threading.get_ident()", namespace)
    assert namespace["where"] == threading.get_ident()


async def test_cancellation_is_not_swallowed() -> None:
    started = asyncio.Event()
    task = asyncio.ensure_future(run("started.set()\nawait asyncio.Event().wait()",
                                     {"started": started, "asyncio": asyncio}))
    await asyncio.wait_for(started.wait(), 10)  # the code is running, awaiting forever
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


async def test_long_output_keeps_its_head_and_tail_and_says_what_was_cut() -> None:
    text = await run(f"print('a' * {MAX_OUTPUT_CHARS}, end='')\nprint('b' * 100 + 'END')")
    head = MAX_OUTPUT_CHARS * 3 // 5
    tail = MAX_OUTPUT_CHARS * 2 // 5
    cut = MAX_OUTPUT_CHARS + 104 - head - tail
    assert text == ("Output:\n" + "a" * head + f"\n[... {cut:,} characters cut ...]\n"
                    + "a" * (tail - 104) + "b" * 100 + "END")


async def test_output_just_within_the_limit_is_kept_whole() -> None:
    assert await run(f"print('x' * {MAX_OUTPUT_CHARS - 1})") == (
        "Output:\n" + "x" * (MAX_OUTPUT_CHARS - 1))


async def test_printing_100_mb_keeps_the_kernel_within_a_few_mb() -> None:
    # A runaway print loop: what is kept stays bounded while it prints, not only once it
    # is cut at the end (the code's own 1 MB string is the rest of the peak).
    tracemalloc.start()
    try:
        text = await run("for _ in range(100):\n    print('x' * 1_000_000)")
        _current, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < 4_000_000, peak
    assert f"[... {100 * 1_000_001 - MAX_OUTPUT_CHARS:,} characters cut ...]" in text


async def test_overlapping_calls_each_read_only_their_own_output(
        capsys: pytest.CaptureFixture[str]) -> None:
    # Two calls interleave on one loop (two chats in a kernel, two sub-agents delegated in
    # one response): each reads what it printed, nothing else, in its order.
    stdout_before, stderr_before = sys.stdout, sys.stderr
    code = ("import asyncio, sys\n"
            "for n in range(5):\n"
            "    print(f'{NAME} {n}')\n"
            "    sys.stderr.write(f'{NAME} err {n}\\n')\n"
            "    await asyncio.sleep(0.001 * (n % 2))\n")
    first, second = await asyncio.gather(run(code, {"NAME": "first"}),
                                         run(code, {"NAME": "second"}))
    for name, text in (("first", first), ("second", second)):
        expected = "".join(f"{name} {n}\n{name} err {n}\n" for n in range(5))
        assert text == "Output:\n" + expected.rstrip("\n")
    # Nothing of theirs reached the process's streams, and those still work afterwards.
    print("after both")
    sys.stderr.write("stderr after both\n")
    out, err = capsys.readouterr()
    assert out == "after both\n"
    assert err == "stderr after both\n"
    # The streams that were there are still what prints go to, behind at most a router.
    assert getattr(sys.stdout, "_stream", sys.stdout) is stdout_before
    assert getattr(sys.stderr, "_stream", sys.stderr) is stderr_before


async def test_a_call_that_ends_while_another_runs_leaves_the_other_capturing(
        capsys: pytest.CaptureFixture[str]) -> None:
    # The order that used to leave a dead buffer as sys.stdout: A starts, B starts, A
    # ends, B ends (redirect_stdout restores in the wrong order).
    b_started, a_done = asyncio.Event(), asyncio.Event()
    a = asyncio.ensure_future(run("print('a before')\nawait b_started.wait()\nprint('a after')",
                                  {"b_started": b_started}))
    await asyncio.sleep(0)
    b = asyncio.ensure_future(run("b_started.set()\nawait a_done.wait()\nprint('b after')",
                                  {"b_started": b_started, "a_done": a_done}))
    assert await a == "Output:\na before\na after"
    print("between")
    a_done.set()
    assert await b == "Output:\nb after"
    print("later")
    assert capsys.readouterr().out == "between\nlater\n"


async def test_threads_the_code_starts_print_into_its_output() -> None:
    code = ("import threading\n"
            "def work(n):\n"
            "    print(f'thread {n}')\n"
            "    inner = threading.Thread(target=print, args=(f'inner {n}',))\n"
            "    inner.start(); inner.join()\n"
            "threads = [threading.Thread(target=work, args=(n,)) for n in range(3)]\n"
            "for t in threads: t.start()\n"
            "for t in threads: t.join()\n")
    text = await run(code)
    lines = text.removeprefix("Output:\n").splitlines()
    assert sorted(lines) == sorted([f"thread {n}" for n in range(3)]
                                   + [f"inner {n}" for n in range(3)])


async def test_tasks_the_code_creates_print_into_its_output() -> None:
    code = ("import asyncio\n"
            "async def job(n):\n"
            "    await asyncio.sleep(0)\n"
            "    print('job', n)\n"
            "await asyncio.gather(*(job(n) for n in range(3)))\n"
            "await asyncio.to_thread(print, 'in a worker thread')\n")
    text = await run(code)
    assert text == "Output:\njob 0\njob 1\njob 2\nin a worker thread"


@pytest.mark.parametrize(("code", "name"), [
    ("raise GeneratorExit('closed')", "GeneratorExit: closed"),
    ("class Boom(BaseException):\n    pass\nraise Boom('bang')", "Boom: bang"),
    ("import asyncio\nraise asyncio.CancelledError('its own')", "CancelledError: its own"),
    ("import sys\nsys.exit('bye')", "SystemExit: bye"),
])
async def test_a_base_exception_of_the_code_is_an_error_result_with_its_traceback(
        code: str, name: str) -> None:
    text = await run("print('so far')\n" + code)
    assert text.startswith("Output:\nso far\n\nError:\nTraceback (most recent call last):\n")
    assert text.endswith(name)


async def test_a_keyboard_interrupt_still_interrupts() -> None:
    with pytest.raises(KeyboardInterrupt):
        await run("raise KeyboardInterrupt")


def test_python_is_off_by_default_and_needs_approval() -> None:
    assert python.name == "python"
    assert not python.core
    assert python.requires_approval
    catalog = ToolCatalog.default()
    assert "python" not in resolve_tools(catalog, AgentToolConfig()).names
    assert "python" in resolve_tools(catalog, AgentToolConfig(enabled=["python"])).names
