"""Spending: all the money of one session — what its calls cost, its budgets, and the sums
it is restored to after a resume or a rewind.

A sum of call costs (:class:`Spend`) stays unknown once one call's cost is (a model with
no price, a server that reported no usage). The agent's limits — ``budget_usd`` for the
session, ``turn_budget_usd`` for each turn — warn at 80 % and stop the turn at 100 %,
counting sub-agents against their parent. A session's budget counts all it paid: its
history's calls and those of turns it went back over (retry, edit, rewind), which stay
paid; its warnings and refusals say how much of what they count is the latter.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Literal

from ...events import Event, TurnUsage, WarningEvent
from ...labels import t
from ...messages import Message, Usage
from ...providers.base import Provider
from ...providers.prices import ModelPrice
from ...store.session_store import CompactionRecord
from ..agent import Agent, check_budget_value
from ..usage_meter import add_usage

__all__ = ["WARN_AT", "BudgetExceededError", "Spend", "Spending", "check_budget_value",
           "format_usd", "reached"]

WARN_AT = 0.8
"""The share of a budget at which the user is warned."""

Scope = Literal["turn", "session"]


class BudgetExceededError(RuntimeError):
    """A turn was refused: the session has spent its budget (``agent.budget_usd``)."""


def reached(spent: float, budget: float) -> bool:
    """``spent`` has reached ``budget`` — to the cent's millionth, so that sums of float
    costs ($0.70 + $0.10 = 0.7999999999999999) reach a budget of $0.80."""
    return spent >= budget - 1e-9


def format_usd(value: float) -> str:
    """``$1.23``, ``$0.123``, ``$0.0123``, ``<$0.0001``, ``$0.00`` (free): money as the
    token stats show it (``formatUsd`` in token-stats.ts says the same)."""
    usd = max(0.0, value)
    if usd == 0:
        return "$0.00"
    if usd < 0.0001:
        return "<$0.0001"
    digits = 2 if usd >= 1 else 3 if usd >= 0.1 else 4
    return f"${usd:.{digits}f}"


@dataclass
class Spend:
    """A running sum of call costs in USD; unknown for good once one call's cost is."""

    usd: float = 0.0
    calls: int = 0
    unknown: bool = False

    def add(self, cost: float | None, calls: int = 1) -> None:
        if calls <= 0:
            return
        self.calls += calls
        if cost is None:
            self.unknown = True
        else:
            self.usd += cost

    def add_turn(self, usage: TurnUsage) -> None:
        """A turn's (or a child's) figures: its calls and their cost."""
        self.add(usage.cost_usd, usage.api_calls)

    def include(self, other: Spend) -> None:
        """Another sum's calls join this one (what is known of their cost, and whether
        some of it is not)."""
        self.calls += other.calls
        self.usd += other.usd
        self.unknown |= other.unknown

    def plus(self, other: Spend) -> Spend:
        """A new sum of this one and ``other``."""
        both = Spend(self.usd, self.calls, self.unknown)
        both.include(other)
        return both

    @property
    def value(self) -> float | None:
        """The sum, or ``None`` when a call's cost is unknown."""
        return None if self.unknown else self.usd


def _silent(_event: Event) -> None:
    """Where a projection's warnings go (it is never checked against a budget)."""


