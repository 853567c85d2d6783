"""``read_notebook`` on the kernel's history describes only the values it returns, and
describes them off the event loop: a notebook with a thousand frames in ``Out`` costs an
answer about one cell that cell's description, and Stop and the widgets keep being
served while a slow one is made."""

from __future__ import annotations

import asyncio
import os
import re
import threading
from typing import Any, ClassVar

import pytest

from neta_nb.tools.base import ToolContext
from neta_nb.tools.notebook import kernel
from neta_nb.tools.notebook.reading_running import read_notebook

from ..support.sessions import answer, calls
from .test_notebook_tools import _result, _session


class _Counted:
    """An ``Out`` value whose description runs its ``__repr__`` (its class counts as an
    installed package's, as a frame's does) and records which value it was."""

    __module__ = "neta_nb.counted_values"
    described: ClassVar[list[int]] = []

    def __init__(self, number: int) -> None:
        self.number = number

    def __repr__(self) -> str:
        _Counted.described.append(self.number)
        return f"value {self.number}: " + "x" * 2_000


@pytest.fixture
def history(monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    monkeypatch.setattr(kernel, "_shell", lambda: None)
    monkeypatch.setattr(kernel, "last_exception", lambda: None)
    _Counted.described = []
    return {"In": ["", *(f"frame_{n}" for n in range(1, 1_001))],
            "Out": {n: _Counted(n) for n in range(1, 1_001)}}


async def test_only_the_values_of_the_cells_returned_are_described(
        history: dict[str, Any]) -> None:
    session, _, _ = _session([calls(("one", "read_notebook", {"cell_id": "In[500]"})),
                              answer("ok"), calls(("all", "read_notebook", {})),
                              answer("ok")], None)
    session.namespace.update(history)
    await session.run("what is In[500]?")
    assert "value 500: xxx" in _result(session, "one").content
    assert set(_Counted.described) == {500}
    _Counted.described = []
    await session.run("and the rest?")
    text = _result(session, "all").content
    shown = [int(n) for n in re.findall(r"^--- cell \d+ · id In\[(\d+)\]", text, re.M)]
    assert shown and "Left out to stay short" in text
    # Those shown, and at most the one after them, found not to fit.
    assert set(shown) <= set(_Counted.described) <= {*shown, max(shown) + 1}


async def test_a_read_from_a_later_cell_describes_the_values_from_there_only(
        history: dict[str, Any]) -> None:
    result = await read_notebook.invoke_rich({"start": 999},
                                             ToolContext(namespace=history))
    assert "value 1000: xxx" in result.text and set(_Counted.described) == {999, 1000}


class _Blocking:
    """An ``Out`` value whose description blocks until a coroutine of the event loop lets
    it go."""

    __module__ = "neta_nb.counted_values"

    def __init__(self) -> None:
        self.loop = asyncio.get_running_loop()
        self.entered = asyncio.Event()
        self.released = threading.Event()
        self.freed_by_the_loop: list[bool] = []

    def __repr__(self) -> str:
        self.loop.call_soon_threadsafe(self.entered.set)
        if not self.freed_by_the_loop:  # once is enough to tell
            # On the loop's thread the loop cannot set it: the wait then runs out.
            self.freed_by_the_loop.append(self.released.wait(timeout=10))
        return "slow value"


async def test_a_slow_value_is_described_while_the_loop_goes_on(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_shell", lambda: None)
    monkeypatch.setattr(kernel, "last_exception", lambda: None)
    slow = _Blocking()
    session, _, _ = _session([calls(("r", "read_notebook", {})), answer("ok")], None)
    session.namespace.update({"In": ["", "slow"], "Out": {1: slow}})

    async def heartbeat() -> None:  # a coroutine of the loop's, as Stop's handler is
        await slow.entered.wait()
        slow.released.set()

    beating = asyncio.ensure_future(heartbeat())
    try:
        await session.run("what is slow?")
    finally:
        beating.cancel()
    assert slow.freed_by_the_loop == [True]
    assert "slow value" in _result(session, "r").content


class _Hanging:
    """An ``Out`` value whose description does not end until the test lets it (a repr of
    an installed package's that waits on a server that never answers)."""

    __module__ = "neta_nb.counted_values"

    def __init__(self) -> None:
        self.release = threading.Event()
        self.entered = 0

    def __repr__(self) -> str:
        self.entered += 1
        self.release.wait(timeout=60)
        return "late value"


async def test_a_value_whose_description_never_ends_costs_a_read_its_wait_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_shell", lambda: None)
    monkeypatch.setattr(kernel, "last_exception", lambda: None)
    monkeypatch.setattr(kernel, "DESCRIBE_WAIT", 0.3, raising=False)
    stuck = _Hanging()
    # The tool's own timeout is far off: the read returns well before it, with the other
    # cells' values and a note naming the one not described.
    session, _, _ = _session([calls(("r", "read_notebook", {})), answer("ok"),
                              calls(("again", "read_notebook", {})), answer("ok")],
                             None, tool_timeout=20)
    session.namespace.update({"In": ["", "stuck", "6 * 7"], "Out": {1: stuck, 2: 42}})
    try:
        started = asyncio.get_running_loop().time()
        await session.run("what ran?")
        took = asyncio.get_running_loop().time() - started
        text = _result(session, "r").content
        assert took < 10, text
        assert "│ Out[2]: int = 42" in text
        note = next(line for line in text.splitlines() if line.startswith("│ Out[1]"))
        assert "not described" in note and "0.3 s" in note, note
        # Asked again, the description still running is waited for, not started again.
        await session.run("and now?")
        assert "not described" in _result(session, "again").content
        assert stuck.entered == 1
    finally:
        stuck.release.set()


async def test_a_stop_during_a_slow_description_leaves_the_session_usable(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_shell", lambda: None)
    monkeypatch.setattr(kernel, "last_exception", lambda: None)
    stuck = _Hanging()
    session, _, _ = _session([calls(("r", "read_notebook", {})),
                              calls(("next", "read_notebook", {"cell_id": "In[2]"})),
                              answer("done")], None)
    session.namespace.update({"In": ["", "stuck", "6 * 7"], "Out": {1: stuck, 2: 42}})
    try:
        task = session.start("what ran?")
        for _ in range(500):
            if stuck.entered:
                break
            await asyncio.sleep(0.01)
        assert stuck.entered == 1
        session.cancel()
        await asyncio.wait_for(task, 5)
        assert "did not finish" in _result(session, "r").content
        await asyncio.wait_for(session.run("just In[2]?"), 10)
        assert "│ Out[2]: int = 42" in _result(session, "next").content
        assert session.messages[-1].text == "done"
    finally:
        stuck.release.set()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="fork is POSIX's")
def test_a_forked_kernel_describes_a_value_its_parent_was_still_describing(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "DESCRIBE_WAIT", 0.1, raising=False)
    stuck = _Hanging()
    try:
        history = {"In": ["", "stuck"], "Out": {1: stuck}}
        monkeypatch.setattr(kernel, "_shell", lambda: None)
        monkeypatch.setattr(kernel, "last_exception", lambda: None)
        first = kernel.kernel_history(history)["cells"][0]["outputs"]()
        assert "not described" in first[0]["data"]["text/plain"]
        # The child has none of its parent's threads: the description the parent still
        # runs is not waited for there, it is made anew.
        pid = os.fork()
        if pid == 0:  # the child
            try:
                stuck.release.set()  # the child's own description returns at once
                again = kernel.kernel_history(history)["cells"][0]["outputs"]()
                code = 0 if "late value" in again[0]["data"]["text/plain"] else 1
            except BaseException:
                code = 2
            os._exit(code)
        _, status = os.waitpid(pid, 0)
        assert os.waitstatus_to_exitcode(status) == 0
    finally:
        stuck.release.set()


class _Interrupting:
    """An ``Out`` value of an installed package's class whose repr raises
    ``KeyboardInterrupt`` (off the kernel's main thread it cannot be the user's)."""

    __module__ = "neta_nb.counted_values"

    def __repr__(self) -> str:
        raise KeyboardInterrupt


async def test_a_value_raising_an_interrupt_costs_its_own_description_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(kernel, "_shell", lambda: None)
    monkeypatch.setattr(kernel, "last_exception", lambda: None)
    session, _, _ = _session([calls(("r", "read_notebook", {})), answer("ok")], None)
    session.namespace.update({"In": ["", "odd", "6 * 7"], "Out": {1: _Interrupting(), 2: 42}})
    await session.run("what ran?")
    text = _result(session, "r").content
    assert "│ Out[2]: int = 42" in text, text
    assert ("│ Out[1]: neta_nb._Interrupting (not described: KeyboardInterrupt)") in text
