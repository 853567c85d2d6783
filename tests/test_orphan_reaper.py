"""The watchdog that ends a SIGKILLed kernel's process groups
(neta_nb/process_exit/orphan_reaper.py), run as neta_nb.process_exit runs it, on real
processes: it kills a watched group and what
its leader started when its stdin ends, and leaves alone a group it was told has ended and
one whose pid now belongs to another process."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

import psutil

import neta_nb

REAPER = Path(neta_nb.__file__).parent / "process_exit" / "orphan_reaper.py"
# A group leader that starts a child of its own, then waits.
LEADER = ("import subprocess, sys, time; "
          "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(60)']); "
          "print(child.pid, flush=True); time.sleep(60)")


def _leader() -> tuple[subprocess.Popen[str], int]:
    process = subprocess.Popen([sys.executable, "-c", LEADER], stdout=subprocess.PIPE,
                               text=True, start_new_session=True)
    assert process.stdout is not None
    return process, int(process.stdout.readline())


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_the_end_of_its_input_kills_the_watched_groups_and_nothing_else() -> None:
    watched, watched_child = _leader()
    released, released_child = _leader()
    reused, reused_child = _leader()
    try:
        reaper = subprocess.Popen([sys.executable, "-I", str(REAPER)], stdin=subprocess.PIPE,
                                  text=True, start_new_session=True)
        started = psutil.Process(watched.pid).create_time()
        lines = [f"+{watched.pid} {started}",
                 f"+{released.pid} {psutil.Process(released.pid).create_time()}",
                 f"-{released.pid}",
                 # Another start time: the pid was reused by a process that is not ours.
                 f"+{reused.pid} {psutil.Process(reused.pid).create_time() - 100}",
                 "garbage that is no command", "+notapid 1"]
        reaper.communicate("\n".join(lines) + "\n", timeout=30)
        assert reaper.returncode == 0
        deadline = time.monotonic() + 10
        while (_alive(watched.pid) or _alive(watched_child)) and time.monotonic() < deadline:
            time.sleep(0.05)
        assert not _alive(watched.pid) and not _alive(watched_child)
        assert all(_alive(pid) for pid in (released.pid, released_child, reused.pid,
                                           reused_child))
    finally:
        for process, child in ((watched, watched_child), (released, released_child),
                               (reused, reused_child)):
            for pid in (process.pid, child):
                if _alive(pid):
                    psutil.Process(pid).kill()
            process.wait(10)
            if process.stdout is not None:
                process.stdout.close()