class Spending:
    """The money of one session: its own calls' cost (summaries included), its
    sub-agents', what it paid for turns it went back over, and its budgets — one warning
    per budget at :data:`WARN_AT`, then the scope whose budget is reached. ``running``
    arguments are the current turn's sub-agents' figures (the crew's until the next turn
    begins)."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self.price: ModelPrice | None = None
        """The model's price (the provider's), or ``None``: costs unknown."""
        self.spent = Spend()
        """What this session's own calls cost (summaries included; not its sub-agents')."""
        self.children = Spend()
        """What its sub-agents cost in the turns before the current one (the current
        turn's are the crew's until the next turn begins: :meth:`add_children`)."""
        self.rewound = Spend()
        """What the session paid for the calls of turns it went back over (retry, edit,
        rewind: :meth:`set_aside`), each counted once — no longer in its history or its
        figures, but paid, so counted against its budget (:meth:`paid`). A restore keeps
        it; a new session (a fork) starts without."""
        self.last_call_cost: float | None = None
        """The cost of the latest call recorded (kept on its message)."""
        self._warned: dict[Scope, float] = {}  # the budget each warning was given for
        self._unknown_said = False

    # --- what calls cost ---------------------------------------------------------------
    def cost_of(self, usage: Usage | None) -> float | None:
        """What a call that used ``usage`` cost, or ``None`` (no price, no usage)."""
        price = self.price
        return price.cost(usage) if price is not None and usage is not None else None

    def call(self, usage: Usage | None, reported_cost: float | None = None) -> float | None:
        """One model call of this session is counted; returns its cost (``None``: unknown,
        never a known $0 when no usage was reported). ``reported_cost``: what the model's
        side said it cost (an outside agent's own figure), taken when there is no price."""
        cost = self.cost_of(usage) if self.price is not None else reported_cost
        self.last_call_cost = cost
        self.spent.add(cost)
        return cost

    def summary(self, usage: Usage | None) -> None:
        """A compaction's summarising call is counted (real spend)."""
        self.spent.add(self.cost_of(usage))

    def add_children(self, usage: TurnUsage) -> None:
        """A finished turn's sub-agents' figures join :attr:`children`."""
        self.children.add_turn(usage)

    # --- sums --------------------------------------------------------------------------
    def session_spend(self, running: TurnUsage) -> Spend:
        """The session's spend so far: its own calls, its sub-agents' of earlier turns and
        ``running`` (the current turn's); what is known, and whether some calls' cost is
        not."""
        spent = self.spent.plus(self.children)
        spent.add(running.cost_usd or 0.0, running.api_calls)
        spent.unknown |= bool(running.api_calls and running.cost_usd is None)
        return spent

    def paid(self, running: TurnUsage) -> Spend:
        """All the session has paid: :meth:`session_spend` (its history's calls) and
        :attr:`rewound` (those of turns it went back over) — what its budget counts."""
        return self.session_spend(running).plus(self.rewound)

    @staticmethod
    def usd(spent: Spend, price: ModelPrice | None) -> float | None:
        """``spent`` in USD: ``None`` when a call's cost is unknown, or when nothing was
        spent yet with a model that has no price."""
        if spent.calls == 0:
            return 0.0 if price is not None else None
        return spent.value

    def cost_usd(self, running: TurnUsage, price: ModelPrice | None) -> float | None:
        """What the session has cost (its history's calls, summaries and sub-agents')."""
        return self.usd(self.session_spend(running), price)

    def spent_usd(self, running: TurnUsage, price: ModelPrice | None) -> float | None:
        """All the session has paid, turns gone back over included."""
        return self.usd(self.paid(running), price)

    def turn_total(self, own: TurnUsage, running: TurnUsage | None,
                   price: ModelPrice | None) -> TurnUsage:
        """The turn's figures as ``token_update`` shows them: the session's own calls plus
        its sub-agents' (``running``; ``None``: it ran none this turn), and the session's
        cost so far."""
        total = (add_usage(own, running, second_is_children=True) if running is not None
                 else own)
        if self.spent.unknown or (self.price is None and self.spent.calls == 0):
            # A call's cost unknown (no price, and no cost said): so is the session's.
            return total
        return total.model_copy(update={"session_cost_usd": self.cost_usd(
            running if running is not None else TurnUsage(), price)})

    # --- going back, coming back -------------------------------------------------------
    def set_aside(self, messages: Sequence[Message],
                  compactions: Sequence[CompactionRecord]) -> None:
        """``messages`` and ``compactions`` leave the session's history (a rewind drops
        them): what their calls cost joins :attr:`rewound`. Each call is held by one
        message or compaction, which leaves the history once, so it is counted once."""
        own, children = self._count(messages, compactions)
        self.rewound.include(own)
        self.rewound.include(children)

    def restore(self, messages: Sequence[Message],
                compactions: Sequence[CompactionRecord]) -> None:
        """The sums ``messages`` and ``compactions`` give — a resumed session's, a
        branch's, a rewound one's — in place of any there were (summaries and sub-agent
        runs included), each call counted once, from the message that holds it. What was
        paid for turns gone back over (:attr:`rewound`) is not the history's and stays."""
        self.spent, self.children = self._count(messages, compactions)
        self.last_call_cost = None

    def after_rewind(self, kept: Sequence[Message], kept_compactions: Sequence[CompactionRecord],
                     dropped: Sequence[Message],
                     dropped_compactions: Sequence[CompactionRecord]) -> tuple[Spend, Spend]:
        """What the session will have paid once rewound (``kept`` stays its history,
        ``dropped`` joins what it set aside), and what of it for turns gone back over;
        nothing here changes."""
        projected = Spending(_silent)
        projected.price = self.price
        projected.rewound = dataclasses.replace(self.rewound)
        projected.set_aside(dropped, dropped_compactions)
        projected.restore(kept, kept_compactions)
        return projected.paid(TurnUsage()), projected.rewound

    def _count(self, messages: Sequence[Message], compactions: Sequence[CompactionRecord]
               ) -> tuple[Spend, Spend]:
        """What the session's own calls that ``messages`` and ``compactions`` hold cost
        (summaries included), and what its sub-agents' runs cost."""
        own, children = Spend(), Spend()
        for message in messages:
            if message.role == "assistant":  # every model call, as it was counted live
                own.add(message.metadata.cost_usd)
            elif message.metadata.cost_usd is not None:
                # A prompt whose turn was cut before anything came back, keeping what an
                # outside agent said it cost (acp.turns: ``_end_cut_short``).
                own.add(message.metadata.cost_usd)
            for execution in message.metadata.tool_executions:
                run = execution.subagent
                if run is not None and run.api_calls:
                    children.add(run.cost_usd, run.api_calls)
        for compaction in compactions:
            # Its stored cost; a row from before costs were kept: the price now.
            own.add(compaction.cost_usd if "cost_usd" in compaction.model_fields_set
                    else self.cost_of(compaction.usage))
        return own, children

    # --- budgets -----------------------------------------------------------------------
    def begin_turn(self) -> None:
        """The turn's budget warning starts afresh."""
        self._warned.pop("turn", None)

    def over_budget(self, agent: Agent, turn_spend: Spend, running: TurnUsage, *,
                    answered: bool = False) -> bool:
        """Check the budgets after a call (warning at 80 %); True once one is reached
        (the turn then ends with ``stop_reason="budget"``). ``turn_spend``: what this
        session's own calls of the turn cost. A call whose cost is unknown counts for
        nothing (the user is told): the budget holds for the rest."""
        if agent.budget_usd is None and agent.turn_budget_usd is None:
            return False
        turn_spent = turn_spend.usd + (running.cost_usd or 0.0)
        paid = self.paid(running)  # turns gone back over were paid too
        unknown = (paid.unknown or turn_spend.unknown
                   or bool(running.api_calls and running.cost_usd is None))
        return self.check(agent, turn_spent, paid.usd, unknown=unknown,
                          rewound=self.rewound.usd, answered=answered) is not None

    def check(self, agent: Agent, turn_spent: float, session_spent: float, *,
              unknown: bool, rewound: float = 0.0, answered: bool = False) -> Scope | None:
        """The scope whose budget is reached (session first), after warning at 80 %.
        ``session_spent`` is all the session paid, of which ``rewound`` for turns it went
        back over (the session's warnings then say so). The spend is what is known: when
        some calls' cost is not (no price, no usage reported), the budget still holds for
        the rest, and the user is told once. ``answered``: the call that reached it gave
        the turn's whole answer (no tool call left to cut), which the warning says
        (``budget_reached_*_answered``: nothing was cut)."""
        if unknown and not self._unknown_said:
            self._unknown_said = True
            self._emit(WarningEvent(message=t("budget_partly_unknown", "en"),
                                    code="budget_partly_unknown"))
        limits: tuple[tuple[Scope, float | None, float], ...] = (
            ("session", agent.budget_usd, session_spent),
            ("turn", agent.turn_budget_usd, turn_spent))
        for scope, budget, spent in limits:
            if budget is None:
                continue
            paid_back = rewound if scope == "session" else 0.0
            if reached(spent, budget):
                code = f"budget_reached_{scope}" + ("_answered" if answered else "")
                self._emit(_warning(code, spent, budget, paid_back))
                return scope
            if spent >= WARN_AT * budget and self._warned.get(scope) != budget:
                self._warned[scope] = budget
                self._emit(_warning(f"budget_warning_{scope}", spent, budget, paid_back))
        return None

    def before_turn(self, agent: Agent, provider: Provider, running: TurnUsage,
                    paid: tuple[Spend, Spend] | None = None) -> None:
        """A turn may start: its budgets are valid (they may have been set since the
        agent was made), the model has a price, and the session's budget is not spent.
        ``paid``: all the session will have paid when the turn starts and what of it for
        turns gone back over, if not what it has now (a retry's, after its rewind)."""
        if agent.budget_usd is None and agent.turn_budget_usd is None:
            return
        check_budget_value("budget_usd", agent.budget_usd)
        check_budget_value("turn_budget_usd", agent.turn_budget_usd)
        if provider.price is None and not provider.says_its_cost:
            raise ValueError(f"a budget needs the model's price, and there is no price "
                             f"for {provider.model_id}: give one with "
                             "create_provider(..., price=ModelPrice(...))")
        if paid is None:
            self.refuse_if_spent(agent, self.paid(running).usd, self.rewound.usd)
        else:
            self.refuse_if_spent(agent, paid[0].usd, paid[1].usd)

    @staticmethod
    def refuse_if_spent(agent: Agent, session_spent: float, rewound: float = 0.0) -> None:
        """Raise :class:`BudgetExceededError` before a turn when the session's budget is
        spent (``session_spent``: all it paid, ``rewound`` of it for turns it went back
        over): the user raises ``agent.budget_usd`` or starts a new session."""
        budget = agent.budget_usd
        if budget is not None and reached(session_spent, budget):
            code, params = _worded("budget_refused", session_spent, budget, rewound)
            raise BudgetExceededError(t(code, "en", **params))


def _warning(code: str, spent: float, budget: float, rewound: float) -> WarningEvent:
    code, params = _worded(code, spent, budget, rewound)
    return WarningEvent(message=t(code, "en", **params), code=code, params=params)


def _worded(code: str, spent: float, budget: float, rewound: float
            ) -> tuple[str, dict[str, str]]:
    """The label and parameters of a budget's warning or refusal: when some of what it
    counts was paid for turns the session went back over, the ``_rewound`` sentence,
    which says how much (``cost_usd`` shows only the kept history's)."""
    params = {"percent": str(min(100, round(100 * spent / budget))) if budget else "100",
              "spent": format_usd(spent), "budget": format_usd(budget)}
    if rewound > 0:
        code += "_rewound"
        params["rewound"] = format_usd(rewound)
    return code, params
