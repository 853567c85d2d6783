"""TurnClaim: the OS lock a process holds while it runs a session's turn, so another
kernel cannot take the turn over even while the store cannot record its owner."""

from __future__ import annotations

import sys
import time
from pathlib import Path
from typing import Any

import pytest

from neta_nb import SessionBusyError
from neta_nb.store.sqlite.turn_claims import TurnClaim

pytestmark = pytest.mark.skipif(sys.platform == "win32", reason="flock")


def test_a_claimed_turn_is_refused_until_it_is_released(tmp_path: Path) -> None:
    db = tmp_path / "sessions.sqlite3"
    claim = TurnClaim.take(db, "s/../odd id")  # any id is one plain file name
    assert claim is not None
    assert [p.parent.name for p in (tmp_path / "sessions.sqlite3.turns").iterdir()] == [
        "sessions.sqlite3.turns"]
    with pytest.raises(SessionBusyError, match="this kernel"):
        TurnClaim.check(db, "s/../odd id")
    with pytest.raises(SessionBusyError, match="this kernel"):
        TurnClaim.take(db, "s/../odd id")
    TurnClaim.check(db, "another session")  # claims are per session
    claim.release()
    TurnClaim.check(db, "s/../odd id")
    again = TurnClaim.take(db, "s/../odd id")
    assert again is not None
    again.release()


def test_an_in_memory_store_needs_no_claim() -> None:
    assert TurnClaim.take(Path(":memory:"), "s") is None
    TurnClaim.check(Path(":memory:"), "s")


def test_a_directory_that_cannot_hold_the_claim_leaves_the_record_as_the_guard(
        tmp_path: Path) -> None:
    (tmp_path / "sessions.sqlite3.turns").write_text("a file where the folder would be")
    assert TurnClaim.take(tmp_path / "sessions.sqlite3", "s") is None


async def test_a_claim_given_up_while_it_was_taken_does_not_refuse_the_next_turn(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A turn stopped while its claim is being taken (on a thread) leaves that claim to be
    # released when it arrives; the session's next turn, started at once (an %%agent cell
    # run again), waits for that instead of finding the claim held "by another process".
    import asyncio
    import threading

    from neta_nb import SessionStore

    store = SessionStore(tmp_path / "sessions.db")
    slow = threading.Event()
    take = store.claim_turn

    def slowly(session_id: str) -> Any:
        claim = take(session_id)
        if not slow.is_set():  # the first: taken, and slow to come back (a busy machine)
            slow.set()
            time.sleep(0.3)
        return claim

    monkeypatch.setattr(store, "claim_turn", slowly)
    first = asyncio.ensure_future(store.claim_turn_soon("s1"))
    await asyncio.sleep(0.05)
    first.cancel()
    with pytest.raises(asyncio.CancelledError):
        await first
    claim = await store.claim_turn_soon("s1")  # the next turn, at once
    assert claim is not None
    claim.release()
