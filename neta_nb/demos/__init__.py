"""The offline demos the notebooks run, each an agent on the scripted model (no key, no
network): :func:`demo_crew` (:mod:`.crew`, a planner with two sub-agents) and
:func:`demo_notebook_agent` (:mod:`.notebook`, an agent that fixes a cell of its own
notebook). Their scripts live with the scripted model (:mod:`neta_nb.providers`), the
demo tool catalog with the tools (``ToolCatalog.demo()``)."""

from .crew import CREW_PROMPT, demo_crew
from .notebook import FIX_PROMPT, TIDY_PROMPT, demo_notebook_agent

__all__ = ["CREW_PROMPT", "FIX_PROMPT", "TIDY_PROMPT", "demo_crew", "demo_notebook_agent"]
