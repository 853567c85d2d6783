"""The money names of earlier releases, where they were: they live in
:mod:`neta_nb.runtime.session.spending` (a session's money in one place)."""

from .session.spending import (
    WARN_AT,
    BudgetExceededError,
    Spend,
    check_budget_value,
    format_usd,
    reached,
)

__all__ = ["WARN_AT", "BudgetExceededError", "Spend", "check_budget_value", "format_usd",
           "reached"]
