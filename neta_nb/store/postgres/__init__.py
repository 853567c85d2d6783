"""The PostgreSQL database of a :class:`~neta_nb.store.SessionStore`: a connection pool
(:mod:`.postgres`), its rows (:mod:`.postgres_rows`), advisory-lock turn claims
(:mod:`.postgres_claims`), LISTEN/NOTIFY (:mod:`.postgres_notify`) and answers bounded in
time (:mod:`.postgres_answers`)."""
