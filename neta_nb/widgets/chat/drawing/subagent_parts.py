"""A sub-agent's run as the parent's chat view draws it inside its ``delegate`` card:
always from a :class:`~neta_nb.runtime.projection.ConversationProjection` of the run —
the one the view's projection followed, or one made from the child session once the run
is not followed (:meth:`~neta_nb.runtime.projection.ConversationProjection.of_run`).

The parent's stream carries the child's events unchanged, wrapped in ``subagent_event``
(DESIGN §8), and the parent's projection follows each run with a projection of its own:
the child's real messages (its ``message_*`` events), its live response, plan, figures and
status. So a nested card is drawn by the same
:func:`~neta_nb.widgets.chat.drawing.render.render_message` as the top level, live and after a
resume alike. Its deltas go to the batcher with the run's ``path`` (the ids of the
``delegate`` calls from the top), so the child streams through the parent's batches, and a
view resynced from a snapshot gets the child's state inside the card.

:class:`SubagentRuns` finds the run of a card: followed, else from its stored session (the
``subagent`` record on the parent's ``delegate`` execution names it) — a resumed session,
a page reload after the turn, a second view, a session shown read-only — or from the child
session itself while the parent still holds it (a view bound after the child started).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from ....messages import Message, ToolExecution
from ....runtime.projection import ConversationProjection
from ....store.session_store import SessionStore
from ...state_bounds import SUBAGENT_BYTES, SUBAGENT_ITEMS, fit_window, task_preview
from ..wire import ChatItem, SubagentPart, SubagentPlan
from .render import keep_streamed, render_message, stored_run_part

__all__ = ["SubagentRuns", "followed_run", "run_item", "run_part"]

MAX_STORED_DEPTH = 4
"""Nested children drawn from the store (the runtime's own limit is 2 by default)."""


def followed_run(projection: ConversationProjection,
                 execution: ToolExecution) -> ConversationProjection | None:
    """The run of this ``delegate`` call, if ``projection`` followed it."""
    run = execution.subagent
    return projection.run_for(execution.id, run.session_id if run is not None else None)


def run_part(run: ConversationProjection, *, whole: bool,
             runs: SubagentRuns | None = None) -> SubagentPart:
    """The card's sub-agent part; ``whole``: with the run's transcript (a snapshot, the
    traits), else without it (the transcript streams as nested operations). ``runs``
    finds the runs of its own ``delegate`` cards (by default: the ones it followed, else
    their records)."""
    messages: list[ChatItem] | None = None
    has_older = False
    if whole:
        found = runs if runs is not None else SubagentRuns()

        def nested(execution: ToolExecution) -> SubagentPart | None:
            return found.part(run, execution)
        items = [render_message(m, i, nested) for i, m in enumerate(run.messages)
                 if run.shown(m)]
        messages, has_older = bound_transcript(items)
    plan: SubagentPlan | None = (None if run.plan is None
                                 else {"done": run.plan[0], "total": run.plan[1]})
    usage = run.usage
    return {"agent": run.agent, "task": task_preview(run.task), "status": run.status,
            "activity": run.activity, "plan": plan,
            "tokens": {"input_tokens": usage.input_tokens,
                       "output_tokens": usage.output_tokens, "api_calls": usage.api_calls},
            "messages": messages, "has_older": has_older,
            "live": run.live.snapshot() if whole and run.live is not None  # type: ignore[typeddict-item]
            else None}


def run_item(run: ConversationProjection, message_id: str,
             runs: SubagentRuns | None = None) -> ChatItem | None:
    """A message of the run as a streamed update draws it (its own followed sub-agent
    cards without their transcripts: those stream on their own)."""
    index = run.index_of(message_id)
    if index is None:
        return None
    message = run.messages[index]
    found = runs if runs is not None else SubagentRuns()

    def streamed(execution: ToolExecution) -> SubagentPart | None:
        return found.part(run, execution, whole=False)

    return keep_streamed(render_message(message, index, streamed), message,
                         run.streamed.get(message_id))


def bound_transcript(items: list[ChatItem]) -> tuple[list[ChatItem], bool]:
    """The newest items of a child's transcript that widget state keeps inside its card
    (:data:`~neta_nb.widgets.state_bounds.SUBAGENT_ITEMS`,
    :data:`~neta_nb.widgets.state_bounds.SUBAGENT_BYTES`)."""
    kept = items[-SUBAGENT_ITEMS:]
    fitted, cut = fit_window(kept, SUBAGENT_BYTES)
    return fitted, cut or len(kept) < len(items)


class SubagentRuns:
    """The runs of the ``delegate`` cards a chat draws (see the module's docstring). A
    child session's messages are read once and kept while the child is over (a running
    one is read again); with no store and no ``live``, a run not followed is its record
    alone."""

    def __init__(self, store: SessionStore | None = None,
                 live: Callable[[str], list[Message] | None] | None = None) -> None:
        self._store = store
        self._live = live
        """The messages of a child session still in memory (``None``: not one of them)."""
        self._cache: dict[str, list[Message]] = {}

    def messages(self, session_id: str, *, final: bool) -> list[Message]:
        # A view bound after a child started has no transcript of it: the child's own
        # session, while the parent holds it, is the whole truth (a store may lag behind
        # its background writes, and a session without a store has nothing else).
        live = self._live(session_id) if self._live is not None else None
        if live is not None:
            return live
        if self._store is None:
            return []
        cached = self._cache.get(session_id)
        if cached is not None:
            return cached
        try:
            messages = self._store.load_messages(session_id)
        except Exception:  # a damaged or missing child: the card shows its summary alone
            return []
        if final:
            self._cache[session_id] = messages
        return messages

    def run(self, parent: ConversationProjection,
            execution: ToolExecution) -> ConversationProjection | None:
        """The run of the ``delegate`` call ``execution`` of ``parent``: the one ``parent``
        followed, else the one its record names (``None``: no run recorded)."""
        followed = followed_run(parent, execution)
        return followed if followed is not None else self._recorded(parent, execution)

    def _recorded(self, parent: ConversationProjection,
                  execution: ToolExecution) -> ConversationProjection | None:
        record = execution.subagent
        if record is None:
            return None
        messages = (self.messages(record.session_id, final=record.status != "running")
                    if len(parent.path) < MAX_STORED_DEPTH else [])
        return ConversationProjection.of_run(record, messages,
                                             path=(*parent.path, execution.id))

    def part(self, parent: ConversationProjection, execution: ToolExecution, *,
             whole: bool = True) -> SubagentPart | None:
        """The sub-agent part of ``execution``'s card in ``parent`` (``None``: a plain
        tool card). ``whole``: with the transcript of a run ``parent`` follows (one not
        followed is drawn whole: it does not stream); a call whose run has not started
        is drawn from its arguments (one node from its first frame)."""
        followed = followed_run(parent, execution)
        if followed is not None:
            return run_part(followed, whole=whole, runs=self)
        recorded = self._recorded(parent, execution)
        if recorded is None:
            return stored_run_part(execution)
        return run_part(recorded, whole=True, runs=self)

    def transcript(self, root: ConversationProjection, path: Sequence[str],
                   message_id: str) -> list[Message]:
        """The messages of the run at ``path`` (ids of ``delegate`` calls from ``root``)
        that holds ``message_id``: a run followed (call ids repeat across turns: an
        earlier run of the same ids too), else the stored child; or ``LookupError``."""
        followed = root.run_with(path, message_id)
        if followed is not None:
            return followed.messages
        messages: Sequence[Message] = root.messages
        for run_id in path:
            execution = next((e for m in reversed(messages)
                              for e in m.metadata.tool_executions if e.id == run_id), None)
            if execution is None or execution.subagent is None:
                raise LookupError(f"no sub-agent run {run_id!r} in this session")
            messages = self.messages(execution.subagent.session_id,
                                     final=execution.subagent.status != "running")
        return list(messages)
