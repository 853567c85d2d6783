"""Kernel ▸ Interrupt stops a turn no cell awaits (the chat's Send, ``session.start``):
in a real ipykernel, and the watch's rules about whose SIGINT handler it may replace."""

from __future__ import annotations

import asyncio
import json
import signal
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager

from neta_nb.runtime.session import kernel_interrupt
from neta_nb.runtime.session.kernel_interrupt import KernelInterrupt
from neta_nb.runtime.session.turn import INTERRUPTED_LINE
from tests.support.kernels import STREAMING_SESSION, outputs, stdout
from tests.support.timing import poll_until

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")

SETUP = STREAMING_SESSION + """
warnings = []
session.subscribe(lambda event: event.type == "warning" and warnings.append(event.message))
"""


def test_an_interrupt_stops_a_turn_no_cell_awaits(
        kernel: tuple[KernelManager, BlockingKernelClient], tmp_path: Path) -> None:
    manager, client = kernel
    marker = tmp_path / "streaming"
    outputs(client, client.execute(SETUP.format(marker=str(marker))))
    # As the chat's Send does: the turn runs on the kernel's loop, the cell has ended.
    outputs(client, client.execute("task = session.start('write a lot')"))
    poll_until(marker.exists, 60, "the answer to stream")
    manager.interrupt_kernel()
    report = "print(json.dumps([task.done(), session.running]))"
    stdout(client, "import json")

    def ended() -> bool:
        return bool(json.loads(stdout(client, report)) == [True, False])

    poll_until(ended, 20, "the interrupt to end the turn")
    # Closed as an interrupted awaited run is: what streamed kept, marked, one plain line.
    state = json.loads(stdout(client, (
        "m = session.messages[-1]\n"
        "print(json.dumps([m.metadata.interrupted, m.text.startswith('word'), "
        "len(m.text) < 25000, warnings]))")))
    assert state == ["cancelled", True, True, [INTERRUPTED_LINE]]
    # SIGINT is ignored again while idle (what ipykernel puts back after this cell)...
    time.sleep(kernel_interrupt.RECHECK_SECONDS * 3)
    assert stdout(client, "import signal\n"
                          "print(get_ipython().kernel.saved_sigint_handler is signal.SIG_IGN)"
                  ) == "True\n"
    # ...and the session takes the next turn.
    assert stdout(client, "session.provider = ScriptedProvider([[{'text': 'Ready again.'}]])\n"
                          "print((await session.run('again')).text)") == "Ready again.\n"


# --- whose handler the watch may replace ----------------------------------------------

@pytest.fixture
def ignored_sigint(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    monkeypatch.setattr(kernel_interrupt, "_in_a_kernel", lambda: True)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        yield
    finally:
        signal.signal(signal.SIGINT, previous)


async def test_the_handler_stops_every_turn_and_goes_with_the_last(ignored_sigint: None) -> None:
    watch, stopped = KernelInterrupt(), []
    watch.add("one", lambda: stopped.append("one"))
    watch.add("two", lambda: stopped.append("two"))
    handler = signal.getsignal(signal.SIGINT)
    assert callable(handler) and handler is not signal.default_int_handler
    handler(signal.SIGINT, None)
    await asyncio.sleep(0)
    assert sorted(stopped) == ["one", "two"]
    watch.discard("one")
    await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
    assert signal.getsignal(signal.SIGINT) is handler
    watch.discard("two")
    await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


async def test_a_handler_someone_else_set_is_left_alone(ignored_sigint: None) -> None:
    watch, stopped = KernelInterrupt(), []
    signal.signal(signal.SIGINT, signal.default_int_handler)  # a cell executes
    watch.add("one", lambda: stopped.append("one"))
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # the cell ended: seen at the next look
    await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
    ours = signal.getsignal(signal.SIGINT)
    assert ours is not signal.SIG_IGN
    signal.signal(signal.SIGINT, signal.default_int_handler)  # another cell, holding ours
    watch.discard("one")
    await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, ours)  # the cell ended: ipykernel restored ours
    await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    assert stopped == []


async def test_outside_a_kernel_ctrl_c_is_untouched() -> None:
    watch = KernelInterrupt()
    before = signal.getsignal(signal.SIGINT)
    watch.add("one", lambda: None)
    assert signal.getsignal(signal.SIGINT) is before
    watch.discard("one")
    assert signal.getsignal(signal.SIGINT) is before
    # Even where SIGINT is ignored (a script started under nohup): not a kernel's idle
    # SIG_IGN, so no handler is put in its place, then or at a later look.
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        watch.add("two", lambda: None)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        await asyncio.sleep(kernel_interrupt.RECHECK_SECONDS * 2)
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
        watch.discard("two")
    finally:
        signal.signal(signal.SIGINT, previous)
