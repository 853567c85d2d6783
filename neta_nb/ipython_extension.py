"""``%load_ext neta_nb``: IPython's hook, which registers the ``%neta_mcp`` line magic
(``%neta_mcp serve [--port N] [--token TOKEN]``, ``%neta_mcp stop``) and ``%%agent`` cells
(``%%agent [-a AGENT] [-c CATALOG] [-s SESSION] [-o NAME] [--approve POLICY] [--budget
USD] [--raise]``, ``%agent PROMPT``)."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension"]


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext neta_nb``: the ``%neta_mcp serve`` / ``%neta_mcp stop`` magic and
    ``%%agent`` cells."""
    # The magics use the widgets (and `%neta_mcp` the `mcp` extra): imported when the
    # extension is loaded, so `import neta_nb` in a script loads none of them.
    from .widgets.agent_cell import register_magics as register_agent_cells
    from .widgets.mcp_review import register_magics

    register_magics(shell)
    register_agent_cells(shell)
