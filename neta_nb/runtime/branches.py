"""Branches of a conversation: :meth:`~Branches.fork` from any message into a new session,
:meth:`~Branches.rewind` to just before a message, and :meth:`~Branches.retry` and
:meth:`~Branches.edit`, which are a rewind and a new turn. Nothing is lost: what a rewind
replaces stays in the store as a branch (a session that can be reopened), and the session
the model continues holds exactly the chosen branch.

Everything a session shows besides its messages follows from them, so a branch is its
messages and the state they give: the plan is the latest ``todo`` result among them, the
skill and tool cards are their metadata, the token, context and cost figures their usage
(each call counted once), and the thinking level the one its last prompt ran at. What a
session paid for the turns a rewind drops stays paid: it leaves ``cost_usd`` but is kept
beside it (``spent_usd``, the stored record) and counts against the session's budget,
each call once; a fork is a new session and counts only the history it copies. A retry
or an edit checks all that can refuse its turn before it rewinds: a refused one changes
nothing. A fork never writes to what it is forked from. A branch, and a session rewound
to before a compaction, is uncompacted (the model is sent its messages; it is compacted
again when it grows past the agent's threshold); a branch holds no sub-agent sessions of
its own (the cards of the delegations it copied show their runs as stored).
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from ..events import TurnUsage
from ..messages import MentionPart, Message, valid_conversation
from ..store.session_store import CompactedView, CompactionRecord
from ..thinking import THINK_LEVELS, ThinkLevel
from ..todo import TodoStore
from .budget import Spend
from .mentions import is_from_mention
from .usage_meter import UsageMeter

if TYPE_CHECKING:
    from .session import AgentSession

__all__ = ["Branches", "message_index"]


def message_index(session: AgentSession, message_id: str) -> int:
    """Where ``message_id`` is in the session's history (``KeyError`` if nowhere)."""
    if not isinstance(message_id, str):
        raise TypeError(f"a message id is a str (Message.id), not {message_id!r}")
    index = session._history.index_of(message_id)
    if index is None:
        raise KeyError(f"session {session.id!r} has no message {message_id!r}")
    return index


class Branches:
    """The branching commands of :class:`~neta_nb.runtime.session.AgentSession` (see the
    module note)."""

    branch_of: str | None
    branch_at: str | None

    def fork(self, message_id: str) -> AgentSession:
        """A new session whose history is this one's up to and including ``message_id``
        — and the results of its tool calls, when it made some (or is one of those
        results): a call is never left without its result — with the plan, cards, token
        and cost figures and thinking level as they were there; stored as a branch of
        this one (the session list shows it so), which is left exactly as it was.
        Refused while a turn runs."""
        session = self._self("fork")
        history = session._history.messages
        end = message_index(session, message_id) + 1
        while end < len(history) and history[end].role == "tool":
            end += 1  # the results of the calls it made (or of its siblings)
        return _branch(session, history[:end], branch_at=message_id)

    def rewind(self, message_id: str) -> AgentSession | None:
        """Go back to just before ``message_id``: the history (what the model is sent
        next), plan, cards, token and cost figures and thinking level become what they
        were there. What it replaces is kept as a branch — a session holding the whole
        history as it was, listed as a branch of this one — which is returned (``None``
        without a store: nothing is kept). Refused while a turn runs."""
        session = self._self("rewind")
        index = message_index(session, message_id)
        history = session._history.messages
        kept = (_branch(session, history, branch_at=message_id)
                if session.store is not None else None)
        messages, dropped = history[:index], history[index:]
        level = _level_at(history[: index + 1], session)
        compactions = _compactions_before(session, index)
        # A compaction of what stays keeps its view (less what is dropped); one of what is
        # dropped, or none, leaves the model the messages themselves.
        compacted = bool(compactions) and len(compactions) == len(session.compactions)
        # What the dropped turns cost was paid: it stays counted, apart from the history's.
        session._meter.set_aside(dropped, _compactions_from(session, index))
        session._saved.forget_messages([m.id for m in dropped], keep_view=compacted)
        gone = {m.id for m in dropped}
        view = [m for m in session._history.view if m.id not in gone] if compacted else messages
        session._history.load(messages, valid_conversation([m for m in view if m.parts]))
        session.compactions = compactions
        session._think_level = level
        _restore_state(session)
        session._save_record(todo_summary=(session.todo.summary().model_dump()
                                           if session.todo.has_items() else None),
                             think_level=level)
        for listener in list(session._rewind_listeners):
            listener()
        return kept

    def retry(self, message_id: str | None = None) -> asyncio.Task[Any]:
        """Ask a prompt again: the last one, or the one ``message_id`` (an answer, a tool
        result…) answered. A rewind to it (what followed kept as a branch) and a turn with
        the same prompt and attachments. Returns the turn's task."""
        session = self._self("retry")
        return _again(session, _prompt_of(session, message_id), None)

    def edit(self, message_id: str, text: str) -> asyncio.Task[Any]:
        """Send ``text`` in place of the prompt ``message_id``: a rewind to it (what
        followed kept as a branch) and a turn with the new text and the prompt's
        attachments. Returns the turn's task."""
        session = self._self("edit")
        prompt = session.messages[message_index(session, message_id)]
        if prompt.role != "user":
            raise ValueError(f"message {message_id!r} is not a prompt: only what the user "
                             f"sent can be edited")
        return _again(session, prompt, text)

    def on_rewind(self, callback: Callable[[], None]) -> Callable[[], None]:
        """Call ``callback()`` after each rewind (a view redraws from the session);
        returns a function that stops it."""
        session = self._self(None)
        session._rewind_listeners.append(callback)
        return lambda: (session._rewind_listeners.remove(callback)
                        if callback in session._rewind_listeners else None)

    def _self(self, action: str | None) -> AgentSession:
        from .session import AgentSession

        assert isinstance(self, AgentSession)
        if action is not None and self.running:
            raise RuntimeError(f"session {self.id!r} is running a turn: stop it "
                               f"(session.cancel()) before you {action}")
        if action is not None and self._compacting:
            raise RuntimeError(f"session {self.id!r} is compacting its history: {action} "
                               f"when compact() has finished")
        return self


