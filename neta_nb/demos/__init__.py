"""The offline demos the notebooks run (no key, no network): :func:`demo_crew`
(:mod:`.crew`, a planner with two sub-agents) and :func:`demo_notebook_agent`
(:mod:`.notebook`, an agent that fixes a cell of its own notebook), each on the scripted
model, and :func:`demo_outside_agent` (:mod:`.outside`, Claude Code over the Agent Client
Protocol, whose model is the local scripted Messages API of :func:`demo_model_server`,
:mod:`.model_server`). Their scripts live with the scripted model
(:mod:`neta_nb.providers`), the demo tool catalog with the tools
(``ToolCatalog.demo()``)."""

from .crew import CREW_PROMPT, demo_crew
from .model_server import DemoModelServer, demo_model_server
from .notebook import FIX_PROMPT, TIDY_PROMPT, demo_notebook_agent
from .outside import OUTSIDE_PROMPT, demo_outside_agent

__all__ = ["CREW_PROMPT", "FIX_PROMPT", "OUTSIDE_PROMPT", "TIDY_PROMPT", "DemoModelServer",
           "demo_crew", "demo_model_server", "demo_notebook_agent", "demo_outside_agent"]
