"""Running ``%%agent`` cells: which session a cell's turn goes to, what a run of it again
does, and what the cell shows and leaves behind.

**A cell keeps its session.** Run the first time, a cell starts a session of its own (in
the default store, ``SessionStore()``: ``$NETA_NB_STORE_URL`` when set) — or uses the one
``-s`` names. Run again, it asks again: its earlier turn is rewound, kept in the store as a
branch of the session, and the prompt (as the cell now reads) is sent anew — never a second
session; an agent ``-a`` names that was made anew (Run All) is the one it goes on with.
A cell is known by the id the notebook page sends with each run; run without a page
(nbclient, nbconvert, papermill send none), by its text.

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
from ..chat.view import ChatView
from ..static_form import StaticForm, requested_cell
from .cell_metadata import CellSession, read_cell_session, write_cell_session
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
    return requested_cell(getattr(shell, "kernel", None))


@dataclass
class _CellTurn:
    """What one cell ran last."""

    session: AgentSession
    agent: Agent | None
    """The ``-a`` agent the cell's session was made for (``None``: the default)."""
    catalog: ToolCatalog | None
    names: tuple[str | None, str | None] = (None, None)
    """The variables ``-a`` and ``-c`` named (what tells one agent of a cell from
    another: the objects they hold change when the cell that makes them runs again)."""
    prompt_id: str | None = None
    """The cell's prompt in the session (``None`` until its turn has begun)."""
    task: asyncio.Task[Any] | None = None
    view: ChatView | None = None
    """The cell's chat view on the page, shown again by each run (one widget per cell:
    a view per run would stay bound to the session after its output was replaced)."""

    def shown_in(self) -> ChatView:
        """The cell's chat view, showing its session."""
        if self.view is None:
            self.view = ChatView(self.session)
        elif self.view.session is not self.session:
            self.view.bind(self.session)
        return self.view

    def note_prompt(self, before: int) -> None:
        """The turn begun at message ``before`` has its prompt in the session now."""
        messages = self.session.messages
        if self.prompt_id is None and len(messages) > before:
            self.prompt_id = messages[before].id


@dataclass
class _Started:
    """A cell's turn, started."""

    task: asyncio.Task[Any]
    before: int
    """How many messages the session had before it (its prompt is the next)."""
    restore: Callable[[], None]
    """Gives the session back the approval policy and budget it had."""


