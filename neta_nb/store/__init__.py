"""Where sessions are kept: :class:`SessionStore` on SQLite (a file per user) or on
PostgreSQL (a team's server), the writer thread that stores a session's changes in
order, the blobs, and the claims that keep two kernels from running one session's turn."""

from .session_store import CompactedView, CompactionRecord, SessionRecord, SessionStore

__all__ = ["CompactedView", "CompactionRecord", "SessionRecord", "SessionStore"]
