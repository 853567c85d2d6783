"""Large binaries of stored messages (attached images and PDFs, figures on tool cards) as
files beside the database: ``<db>.blobs/<sha256>``.

A message row keeps each such item's ``sha256`` instead of its base64 text, so rows stay
small (the session list and a resume read rows, not pictures) and an image saved with
every card update is written once. Small items stay inline. Reading a message back puts
the bytes in again (checked against the digest); an item whose file has gone missing or
no longer matches keeps ``data = None`` — the chat
shows a placeholder and the model reads that the file is missing — instead of failing
the resume.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import logging
import os
import re
import tempfile
import threading
from collections.abc import Iterable
from pathlib import Path

from ..messages import Message

__all__ = ["INLINE_LIMIT", "MAX_BLOB_BYTES", "BlobFiles"]

log = logging.getLogger(__name__)

INLINE_LIMIT = 8 * 1024
"""Base64 characters an item may have and still be kept in its row."""
MAX_BLOB_BYTES = 32 * 1024 * 1024
"""Larger items are not stored (a placeholder comes back); attachments and display items
are bounded well below this, so only a hand-built message meets it."""
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_REFERENCE = re.compile(r'"sha256":"([0-9a-f]{64})"')


class BlobFiles:
    """The blob folder of one store; ``directory=None`` (an in-memory store) keeps
    everything inline."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._known: dict[str, str] = {}  # base64 text → its sha256, already on disk
        self._lock = threading.Lock()

    def encode(self, message: Message) -> str:
        """``message`` as the JSON of its row, large binaries moved to files."""
        if self.directory is None or not any(
                item.data is not None and len(item.data) > INLINE_LIMIT
                for item in message.binaries()):
            return message.model_dump_json()
        stored = message.model_copy(deep=True)  # the live message keeps its bytes
        for item in stored.binaries():
            if item.data is None or len(item.data) <= INLINE_LIMIT:
                continue
            try:
                item.sha256 = self._write(item.data)
            except OSError as error:
                # The folder is unwritable or its disk full: the row keeps the bytes
                # (larger, but nothing is lost, and the turn goes on). This runs on the
                # session's loop, where an exception would end the turn.
                log.warning("blob folder %s: %s; message %s keeps its bytes inline",
                            self.directory, error, message.id)
                continue
            item.data = None
        return stored.model_dump_json()

    def restore(self, message: Message) -> Message:
        """Put the bytes of stored items back (in place); missing files leave ``None``."""
        if self.directory is None:
            return message
        for item in message.binaries():
            if item.data is None and item.sha256 and _SHA256.match(item.sha256):
                try:
                    raw = (self.directory / item.sha256).read_bytes()
                except OSError:
                    log.warning("blob %s of message %s is missing", item.sha256, message.id)
                    continue
                if hashlib.sha256(raw).hexdigest() != item.sha256:
                    # Replaced or damaged on disk: shown as missing rather than showing
                    # (and sending to the model) bytes the message never had.
                    log.warning("blob %s of message %s does not match its digest",
                                item.sha256, message.id)
                    continue
                item.data = base64.b64encode(raw).decode("ascii")
        return message

    @staticmethod
    def referenced(rows: Iterable[str | bytes]) -> set[str]:
        """The blob digests the stored rows name."""
        found: set[str] = set()
        for row in rows:
            text = row.decode("utf-8", "replace") if isinstance(row, bytes) else row
            found.update(_REFERENCE.findall(text))
        return found

    def remove(self, digests: Iterable[str]) -> None:
        """Delete these blob files (those no row names any more)."""
        gone = set(digests)
        if self.directory is None or not gone:
            return
        with self._lock:
            self._known = {k: v for k, v in self._known.items() if v not in gone}
        for digest in gone:
            if _SHA256.match(digest):
                (self.directory / digest).unlink(missing_ok=True)

    def _write(self, data: str) -> str | None:
        with self._lock:
            known = self._known.get(data)
        if known is not None:
            return known
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        if len(raw) > MAX_BLOB_BYTES:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        assert self.directory is not None
        target = self.directory / digest
        if not target.exists():
            self.directory.mkdir(parents=True, exist_ok=True)
            # Written under a temporary name, then renamed: a reader never sees half a file.
            fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".incoming-")
            try:
                with os.fdopen(fd, "wb") as file:
                    file.write(raw)
                os.replace(temporary, target)
            except OSError:
                Path(temporary).unlink(missing_ok=True)
                raise
        with self._lock:
            if len(self._known) > 512:
                self._known.clear()
            self._known[data] = digest
        return digest
