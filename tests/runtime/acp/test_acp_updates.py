"""The agent's output read before the SDK (neta_nb/runtime/acp/connection.py, _Updates):
lines split across reads and many in one read arrive whole and in order; streamed text
chunks go to the listener directly, every other update through the SDK's model of it, and
anything that is no update (a response, a request, a broken line) on to the SDK as it
came."""

from __future__ import annotations

import asyncio
import json
from typing import Any

import pytest

from neta_nb.providers.base import ResponseAssembler, TextDelta, ThinkingDelta
from neta_nb.runtime.acp import connection
from neta_nb.runtime.acp.connection import _Updates


class Heard:
    def __init__(self) -> None:
        self.items: list[tuple[Any, ...]] = []

    def on_chunk(self, session_id: str, text: str, *, thinking: bool) -> None:
        self.items.append(("chunk", session_id, text, thinking))

    def on_update(self, session_id: str, update: Any) -> None:
        self.items.append(("update", session_id, update.session_update))

    async def on_permission(self, *args: Any) -> Any:  # pragma: no cover - not asked here
        raise AssertionError("no request is read here")


def _update(update: dict[str, Any], session: str = "s1") -> bytes:
    return json.dumps({"jsonrpc": "2.0", "method": "session/update",
                       "params": {"sessionId": session, "update": update}}).encode() + b"\n"


def _chunk(text: str, kind: str = "agent_message_chunk") -> bytes:
    return _update({"sessionUpdate": kind, "content": {"type": "text", "text": text}})


async def _pumped(pieces: list[bytes]) -> tuple[Heard, bytes]:
    source = asyncio.StreamReader()
    for piece in pieces:
        source.feed_data(piece)
    source.feed_eof()
    heard = Heard()
    updates = _Updates(source, heard)
    await updates.pump()
    return heard, await updates.sdk_reader.read()


async def test_lines_cut_anywhere_between_reads_arrive_whole_and_in_order(
        monkeypatch: pytest.MonkeyPatch) -> None:
    response = b'{"jsonrpc":"2.0","id":3,"result":{"stopReason":"end_turn"}}\n'
    stream = (_chunk("Hel") + _chunk("lo \u00e9 \ud83d\ude00", "agent_thought_chunk")
              + _update({"sessionUpdate": "plan", "entries": []}) + response
              + _chunk("end"))
    monkeypatch.setattr(connection, "_READ_SIZE", 7)  # every line cut across reads
    heard, passed = await _pumped([stream[:5], stream[5:80], stream[80:]])
    assert heard.items == [("chunk", "s1", "Hel", False),
                           ("chunk", "s1", "lo \u00e9 \U0001f600", True),
                           ("update", "s1", "plan"), ("chunk", "s1", "end", False)]
    assert passed == response


async def test_what_is_no_text_chunk_takes_the_sdks_way_and_broken_lines_go_on() -> None:
    image = _update({"sessionUpdate": "agent_message_chunk",
                     "content": {"type": "image", "data": "AAAA", "mimeType": "image/png"}})
    not_text = _update({"sessionUpdate": "agent_message_chunk",
                        "content": {"type": "text", "text": 5}})
    broken = b'{"jsonrpc":"2.0","method":"session/update","params":{"sessionId":\n'
    listed = b'["session/update"]\n'
    request = (b'{"jsonrpc":"2.0","id":9,"method":"session/update","params":{"sessionId":"s1",'
               b'"update":{"sessionUpdate":"agent_message_chunk","content":{"type":"text",'
               b'"text":"asked, not told"}}}}\n')
    invalid_utf8 = b'{"method":"session/update","x":"\xff"}\n'
    trailing = _chunk("a")[:-1] + b' {"more": 1}\n'
    last = _chunk("no newline at the end")[:-1]
    heard, passed = await _pumped([image, not_text, broken, listed, request, invalid_utf8,
                                   trailing, last])
    # The image goes through the SDK's model; a text that is no string fails its
    # validation there (logged, nothing shown); the rest is no update of ours.
    assert heard.items == [("update", "s1", "agent_message_chunk"),
                           ("chunk", "s1", "no newline at the end", False)]
    assert passed == broken + listed + request + invalid_utf8 + trailing


async def test_a_line_over_the_limit_ends_the_reading(monkeypatch: pytest.MonkeyPatch,
                                                     caplog: pytest.LogCaptureFixture) -> None:
    monkeypatch.setattr(connection, "STDOUT_LINE_LIMIT", 200)
    monkeypatch.setattr(connection, "_READ_SIZE", 64)
    heard, passed = await _pumped([_chunk("before"), b"x" * 500, b"\n", _chunk("after")])
    assert heard.items == [("chunk", "s1", "before", False)]
    assert passed == b""
    assert "a line of over 200 bytes" in caplog.text


