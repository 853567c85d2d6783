"""Calls waited for at most a bound, on reused daemon threads (``bounded_calls``)."""

from __future__ import annotations

import multiprocessing
import threading
import time

import pytest

from neta_nb.store import bounded_calls
from neta_nb.store.bounded_calls import call_within


def _threads() -> set[threading.Thread]:
    return {t for t in threading.enumerate() if t.name == "neta-nb-store-call"}


def test_a_result_and_an_exception_come_back_to_the_caller() -> None:
    assert call_within(lambda: 42, 5) == 42

    def fails() -> None:
        raise ValueError("no such table")

    with pytest.raises(ValueError, match="no such table"):
        call_within(fails, 5)


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


def test_idle_threads_are_reused_and_kept_few() -> None:
    served_by = {call_within(threading.get_ident, 5) for _ in range(200)}
    assert len(served_by) == 1  # one after another: the same thread each time
    # Ten calls at once need ten threads; afterwards only KEEP_IDLE stay.
    gate = threading.Barrier(11)
    callers = [threading.Thread(target=call_within, args=(gate.wait, 10)) for _ in range(10)]
    for caller in callers:
        caller.start()
    gate.wait(10)
    for caller in callers:
        caller.join(10)
    time.sleep(0.2)  # each ends its call, then keeps itself idle or ends
    assert len([t for t in _threads() if t.is_alive()]) <= bounded_calls.KEEP_IDLE + 2


def test_an_idle_thread_ends_after_a_while(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(bounded_calls, "IDLE_EXIT", 0.2)
    monkeypatch.setattr(bounded_calls, "_idle", [])  # none idle with the old wait
    call_within(lambda: None, 5)
    (worker,) = bounded_calls._idle
    deadline = time.monotonic() + 10
    while bounded_calls._idle and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not bounded_calls._idle
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
