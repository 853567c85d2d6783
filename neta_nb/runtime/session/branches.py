"""Branches of a conversation: :func:`fork_end` from any message into a new session,
:func:`rewind` to just before a message, and retry and
edit, which are a rewind and a new turn. Nothing is lost: what a rewind
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
from collections.abc import Callable, Sequence
from typing import Any

from ...messages import MentionPart, Message, valid_conversation
from ...store.session_store import CompactedView, CompactionRecord
from ...thinking import THINK_LEVELS, ThinkLevel
from ..mentions.mentions import is_from_mention
from .deps import TurnDeps
from .runner import TurnRunner, next_think_level
from .spending import Spend
from .state import SessionState

__all__ = ["ask_again", "check_free", "copy_into", "fork_end", "level_at", "message_index",
           "paid_after_rewind", "prompt_of", "restore", "rewind"]


def message_index(state: SessionState, message_id: str) -> int:
    """Where ``message_id`` is in the session's history (``KeyError`` if nowhere)."""
    if not isinstance(message_id, str):
        raise TypeError(f"a message id is a str (Message.id), not {message_id!r}")
    index = state.history.index_of(message_id)
    if index is None:
        raise KeyError(f"session {state.id!r} has no message {message_id!r}")
    return index


def check_free(state: SessionState, action: str) -> None:
    """Branching waits for the session: refused while a turn runs or it compacts."""
    if state.turn is not None:
        raise RuntimeError(f"session {state.id!r} is running a turn: stop it "
                           f"(session.cancel()) before you {action}")
    if state.compacting:
        raise RuntimeError(f"session {state.id!r} is compacting its history: {action} "
                           f"when compact() has finished")


def fork_end(state: SessionState, message_id: str) -> list[Message]:
    """What a fork at ``message_id`` holds: the history up to and including it — and the
    results of its tool calls, when it made some (or is one of those results): a call is
    never left without its result."""
    history = state.history.messages
    end = message_index(state, message_id) + 1
    while end < len(history) and history[end].role == "tool":
        end += 1  # the results of the calls it made (or of its siblings)
    return history[:end]


def copy_into(branch: SessionState, source: SessionState, deps: TurnDeps,
              messages: Sequence[Message]) -> None:
    """Fill the new session ``branch`` (``deps``: its own) with copies of ``messages`` of
    ``source`` and the state they give, and store it as a branch."""
    history = branch.history
    for message in messages:
        history.append(message.model_copy(deep=True))
    # The compactions of what it holds come along with their view (the summaries, then
    # what they kept) when the latest compaction is among them; an earlier one's view is
    # gone (a later summary replaced it): the model is then sent the messages themselves.
    compactions = _compactions_before(source, len(messages))
    stored: CompactedView | None = None
    if compactions and len(compactions) == len(source.compactions):
        copies = {message.id: message for message in history.messages}
        ours = {message.id for message in source.history.messages}
        view = [copies[m.id] if m.id in copies else m.model_copy(deep=True)
                for m in source.history.view if m.id in copies or m.id not in ours]
        kept = next((m.id for m in view if m.id in copies), None)
        if kept is not None:
            history.set_view(view)
            branch.compactions = list(compactions)
            stored = CompactedView(prefix=[m for m in view if m.id not in copies],
                                   kept_from=kept, compactions=branch.compactions)
    # What the model is sent is valid whatever was copied (as after a rewind, or a resume
    # of a damaged history): a call without its result gets an error result.
    history.set_view(valid_conversation(history.view))
    restore(branch, deps)
    branch.save_record(running=False, owner=None, owner_died=False)
    if stored is not None:
        branch.saved.view(stored)


