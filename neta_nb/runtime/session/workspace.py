"""Workspace: what a session works with and is not its state — the agent, the model's
provider, the tool catalog, the working directory and namespace the tools run in, and the
notebook page a chat view of the session is on."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

from ...providers.base import Provider
from ...tools import ToolCatalog
from ...tools.notebook.kernel import cell_running
from ...tools.notebook.page import NotebookAccess, NotebookPage
from ...tools.threads import ToolThreads
from ..agent import Agent
from ..approvals import Approvals

__all__ = ["Workspace"]


class Workspace:
    """The agent, provider, catalog and places of one session. ``provider`` may be
    replaced between turns (the next model call uses the new one)."""

    def __init__(self, agent: Agent, provider: Provider, catalog: ToolCatalog, *,
                 working_dir: Path, namespace: dict[str, Any], approvals: Approvals,
                 turn_end: Callable[[], Awaitable[None] | None] = lambda: None) -> None:
        self.agent = agent
        self.provider = provider
        self.catalog = catalog
        self.working_dir = working_dir
        self.namespace = namespace
        self.threads = ToolThreads()
        self.notebook_page: NotebookPage | None = None
        """The notebook page a chat view of this session is on (the notebook tools reach
        the notebook through it); ``None``: no page, the edit and run tools are left out."""
        self.notebook = NotebookAccess(lambda: self.notebook_page, lambda *asked: (
            approvals.decide_edit(*asked, accept_without_asking=self.agent.accept_notebook_edits)),
            cell_running, turn_end, lambda asked: approvals.decide_edits(
                asked, accept_without_asking=self.agent.accept_notebook_edits))

    @property
    def page_answers(self) -> bool:
        """A notebook page is there and answers."""
        page = self.notebook_page
        return page is not None and page.available
