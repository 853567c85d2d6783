"""UsageMeter: a session's token figures — tokens so far and how full the context window
is — from what the provider reported; an estimate only where nothing was reported, and
then marked as one.

Estimates (~4 characters a token) stand in where a real figure is missing, and say so
(``ContextUsage.estimate``): the context after a call whose response carried no usage
(some local servers never send it) — the whole request and answer measured — and after a
compaction until the next reported usage. Spend is never estimated: a call without usage
counts as unreported (``TurnUsage.unreported_calls``), its tokens unknown, not zero.
Internally the characters appended since the last figure (a large tool result, a new
prompt) are added too, so that the decision to compact before the next call sees a
window that a big result is about to overflow.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Literal

from ..events import ContextUsage, TurnUsage
from ..messages import Message, ToolDefinition, Usage, count_characters
from ..providers.prices import ModelPrice
from ..store.session_store import CompactionRecord

__all__ = ["UsageMeter", "add_usage", "estimate_request_tokens", "turn_figures"]

CHARS_PER_TOKEN = 4
"""The rough ratio estimates use: English text and JSON run at about 4 characters a
token with the common tokenizers."""


def estimate_request_tokens(system_prompt: str, tools: Sequence[ToolDefinition],
                            history_characters: int) -> int:
    """What a request with this prompt, these tool definitions and a history of
    ``history_characters`` (``count_characters``) puts in the window, at ~4 characters a
    token."""
    characters = len(system_prompt) + history_characters
    characters += sum(len(tool.name) + len(tool.description)
                      + len(json.dumps(tool.parameters)) for tool in tools)
    return characters // CHARS_PER_TOKEN


class UsageMeter:
    """Token and context figures of one session (what they cost is its
    :class:`~neta_nb.runtime.session.spending.Spending`'s)."""

    def __init__(self, context_window: int, *, window_assumed: bool = False) -> None:
        self._window = context_window
        self._window_assumed = window_assumed
        self.total = Usage()
        """Every model call of the session (summaries included), as reported."""
        self.context = self.context_of(0)
        """The window after the latest model call or compaction."""
        self.last_turn = TurnUsage()
        """The figures of the latest turn, as its last ``token_update`` showed them."""
        self._chars_since_usage = 0

    def set_window(self, context_window: int, *, assumed: bool) -> None:
        """The window became known (the server reported it): the figures follow."""
        self._window, self._window_assumed = context_window, assumed
        self.context = self.context_of(self.context.used_tokens, self.context.estimate)

    def context_of(self, used_tokens: int,
                   estimate: Literal["unreported", "compaction"] | None = None
                   ) -> ContextUsage:
        window = self._window
        return ContextUsage(used_tokens=used_tokens, max_tokens=window,
                            percent=round(100.0 * used_tokens / window, 1) if window else 0.0,
                            estimate=estimate, window_assumed=self._window_assumed)

    def appended(self, characters: int) -> None:
        """Prompt text was added to the model's view (a user message, a tool result)."""
        self._chars_since_usage += characters

    def record_call(self, turn: TurnUsage, usage: Usage | None, price: ModelPrice | None, *,
                    estimated_tokens: int | None = None,
                    reported_cost: float | None = None) -> TurnUsage:
        """Count one model call; returns the turn's new figures (priced at ``price``).
        ``estimated_tokens`` is what the request and its answer occupy by
        :func:`estimate_request_tokens`: the context figure when the response reported no
        usage. ``reported_cost``: what the call cost as the model's side said it (an
        outside agent's own figure), its cost when there is no ``price``."""
        if usage is None:
            # A server that reports no usage (some local ones): the call counts, its
            # tokens are unknown; the window is estimated from the text, and says so.
            if estimated_tokens is not None:
                self.context = self.context_of(estimated_tokens, "unreported")
                self._chars_since_usage = 0
            self.last_turn = _add(turn, Usage(), None, reported=False,
                                  reported_cost=reported_cost)
            return self.last_turn
        # What this call put in the window: its prompt (cached or not) plus its answer,
        # which the next call will carry.
        self.context = self.context_of(usage.context_tokens + usage.output_tokens)
        self._chars_since_usage = 0
        self.total = self.total + usage
        self.last_turn = _add(turn, usage, price, reported_cost=reported_cost)
        return self.last_turn

    def record_summary(self, turn: TurnUsage | None, usage: Usage | None,
                       price: ModelPrice | None, tokens_after: int) -> TurnUsage:
        """Count a compaction's summarising call and set the window to the compacted
        view's estimate; returns the figures the ``token_update`` shows."""
        if usage is not None:
            self.total = self.total + usage
            if turn is not None:
                turn = self.last_turn = _add(turn, usage, price)
        elif turn is not None:
            turn = self.last_turn = _add(turn, Usage(), None, reported=False)
        self.context = self.context_of(tokens_after, "compaction")
        self._chars_since_usage = 0  # the estimate covers the whole new view
        return turn if turn is not None else self.last_turn

    @property
    def expected_tokens(self) -> int:
        """What the next call will put in the window: the last real figure plus what was
        appended since (~4 characters a token)."""
        return self.context.used_tokens + self._chars_since_usage // 4

    def nearly_full(self, threshold: float | None) -> bool:
        """:attr:`expected_tokens` reaches ``threshold`` of the window."""
        window = self.context.max_tokens
        return bool(threshold is not None and window
                    and self.expected_tokens >= threshold * window)

    @property
    def full(self) -> bool:
        context = self.context
        return bool(context.max_tokens and context.used_tokens >= context.max_tokens)

    def restore(self, messages: Sequence[Message],
                compactions: Sequence[CompactionRecord]) -> None:
        """The figures ``messages`` and ``compactions`` give — a resumed session's, a
        branch's, a rewound one's — in place of any there were: every call's usage and
        the window after the latest call or, if later, the latest compaction. Nothing
        counted before is kept: each call is counted once, from the message that holds
        it."""
        self.total = _total(messages, compactions)
        self.context, self.last_turn = self.context_of(0), TurnUsage()
        last_index, last_usage = -1, None
        for index, message in enumerate(messages):
            if message.role == "assistant" and message.metadata.usage is not None:
                last_index, last_usage = index, message.metadata.usage
        latest = compactions[-1] if compactions else None
        if latest is not None and latest.after_message > last_index:
            self.context = self.context_of(latest.tokens_after, "compaction")
            since = messages[latest.after_message:]
        else:
            if last_usage is not None:
                self.context = self.context_of(last_usage.context_tokens
                                               + last_usage.output_tokens)
            since = messages[last_index + 1:]
        # What was appended after that figure (a big tool result before the kernel died)
        # still counts toward the next call's estimate.
        self._chars_since_usage = count_characters(
            [m for m in since if m.parts and (m.role != "assistant" or m.metadata.usage is None)])


def _total(messages: Sequence[Message], compactions: Sequence[CompactionRecord]) -> Usage:
    """The usage of the calls ``messages`` and ``compactions`` hold."""
    total = Usage()
    for message in messages:
        if message.metadata.usage is not None:
            total = total + message.metadata.usage
    for compaction in compactions:
        if compaction.usage is not None:
            total = total + compaction.usage
    return total


def turn_figures(messages: Sequence[Message]) -> TurnUsage:
    """The latest turn's figures as the stored messages give them — every model call
    since the last prompt, each call's cost as stored, its sub-agents' runs included:
    what the token line shows for a conversation opened from history (a stored chat, a
    resumed session) until its next turn reports its own. A call is an assistant message
    that names its model (an interrupted one too: it was made, its usage maybe unknown).
    The session's cost is not summed here: its owner keeps it (``Spending``, the stored
    record's ``cost_usd``)."""
    start = 0
    for index in range(len(messages) - 1, -1, -1):
        if messages[index].role == "user" and not messages[index].metadata.compacted:
            start = index + 1
            break
    turn = children = TurnUsage()
    for message in messages[start:]:
        meta = message.metadata
        if message.role != "assistant" or meta.compacted or (
                meta.model is None and meta.usage is None):
            continue
        call = _add(TurnUsage(), meta.usage or Usage(), None, reported=meta.usage is not None)
        turn = add_usage(turn, call.model_copy(update={"cost_usd": meta.cost_usd}))
        for execution in meta.tool_executions:
            run = execution.subagent
            if run is not None and run.api_calls:
                children = add_usage(children, TurnUsage(
                    input_tokens=run.input_tokens, output_tokens=run.output_tokens,
                    total_tokens=run.input_tokens + run.output_tokens,
                    api_calls=run.api_calls, cost_usd=run.cost_usd))
    if children.api_calls:
        turn = add_usage(turn, children, second_is_children=True)
    return turn.model_copy(update={"cost_split": turn.cost_split or None})


def add_usage(first: TurnUsage, second: TurnUsage, *,
              second_is_children: bool = False) -> TurnUsage:
    """Two turn figures added up (children's, or a parent's own calls and its children's:
    ``second_is_children``, whose cost then shows as ``subagents`` in the split). The
    cost is unknown once either side's is."""
    calls = first.api_calls + second.api_calls
    known = all(side.api_calls == 0 or side.cost_usd is not None for side in (first, second))
    cost = split = None
    if known and calls:
        cost = (first.cost_usd or 0.0) + (second.cost_usd or 0.0)
        split = dict(first.cost_split or {})
        if second_is_children:
            split["subagents"] = split.get("subagents", 0.0) + (second.cost_usd or 0.0)
        else:
            for kind, usd in (second.cost_split or {}).items():
                split[kind] = split.get(kind, 0.0) + usd
    return TurnUsage(input_tokens=first.input_tokens + second.input_tokens,
                     output_tokens=first.output_tokens + second.output_tokens,
                     total_tokens=first.total_tokens + second.total_tokens,
                     api_calls=calls,
                     unreported_calls=first.unreported_calls + second.unreported_calls,
                     cost_usd=cost, cost_split=split)


def _add(current: TurnUsage, usage: Usage, price: ModelPrice | None, *,
         reported: bool = True, reported_cost: float | None = None) -> TurnUsage:
    """``current`` plus one call; its cost stays unknown once a call's is (no price, or
    no usage reported, and no cost reported either)."""
    earlier_known = current.api_calls == 0 or current.cost_usd is not None
    cost = split = None
    if price is not None and reported and earlier_known:
        call = price.split(usage)  # once: the call's cost is its sum
        split = dict(current.cost_split or {})
        for kind, usd in call.items():
            split[kind] = split.get(kind, 0.0) + usd
        cost = (current.cost_usd or 0.0) + sum(call.values())
    elif price is None and reported_cost is not None and earlier_known:
        cost = (current.cost_usd or 0.0) + reported_cost  # no split: said as one sum
    return TurnUsage(input_tokens=current.input_tokens + usage.input_tokens,
                     output_tokens=current.output_tokens + usage.output_tokens,
                     total_tokens=current.total_tokens + usage.total_tokens,
                     api_calls=current.api_calls + 1,
                     unreported_calls=current.unreported_calls + (0 if reported else 1),
                     cost_usd=cost, cost_split=split)
