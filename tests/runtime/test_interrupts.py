"""A real SIGINT (a kernel interrupt) while a tool runs or an answer streams: the turn ends
closed — every call answered, no card left running, the partial answer kept, the store
equal to memory, one ``done`` — and the session's next turn sends a valid history.

Each scenario runs in a child process (``tests/support/interrupt_child.py``) that the test
interrupts, so a regression cannot interrupt the test run itself.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from neta_nb.runtime.session.tool_calls.tool_runner import INTERRUPTED_TEXT

ROOT = Path(__file__).resolve().parent.parent

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="POSIX signals")


def interrupt(mode: str, workdir: Path) -> dict[str, Any]:
    child = subprocess.Popen([sys.executable, "-m", "tests.support.interrupt_child", mode,
                              str(workdir)], cwd=ROOT, stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 30
        while not (workdir / "started").exists():
            assert child.poll() is None, child.communicate()
            assert time.monotonic() < deadline, "the child never reached the blocking point"
            time.sleep(0.02)  # polling a condition with a deadline, not a fixed wait
        os.kill(child.pid, signal.SIGINT)
        out, err = child.communicate(timeout=60)
    finally:
        if child.poll() is None:
            child.kill()
    assert child.returncode == 0, err
    report: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
    assert "crashed" not in report, report.get("crashed")
    return report


def assert_closed_and_usable(report: dict[str, Any]) -> None:
    assert report["done"] == [report["done"][0]], "exactly one done for the first turn"
    assert report["running_cards"] == []
    assert report["history_problem"] is None
    assert report["store_equals_memory"]
    assert report["running_after"] is False
    assert report["next_done"] == "end_turn"
    assert report["next_history_problem"] is None


def test_sigint_stops_a_python_tool_stuck_on_the_main_thread(tmp_path: Path) -> None:
    # The interrupt button is the only way out of stuck code on the kernel's thread. The
    # turn absorbs it (a KeyboardInterrupt leaving a task would end the kernel's loop).
    report = interrupt("python-tool", tmp_path)
    assert report["outcome"] == "returned"
    assert report["done"] == ["interrupted"]
    assert report["tool_results"] == [["p1", INTERRUPTED_TEXT, True]]
    assert report["marked"] == ["interrupted"]  # shown as such, not as a Stop
    assert_closed_and_usable(report)


def test_sigint_while_a_worker_thread_tool_runs(tmp_path: Path) -> None:
    # asyncio.run turns the first SIGINT into a cancellation of the awaiting task; the
    # turn closes, then KeyboardInterrupt reaches the caller as it should.
    report = interrupt("worker-tool", tmp_path)
    assert report["outcome"] == "KeyboardInterrupt"
    assert report["done"] == ["cancelled"]
    [(call_id, text, is_error)] = report["tool_results"]
    assert call_id == "w1" and is_error and "did not finish" in text
    assert_closed_and_usable(report)


def test_sigint_while_an_answer_streams_keeps_the_partial_answer(tmp_path: Path) -> None:
    report = interrupt("streaming", tmp_path)
    assert report["outcome"] == "KeyboardInterrupt"
    assert report["done"] == ["cancelled"]
    assert report["partial_text"][0] == "The first half of the answer, "
    assert report["marked"] == ["cancelled"]
    assert_closed_and_usable(report)
