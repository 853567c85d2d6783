"""Calls waited for at most a bound, on reused daemon threads (``bounded_calls``)."""

from __future__ import annotations

import multiprocessing
import threading
import time
from collections import deque
from concurrent.futures import Future

import pytest

from neta_nb.store import bounded_calls
from neta_nb.store.bounded_calls import call_within


def test_a_result_and_an_exception_come_back_to_the_caller() -> None:
    assert call_within(lambda: 42, 5) == 42

    def fails() -> None:
        raise ValueError("no such table")

    with pytest.raises(ValueError, match="no such table"):
        call_within(fails, 5)


def test_a_timeout_the_call_raises_itself_is_its_own_and_comes_at_once() -> None:
    def times_out() -> None:
        raise TimeoutError("the lock was not granted")

    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^the lock was not granted$"):
        call_within(times_out, 5)
    assert time.monotonic() - started < 2


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """No thread kept from other tests (each one's own count and lists)."""
    monkeypatch.setattr(bounded_calls, "_idle", [])
    monkeypatch.setattr(bounded_calls, "_waiting", deque())
    monkeypatch.setattr(bounded_calls, "_threads", 0)


def test_a_future_cancelled_before_its_call_starts_skips_it_and_the_thread_serves_on(
        fresh: None) -> None:
    ran: list[str] = []
    future: Future[None] = Future()
    assert future.cancel()
    worker = bounded_calls._Worker()
    worker.give((lambda: ran.append("claimed"), future))
    deadline = time.monotonic() + 5
    while worker not in bounded_calls._idle and time.monotonic() < deadline:
        time.sleep(0.01)
    assert bounded_calls._idle == [worker]
    assert call_within(lambda: "served", 5) == "served"
    assert bounded_calls._idle == [worker] and bounded_calls._threads == 0  # no new one
    assert ran == []


def test_a_call_that_hangs_is_given_up_on_and_the_next_call_is_answered() -> None:
    release = threading.Event()
    started = time.monotonic()
    stuck: list[int] = []

    def hangs() -> None:
        stuck.append(threading.get_ident())
        release.wait()

    with pytest.raises(TimeoutError, match=r"^no answer within 0\.3 s$"):
        call_within(hangs, 0.3)
    assert time.monotonic() - started < 3
    assert call_within(threading.get_ident, 5) != stuck[0]  # the stuck one is busy
    release.set()  # the server answers: the stuck thread ends its call
    assert call_within(lambda: "after", 5) == "after"


def test_idle_threads_are_reused_and_a_burst_waits_for_a_few(fresh: None) -> None:
    served_by = {call_within(threading.get_ident, 5) for _ in range(200)}
    assert len(served_by) == 1  # one after another: the same thread each time
    # 40 calls at once (200 turns taking their claims): at most MAX_THREADS threads.
    running, most = [0], [0]
    guard = threading.Lock()

    def call() -> int:
        with guard:
            running[0] += 1
            most[0] = max(most[0], running[0])
        time.sleep(0.02)
        with guard:
            running[0] -= 1
        return threading.get_ident()

    futures = [bounded_calls.submit(call) for _ in range(40)]
    assert len({future.result(10) for future in futures}) <= bounded_calls.MAX_THREADS
    assert most[0] == bounded_calls.MAX_THREADS
    assert bounded_calls._threads == bounded_calls.MAX_THREADS


def test_a_call_given_up_on_before_a_thread_was_free_is_never_made(fresh: None) -> None:
    release = threading.Event()
    stuck = [bounded_calls.submit(release.wait) for _ in range(bounded_calls.MAX_THREADS)]
    made: list[str] = []
    with pytest.raises(TimeoutError):
        call_within(lambda: made.append("late"), 0.2)
    release.set()
    for future in stuck:
        assert future.result(10) is True
    assert call_within(lambda: "next", 5) == "next"
    assert made == []


def test_an_idle_thread_ends_after_a_while(fresh: None,
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_calls, "IDLE_EXIT", 0.2)
    call_within(lambda: None, 5)
    (worker,) = bounded_calls._idle
    deadline = time.monotonic() + 10
    while bounded_calls._idle and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bounded_calls._idle
    assert bounded_calls._threads == 0
    assert call_within(lambda: "again", 5) == "again"  # a new one is started
    assert bounded_calls._idle != [worker]


def _in_child(queue: multiprocessing.Queue[object]) -> None:
    queue.put(call_within(lambda: "child", 5))


def test_a_forked_child_does_not_wait_on_its_parent_s_threads() -> None:
    call_within(lambda: None, 5)  # an idle thread in the parent
    assert bounded_calls._idle
    context = multiprocessing.get_context("fork")
    answers: multiprocessing.Queue[object] = context.Queue()
    child = context.Process(target=_in_child, args=(answers,))
    child.start()
    try:
        assert answers.get(timeout=20) == "child"
    finally:
        child.join(20)
        answers.close()
        answers.join_thread()
    assert child.exitcode == 0
