"""Spend and budgets: what a session's model calls cost in money, kept as a sum that stays
unknown once one call's cost is (a model with no price, a server that reported no usage),
and the agent's limits — ``budget_usd`` for the session, ``turn_budget_usd`` for each turn
— that warn at 80 % and stop the turn at 100 %, counting sub-agents against their parent.
A session's budget counts all it paid: its history's calls and those of turns it went
back over (retry, edit, rewind), which stay paid; its warnings and refusals say how much
of what they count is the latter.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal

from ..events import Event, TurnUsage, WarningEvent
from ..labels import t

if TYPE_CHECKING:
    from ..providers.base import Provider
    from .agent import Agent

__all__ = ["WARN_AT", "BudgetExceededError", "BudgetGuard", "Spend", "check_budget_value",
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


def check_budget_value(name: str, budget: object) -> None:
    """A budget is a positive, finite number of USD (``None``: none)."""
    if budget is None:
        return
    if (isinstance(budget, bool) or not isinstance(budget, (int, float))
            or not math.isfinite(budget) or budget <= 0):
        raise ValueError(f"{name} is USD and must be a number more than 0, got {budget!r}")


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


class BudgetGuard:
    """Checks one session's spend against its agent's budgets after every call (its own
    and its sub-agents'): one warning per budget at :data:`WARN_AT`, then the scope whose
    budget is reached."""

    def __init__(self, emit: Callable[[Event], None]) -> None:
        self._emit = emit
        self._warned: dict[Scope, float] = {}  # the budget each warning was given for
        self._unknown_said = False

    def begin_turn(self) -> None:
        self._warned.pop("turn", None)

    def check(self, agent: Agent, turn_spent: float, session_spent: float, *,
              unknown: bool, rewound: float = 0.0) -> Scope | None:
        """The scope whose budget is reached (session first), after warning at 80 %.
        ``session_spent`` is all the session paid, of which ``rewound`` for turns it went
        back over (the session's warnings then say so). The spend is what is known: when
        some calls' cost is not (no price, no usage reported), the budget still holds for
        the rest, and the user is told once."""
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
                self._emit(self._warning(f"budget_reached_{scope}", spent, budget, paid_back))
                return scope
            if spent >= WARN_AT * budget and self._warned.get(scope) != budget:
                self._warned[scope] = budget
                self._emit(self._warning(f"budget_warning_{scope}", spent, budget, paid_back))
        return None

    def before_turn(self, agent: Agent, provider: Provider,
                    session_spent: Callable[[], tuple[float, float]]) -> None:
        """A turn may start: its budgets are valid (they may have been set since the
        agent was made), the model has a price, and the session's budget is not spent.
        ``session_spent()``: all the session will have paid when the turn starts, and how
        much of that for turns it went back over."""
        check_budget_value("budget_usd", agent.budget_usd)
        check_budget_value("turn_budget_usd", agent.turn_budget_usd)
        if provider.price is None:
            raise ValueError(f"a budget needs the model's price, and there is no price "
                             f"for {provider.model_id}: give one with "
                             "create_provider(..., price=ModelPrice(...))")
        self.refuse_if_spent(agent, *session_spent())

    def refuse_if_spent(self, agent: Agent, session_spent: float, rewound: float = 0.0) -> None:
        """Raise :class:`BudgetExceededError` before a turn when the session's budget is
        spent (``session_spent``: all it paid, ``rewound`` of it for turns it went back
        over): the user raises ``agent.budget_usd`` or starts a new session."""
        budget = agent.budget_usd
        if budget is not None and reached(session_spent, budget):
            code, params = _worded("budget_refused", session_spent, budget, rewound)
            raise BudgetExceededError(t(code, "en", **params))

    @staticmethod
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
