"""The kernel's side of the SIGKILL watchdog (neta_nb/process_exit): what it tells the
watchdog program. Here the program is a stand-in that writes down what it is told (the
real one kills groups: tests/test_orphan_reaper.py). A watchdog that died is replaced by
one told every group still watched; a forked child of the kernel keeps no copy of the
watchdog's pipe (the watchdog would not see the kernel die while the child lives) and
tells its own watchdog none of its parent's groups."""

from __future__ import annotations

import os
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb import process_exit

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="no watchdog on Windows")

# Pids no process of this machine has (above the kernel's pid_max): nothing is killed.
NO_PID_A, NO_PID_B = 2**22 + 11, 2**22 + 12


@pytest.fixture
def told(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Iterator[Path]:
    """A stand-in watchdog that writes each line it reads, after a line naming itself."""
    record = tmp_path / "told.txt"
    program = tmp_path / "recorder.py"
    program.write_text(
        "import os, sys\n"
        f"with open({str(record)!r}, 'a') as out:\n"
        "    out.write(f'watchdog {os.getpid()}\\n'); out.flush()\n"
        "    for line in sys.stdin:\n"
        "        out.write(line); out.flush()\n")
    monkeypatch.setattr(process_exit, "_REAPER", program)
    monkeypatch.setattr(process_exit, "_reaper", None)
    monkeypatch.setattr(process_exit, "_reaper_pid_of", None)
    monkeypatch.setattr(process_exit, "_watched", {}, raising=False)
    yield record
    reaper = process_exit._reaper
    if reaper is not None:
        assert reaper.stdin is not None
        reaper.stdin.close()
        reaper.wait(10)


def _lines(record: Path, count: int) -> list[str]:
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        lines = record.read_text().splitlines() if record.exists() else []
        if len(lines) >= count:
            return lines
        time.sleep(0.02)
    return record.read_text().splitlines() if record.exists() else []


def test_a_watchdog_that_died_is_replaced_and_told_every_group_still_watched(
        told: Path) -> None:
    process_exit.end_with_this_process(NO_PID_A)
    first = process_exit._reaper
    assert first is not None
    assert _lines(told, 2)[1] == f"+{NO_PID_A} 0.0"
    first.kill()
    first.wait(10)
    process_exit.end_with_this_process(NO_PID_B)
    second = process_exit._reaper
    assert second is not None and second is not first
    lines = _lines(told, 5)
    assert lines[2:] == [f"watchdog {second.pid}", f"+{NO_PID_A} 0.0", f"+{NO_PID_B} 0.0"]


def test_a_group_released_is_not_told_to_the_next_watchdog(told: Path) -> None:
    process_exit.end_with_this_process(NO_PID_A)
    process_exit.release(NO_PID_A)
    first = process_exit._reaper
    assert first is not None
    assert _lines(told, 3)[1:] == [f"+{NO_PID_A} 0.0", f"-{NO_PID_A}"]
    first.kill()
    first.wait(10)
    process_exit.end_with_this_process(NO_PID_B)
    second = process_exit._reaper
    assert second is not None
    lines = _lines(told, 5)
    assert lines[3:] == [f"watchdog {second.pid}", f"+{NO_PID_B} 0.0"], lines


def test_a_forked_child_holds_no_copy_of_the_watchdogs_pipe(told: Path) -> None:
    process_exit.end_with_this_process(NO_PID_A)
    reaper = process_exit._reaper
    assert reaper is not None and reaper.stdin is not None
    inherited = reaper.stdin.fileno()
    read, write = os.pipe()
    child = os.fork()
    if child == 0:  # pragma: no cover - the forked child reports and exits
        try:
            try:
                os.fstat(inherited)
                state = "open"
            except OSError:
                state = "closed"
            os.write(write, f"{state} {len(process_exit._watched)}".encode())
        finally:
            os._exit(0)
    os.close(write)
    try:
        answer = os.read(read, 100).decode()
    finally:
        os.close(read)
        os.waitpid(child, 0)
    assert answer == "closed 0"
