"""Where sessions are kept: the SQLite store, the writer thread that stores a session's
changes in order, the blobs beside the database, and the claims that keep two kernels
from running one session's turn."""

from .sqlite import CompactedView, CompactionRecord, SessionRecord, SessionStore

__all__ = ["CompactedView", "CompactionRecord", "SessionRecord", "SessionStore"]