async def test_a_giant_line_read_in_many_blocks_is_joined_once(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A line of megabytes (a file's text in a tool call's update) arrives in thousands
    of reads: its start is kept in pieces and joined once, not copied again at each read
    (that took seconds on the kernel's loop, the chat frozen meanwhile)."""
    monkeypatch.setattr(connection, "_READ_SIZE", 1024)
    copied: list[int] = []
    join = connection._joined

    def counted(pieces: list[bytes]) -> bytes:
        copied.append(sum(map(len, pieces)))
        return join(pieces)

    monkeypatch.setattr(connection, "_joined", counted)
    text = "x" * (8 * 1024 * 1024)
    line, after = _chunk(text), _chunk("after")
    heard, passed = await _pumped([line, after])
    assert heard.items == [("chunk", "s1", text, False), ("chunk", "s1", "after", False)]
    assert passed == b""
    # Joined once, its bytes copied once (with the next line where a read held both);
    # joined at each read, its 8,192 reads copied ~32 GiB.
    assert len(copied) == 1 and len(line) - 1 <= copied[0] <= len(line) + len(after)


@pytest.mark.parametrize("pieces", [["a", "b"], ["t:a", "b", "t:c", "d"], ["t:x"], []])
def test_add_text_assembles_as_the_deltas_do(pieces: list[str]) -> None:
    by_events, by_text = ResponseAssembler(), ResponseAssembler()
    for piece in pieces:
        thinking = piece.startswith("t:")
        by_events.feed(ThinkingDelta(piece) if thinking else TextDelta(piece))
        by_text.add_text(piece, thinking=thinking)
    assert by_text.snapshot() == by_events.snapshot()


async def test_chunks_written_as_one_before_them_are_read_by_their_text_alone(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """Once a text chunk's line was decoded whole, lines written the same way are read by
    their text alone: every escape, each kind and session kept apart — and a line that
    only starts the same way is decoded whole (or handed on as it came)."""
    texts = ['plain', 'a "quoted" \\ back\\slash', 'line\nbreak\ttab', '\u00e9\u4e2d',
             '\U0001f600 emoji', '}}}}', '', '"text": "x"}}', 'text']
    compact = [json.dumps({"jsonrpc": "2.0", "method": "session/update", "params": {
        "sessionId": "s1", "update": {"sessionUpdate": "agent_message_chunk",
                                      "content": {"type": "text", "text": t}}}},
        separators=(",", ":"), ensure_ascii=False).encode() + b"\n" for t in texts]
    thought = _chunk("hmm", "agent_thought_chunk")
    other_session = _update({"sessionUpdate": "agent_message_chunk",
                             "content": {"type": "text", "text": "elsewhere"}}, session="s2")
    # The text is not the last field: decoded whole, right all the same.
    annotated = _update({"sessionUpdate": "agent_message_chunk",
                         "content": {"type": "text", "text": "noted",
                                     "annotations": {"priority": 1}}})
    prefix = compact[0][:compact[0].index(b'"plain"') + 1]
    broken = prefix + b'unterminated}}}}\n'  # starts the same, is no JSON
    escaped = [_chunk("\U0001f600 \u00e9 first"), _chunk("\U0001f600 \u00e9 again")]  # \\u…
    decoded: list[str] = []
    whole = connection._decode_at

    def decode(text: str, at: int) -> Any:
        decoded.append(text)
        return whole(text, at)

    monkeypatch.setattr(connection, "_decode_at", decode)
    heard, rest = await _pumped([*compact, thought, *compact[:2], other_session, annotated,
                                 broken, compact[1], *escaped])
    assert heard.items == [
        *[("chunk", "s1", t, False) for t in texts], ("chunk", "s1", "hmm", True),
        *[("chunk", "s1", t, False) for t in texts[:2]], ("chunk", "s2", "elsewhere", False),
        ("chunk", "s1", "noted", False), ("chunk", "s1", texts[1], False),
        ("chunk", "s1", "\U0001f600 \u00e9 first", False),
        ("chunk", "s1", "\U0001f600 \u00e9 again", False)]
    assert rest == broken
    # Decoded whole: the first of each form (the compact answer, the thought, the other
    # session's, the spaced one), the one whose text is not last, and the broken line.
    assert [line.encode() for line in decoded] == [
        compact[0], thought, other_session, annotated, broken, escaped[0]]
