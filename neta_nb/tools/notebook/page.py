"""What the notebook tools reach the notebook through: the page that shows it, if any.

The tools run in the kernel; the notebook document lives in the browser. A chat view on
a JupyterLab or Notebook 7 page with the neta-nb extension relays requests to the live
notebook model that holds it (unsaved edits included) and edits it as a user's edit would
be made, one undoable step each. The widget layer implements :class:`NotebookPage` over
that relay; the tools see only this protocol, so they run the same under a test's fake
page and never import a widget.

A request names an operation (``read``, ``edit``, ``insert``, ``delete``, ``undo``,
``run``, ``set_outputs``) and its arguments, and returns the page's answer or raises
:class:`NotebookError` with one of the page's codes (``changed``: the cell no longer holds
the text the edit was made against; ``no_cell``, ``no_notebook``, ``no_bridge``,
``no_answer`` and ``failed``).
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any, Literal, NamedTuple, Protocol

__all__ = ["PAGE_NEEDED", "EditDecider", "EditDecision", "EditsDecider", "NotebookAccess",
           "NotebookError", "NotebookPage", "ReviewedChanges"]

PAGE_NEEDED = "needs a JupyterLab or Notebook 7 page"
"""Why the edit and run tools are left out where no page answers (nbclient, VS Code,
plain IPython): the resolver's reason and the refusal the model reads."""


class NotebookError(Exception):
    """The page could not do what was asked; ``code`` says why in a word."""

    def __init__(self, code: str, message: str) -> None:
        super().__init__(message)
        self.code = code


class NotebookPage(Protocol):
    """The notebook on a page, as the tools reach it."""

    @property
    def available(self) -> bool:
        """A view with the notebook extension is open now: requests can be answered."""
        ...

    async def request(self, op: str, args: dict[str, Any], *,
                      wait: float | None = None) -> dict[str, Any]:
        """The page's answer to one operation; :class:`NotebookError` when it refuses,
        fails or does not answer within ``wait`` seconds (``None``: the page's default
        for ``op``)."""
        ...


class EditDecision(NamedTuple):
    """What became of a proposed edit, and who decided it."""

    accepted: bool
    text: str | None = None
    """The text the user accepted when they changed it first (``None``: the proposal's)."""
    by: Literal["user", "agent", "policy"] = "user"
    """``agent``: the agent accepts its edits (``accept_notebook_edits``); ``policy``: no one
    was there to ask, the session's approval policy decided."""


EditDecider = Callable[[str, str, dict[str, Any], dict[str, Any]], Awaitable[EditDecision]]
"""``(call id, tool name, call arguments, proposal) -> EditDecision``: the session asks the
user (``Approvals.decide_edit``)."""


EditsDecider = Callable[[list[tuple[str, str, dict[str, Any], dict[str, Any]]]],
                        Awaitable[list[EditDecision]]]
"""Several proposals asked at once, each as :data:`EditDecider` takes one; the decisions
in the same order (``Approvals.decide_edits``)."""


class ReviewedChanges:
    """The outcomes of the changes of one model response that were reviewed together
    (:mod:`.changes`): the first of their calls asks and makes them all, and each later
    call of that response takes its own outcome here. Only one response's are kept: ids
    repeat across responses, and a turn stopped halfway leaves outcomes nobody takes."""

    __slots__ = ("_outcomes", "_response")

    def __init__(self) -> None:
        self._response = ""
        self._outcomes: dict[str, object] = {}

    def keep(self, response_id: str, outcomes: dict[str, object]) -> None:
        self._response, self._outcomes = response_id, dict(outcomes)

    def take(self, response_id: str, call_id: str) -> object | None:
        """The outcome of ``call_id`` of that response (once), ``None`` if there is none."""
        if not response_id or response_id != self._response:
            return None
        return self._outcomes.pop(call_id, None)


class NotebookAccess:
    """What a notebook tool call gets in ``ctx.notebook``: the session's page now
    (``None`` where no chat view is bound), how to ask the user about a proposed edit, and
    whether a cell is executing. One per session, made once: a tool call costs nothing
    more for it."""

    __slots__ = ("_page", "decide_edit", "decide_edits", "in_cell", "reviewed", "turn_end")

    def __init__(self, page: Callable[[], NotebookPage | None], decide_edit: EditDecider,
                 in_cell: Callable[[], bool],
                 turn_end: Callable[[], Awaitable[None] | None] = lambda: None,
                 decide_edits: EditsDecider | None = None) -> None:
        self._page = page
        self.decide_edit = decide_edit
        self.decide_edits = decide_edits
        """How to ask about several proposals at once (``None``: one after another)."""
        self.reviewed = ReviewedChanges()
        self.in_cell = in_cell
        """Whether the kernel is executing a cell right now: a turn awaited in a cell keeps
        the kernel's shell busy, so the page cannot run another cell until it ends."""
        self.turn_end = turn_end
        """The end of the session's turn running now, to wait for (``None``: no turn
        runs): ``run_cell(wait=False)`` starts its cell once the turn has ended."""

    @property
    def page(self) -> NotebookPage | None:
        return self._page()

    @property
    def live(self) -> bool:
        page = self._page()
        return page is not None and page.available