def _branch(session: AgentSession, messages: Sequence[Message], *,
            branch_at: str) -> AgentSession:
    """A new session of ``messages`` (copies), stored as a branch of ``session``."""
    branch = type(session)(session.agent, session.catalog, session.store,
                           think_level=_level_at(messages, session), provider=session.provider,
                           namespace=session.namespace, working_dir=session.working_dir,
                           approval_policy=session.approval_policy,
                           branch_of=(session.id, branch_at))
    for message in messages:
        branch._history.append(message.model_copy(deep=True))
    history = branch._history
    # The compactions of what it holds come along with their view (the summaries, then
    # what they kept) when the latest compaction is among them; an earlier one's view is
    # gone (a later summary replaced it): the model is then sent the messages themselves.
    compactions = _compactions_before(session, len(messages))
    stored: CompactedView | None = None
    if compactions and len(compactions) == len(session.compactions):
        copies = {message.id: message for message in history.messages}
        ours = {message.id for message in session._history.messages}
        view = [copies[m.id] if m.id in copies else m.model_copy(deep=True)
                for m in session._history.view if m.id in copies or m.id not in ours]
        kept = next((m.id for m in view if m.id in copies), None)
        if kept is not None:
            history.set_view(view)
            branch.compactions = list(compactions)
            stored = CompactedView(prefix=[m for m in view if m.id not in copies],
                                   kept_from=kept, compactions=branch.compactions)
    # What the model is sent is valid whatever was copied (as after a rewind, or a resume
    # of a damaged history): a call without its result gets an error result.
    history.set_view(valid_conversation(history.view))
    _restore_state(branch)
    branch._save_record(running=False, owner=None, owner_died=False)
    if stored is not None:
        branch._saved.view(stored)
    return branch


def _restore_state(session: AgentSession) -> None:
    """The plan, figures and spend that the session's messages give, in place of what
    the session had counted: its sub-agents' runs of the latest turn are forgotten too
    (those kept are counted from their ``delegate`` calls' records, with the rest)."""
    session.todo = TodoStore.hydrate_from_history(session.messages)
    session._crew.begin_turn()
    session._meter.price = session.provider.price
    session._meter.restore(session.messages, session.compactions)


def _level_at(messages: Sequence[Message], session: AgentSession) -> ThinkLevel | None:
    """The thinking level the last prompt of ``messages`` ran at; without one recorded
    (stored before levels were), the session's setting."""
    for message in reversed(messages):
        level = message.metadata.think_level if message.role == "user" else None
        if level in THINK_LEVELS:
            return level
    return session._think_level


def _prompt_of(session: AgentSession, message_id: str | None) -> Message:
    """The prompt at or before ``message_id`` (the last one without it)."""
    history = session._history.messages
    upto = len(history) if message_id is None else message_index(session, message_id) + 1
    for message in reversed(history[:upto]):
        if message.role == "user" and not message.metadata.compacted:
            return message
    raise ValueError(f"session {session.id!r} has no prompt to ask again there")


def _compactions_before(session: AgentSession, index: int) -> list[CompactionRecord]:
    """The compactions of the messages before ``index`` (what a rewind there keeps)."""
    return [c for c in session.compactions if c.after_message <= index]


def _compactions_from(session: AgentSession, index: int) -> list[CompactionRecord]:
    """The compactions a rewind to ``index`` drops (the others')."""
    return [c for c in session.compactions if c.after_message > index]


def _paid_after_rewind(session: AgentSession, index: int) -> tuple[Spend, Spend]:
    """What the session will have paid once rewound to ``index``, and what of it for
    turns gone back over: its messages before ``index`` are its history, those from it
    on join what it had set aside (their calls, summaries and sub-agent runs)."""
    history = session._history.messages
    meter = UsageMeter(session.context.max_tokens)
    meter.price = session.provider.price
    meter.rewound = dataclasses.replace(session._meter.rewound)
    meter.set_aside(history[index:], _compactions_from(session, index))
    meter.restore(history[:index], _compactions_before(session, index))
    return meter.paid(TurnUsage()), meter.rewound


def _again(session: AgentSession, prompt: Message, text: str | None) -> asyncio.Task[Any]:
    """Rewind to ``prompt`` and run a turn of ``text`` (``None``: the prompt's own) with
    its attachments (its parts past the text). Asked again, its ``@`` mentions send what
    they did then; an edited text's are resolved anew. Everything that can refuse the turn
    — a running turn, the budget as it will be after the rewind, a mention, no event
    loop — is checked first: a refusal leaves the session, its store and its views as
    they were."""
    text = prompt.text if text is None else text
    index = message_index(session, prompt.id)
    kept = [part for part in prompt.parts[1:] if part.type != "text"]
    if text != prompt.text:
        kept = [p for p in kept if not is_from_mention(p, prompt.text, session.working_dir)]
    message = session._ready(text, None, [p for p in kept if isinstance(p, MentionPart)]
                             if text == prompt.text else None,
                             paid=_paid_after_rewind(session, index))
    message.parts.extend(part.model_copy(deep=True) for part in kept
                         if not isinstance(part, MentionPart))
    asyncio.get_running_loop()  # a turn needs one (RuntimeError without), before the rewind
    session.rewind(prompt.id)
    # The level the prompt ran at, which the rewind brought back.
    message.metadata.think_level = session.think_level
    return session._start_turn(message)
