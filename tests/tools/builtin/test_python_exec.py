"""The python tool: runs in the notebook's namespace, returns output, value and errors."""

from __future__ import annotations

import asyncio
import threading
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


async def test_long_output_is_cut() -> None:
    text = await run(f"print('x' * {MAX_OUTPUT_CHARS + 10})")
    assert text.endswith("\n[... 10 more characters cut]")


def test_python_is_off_by_default_and_needs_approval() -> None:
    assert python.name == "python"
    assert not python.core
    assert python.requires_approval
    catalog = ToolCatalog.default()
    assert "python" not in resolve_tools(catalog, AgentToolConfig()).names
    assert "python" in resolve_tools(catalog, AgentToolConfig(enabled=["python"])).names
