"""The chat input's two requests about ``@`` mentions, answered for a live session: the
popup's ``mention_candidates {prefix}`` and a chip's ``mention_preview {mention}`` (the
exact block the model will read, or why the mention is unknown). The rules are the
runtime's (``neta_nb.runtime.mentions.mentions``, ``mention_candidates``); this is the wire.
"""

from __future__ import annotations

from collections.abc import Callable

from ....runtime.mentions.mention_candidates import mention_candidates
from ....runtime.mentions.mentions import MentionPreview, preview_mention
from ....runtime.session import AgentSession
from ...base import RequestError, Requests, handles
from ..wire import MentionCandidatesReply, MentionCandidatesRequest, MentionPreviewRequest

__all__ = ["MentionCandidatesReply", "MentionCandidatesRequest", "MentionPreview",
           "MentionPreviewRequest", "MentionRequests", "candidates_for", "preview_for"]

_MAX_TYPED = 1_000

def candidates_for(session: AgentSession,
                   request: MentionCandidatesRequest) -> MentionCandidatesReply:
    prefix = request.get("prefix")
    if not isinstance(prefix, str) or len(prefix) > _MAX_TYPED:
        raise RequestError("mention_candidates needs a 'prefix' string")
    page = session.notebook_page
    return {"candidates": mention_candidates(prefix, namespace=session.namespace,
                                             working_dir=session.working_dir,
                                             page=page is not None and page.available)}


def preview_for(session: AgentSession, request: MentionPreviewRequest, lang: str) -> MentionPreview:
    mention = request.get("mention")
    if not isinstance(mention, str) or len(mention) > _MAX_TYPED:
        raise RequestError("mention_preview needs a 'mention' string")
    try:
        return preview_mention(mention, namespace=session.namespace,
                               working_dir=session.working_dir,
                               capabilities=session.provider.info.capabilities,
                               model=session.provider.model_id, lang=lang)
    except ValueError as exc:
        raise RequestError(str(exc)) from exc


class MentionRequests(Requests):
    """A chat view's two mention requests, for the session it shows (``session()``:
    raises :class:`RequestError` when it shows none) in its language (``lang()``)."""

    def __init__(self, session: Callable[[], AgentSession], lang: Callable[[], str]) -> None:
        self._session = session
        self._lang = lang

    @handles("mention_candidates")
    def candidates(self, request: MentionCandidatesRequest) -> MentionCandidatesReply:
        """What an ``@`` being typed can mention (the input's popup)."""
        return candidates_for(self._session(), request)

    @handles("mention_preview")
    def preview(self, request: MentionPreviewRequest) -> MentionPreview:
        """What the model will read for one mention, or why it is unknown (a chip)."""
        return preview_for(self._session(), request, self._lang())
