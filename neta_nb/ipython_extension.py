"""``%load_ext neta_nb``: IPython's hook, which registers the ``%neta_mcp`` line magic
(``%neta_mcp serve [--port N] [--token TOKEN]``, ``%neta_mcp stop``)."""

from __future__ import annotations

from typing import Any

__all__ = ["load_ipython_extension"]


def load_ipython_extension(shell: Any) -> None:
    """``%load_ext neta_nb``: the ``%neta_mcp serve`` / ``%neta_mcp stop`` magic."""
    # The magic serves the notebook with the widgets and the `mcp` extra: imported when
    # the extension is loaded, so `import neta_nb` in a script loads neither.
    from .widgets.mcp_review import register_magics

    register_magics(shell)
