"""``ThinkingBlock``: the model's thinking (seed 002 §7), streamed live, folded when done.

Streaming never syncs the growing string: :meth:`append` batches deltas (numbered
``append`` messages, text alone at most every ``TEXT_WAIT`` seconds unless a
batch's worth is pending, see :mod:`._streaming`) and the
``text`` trait is synced once, when the stream ends. A view that opens mid-stream or misses
a batch asks for a ``snapshot`` and continues from it; a saved notebook keeps the final
text.
"""

from __future__ import annotations

import html
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

import traitlets

from ...events import ThinkingDeltaEvent, ThinkingDoneEvent
from ...labels import t
from ..base import NetaWidget, handles
from ..streaming import FLUSH_INTERVAL, DeltaBatcher
from .wire import AppendMessage, StreamSnapshot

__all__ = ["AppendMessage", "StreamSnapshot", "ThinkingBlock"]

class ThinkingBlock(NetaWidget):
    """Thinking text. Live: ``block.append(delta)`` … ``block.done()``; history:
    ``ThinkingBlock(text=...)`` (folded)."""

    _component = traitlets.Unicode("thinking-block").tag(sync=True)
    _static_traits = ("text", "streaming", "lang")
    text = traitlets.Unicode("", help="The whole thinking text (markdown).").tag(sync=True)
    streaming = traitlets.Bool(False).tag(sync=True)
    collapsed = traitlets.Bool(True, help="Folded; opens while streaming.").tag(sync=True)
    _seq = traitlets.Int(0, help="Number of the last streamed batch in `text`.").tag(sync=True)

    def __init__(self, text: str = "", *, flush_interval: float = FLUSH_INTERVAL,
                 **kwargs: Any) -> None:
        super().__init__(text=text, **kwargs)
        self._quiet = False
        self._batcher = DeltaBatcher(self._send_batch, interval=flush_interval)

    @contextmanager
    def _without_sync(self) -> Iterator[None]:
        self._quiet = True
        try:
            yield
        finally:
            self._quiet = False

    def _should_send_property(self, key: str, value: Any) -> bool:
        # While streaming, text and _seq travel as batches, not as whole-state syncs.
        if self._quiet or (self.streaming and key in ("text", "_seq")):
            return False
        return bool(super()._should_send_property(key, value))

    def start(self) -> None:
        """Begin streaming: open the block, show the cursor."""
        if self.streaming:
            return
        with self.hold_sync():
            self._seq = self._batcher.seq
            self.streaming = True
            self.collapsed = False

    def append(self, delta: str) -> None:
        """Add streamed text (starts streaming if needed). Sent in batches."""
        if not delta:
            return
        self.start()
        self.text += delta
        self._batcher.push(delta)

    def flush(self) -> None:
        """Send pending text now."""
        self._batcher.flush()

    def done(self) -> None:
        """End the stream: send what is pending, fold, and sync the final text once."""
        self._batcher.flush()
        if not self.streaming:
            return
        with self._without_sync():
            self._seq = self._batcher.seq
            self.streaming = False
            self.collapsed = True
        self.send_state(("text", "_seq", "streaming", "collapsed"))

    def apply(self, event: ThinkingDeltaEvent | ThinkingDoneEvent) -> None:
        if isinstance(event, ThinkingDeltaEvent):
            self.append(event.text)
        else:
            self.done()

    def _send_batch(self, seq: int, text: str) -> None:
        self._seq = seq  # not synced while streaming (see _should_send_property)
        message: AppendMessage = {"kind": "append", "seq": seq, "text": text}
        self.send(message)

    @handles("snapshot")
    def _snapshot(self, _request: Mapping[str, object]) -> StreamSnapshot:
        # The text as of the last batch sent: pending deltas arrive in the next batch.
        pending = len(self._batcher.pending)
        text = self.text[: len(self.text) - pending] if pending else self.text
        return {"text": text, "seq": self._batcher.seq}

    def __repr__(self) -> str:
        state = "streaming" if self.streaming else "done"
        return f"ThinkingBlock({state}, {len(self.text)} chars)"

    def _title(self) -> str:
        return t("thinking_streaming" if self.streaming else "thinking", self.lang)

    def _fallback_text(self) -> str:
        return f"{self._title()}\n{self.text}" if self.text else self._title()

    def _fallback_html(self) -> str:
        summary = html.escape(self._title())
        body = html.escape(self.text)
        return (f'<details style="border:1px dashed #afb8c1;border-radius:8px;padding:6px 12px;'
                f'margin:4px 0;font-family:system-ui,sans-serif;font-size:12px;color:#57606a">'
                f'<summary style="cursor:pointer">{summary}</summary>'
                f'<div style="white-space:pre-wrap;margin-top:4px">{body}</div></details>')