@dataclass
class _Outcome:
    """What the cell learns from its turn's events."""

    errors: list[str] = field(default_factory=list)
    budget: str | None = None

    def hear(self, event: Event) -> None:
        if event.type == "error":
            self.errors.append(event.message)
        elif event.type == "warning" and (event.code or "").startswith("budget_reached"):
            self.budget = event.message


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
        self._background: set[asyncio.Future[Any]] = set()  # kept until done

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
        if cell_id is None:
            key = "text:" + hashlib.sha256(f"{line}\n{body}".encode()).hexdigest()
            cell = await self._cell_turn(key, setup)
            await self._run_headless(cell, await self._begin(cell, prompt, setup), setup)
        elif cell_id not in self._cells and setup.session is None and setup.session_id is None:
            self._first_page_run(cell_id, setup, prompt)
        else:
            cell = await self._cell_turn(cell_id, setup)
            display(cell.shown_in())  # type: ignore[no-untyped-call]
            self._follow_on_page(cell, await self._begin(cell, prompt, setup), setup, cell_id)

    async def _cell_turn(self, key: str, setup: CellSetup) -> _CellTurn:
        known = self._cells.get(key)
        if setup.session is not None:
            if known is None or known.session is not setup.session:
                known = _CellTurn(setup.session, None, None)
        elif setup.session_id is not None:
            if known is None or known.session.id != setup.session_id:
                known = _CellTurn(self._stored(setup), setup.agent, setup.catalog,
                                  _names(setup))
        elif known is None or known.names != _names(setup):
            # A cell run with another agent or catalog starts a session for it; the
            # earlier one stays in the store.
            known = _CellTurn(AgentSession(_own_agent(setup), setup.catalog, self.store),
                              setup.agent, setup.catalog, _names(setup))
        elif known.agent is not setup.agent or known.catalog is not setup.catalog:
            # The same names, made anew (the notebook run again: Run All): the cell's
            # session goes on with what they hold now, as a reopened notebook's does.
            await _stopped(known)
            try:
                session = _resumed(known.session.id, self.store, setup)
            except KeyError:  # nothing of it was stored (its turn never began)
                session = AgentSession(_own_agent(setup), setup.catalog, self.store)
            known = dataclasses.replace(known, session=session, agent=setup.agent,
                                        catalog=setup.catalog, task=None)
        self._cells[key] = known
        return known

    async def _begin(self, cell: _CellTurn, prompt: str, setup: CellSetup) -> _Started:
        """Start the cell's turn: its earlier one stopped if it still runs, and rewound
        (kept as a branch) if the session still has it."""
        session = cell.session
        await _stopped(cell)
        if cell.prompt_id is not None and any(message.id == cell.prompt_id
                                              for message in session.messages):
            session.rewind(cell.prompt_id)  # kept as a branch (see the module docstring)
        cell.prompt_id = None
        before = len(session.messages)
        restore = _for_this_turn(session, setup)
        try:
            cell.task = session.start(prompt)
        except BaseException:
            restore()
            raise
        return _Started(cell.task, before, restore)

    def _first_page_run(self, cell_id: str, setup: CellSetup, prompt: str) -> None:
        """The first run of a cell in this kernel, from a page: the cell's metadata may
        name its session (a notebook reopened). The page answers through the cell's chat
        view, which is shown first — bound to a session stored nowhere until the answer
        says which session the cell goes on with — and answers only after the cell has
        returned, so the turn starts in the background."""
        agent = _own_agent(setup)
        view = ChatView(AgentSession(agent, setup.catalog, None))
        display(view)  # type: ignore[no-untyped-call]
        task = asyncio.ensure_future(self._reopen(cell_id, view, agent, setup, prompt))
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def _reopen(self, cell_id: str, view: ChatView, agent: Agent, setup: CellSetup,
                      prompt: str) -> None:
        placeholder = view.session
        kept = await read_cell_session(placeholder.notebook_page if placeholder else None,
                                       cell_id)
        session: AgentSession | None = None
        if kept is not None and self.store.get_session(kept.session_id) is not None:
            try:
                session = _resumed(kept.session_id, self.store, setup)
            except Exception as exc:  # busy elsewhere, damaged: the cell starts anew
                view.show_notice(f"This cell's session {kept.session_id} could not be "
                                 f"resumed ({exc}); a new session starts.", tone="warning")
        cell = _CellTurn(session or AgentSession(agent, setup.catalog, self.store),
                         setup.agent, setup.catalog, _names(setup),
                         prompt_id=kept.prompt_id if session is not None and kept else None,
                         view=view)
        self._cells[cell_id] = cell
        cell.shown_in()
        try:
            started = await self._begin(cell, prompt, setup)
        except Exception as exc:  # a mention that does not resolve: said where it shows
            view.show_notice(str(exc))
            return
        self._follow_on_page(cell, started, setup, cell_id)

    def _stored(self, setup: CellSetup) -> AgentSession:
        session_id = setup.session_id
        assert session_id is not None
        for cell in self._cells.values():
            if cell.session.id == session_id:
                return cell.session
        if self.store.get_session(session_id) is not None:
            return _resumed(session_id, self.store, setup)
        try:
            return AgentSession(_own_agent(setup), setup.catalog, self.store,
                                session_id=session_id)
        except ValueError as exc:
            raise AgentCellUsageError(f"-s {session_id}: {exc}\n{USAGE}") from None

    def _follow_on_page(self, cell: _CellTurn, started: _Started, setup: CellSetup,
                        cell_id: str) -> None:
        """A page's cell has returned: when its turn ends, set ``-o`` and keep the session
        in the cell's metadata."""
        session = cell.session
        unsubscribe = session.subscribe(lambda _event: cell.note_prompt(started.before))

        def ended(_task: asyncio.Task[Any]) -> None:
            unsubscribe()
            started.restore()
            cell.note_prompt(started.before)
            if setup.options.output:
                self._shell.user_ns[setup.options.output] = _answer(session, started.before)
            kept = CellSession(session.id, cell.prompt_id)
            write = asyncio.ensure_future(write_cell_session(session.notebook_page, cell_id,
                                                             kept))
            self._background.add(write)
            write.add_done_callback(self._background.discard)

        started.task.add_done_callback(ended)

    async def _run_headless(self, cell: _CellTurn, started: _Started,
                            setup: CellSetup) -> None:
        session, before = cell.session, started.before
        outcome = _Outcome()
        form = StaticForm(lambda: cell_form(session, before))

        def heard(event: Event) -> None:
            cell.note_prompt(before)
            outcome.hear(event)
            form.refresh()

        unsubscribe = session.subscribe(heard)
        form.display()
        try:
            await started.task
        finally:
            unsubscribe()
            started.restore()
            cell.note_prompt(before)
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


def _resumed(session_id: str, store: SessionStore, setup: CellSetup) -> AgentSession:
    """A stored session, with ``-a``'s agent (a copy) when given, else its own."""
    agent = dataclasses.replace(setup.agent) if setup.agent is not None else None
    return AgentSession.resume(session_id, store, agent=agent, catalog=setup.catalog)


def _own_agent(setup: CellSetup) -> Agent:
    """The agent of a session the cell makes: a copy of ``-a``'s (the cell's budget is set
    on it, never on the user's), or the default one."""
    return (dataclasses.replace(setup.agent) if setup.agent is not None
            else Agent(DEFAULT_AGENT_NAME))


def _names(setup: CellSetup) -> tuple[str | None, str | None]:
    return setup.options.agent, setup.options.catalog


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
    """The cell's answer: the text of the last assistant message of its turn — none when
    the turn was cut short (stopped, failed, killed): what had streamed is kept in the
    chat, but it is no answer."""
    replies = [message for message in session.messages[before:] if message.role == "assistant"]
    if replies and replies[-1].metadata.interrupted:
        return None
    for message in reversed(replies):
        if message.text.strip():
            return message.text
    return None
