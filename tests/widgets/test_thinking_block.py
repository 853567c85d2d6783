"""ThinkingBlock: batched streaming, one final sync, snapshots for late views."""

from __future__ import annotations

from typing import Any

import pytest

from neta_nb.events import ThinkingDeltaEvent, ThinkingDoneEvent
from neta_nb.widgets import ThinkingBlock

from .conftest import SentMessages


class StateSyncs(list[dict[str, Any]]):
    pass


@pytest.fixture
def syncs(monkeypatch: pytest.MonkeyPatch) -> StateSyncs:
    """The whole-state updates a block sends (what would go over the comm)."""
    recorded = StateSyncs()

    def record(self: ThinkingBlock, msg: dict[str, Any], buffers: Any = None) -> None:
        if msg.get("method") == "update":
            recorded.append(msg["state"])

    monkeypatch.setattr(ThinkingBlock, "_send", record)
    return recorded


def test_history_block_is_folded() -> None:
    block = ThinkingBlock("Because.")
    assert (block.text, block.streaming, block.collapsed) == ("Because.", False, True)
    assert repr(block) == "ThinkingBlock(done, 8 chars)"


async def test_streaming_batches_deltas_and_syncs_text_once(sent: SentMessages,
                                                             syncs: StateSyncs) -> None:
    # Inside a running loop with an interval no test reaches: every delta after the first
    # waits for flush().
    block = ThinkingBlock(flush_interval=3600)
    syncs.clear()
    block.append("a")
    assert (block.streaming, block.collapsed) == (True, False)
    for delta in ["b", "c", "d"]:
        block.append(delta)
    assert block.text == "abcd"
    assert sent.of_kind("append") == [{"kind": "append", "seq": 1, "text": "a"}]
    block.flush()
    assert sent.of_kind("append")[1:] == [{"kind": "append", "seq": 2, "text": "bcd"}]
    assert all("text" not in state for state in syncs)
    block.done()
    assert (block.streaming, block.collapsed, block._seq) == (False, True, 2)
    assert syncs[-1] == {"text": "abcd", "_seq": 2, "streaming": False, "collapsed": True}
    assert repr(block) == "ThinkingBlock(done, 4 chars)"


async def test_snapshot_excludes_pending_text(sent: SentMessages) -> None:
    block = ThinkingBlock(flush_interval=3600)
    block.append("first ")
    block.append("pending")
    block._on_custom_message(block, {"kind": "snapshot", "id": "r1"}, [])
    assert sent.of_kind("reply") == [{"kind": "reply", "id": "r1", "ok": True,
                                      "result": {"text": "first ", "seq": 1}}]


def test_apply_events(sent: SentMessages) -> None:
    block = ThinkingBlock()
    block.apply(ThinkingDeltaEvent(text="x"))
    block.apply(ThinkingDoneEvent())
    assert (block.text, block.streaming) == ("x", False)
    assert [m["text"] for m in sent.of_kind("append")] == ["x"]


def test_done_without_stream_changes_nothing(syncs: StateSyncs) -> None:
    block = ThinkingBlock("old")
    syncs.clear()  # anywidget's own traits, synced once at creation
    block.done()
    assert syncs == []


def test_fallbacks() -> None:
    block = ThinkingBlock("line *one*\n\n<b>two</b>")
    assert block._fallback_text() == "Thinking\nline *one*\n\n<b>two</b>"
    assert "&lt;b&gt;two&lt;/b&gt;" in block._fallback_html()
    assert block._fallback_html().startswith("<details")
