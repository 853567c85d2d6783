"""Running ``%%agent`` cells: which session a cell's turn goes to, what a run of it again
does, and what the cell shows and leaves behind.

**A cell keeps its session.** Run the first time, a cell starts a session of its own (in
the default store, ``SessionStore()``: ``$NETA_NB_STORE_URL`` when set) — or uses the one
``-s`` names. Run again, it asks again: its earlier turn is rewound, kept in the store as a
branch of the session, and the prompt (as the cell now reads) is sent anew — never a second
session. A cell is known by the id the notebook page sends with each run; run without a
page (nbclient, nbconvert, papermill send none), by its text.

**With a page** (JupyterLab, Notebook 7) the cell shows the chat view of its session —
the cards live, its static form below for a saved notebook — and returns at once, the
turn going on in the background, so that Stop and the approval buttons work (the kernel
reads the page's clicks only between cells); ``-o NAME`` is set when the turn ends.

**Without a page** no one can click: the cell waits for its turn to end, the approval
policy (``--approve``) decides each call that needs approval — a refusal is a plain line
in the output, the turn goes on — and the output is the turn's static form itself, kept
current while it runs. A turn stopped by ``--budget`` ends the cell cleanly with the
reason; a failed turn is a line too, or a cell error with ``--raise``.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import hashlib
import inspect
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from IPython.display import display

from ...events import Event
from ...runtime.session import Agent, AgentSession
from ...store.session_store import SessionStore
from ...tools import ToolCatalog
from ..static_form import StaticForm
from .form import cell_form
from .options import USAGE, AgentCellUsageError, CellOptions, CellSetup, parse_line, resolve

__all__ = ["DEFAULT_AGENT_NAME", "AgentCellError", "AgentCells", "page_cell_id"]

DEFAULT_AGENT_NAME = "agent"
"""The name of the agent a cell without ``-a`` talks to: the first model whose key is in
the environment, else the offline demo model."""


class AgentCellError(RuntimeError):
    """An ``%%agent`` cell's turn failed, and the cell asked for an error (``--raise``)."""


def page_cell_id(shell: Any) -> str | None:
    """The id of the notebook cell being run, when a notebook page runs it: JupyterLab and
    Notebook 7 send it in the execute request's metadata (``cellId``); nbclient (papermill,
    nbconvert), a console and ``kernel.requestExecute`` send none."""
    kernel = getattr(shell, "kernel", None)
    get_parent = getattr(kernel, "get_parent", None)
    parent = get_parent() if callable(get_parent) else None
    metadata = parent.get("metadata") if isinstance(parent, dict) else None
    cell_id = metadata.get("cellId") if isinstance(metadata, dict) else None
    return cell_id if isinstance(cell_id, str) and cell_id else None


@dataclass
class _CellTurn:
    """What one cell ran last."""

    session: AgentSession
    agent: Agent | None
    """The ``-a`` agent the cell's session was made for (``None``: the default)."""
    catalog: ToolCatalog | None
    prompt_id: str | None = None
    """The cell's prompt in the session (``None`` until its turn has begun)."""
    task: asyncio.Task[Any] | None = None


@dataclass
class _Outcome:
    """What the cell learns from its turn's events."""

    errors: list[str] = field(default_factory=list)
    budget: str | None = None
    stop_reason: str | None = None

    def hear(self, event: Event) -> None:
        if event.type == "error":
            self.errors.append(event.message)
        elif event.type == "warning" and (event.code or "").startswith("budget_reached"):
            self.budget = event.message
        elif event.type == "done":
            self.stop_reason = event.stop_reason


Policy = Callable[[str, dict[str, Any]], Awaitable[bool]]


def _saying_policy(setup: CellSetup) -> Policy:
    """The cell's approval policy, saying in the output what it decided (a line each)."""
    policy, named = setup.policy, setup.options.approve

    async def decide(tool_name: str, args: dict[str, Any]) -> bool:
        if policy == "allow":
            verdict = True
        elif policy == "reject":
            verdict = False
        else:
            answer = policy(tool_name, args)  # type: ignore[operator]
            verdict = bool(await answer if inspect.isawaitable(answer) else answer)
        if verdict:
            print(f"Allowed '{tool_name}' without asking (--approve {named}).")
        else:
            how = (" (--approve allow, or a policy function, decides otherwise)"
                   if named == "reject" else f" (--approve {named})")
            print(f"Refused '{tool_name}': it needs approval and there is no page here "
                  f"to ask on; the turn goes on without it{how}.")
        return verdict

    return decide


