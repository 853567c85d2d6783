"""The SQLite database of a :class:`~neta_nb.store.SessionStore`: a file (:mod:`.sqlite`),
its rows (:mod:`.rows`) and the turn claims that keep two processes off one session
(:mod:`.turn_claims`, file locks)."""
