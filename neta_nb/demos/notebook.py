"""The offline notebook demo: :func:`demo_notebook_agent` builds an agent on the scripted
model that works in the notebook its chat is in — it reads the cells and the error the
user hit, proposes a fix as a diff the user accepts or rejects, and runs the fixed cell
(with the user's approval) — so the loop can be seen without any key. Asked
:data:`TIDY_PROMPT`, it proposes several changes in one answer instead, which the user
reviews together (the Changes card) and a rewind can take back out of the notebook.
"""

from __future__ import annotations

from ..providers.scripted.demo_notebook_script import (
    FIX_PROMPT,
    NOTEBOOK_FIX_SCRIPT,
    TIDY_PROMPT,
)
from ..providers.scripted.scripted import ScriptedProvider
from ..runtime.agent import Agent
from ..tools import AgentToolConfig

__all__ = ["FIX_PROMPT", "TIDY_PROMPT", "demo_notebook_agent"]


def demo_notebook_agent(*, chars_per_second: float = 0.0,
                        accept_notebook_edits: bool = False) -> Agent:
    """An agent with the notebook tools on the offline model (``chars_per_second`` paces
    its stream to a readable speed; ``accept_notebook_edits`` applies its edits without
    asking)."""
    return Agent(
        "notebook helper",
        model=ScriptedProvider(NOTEBOOK_FIX_SCRIPT, chars_per_second=chars_per_second),
        description="Reads the notebook, proposes fixes as diffs and runs cells.",
        system_prompt=("You work in the user's notebook: read it before answering, propose "
                       "changes with edit_cell or insert_cell (the user decides), and run a "
                       "cell with run_cell to check a fix."),
        tools=AgentToolConfig(enabled=["read_notebook", "edit_cell", "insert_cell",
                                       "run_cell"]),
        accept_notebook_edits=accept_notebook_edits)