class AgentCells:
    """The ``%%agent`` cells of one kernel and their sessions."""

    def __init__(self, shell: Any, *,
                 store: Callable[[], SessionStore] = SessionStore) -> None:
        self._shell = shell
        self._open_store = store
        self._store: SessionStore | None = None
        self._cells: dict[str, _CellTurn] = {}

    @property
    def store(self) -> SessionStore:
        """Where the cells' sessions are kept (opened at the first cell that runs)."""
        if self._store is None:
            self._store = self._open_store()
        return self._store

    async def run(self, line: str, body: str | None) -> None:
        """Run one cell: ``line`` after ``%%agent`` and the cell's ``body`` (``None``:
        ``%agent`` with the prompt on the line)."""
        options = parse_line(line)
        prompt = _prompt(options, body)
        setup = resolve(options, self._shell.user_ns)
        cell_id = page_cell_id(self._shell)
        key = cell_id or "text:" + hashlib.sha256(f"{line}\n{body}".encode()).hexdigest()
        cell = await self._cell_turn(key, setup)
        session = cell.session
        await _stopped(cell)
        if cell.prompt_id is not None and any(message.id == cell.prompt_id
                                              for message in session.messages):
            session.rewind(cell.prompt_id)  # kept as a branch (see the module docstring)
        cell.prompt_id = None
        before = len(session.messages)
        restore = _for_this_turn(session, setup)
        try:
            task = session.start(prompt)
        except BaseException:
            restore()
            raise
        cell.task = task

        def begun() -> None:
            if cell.prompt_id is None and len(session.messages) > before:
                cell.prompt_id = session.messages[before].id

        if cell_id is not None:
            self._run_on_page(cell, task, before, setup, restore, begun)
        else:
            await self._run_headless(cell, task, before, setup, restore, begun)

    async def _cell_turn(self, key: str, setup: CellSetup) -> _CellTurn:
        known = self._cells.get(key)
        if setup.session is not None:
            if known is None or known.session is not setup.session:
                known = _CellTurn(setup.session, None, None)
        elif setup.session_id is not None:
            if known is None or known.session.id != setup.session_id:
                known = _CellTurn(self._stored(setup), setup.agent, setup.catalog)
        elif known is None or known.agent is not setup.agent or known.catalog is not setup.catalog:
            # A cell run with another agent or catalog starts a session for it; the
            # earlier one stays in the store.
            agent = (dataclasses.replace(setup.agent) if setup.agent is not None
                     else Agent(DEFAULT_AGENT_NAME))
            known = _CellTurn(AgentSession(agent, setup.catalog, self.store),
                              setup.agent, setup.catalog)
        self._cells[key] = known
        return known

    def _stored(self, setup: CellSetup) -> AgentSession:
        session_id = setup.session_id
        assert session_id is not None
        for cell in self._cells.values():
            if cell.session.id == session_id:
                return cell.session
        agent = dataclasses.replace(setup.agent) if setup.agent is not None else None
        if self.store.get_session(session_id) is not None:
            return AgentSession.resume(session_id, self.store, agent=agent,
                                       catalog=setup.catalog)
        try:
            return AgentSession(agent or Agent(DEFAULT_AGENT_NAME), setup.catalog,
                                self.store, session_id=session_id)
        except ValueError as exc:
            raise AgentCellUsageError(f"-s {session_id}: {exc}\n{USAGE}") from None

    def _run_on_page(self, cell: _CellTurn, task: asyncio.Task[Any], before: int,
                     setup: CellSetup, restore: Callable[[], None],
                     begun: Callable[[], None]) -> None:
        from ..chat.view import ChatView  # the live widget, only where a page draws it

        session = cell.session
        unsubscribe = session.subscribe(lambda _event: begun())
        display(ChatView(session))  # type: ignore[no-untyped-call]

        def ended(_task: asyncio.Task[Any]) -> None:
            unsubscribe()
            restore()
            begun()
            if setup.options.output:
                self._shell.user_ns[setup.options.output] = _answer(session, before)

        task.add_done_callback(ended)

    async def _run_headless(self, cell: _CellTurn, task: asyncio.Task[Any], before: int,
                            setup: CellSetup, restore: Callable[[], None],
                            begun: Callable[[], None]) -> None:
        session = cell.session
        outcome = _Outcome()
        form = StaticForm(lambda: cell_form(session, before))

        def heard(event: Event) -> None:
            begun()
            outcome.hear(event)
            form.refresh()

        unsubscribe = session.subscribe(heard)
        form.display()
        try:
            await task
        finally:
            unsubscribe()
            restore()
            begun()
            form.cancel()
        form.refresh_now()
        if setup.options.output:
            self._shell.user_ns[setup.options.output] = _answer(session, before)
        if outcome.budget:
            print(outcome.budget)
        if outcome.errors:
            failure = "The turn failed: " + "; ".join(outcome.errors)
            if setup.options.raise_errors:
                raise AgentCellError(failure)
            print(failure)


def _prompt(options: CellOptions, body: str | None) -> str:
    if body is None:
        prompt = options.prompt
    elif options.prompt:
        raise AgentCellUsageError(f"{options.prompt.split()[0]!r} is not an option of "
                                  f"%%agent (the prompt is the cell's body)\n{USAGE}")
    else:
        prompt = body
    if not prompt.strip():
        raise AgentCellUsageError(f"the prompt is empty: write it in the cell below the "
                                  f"%%agent line\n{USAGE}")
    return prompt.strip()


def _for_this_turn(session: AgentSession, setup: CellSetup) -> Callable[[], None]:
    """Give the session the cell's approval policy and budget for this turn; returns what
    puts back what it had."""
    policy = session.approval_policy
    agent = session.agent
    budget = agent.turn_budget_usd
    session.approval_policy = _saying_policy(setup)
    if setup.options.budget is not None:
        agent.turn_budget_usd = setup.options.budget

    def restore() -> None:
        session.approval_policy = policy
        agent.turn_budget_usd = budget

    return restore


async def _stopped(cell: _CellTurn) -> None:
    """The cell's earlier turn, still running (a page's cell returns at once), stopped."""
    task = cell.task
    if task is None or task.done():
        return
    cell.session.cancel()
    with contextlib.suppress(asyncio.CancelledError, Exception):
        await task


def _answer(session: AgentSession, before: int) -> str | None:
    """The cell's answer: the text of the last assistant message of its turn."""
    for message in reversed(session.messages[before:]):
        if message.role == "assistant" and message.text.strip():
            return message.text
    return None
