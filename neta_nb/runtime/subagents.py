"""The sub-agent names of earlier releases, where they were: they live in
:mod:`neta_nb.runtime.session.subagents`."""

from .session.subagents import (
    STOP_WAIT,
    ChildRun,
    Crew,
    CrewLink,
    add_usage,
    subagent_history,
    wrap_event,
)

__all__ = ["STOP_WAIT", "ChildRun", "Crew", "CrewLink", "add_usage", "subagent_history",
           "wrap_event"]
