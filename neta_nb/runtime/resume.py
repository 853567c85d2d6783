"""The resume names of earlier releases, where they were: they live in
:mod:`neta_nb.runtime.session.resume`."""

from .session.resume import SessionNotOwnedError, check_owned, resume_session

__all__ = ["SessionNotOwnedError", "check_owned", "resume_session"]