def rewind(state: SessionState, deps: TurnDeps, index: int) -> None:
    """Go back to just before the message at ``index`` (see ``AgentSession.rewind``)."""
    history = state.history.messages
    messages, dropped = history[:index], history[index:]
    level = level_at(history[: index + 1], state)
    compactions = _compactions_before(state, index)
    # A compaction of what stays keeps its view (less what is dropped); one of what is
    # dropped, or none, leaves the model the messages themselves.
    compacted = bool(compactions) and len(compactions) == len(state.compactions)
    # What the dropped turns cost was paid: it stays counted, apart from the history's.
    state.spending.set_aside(dropped, _compactions_from(state, index))
    state.saved.forget_messages([m.id for m in dropped], keep_view=compacted)
    gone = {m.id for m in dropped}
    view = [m for m in state.history.view if m.id not in gone] if compacted else messages
    state.history.load(messages, valid_conversation([m for m in view if m.parts]))
    state.compactions = compactions
    state.think_level = level
    restore(state, deps)
    state.save_record(todo_summary=(state.todo.summary().model_dump()
                                    if state.todo.has_items() else None),
                      think_level=level)
    for listener in list(state.rewind_listeners):
        listener()


def restore(state: SessionState, deps: TurnDeps) -> None:
    """The plan, figures and spend that the session's messages give, in place of what
    the session had counted: its sub-agents' runs of the latest turn are forgotten too
    (those kept are counted from their ``delegate`` calls' records, with the rest)."""
    deps.crew.begin_turn()
    state.restore_figures(deps.workspace.provider.price)


def level_at(messages: Sequence[Message], state: SessionState) -> ThinkLevel | None:
    """The thinking level the last prompt of ``messages`` ran at; without one recorded
    (stored before levels were), the session's setting."""
    for message in reversed(messages):
        level = message.metadata.think_level if message.role == "user" else None
        if level in THINK_LEVELS:
            return level
    return state.think_level


def prompt_of(state: SessionState, message_id: str | None) -> Message:
    """The prompt at or before ``message_id`` (the last one without it)."""
    history = state.history.messages
    upto = len(history) if message_id is None else message_index(state, message_id) + 1
    for message in reversed(history[:upto]):
        if message.role == "user" and not message.metadata.compacted:
            return message
    raise ValueError(f"session {state.id!r} has no prompt to ask again there")


def ask_again(state: SessionState, runner: TurnRunner, prompt: Message, text: str | None,
              rewind_to: Callable[[str], object]) -> asyncio.Task[Any]:
    """Rewind to ``prompt`` (``rewind_to``: the session's rewind) and run a turn of
    ``text`` (``None``: the prompt's own) with its attachments (its parts past the text).
    Asked again, its ``@`` mentions send what they did then; an edited text's are
    resolved anew. Everything that can refuse the turn — a running turn, the budget as it
    will be after the rewind, a mention, no event loop — is checked first: a refusal
    leaves the session, its store and its views as they were."""
    text = prompt.text if text is None else text
    index = message_index(state, prompt.id)
    kept = [part for part in prompt.parts[1:] if part.type != "text"]
    working_dir = runner.deps.workspace.working_dir
    if text != prompt.text:
        kept = [p for p in kept if not is_from_mention(p, prompt.text, working_dir)]
    message = runner.ready(text, None, [p for p in kept if isinstance(p, MentionPart)]
                           if text == prompt.text else None,
                           paid=paid_after_rewind(state, index))
    message.parts.extend(part.model_copy(deep=True) for part in kept
                         if not isinstance(part, MentionPart))
    asyncio.get_running_loop()  # a turn needs one (RuntimeError without), before the rewind
    rewind_to(prompt.id)
    # The level the prompt ran at, which the rewind brought back.
    message.metadata.think_level = next_think_level(state, runner.deps)
    return runner.start(message)


def paid_after_rewind(state: SessionState, index: int) -> tuple[Spend, Spend]:
    """What the session will have paid once rewound to ``index``, and what of it for
    turns gone back over: its messages before ``index`` are its history, those from it
    on join what it had set aside (their calls, summaries and sub-agent runs)."""
    history = state.history.messages
    return state.spending.after_rewind(history[:index], _compactions_before(state, index),
                                       history[index:], _compactions_from(state, index))


def _compactions_before(state: SessionState, index: int) -> list[CompactionRecord]:
    """The compactions of the messages before ``index`` (what a rewind there keeps)."""
    return [c for c in state.compactions if c.after_message <= index]


def _compactions_from(state: SessionState, index: int) -> list[CompactionRecord]:
    """The compactions a rewind to ``index`` drops (the others')."""
    return [c for c in state.compactions if c.after_message > index]
