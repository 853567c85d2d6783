"""Kernel ▸ Interrupt while a cell awaits ``session.run(...)``, in a real ipykernel: the
cell shows one line in plain words — no traceback through the library — the turn is
closed with what streamed, and the next turn runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from neta_nb.runtime.session.turn import INTERRUPTED_LINE
from tests.support.kernels import STREAMING_SESSION, outputs, stdout
from tests.support.sessions import make_session
from tests.support.timing import poll_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def test_an_interrupt_of_the_awaiting_cell_shows_one_plain_line(
        kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path) -> None:
    manager, client = kernel
    marker = tmp_path / "streaming"
    outputs(client, client.execute(STREAMING_SESSION.format(marker=str(marker))))
    running = client.execute("await session.run('write a lot')")
    poll_until(marker.exists, 60, "the answer to stream")
    manager.interrupt_kernel()
    messages = outputs(client, running)
    (error,) = [m["content"] for m in messages if m["msg_type"] == "error"]
    assert error["ename"] == "CancelledError"
    assert error["traceback"] == [INTERRUPTED_LINE]
    # The turn was closed with what streamed, and the session takes the next one.
    assert stdout(client, "m = session.messages[-1]\n"
                          "print(m.metadata.interrupted, m.text.startswith('word'))"
                  ) == "cancelled True\n"
    assert stdout(client, "session.provider = ScriptedProvider([[{'text': 'Ready again.'}]])\n"
                          "print((await session.run('again')).text)") == "Ready again.\n"


# --- cancelled from outside by asyncio: the same exception, so asyncio knows it ------------

async def test_asyncio_timeout_around_run_still_raises_timeout_error() -> None:
    gate = asyncio.Event()
    scope: list[asyncio.Timeout] = []

    def expire_now() -> None:  # the turn is streaming: the caller's deadline passes now
        scope[0].reschedule(asyncio.get_running_loop().time())

    session, _recorder, _provider = make_session([[expire_now, gate.wait]])

    async def with_a_deadline() -> None:
        async with asyncio.timeout(None) as timeout:
            scope.append(timeout)
            await session.run("go")

    with pytest.raises(TimeoutError):
        await with_a_deadline()


async def test_a_task_group_whose_sibling_fails_reports_only_the_sibling() -> None:
    gate = asyncio.Event()
    session, _recorder, _provider = make_session([[gate.wait]])

    async def sibling() -> None:
        raise ValueError("the sibling failed")

    async def in_a_group() -> None:
        async with asyncio.TaskGroup() as group:
            group.create_task(sibling())
            await session.run("go")

    with pytest.raises(BaseExceptionGroup) as caught:
        await in_a_group()
    assert [type(error) for error in caught.value.exceptions] == [ValueError]
