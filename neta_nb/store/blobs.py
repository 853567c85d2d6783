"""Large binaries of stored messages (attached images and PDFs, figures on tool cards) as
files beside the database: ``<db>.blobs/<sha256>``.

A message row keeps each such item's ``sha256`` instead of its base64 text, so rows stay
small (the session list and a resume read rows, not pictures) and an image saved with
every card update is written once. Small items stay inline. Reading a message back puts
the bytes in again (checked against the digest); an item whose file has gone missing or
no longer matches keeps ``data = None`` — the chat
shows a placeholder and the model reads that the file is missing — instead of failing
the resume.

Several store objects (another kernel, a second ``SessionStore`` in one notebook) share
the folder, and deleting a session removes the files no row names any more. So a file
is never trusted to exist because this object wrote it once: a row is written with the
files it names checked (and written again if gone) inside the row's own transaction,
and a deletion checks and unlinks inside its transaction — SQLite lets one writer at a
time hold the database, so the two never interleave across processes.
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
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path

from ..messages import Message

__all__ = ["INLINE_LIMIT", "MAX_BLOB_BYTES", "BlobFiles", "EncodedMessage"]

log = logging.getLogger(__name__)

INLINE_LIMIT = 8 * 1024
"""Base64 characters an item may have and still be kept in its row."""
MAX_BLOB_BYTES = 32 * 1024 * 1024
"""Larger items are not stored (a placeholder comes back); attachments and display items
are bounded well below this, so only a hand-built message meets it."""
_SHA256 = re.compile(r"^[0-9a-f]{64}$")
_REFERENCE = re.compile(r'"sha256":"([0-9a-f]{64})"')


@dataclass(frozen=True)
class EncodedMessage:
    """A message as the JSON of its row, and the blob files that row names (digest →
    base64 bytes, kept to write a file again if it was deleted meanwhile)."""

    json: str
    files: dict[str, str] = field(default_factory=dict)


class BlobFiles:
    """The blob folder of one store; ``directory=None`` (an in-memory store) keeps
    everything inline."""

    def __init__(self, directory: Path | None) -> None:
        self.directory = directory
        self._known: dict[str, str] = {}  # base64 text → its sha256, already on disk
        self._lock = threading.Lock()

    def encode(self, message: Message) -> EncodedMessage:
        """``message`` as the JSON of its row, large binaries moved to files. Write the
        row with :meth:`ensure` in the same transaction."""
        if not self._moves_out or not any(
                item.data is not None and len(item.data) > INLINE_LIMIT
                for item in message.binaries()):
            return EncodedMessage(message.model_dump_json())
        stored = message.model_copy(deep=True)  # the live message keeps its bytes
        files: dict[str, str] = {}
        for item in stored.binaries():
            if item.data is None or len(item.data) <= INLINE_LIMIT:
                continue
            try:
                digest = self._write(item.data)
            except OSError as error:
                # The folder is unwritable or its disk full: the row keeps the bytes
                # (larger, but nothing is lost, and the turn goes on). This runs on the
                # session's loop, where an exception would end the turn.
                log.warning("blob folder %s: %s; message %s keeps its bytes inline",
                            self.directory, error, message.id)
                continue
            item.sha256 = digest
            if digest is not None:
                files[digest] = item.data
            item.data = None
        return EncodedMessage(stored.model_dump_json(), files)

    def ensure(self, encoded: EncodedMessage) -> None:
        """Write again any file of ``encoded`` that is gone — another store object
        deleted the last session using it after :meth:`encode` wrote it. Called inside
        the transaction that writes the row, after the row (the transaction then holds
        the database's write lock, which a deletion holds while it checks and unlinks).
        An :class:`OSError` fails the transaction; the store's writer retries it."""
        if self.directory is None:
            return
        for digest, data in encoded.files.items():
            if not (self.directory / digest).exists():
                log.info("blob %s was deleted meanwhile; written again", digest)
                self._write_file(digest, base64.b64decode(data))

    @property
    def _moves_out(self) -> bool:
        return self.directory is not None

    def _read(self, digests: list[str]) -> dict[str, bytes]:
        assert self.directory is not None
        found = {}
        for digest in digests:
            try:
                found[digest] = (self.directory / digest).read_bytes()
            except OSError:
                continue
        return found

    def restore(self, message: Message) -> Message:
        """Put the bytes of stored items back (in place); missing files leave ``None``."""
        if not self._moves_out:
            return message
        wanted = [item for item in message.binaries()
                  if item.data is None and item.sha256 and _SHA256.match(item.sha256)]
        if not wanted:
            return message
        stored = self._read(sorted({item.sha256 for item in wanted if item.sha256}))
        for item in wanted:
            if item.sha256 is not None:
                raw = stored.get(item.sha256)
                if raw is None:
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
        """The digest of ``data``, its file written if it is not on disk."""
        assert self.directory is not None
        with self._lock:
            known = self._known.get(data)  # spares decoding and hashing it again
        if known is not None:
            if not (self.directory / known).exists():  # deleted by another store object
                self._write_file(known, base64.b64decode(data))
            return known
        raw = self.decoded(data)
        if raw is None:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        if not (self.directory / digest).exists():
            self._write_file(digest, raw)
        with self._lock:
            if len(self._known) > 512:
                self._known.clear()
            self._known[data] = digest
        return digest

    @staticmethod
    def decoded(data: str) -> bytes | None:
        """The bytes of a base64 item; ``None`` for text that is not base64 or too large
        to store."""
        try:
            raw = base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return None
        return raw if len(raw) <= MAX_BLOB_BYTES else None

    def _write_file(self, digest: str, raw: bytes) -> None:
        assert self.directory is not None
        self.directory.mkdir(parents=True, exist_ok=True)
        # Written under a temporary name, then renamed: a reader never sees half a file.
        fd, temporary = tempfile.mkstemp(dir=self.directory, prefix=".incoming-")
        try:
            with os.fdopen(fd, "wb") as file:
                file.write(raw)
            os.replace(temporary, self.directory / digest)
        except OSError:
            Path(temporary).unlink(missing_ok=True)
            raise


class BlobTable(BlobFiles):
    """The blobs of a database that keeps them in a table (PostgreSQL): :meth:`encode`
    only names them, the row's transaction stores them (``Rows.ensure_blobs``), and
    ``fetch(digests)`` reads them back."""

    def __init__(self, fetch: Callable[[list[str]], dict[str, bytes]]) -> None:
        super().__init__(None)
        self._fetch = fetch

    @property
    def _moves_out(self) -> bool:
        return True

    def _write(self, data: str) -> str | None:
        with self._lock:
            known = self._known.get(data)
        if known is not None:
            return known
        raw = self.decoded(data)
        if raw is None:
            return None
        digest = hashlib.sha256(raw).hexdigest()
        with self._lock:
            if len(self._known) > 512:
                self._known.clear()
            self._known[data] = digest
        return digest

    def _read(self, digests: list[str]) -> dict[str, bytes]:
        return self._fetch(digests)

    def ensure(self, encoded: EncodedMessage) -> None:
        raise NotImplementedError("a table's blobs are stored by Rows.ensure_blobs")

    def remove(self, digests: Iterable[str]) -> None:
        raise NotImplementedError("a table's blobs go with their last session's rows")
