"""Calls waited for at most a bound, on a server's kept daemon threads
(``bounded_calls``)."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from neta_nb.store import bounded_calls
from neta_nb.store.bounded_calls import MAX_THREADS, BoundedThreads, CallTimeout


@pytest.fixture
def threads() -> BoundedThreads:
    """A server's threads of this test's own."""
    return BoundedThreads()


def test_a_result_and_an_exception_come_back_to_the_caller(threads: BoundedThreads) -> None:
    assert threads.call_within(lambda: 42, 5) == 42

    def fails() -> None:
        raise ValueError("no such table")

    with pytest.raises(ValueError, match="no such table"):
        threads.call_within(fails, 5)


def test_a_timeout_the_call_raises_itself_is_its_own_and_comes_at_once(
        threads: BoundedThreads) -> None:
    def times_out() -> None:
        raise TimeoutError("the lock was not granted")

    started = time.monotonic()
    with pytest.raises(TimeoutError, match=r"^the lock was not granted$") as caught:
        threads.call_within(times_out, 5)
    assert not isinstance(caught.value, CallTimeout)
    assert time.monotonic() - started < 2


def test_a_future_cancelled_before_its_call_starts_skips_it_and_the_thread_serves_on(
        threads: BoundedThreads) -> None:
    ran: list[str] = []
    release = threading.Event()
    stuck = [threads.submit(release.wait) for _ in range(MAX_THREADS)]
    future = threads.submit(lambda: ran.append("claimed"))  # waits for a thread
    assert future.cancel()
    release.set()
    assert all(done.result(10) for done in stuck)
    assert threads.call_within(lambda: "served", 5) == "served"
    assert threads.threads.threads == MAX_THREADS  # no new one
    assert threads.threads.busy == 0
    assert threads.threads.idle == MAX_THREADS  # each counted idle once
    assert ran == []


def test_a_call_that_hangs_is_given_up_on_and_the_next_call_is_answered(
        threads: BoundedThreads) -> None:
    release = threading.Event()
    started = time.monotonic()
    stuck: list[int] = []

    def hangs() -> None:
        stuck.append(threading.get_ident())
        release.wait()

    with pytest.raises(CallTimeout, match=r"^no answer within 0\.3 s$") as caught:
        threads.call_within(hangs, 0.3)
    assert caught.value.started  # under way: it goes on
    assert time.monotonic() - started < 3
    assert threads.call_within(threading.get_ident, 5) != stuck[0]  # the stuck one is busy
    release.set()  # the server answers: the stuck thread ends its call
    assert threads.call_within(lambda: "after", 5) == "after"


def test_idle_threads_are_reused_and_a_burst_waits_for_a_few(threads: BoundedThreads) -> None:
    served_by = {threads.call_within(threading.get_ident, 5) for _ in range(200)}
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

    futures = [threads.submit(call) for _ in range(40)]
    assert len({future.result(10) for future in futures}) <= MAX_THREADS
    assert most[0] == MAX_THREADS
    assert threads.threads.threads == MAX_THREADS


def test_a_call_given_up_on_before_a_thread_was_free_is_never_made(
        threads: BoundedThreads) -> None:
    release = threading.Event()
    stuck = [threads.submit(release.wait) for _ in range(MAX_THREADS)]
    made: list[str] = []
    with pytest.raises(CallTimeout) as caught:
        threads.call_within(lambda: made.append("late"), 0.2)
    assert not caught.value.started
    # One that must be made (a claim's unlock) waits for a thread instead.
    with pytest.raises(CallTimeout) as caught:
        threads.call_within(lambda: made.append("must"), 0.2, must_run=True)
    assert caught.value.started
    release.set()
    for future in stuck:
        assert future.result(10) is True
    assert threads.call_within(lambda: "next", 5) == "next"
    assert made == ["must"]


def test_a_hung_server_holds_its_own_threads_only() -> None:
    hung, healthy = BoundedThreads.of("postgresql://hung"), BoundedThreads.of("sqlite")
    assert BoundedThreads.of("postgresql://hung") is hung
    release = threading.Event()
    stuck = [hung.submit(release.wait) for _ in range(MAX_THREADS + 2)]
    try:
        assert healthy.call_within(lambda: "claimed", 2) == "claimed"
    finally:
        release.set()
    assert all(future.result(10) for future in stuck)


def test_a_bounded_call_inside_another_runs_where_it_is(threads: BoundedThreads) -> None:
    """With every thread busy in an outer call, an inner one waiting for a thread of its
    own would wait on itself until its limit."""
    gate = threading.Barrier(MAX_THREADS)

    def outer() -> str:
        gate.wait(10)  # all MAX_THREADS threads busy at once
        return threads.call_within(lambda: "inner", 1)

    futures = [threads.submit(outer) for _ in range(MAX_THREADS)]
    assert [future.result(10) for future in futures] == ["inner"] * MAX_THREADS


def test_an_idle_thread_ends_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_calls, "IDLE_EXIT", 0.2)
    threads = BoundedThreads()
    first = threads.call_within(threading.current_thread, 5)
    assert threads.threads.idle == 1
    deadline = time.monotonic() + 10
    while threads.threads.idle and time.monotonic() < deadline:
        time.sleep(0.05)
    assert threads.threads.idle == 0
    assert threads.threads.threads == 0
    assert threads.call_within(threading.current_thread, 5) is not first  # a new one


_FORKED = BoundedThreads.of("test-fork")


def _in_child(queue: multiprocessing.Queue[object]) -> None:
    queue.put(_FORKED.call_within(lambda: "child", 5))


def test_a_forked_child_does_not_wait_on_its_parent_s_threads() -> None:
    _FORKED.call_within(lambda: None, 5)  # an idle thread in the parent
    assert _FORKED.threads.idle
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
