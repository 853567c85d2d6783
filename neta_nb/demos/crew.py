"""The offline crew demo: :func:`demo_crew` builds a planner with two sub-agents on the
scripted model, so delegation — two children working in parallel, their nested cards,
their tokens in the planner's total — can be seen without any key.

Each child has its own scripted model and its own tools: the researcher may only read
the folder, the analyst may only profile tables; the planner keeps the core tools and
gets ``delegate`` because it has sub-agents.
"""

from __future__ import annotations

from ..providers.scripted.demo_crew_script import (
    ANALYST_SCRIPT,
    CREW_PLANNER_SCRIPT,
    CREW_PROMPT,
    RESEARCHER_SCRIPT,
)
from ..providers.scripted.script_format import Script
from ..providers.scripted.scripted import ScriptedProvider
from ..runtime.agent import Agent
from ..tools import AgentToolConfig

__all__ = ["CREW_PROMPT", "demo_crew"]


def demo_crew(*, chars_per_second: float = 0.0) -> Agent:
    """A planner delegating to a ``researcher`` and an ``analyst`` at once, all on the
    offline model (``chars_per_second`` paces their streams to a readable speed)."""

    def model(script: Script) -> ScriptedProvider:
        return ScriptedProvider(script, chars_per_second=chars_per_second)

    researcher = Agent(
        "researcher", model=model(RESEARCHER_SCRIPT),
        description="Looks through the working folder and reports what is there.",
        system_prompt="You survey folders. Answer with the facts you found, briefly.",
        tools=AgentToolConfig(inherit_core_tools=False, enabled=["list_files", "read_file"]))
    analyst = Agent(
        "analyst", model=model(ANALYST_SCRIPT),
        description="Profiles tables column by column and reports what stands out.",
        system_prompt="You profile data. Answer with the findings that stand out.",
        tools=AgentToolConfig(inherit_core_tools=False, enabled=["profile_table"]))
    return Agent(
        "planner", model=model(CREW_PLANNER_SCRIPT),
        description="Splits a request between its sub-agents and sums up their reports.",
        system_prompt=("You plan and delegate: hand independent parts of a request to your "
                       "sub-agents at the same time with `delegate`, then combine their "
                       "reports."),
        subagents=[researcher, analyst])
