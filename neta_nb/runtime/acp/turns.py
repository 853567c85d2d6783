"""AcpTurns: the turns of a session whose agent is an outside agent over the Agent Client
Protocol, written into the session's own state as the agent reports them.

What the agent sends becomes what a native turn makes, through the same calls:

* ``agent_message_chunk`` → the answer's text (``token``), ``agent_thought_chunk`` → its
  thinking (``thinking_delta``, ``thinking_done``), both streamed into the turn's response
  as a model's are (``turn.assembler``: what a Stop keeps);
* ``tool_call`` / ``tool_call_update`` → a tool card on the assistant message (a
  :class:`~neta_nb.messages.ToolExecution` with its title, input, status and output;
  a ``diff`` as a unified diff), and its result in the history when it ends — the agent
  ran it, the session's tool runner never does;
* ``plan`` → the session's plan (``todo_update``, one card updated in place), kept in
  the history as a native plan is (an internal ``todo`` call and its result);
* ``session/request_permission`` → the session's approval (``approval_request``,
  answered with ``session.approve``); the agent's own option is picked by its kind;
* the prompt's usage → the turn's figures (``token_update``); ``usage_update`` → the
  context window the agent reported; ``available_commands_update`` and
  ``current_mode_update`` → :attr:`AcpTurns.controls` (the chat input's ``/`` menu and
  mode selector; :meth:`AcpTurns.set_mode` asks for another mode).

Responses are cut where a native turn's are: text and thinking collect until the agent
calls a tool; the message (with that call and any made beside it) is then appended, and
what the agent says after its tools ran starts the next one.

Stop sends ``session/cancel``, answers the permission requests still open as cancelled,
gives the agent a moment to end its prompt, then ends its process (and everything it
started): the next turn starts it again and continues the same agent session through
``session/load`` when the agent offers it (claude-agent-acp answers the prompt after a
cancel at once, so a session is never reused across a Stop in the same process).
"""

from __future__ import annotations

import asyncio
import contextlib
import difflib
import json
import math
import os
import re
import shlex
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from ...encodable import encodable, encodable_value
from ...events import (
    ApprovalPreview,
    ProgressEvent,
    ToolCallEvent,
    ToolResultEvent,
    WarningEvent,
    thinking_delta_event,
    token_event,
)
from ...messages import (
    DocumentPart,
    FileLocation,
    FileTextPart,
    ImagePart,
    MentionPart,
    Message,
    ToolCallPart,
    ToolExecution,
    ToolResultPart,
    Usage,
    new_id,
)
from ...providers.base import ProviderError, ResponseAssembler
from ..session.deps import CountUsage, OutsideTurns, TurnDeps
from ..session.spending import reached
from ..session.state import SessionState
from ..session.tool_calls.tool_limits import ToolLimits, bound_result
from ..session.turn import Turn
from .connection import AcpConnection, cancelled_outcome, chosen_outcome
from .controls import AgentControls
from .model import AcpModel
from .servers import NOTEBOOK_SERVER, McpServerSpec, granted_servers

if TYPE_CHECKING:
    from acp.schema import PermissionOption, RequestPermissionResponse, ToolCallUpdate

    from .agent import AcpAgent
    from .notebook_server import SessionNotebook

__all__ = ["BUDGET_GRACE", "STOP_GRACE", "AcpTurns"]

STOP_GRACE = 2.0
"""Seconds the agent gets after ``session/cancel`` to end its prompt before its process
is ended."""
BUDGET_GRACE = 1.0
"""Seconds the agent gets to answer its prompt once the cost it said reached a budget,
before the turn is stopped: an agent that says its cost as it answers is not cut."""
_MOST_SAID_COST = 1e7
"""A said total above this many USD is not a cost (a unit mistaken, a broken number)."""

_RESULT_CHARS = 100_000
_CANCELLED_TEXT = "This call did not finish: the user cancelled the turn."
_ENDED_TEXT = "This call did not finish: the agent ended its turn without saying."


@dataclass(eq=False)
class _Call:
    """One of the agent's tool calls: its card, and what the agent reported of it."""

    message: Message
    part: ToolCallPart
    execution: ToolExecution
    content: list[Any] = field(default_factory=list)
    raw_output: Any = None
    rejected: bool = False
    ended: bool = False
    notebook: str | None = None
    """The notebook tool this is a call of, when it is a call of the notebook's server."""
    taken: bool = False
    """The agent's call of the notebook's server, whose card the call itself made
    (:meth:`AcpTurns.notebook_call`): what the agent reports of it changes nothing."""


class AcpTurns:
    """The turns of one session of ``agent`` (see the module)."""

    def __init__(self, agent: AcpAgent, state: SessionState, deps: TurnDeps) -> None:
        self._agent = agent
        self._state = state
        self._deps = deps
        working_dir = deps.workspace.working_dir
        self._cwd = Path(agent.cwd) if agent.cwd is not None else working_dir
        self._notebook: SessionNotebook | None = None
        """The session as the notebook server's client, once its agent was given it."""
        self._notebook_calls: set[asyncio.Future[Any]] = set()
        self._model_id = f"acp:{agent.name}"
        self._connection: AcpConnection | None = None
        self.session_id: str | None = None
        """The agent's own session id (``session/new``), kept across its restarts."""
        self._loading = False
        self._turn: Turn | None = None
        self._calls: dict[str, _Call] = {}
        self._asking: set[asyncio.Future[Any]] = set()
        self._plans = 0
        self._cost_said: float | None = None
        """The most the running agent has said its session cost (``usage_update``'s
        running total, in USD), or ``None`` before it said any. A total is its
        process's: Claude Code 0.23.1, restarted to continue its session
        (``session/load``), starts its total again."""
        self._turn_cost: float | None = None
        """What the current turn's calls cost as the agent said it (the rises of its
        running total), or ``None`` while it said nothing of it."""
        self._cut = False
        """The turn's said cost reached a budget: the agent is asked nothing more — its
        permission requests and its calls of the notebook's server are refused — while
        what it says and reports of its calls still shows until it answers."""
        self._budget_spent: tuple[float, float] | None = None
        """What the turn and the session had spent when the said cost reached a budget,
        until that budget's warning is said."""
        self._asked: asyncio.Future[Any] | None = None
        """The current turn's prompt, until the agent answers it."""
        self._budget_timer: asyncio.TimerHandle | None = None
        """Set when the said cost reached a budget: stops the turn unless the agent
        answers its prompt first (see :meth:`_cost_reported`)."""
        self.controls = AgentControls(agent.mode, self.set_mode)
        """The agent's ``/`` commands and session modes, as the chat input shows them."""
        self._why_new = "it has no session of this chat to continue"
        self._fork_of: str | None = None
        """The agent's session this chat's is to start as a copy of (``session/fork``):
        this chat is a fork of a whole chat of the same agent (:meth:`fork_from`)."""
        self._copying: asyncio.Task[None] | None = None
        """The copy of that session being made as the fork is made (:meth:`fork_from`)."""
        self._copies: set[asyncio.Task[None]] = set()
        """Copies of this chat's agent session being made for its forks: its next prompt
        waits for them, so that they copy the chat as it was when forked."""
        state.rewind_listeners.append(self._rewound)

    @property
    def commands(self) -> dict[str, str]:
        """The agent's ``/`` commands (name → description), as it last said them."""
        return self.controls.commands

    @property
    def mode(self) -> str | None:
        """The session mode the agent is in, as far as it said (or was asked)."""
        return self.controls.mode

    async def set_mode(self, mode: str) -> None:
        """Put the agent's session in ``mode`` (``session/set_mode``, allowed while a
        prompt runs too); while the agent is not running, it is asked for it when it
        starts. A mode the agent does not offer, or its refusal, raises
        :class:`ProviderError` and changes nothing."""
        known = [m["id"] for m in self.controls.modes]
        if known and mode not in known:
            raise ProviderError(f"{self._agent.name} has no mode {mode!r}; its modes: "
                                f"{', '.join(known)}")
        connection, session_id = self._connection, self.session_id
        if connection is not None and connection.alive and session_id is not None:
            await connection.set_mode(session_id, mode)
        self.controls.mode_said(mode)

    @property
    def pid(self) -> int | None:
        """The agent's process id while it runs."""
        connection = self._connection
        return connection.process.pid if connection is not None and connection.alive else None

    # --- the turn -----------------------------------------------------------------------
    async def run(self, turn: Turn, prompt: Message, count_usage: CountUsage) -> Message | None:
        self._turn, self._calls, self._turn_cost = turn, {}, None
        self._cut, self._budget_spent = False, None
        try:
            waiting = [task for task in (self._copying, *self._copies) if task is not None]
            if waiting:  # this chat's copy, or its forks' copies of it, first
                await asyncio.wait(waiting)
            connection, session_id = await self._ready()
            asked = self._asked = asyncio.ensure_future(connection.prompt(
                session_id, self._prompt_blocks(prompt, connection)))
            try:
                response = await asyncio.shield(asked)
            except asyncio.CancelledError:
                await self._stop(connection, session_id, asked)
                self._end_cut_short(turn, count_usage, "cancelled")
                raise
            except ProviderError as error:
                self._close_open_calls(_ENDED_TEXT)
                self._end_cut_short(turn, count_usage, "error", encodable(error.message))
                raise
            self._end_budget_wait()
            self._close_response()
            self._close_open_calls(_ENDED_TEXT)
            usage = _usage(response.usage)
            spending = self._state.spending
            self._turn_costs_kept(turn)
            last = turn.message
            if last is not None:
                last.metadata.stop_reason = response.stop_reason
                if usage is not None:
                    last.metadata.usage = usage
                cost = (spending.cost_of(usage) if spending.price is not None
                        else self._turn_cost)
                if cost is not None:
                    last.metadata.cost_usd = cost
                self._state.history.changed(last)
            count_usage(turn, usage, reported_cost=self._turn_cost)
            answered = response.stop_reason == "end_turn"
            turn.stop_reason = "budget" if turn.budget_stop else response.stop_reason
            self._budget_spent = None  # said below, as the agent ended its turn
            # The budgets after the answer: their warnings (a whole answer: nothing cut).
            spending.over_budget(self._deps.workspace.agent, turn.spend,
                                 self._deps.crew.turn_usage, answered=answered)
            return last
        finally:
            self._end_budget_wait()
            self._turn = None

    def _prompt_blocks(self, prompt: Message, connection: AcpConnection
                       ) -> list[str | tuple[str, str]]:
        """The prompt as the agent reads it: what the user typed, then what its mentions
        referred to and the text files it carries, each the block a native model reads;
        its images as images to an agent that takes them — else (and for a PDF, which
        no agent is given) their names, and the chat says they were not sent."""
        blocks: list[str | tuple[str, str]] = [prompt.text] if prompt.text else []
        left_out: list[str] = []
        missing: list[str] = []
        for part in prompt.parts:
            if isinstance(part, MentionPart | FileTextPart):
                blocks.append(part.prompt_text())
            elif isinstance(part, ImagePart | DocumentPart) and part.data is None:
                name = part.name or part.media_type
                missing.append(name)
                blocks.append(f"[{name}: attached in the chat; its stored file is missing]")
            elif isinstance(part, ImagePart) and part.data and connection.takes_images:
                blocks.append((part.media_type, part.data))
            elif isinstance(part, ImagePart | DocumentPart):
                name = part.name or part.media_type
                left_out.append(name)
                blocks.append(f"[{name}: attached in the chat, not sent to you]")
        if left_out:
            self._state.emit(WarningEvent(message=encodable(
                f"{self._agent.name} was not sent {', '.join(left_out)}: it takes "
                f"{'no PDF documents' if connection.takes_images else 'no images or PDFs'} "
                f"in a prompt.")))
        if missing:
            self._state.emit(WarningEvent(message=encodable(
                f"{self._agent.name} was not sent {', '.join(missing)}: the stored file "
                f"is missing (the store's folder was moved or cleaned).")))
        return blocks or [""]

    async def _ready(self) -> tuple[AcpConnection, str]:
        """The running agent and its session: started (and the session continued, or a
        new one opened) when it is not running."""
        connection = self._connection
        if connection is not None and connection.alive and self.session_id is not None:
            return connection, self.session_id
        if connection is not None:
            await connection.close()
        agent = self._agent
        servers, left_out = await self._mcp_servers()
        connection = self._connection = AcpConnection(
            agent.name, agent.command, env=agent.env, cwd=self._cwd, listener=self,
            mcp_servers=servers)
        try:
            await connection.open()
            why = await self._continued(connection)
            if why is not None:
                self.session_id = await connection.new_session(self._cwd, self.mode)
                if len(self._state.history.messages) > 1:  # earlier turns than this one
                    self._state.emit(WarningEvent(message=encodable(
                        f"{agent.name} started a new session of its own ({why}): it does "
                        f"not remember the earlier turns of this chat.")))
        except BaseException:
            await connection.close()
            raise
        self.controls.modes_said(connection.modes, connection.current_mode)
        model = self._agent.model
        if isinstance(model, AcpModel):
            model.takes_images = connection.takes_images
        self._cost_said = None  # a new process's total starts again (see __init__)
        for why in [*left_out, *connection.left_out]:
            self._state.emit(WarningEvent(message=encodable(
                f"{agent.name} was not given the MCP server {why}.")))
        session_id = self.session_id
        assert session_id is not None  # continued or new
        return connection, session_id

    async def _mcp_servers(self) -> tuple[list[McpServerSpec], list[str]]:
        """The MCP servers the agent is given: its own (``AcpAgent(mcp_servers=...)``),
        the catalog's it is granted, and the notebook's when the chat is on a page that
        answers; and why one was left out."""
        given = list(self._agent.mcp_servers)
        names = {spec.name for spec in given}
        place = self._deps.workspace
        for spec in granted_servers(place.catalog, self._deps.toolbox.resolution().names):
            if spec.name not in names:
                given.append(spec)
                names.add(spec.name)
        left_out: list[str] = []
        if place.page_answers and NOTEBOOK_SERVER not in names:
            try:
                notebook = self._notebook or self._session_notebook()
                given.append(await notebook.spec())
            except (ImportError, OSError, RuntimeError) as error:
                left_out.append(f"{NOTEBOOK_SERVER} (the notebook's tools: {error})")
        return given, left_out

    def _session_notebook(self) -> SessionNotebook:
        # The notebook's server needs the MCP SDK, an extra of its own (neta-nb[mcp]):
        # imported where a page asks for it, and its absence said then.
        from .notebook_server import SessionNotebook

        self._notebook = SessionNotebook(self._agent.name, self._deps, self.notebook_call)
        return self._notebook

    async def _continued(self, connection: AcpConnection) -> str | None:
        """Continue the agent's session in ``connection`` (``session/load``); ``None``
        when it went on, else why it could not (the agent died before keeping it, it
        does not offer to, the chat went back to an earlier message)."""
        if self.session_id is None and self._fork_of is not None:
            return await self._forked(connection, self._fork_of)
        if self.session_id is None:
            return self._why_new
        if not connection.can_load:
            return "it does not offer to continue a session (session/load)"
        self._loading = True
        try:
            # The replayed history's updates are read (and ignored) before the answer to
            # the load is: the connection hands them over in order.
            await connection.load_session(self.session_id, self._cwd, self.mode)
            return None
        except ProviderError as error:
            if not connection.alive:
                raise
            return f"it could not continue its session: {error.message}"
        finally:
            self._loading = False

    async def _forked(self, connection: AcpConnection, fork_of: str) -> str | None:
        """Start this chat's agent session as a copy of ``fork_of`` (``session/fork``);
        ``None`` when it did, else why it could not. Tried once: a copy made later would
        hold what the chat forked from said since."""
        self._fork_of = None
        if not connection.can_fork:
            return "it does not offer to copy a session (session/fork)"
        try:
            self.session_id = await connection.fork_session(fork_of, self._cwd, self.mode)
        except ProviderError as error:
            if not connection.alive:
                raise
            return f"it could not copy the session this chat was forked from: {error.message}"
        return None

    def fork_from(self, other: OutsideTurns) -> None:
        """This chat is a fork of all of ``other``'s (the same agent's): its agent's
        session starts as a copy of ``other``'s, when the agent offers to copy one, and
        remembers what was said there. The copy is made now, in an agent process of this
        chat's own (``other``'s next prompt waits for it), so that it holds the chat as
        it was when forked; without a running event loop, at this chat's first turn."""
        if not isinstance(other, AcpTurns):
            return
        self._fork_of = other.session_id or other._fork_of
        if self._fork_of is None:
            self._why_new = "the chat it was forked from had no session of its own to copy"
            return
        try:
            loop = asyncio.get_running_loop()
        except RuntimeError:
            return
        task = self._copying = loop.create_task(self._copy_now(),
                                                name=f"neta_nb copy of {self._fork_of}")
        other._copies.add(task)
        task.add_done_callback(other._copies.discard)

    async def _copy_now(self) -> None:
        """:meth:`fork_from`'s copy: this chat's agent started, its session copied. A
        failure is the first turn's to say (it starts the agent again, and a new
        session, saying why)."""
        try:
            await self._ready()
        except Exception as error:  # said by the first turn, which tries again
            self._why_new = f"its copy of the chat's session failed ({error})"
            self._fork_of = None
            return
        self._state.save_record()  # the copy's id: a resumed fork continues it

    def _rewound(self) -> None:
        """The chat went back to an earlier message (rewind, retry, edit): the agent
        cannot go back with it, so its next turn starts a session of its own."""
        if self._fork_of is not None or self._copying is not None:
            # A fork gone back before its first turn: the copy would hold too much.
            if self._copying is not None:
                self._copying.cancel()
                self._copying = None
            self._fork_of = None
            self._why_new = "this chat went back to an earlier message"
        if self.session_id is not None:
            self.session_id = None
            self._why_new = "this chat went back to an earlier message"
            self.close()

    async def _stop(self, connection: AcpConnection, session_id: str,
                    asked: asyncio.Future[Any]) -> None:
        """Stop: see the module's docstring. What the agent sends from now on is not
        shown: the turn is over."""
        self._turn = None
        for asking in [*self._asking, *self._notebook_calls]:
            asking.cancel()
        await connection.cancel(session_id)
        with contextlib.suppress(BaseException):
            await asyncio.wait([asked], timeout=STOP_GRACE)
        asked.cancel()
        self._close_open_calls(_CANCELLED_TEXT, cancelled=True)
        await connection.close()

    def close(self) -> None:
        """End the agent: gently on a running loop (it keeps its session to continue;
        see :meth:`AgentProcess.close`), else at once. Its token of the notebook's
        server is withdrawn (the next start is given a new one)."""
        if self._copying is not None:
            self._copying.cancel()
        for asking in [*self._asking, *self._notebook_calls]:
            asking.cancel()
        if self._notebook is not None:
            self._notebook.release()
        if self._connection is not None:
            self._connection.close_soon()

    async def aclose(self) -> None:
        """End the agent (gently, then surely) and wait until its process is reaped."""
        if self._copying is not None:
            self._copying.cancel()
            with contextlib.suppress(BaseException):
                await self._copying
        for asking in [*self._asking, *self._notebook_calls]:
            asking.cancel()
        if self._notebook is not None:
            self._notebook.release()
        if self._connection is not None:
            await self._connection.close()

    # --- what the agent sends -----------------------------------------------------------
    def on_chunk(self, session_id: str, text: str, *, thinking: bool) -> None:
        turn = self._turn
        if turn is not None and not self._loading and session_id == self.session_id:
            self._stream(turn, text, thinking=thinking)

    def on_update(self, session_id: str, update: Any) -> None:
        kind = getattr(update, "session_update", None)
        # Of the agent's session, not of a turn: sent as the session opens too, maybe
        # before the answer that names it has been read (one session per process).
        if kind == "available_commands_update":
            self.controls.commands_said({encodable(c.name): encodable(c.description or "")
                                         for c in update.available_commands})
            return
        if kind == "current_mode_update":
            self.controls.mode_said(encodable(update.current_mode_id))
            return
        turn = self._turn
        if turn is None or self._loading or session_id != self.session_id:
            return  # a replayed history (session/load), or a late word after the turn
        if kind == "agent_message_chunk":  # not text (an image…): nothing to show yet
            self._stream(turn, _text_of(update.content), thinking=False)
        elif kind == "agent_thought_chunk":
            self._stream(turn, _text_of(update.content), thinking=True)
        elif kind in ("tool_call", "tool_call_update"):  # a call may start finished
            self._call_changed(turn, update)
        elif kind == "plan":
            self._plan(turn, update.entries)
        elif kind == "usage_update":
            size = getattr(update, "size", None)
            if isinstance(size, int) and size > 0:
                self._state.meter.set_window(size, assumed=False)
            cost = getattr(update, "cost", None)
            if cost is not None:
                self._cost_reported(turn, cost.amount, cost.currency)

    def _cost_reported(self, turn: Turn, amount: float, currency: str) -> None:
        """The agent said what its session has cost so far (a running total): the turn's
        calls cost its rise since the most it said before (a total that dips counts
        nothing until it passes that again; a new process's starts at 0). With no price
        of the user's, that is the turn's cost; a budget it reaches ends the turn there:
        the agent is asked nothing more (``_cut``), what it says meanwhile still shows,
        and if it has not answered its prompt within :data:`BUDGET_GRACE` seconds, the
        turn is stopped as Stop stops it (its ``session/cancel``). An agent that says its
        cost as it answers (Claude Code) answers within that: its whole answer is kept,
        the warning says nothing was cut.
        A total in another currency than USD, or not a sum of money, is not taken."""
        if currency.upper() != "USD" or not math.isfinite(amount) or not \
                0 <= amount <= _MOST_SAID_COST:
            return
        said = self._cost_said
        rise = amount if said is None else max(0.0, amount - said)
        self._cost_said = amount if said is None else max(said, amount)
        self._turn_cost = (self._turn_cost or 0.0) + rise
        spending, deps = self._state.spending, self._deps
        agent = deps.workspace.agent
        if spending.price is not None or turn.cancel_requested or turn.budget_stop:
            return  # with a price, the usage is priced at the turn's end
        if agent.budget_usd is None and agent.turn_budget_usd is None:
            return
        running = deps.crew.turn_usage
        paid = spending.paid(running)
        turn_spent = self._turn_cost + (running.cost_usd or 0.0)
        session_spent = paid.usd + self._turn_cost
        if not any(budget is not None and reached(spent, budget) for budget, spent in (
                (agent.budget_usd, session_spent), (agent.turn_budget_usd, turn_spent))):
            # Not reached: its warnings at 80 %, said as the turn goes.
            spending.check(agent, turn_spent, session_spent, unknown=paid.unknown,
                           rewound=spending.rewound.usd)
            return
        turn.budget_stop = True
        self._cut = True
        self._budget_spent = (turn_spent, session_spent)
        self._budget_timer = asyncio.get_running_loop().call_later(
            BUDGET_GRACE, self._budget_stop, turn)

    def _budget_stop(self, turn: Turn) -> None:
        """The agent did not answer within :data:`BUDGET_GRACE` seconds of its cost
        reaching a budget: the budget's warning, then the turn stops as Stop stops it."""
        self._budget_timer = None
        if self._turn is not turn or (self._asked is not None and self._asked.done()):
            return  # the agent answered (in this very step): its answer ends the turn
        self._say_budget_reached()
        self._state.cancel(self._deps.crew)

    def _say_budget_reached(self) -> None:
        """The warning of the budget the said cost reached (once): the turn did not end
        with the agent's whole answer (stopped by the budget, by Stop, by a failure)."""
        spent, self._budget_spent = self._budget_spent, None
        if spent is None:
            return
        spending = self._state.spending
        spending.check(self._deps.workspace.agent, spent[0], spent[1],
                       unknown=spending.paid(self._deps.crew.turn_usage).unknown,
                       rewound=spending.rewound.usd)

    def _end_budget_wait(self) -> None:
        if self._budget_timer is not None:
            self._budget_timer.cancel()
            self._budget_timer = None

    def _turn_costs_kept(self, turn: Turn) -> None:
        """The turn's cost is kept on its last message (below); its other responses say
        they cost nothing of their own, so a resumed session adds the turn up to what it
        cost rather than to unknown. Only when that cost is known."""
        if self._state.spending.price is None and self._turn_cost is None:
            return
        last = turn.message
        for message in reversed(self._state.history.messages):
            if message.id == turn.prompt_id:
                break
            if message.role == "assistant" and message is not last \
                    and message.metadata.cost_usd is None:
                message.metadata.cost_usd = 0.0
                self._state.history.changed(message)

    def _end_cut_short(self, turn: Turn, count_usage: CountUsage,
                       why: Literal["cancelled", "error"], error: str | None = None) -> None:
        """A turn stopped (Stop, a budget) or failed before the agent answered its prompt:
        what streamed becomes its message, marked so. What the agent said the turn cost
        (with no price of the user's) is counted — its tokens unknown: the agent reports
        them with its answer — and kept on the turn's last message, so a budget and a
        resumed session know it was spent; else, when something streamed, the turn
        counts as a call of unknown cost (never a known $0), as a native one cut short."""
        self._say_budget_reached()  # Stop or a failure within the budget's grace
        message = self._close_response(turn)
        if message is not None:
            message.metadata.interrupted = why
            message.metadata.error = error
        self._turn_costs_kept(turn)
        cost = self._turn_cost
        if cost is None or self._state.spending.price is not None:
            if message is not None:
                self._state.history.changed(message)
                count_usage(turn, None)
            return
        count_usage(turn, None, reported_cost=cost)
        # Kept on the turn's last response; when nothing streamed, on its prompt.
        history = self._state.history
        last = turn.message
        if last is None and turn.prompt_id:
            index = history.index_of(turn.prompt_id)
            last = history.messages[index] if index is not None else None
        if last is not None:
            last.metadata.cost_usd = (last.metadata.cost_usd or 0.0) + cost
            history.changed(last)

    def _stream(self, turn: Turn, text: str, *, thinking: bool) -> None:
        if not text:
            return
        if not text.isascii():  # ASCII, the common case, cannot hold a lone surrogate
            text = encodable(text)
        emit = self._state.emit
        assembler = turn.assembler
        if assembler is None:
            assembler = turn.assembler = ResponseAssembler()
            turn.message = None
        if thinking:
            assembler.add_text(text, thinking=True)
            turn.thinking_open = True
            emit(thinking_delta_event(text))
        else:
            assembler.add_text(text)
            if turn.thinking_open:
                turn.close_thinking(emit)
            emit(token_event(text))
        if turn.draft_timer is None and self._state.saved.store is not None:
            # A dying kernel keeps what streamed (a checkpoint every half second at most).
            turn.checkpoint_soon(self._state.saved.draft)

    def _close_response(self, turn: Turn | None = None) -> Message | None:
        """The response streamed so far in ``turn`` (the current one by default) as a
        message in the history (``None``: nothing streamed since the last one)."""
        turn = turn or self._turn
        assert turn is not None
        turn.close_thinking(self._state.emit)
        assembler = turn.assembler
        if assembler is None:
            return None
        message = Message.assistant(assembler.snapshot(), model=self._model_id)
        turn.assembler = None
        turn.message = message
        turn.stop_draft_timer()
        self._state.history.append(message, replaces_draft=True)
        return message

    def _message_for_call(self, turn: Turn) -> Message:
        """The assistant message a new call belongs to: the response streamed so far, or
        the last one while its calls run (calls made side by side), else a new one."""
        message = self._close_response()
        if message is not None:
            return message
        last = turn.message
        if last is not None and not any(
                call.ended for call in self._calls.values() if call.message is last):
            return last
        message = turn.message = Message.assistant([], model=self._model_id)
        self._state.history.append(message)
        return message

    def _call_started(self, turn: Turn, update: Any) -> _Call:
        call_id = encodable(str(update.tool_call_id))
        known = self._calls.get(call_id)
        if known is not None:
            self._apply(known, update)
            return known
        message = self._message_for_call(turn)
        name = _tool_name(update)
        args = _args(update.raw_input)
        part = ToolCallPart(id=call_id, name=name, args=args)
        execution = ToolExecution(id=call_id, name=name, label=encodable(update.title or name),
                                  args=args)
        message.parts.append(part)
        message.metadata.tool_executions.append(execution)
        call = self._calls[call_id] = _Call(message, part, execution,
                                            notebook=_notebook_tool(update))
        if update.content:
            call.content = list(update.content)
        if getattr(update, "raw_output", None) is not None:
            call.raw_output = update.raw_output
        if update.locations:
            execution.locations = _locations(update.locations)
        self._state.history.changed(message)
        self._state.emit(ToolCallEvent(id=call_id, name=name, label=execution.label,
                                       args=args))
        return call

    def _call_changed(self, turn: Turn, update: Any) -> None:
        call = self._calls.get(encodable(str(update.tool_call_id)))
        if call is not None and call.taken:
            return
        if call is None:  # a tool_call, or a call reported by its updates alone
            call = self._call_started(turn, update)
        else:
            self._apply(call, update)
        if update.status in ("completed", "failed"):
            self._end(call, failed=update.status == "failed")
        elif update.status == "in_progress" and call.execution.status == "waiting":
            self._running(call)

    def _apply(self, call: _Call, update: Any) -> None:
        """What an update changes of a call's card (fields it leaves out stay)."""
        execution = call.execution
        if call.notebook is None:
            call.notebook = _notebook_tool(update)
        if update.title:
            execution.label = encodable(update.title)
        if update.raw_input is not None:
            execution.args = call.part.args = _args(update.raw_input)
        if update.content is not None:
            call.content = list(update.content)
        if getattr(update, "raw_output", None) is not None:
            call.raw_output = update.raw_output
        if update.locations is not None:
            execution.locations = _locations(update.locations)
        if not call.ended:
            self._state.history.changed(call.message)

    def _running(self, call: _Call) -> None:
        call.execution.status = "running"
        self._state.history.changed(call.message)
        # The card leaves "waiting" now (the views redraw a card on its progress).
        self._state.emit(ProgressEvent(id=call.part.id, percent=0.0))

    def _end(self, call: _Call, *, failed: bool, text: str | None = None,
             cancelled: bool = False) -> None:
        if call.ended:
            return
        call.ended = True
        execution = call.execution
        result = bound_result(encodable(text if text is not None else _result_text(call)),
                              _RESULT_CHARS)
        execution.status = ("cancelled" if cancelled else "rejected" if call.rejected
                            else "error" if failed else "done")
        execution.result = result
        state = self._state
        state.emit(ToolResultEvent(id=call.part.id, name=call.part.name, result=result,
                                   is_error=failed))
        state.history.changed(call.message)
        state.history.append(Message.tool_result(call.part.id, call.part.name, result,
                                                 is_error=failed))

    def _close_open_calls(self, text: str, *, cancelled: bool = False) -> None:
        for call in list(self._calls.values()):
            if not call.ended:
                self._end(call, failed=True, text=text, cancelled=cancelled)

    def _plan(self, turn: Turn, entries: list[Any]) -> None:
        """The agent's plan as the session's: written, said (``todo_update``) and kept in
        the history as a ``todo`` call and its result, as a native plan is — so a resume
        and a view built from the stored history show it (the call is internal: no card)."""
        state = self._state
        items = state.todo.write([{"id": str(n), "content": encodable(entry.content),
                                   "status": entry.status}
                                  for n, entry in enumerate(entries, 1)])
        state.todo_written()
        message = self._message_for_call(turn)
        self._plans += 1
        todos = [item.model_dump() for item in items]
        part = ToolCallPart(id=f"acp_plan_{self._plans}", name="todo", args={"todos": todos})
        message.parts.append(part)
        self._calls[part.id] = _Call(message, part, ToolExecution(
            id=part.id, name="todo", label="todo", status="done"), ended=True)
        state.history.changed(message)
        state.history.append(Message.tool_result(part.id, "todo", json.dumps(
            {"todos": todos, "summary": state.todo.summary().model_dump()})))

    # --- the agent's calls of the notebook's server ---------------------------------------
    async def notebook_call(self, name: str, args: dict[str, Any]) -> ToolResultPart:
        """A call the agent made of the notebook's MCP server (on the kernel's loop), run
        as a call of the current turn — as a native agent's: its card (the one the agent
        reported for it, taken over, or a new one), the session's grants and approval,
        an edit's diff proposal decided in this chat, its result in the history."""
        turn = self._turn
        if turn is None or self._loading:
            return ToolResultPart(tool_call_id="", name=name, is_error=True, content=(
                f"{name} was not run: the notebook's tools answer only while the chat "
                f"has a turn of yours running."))
        if self._cut:
            return ToolResultPart(tool_call_id="", name=name, is_error=True, content=(
                f"{name} was not run: this turn reached its budget."))
        message, part = self._notebook_card(turn, name, args)
        agent, deps = self._agent, self._deps
        running = asyncio.ensure_future(deps.tools.run_call(
            message, part, deps.toolbox.resolution(), live_calls=turn.live_calls,
            limits=ToolLimits(timeout=agent.tool_timeout,
                              max_result_chars=agent.max_tool_result_chars)))
        self._notebook_calls.add(running)
        try:
            result = await running
        except asyncio.CancelledError:
            running.cancel()
            self._notebook_stopped(message, part)
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the server gave the call up (stopped, its connection gone)
            # Stop: the agent reads that the call did not finish.
            return ToolResultPart(tool_call_id=part.id, name=name, is_error=True,
                                  content=_CANCELLED_TEXT)
        finally:
            self._notebook_calls.discard(running)
        self._state.history.append(result)
        return result.tool_results[0]

    def _notebook_card(self, turn: Turn, name: str, args: dict[str, Any]
                       ) -> tuple[Message, ToolCallPart]:
        """Where a call of the notebook's server is shown: the card of the agent's own
        report of that call if one is open (its card is made again by the call itself,
        with the notebook tool's name and review), else a new one."""
        for call in reversed(list(self._calls.values())):
            if not call.ended and call.notebook == name:
                executions = call.message.metadata.tool_executions
                executions[:] = [r for r in executions if r is not call.execution]
                call.ended = call.taken = True
                call.part.name, call.part.args = name, dict(args)
                return call.message, call.part
        message = self._message_for_call(turn)
        part = ToolCallPart(id=new_id("nb_"), name=name, args=dict(args))
        message.parts.append(part)
        return message, part

    def _notebook_stopped(self, message: Message, part: ToolCallPart) -> None:
        """A call of the notebook's server stopped with its turn: its card says so and
        the history has its result."""
        text = _CANCELLED_TEXT
        for record in message.metadata.tool_executions:
            if record.id == part.id and record.status in ("running", "waiting"):
                record.status, record.result = "cancelled", text
                self._state.emit(ToolResultEvent(id=part.id, name=part.name, result=text,
                                                 is_error=True))
        self._state.history.changed(message)
        self._state.history.append(Message.tool_result(part.id, part.name, text,
                                                       is_error=True))

    # --- what the store keeps -------------------------------------------------------------
    def stored(self) -> dict[str, Any]:
        # Not a copy still to make (``_fork_of``): made later, elsewhere, it would hold
        # what the chat forked from said since; a fork resumed before its copy was made
        # starts a session of its own.
        return {"protocol": "acp", "session_id": self.session_id}

    def restore(self, stored: Mapping[str, Any]) -> None:
        session_id = stored.get("session_id")
        if isinstance(session_id, str) and session_id:
            self.session_id = session_id

    async def on_permission(self, session_id: str, tool_call: ToolCallUpdate,
                            options: list[PermissionOption]) -> RequestPermissionResponse:
        turn = self._turn
        if turn is None or self._cut or self._loading or session_id != self.session_id:
            return cancelled_outcome()
        known = self._calls.get(encodable(str(tool_call.tool_call_id)))
        if self._notebook is not None and (
                (known is not None and known.notebook is not None)
                or _notebook_tool(tool_call) is not None):
            # The notebook's server reviews its calls itself, in this chat (an edit as
            # its proposal, a run with approval): not asked twice.
            allow = next((o for kind in ("allow_once", "allow_always") for o in options
                          if o.kind == kind), None)
            if allow is not None:
                return chosen_outcome(allow.option_id)
        # A card from the request itself when no tool_call came first (Gemini CLI).
        call = self._call_started(turn, tool_call)
        execution = call.execution
        state = self._state

        def waiting() -> None:
            execution.status = "waiting"
            state.history.changed(call.message)

        async def shown() -> ApprovalPreview | None:
            return _permission_preview(call)

        asking = asyncio.ensure_future(state.approvals.decide(
            ToolCallPart(id=call.part.id, name=call.part.name, args=execution.args),
            on_waiting=waiting, preview=shown))
        self._asking.add(asking)
        try:
            allowed, _ = await asking
        except asyncio.CancelledError:
            return cancelled_outcome()
        finally:
            self._asking.discard(asking)
        if self._turn is not turn:
            return cancelled_outcome()
        if allowed:
            kinds = (("allow_always", "allow_once")
                     if state.approvals.allows_always(call.part.name)
                     else ("allow_once", "allow_always"))
            if execution.status == "waiting":
                self._running(call)
        else:
            call.rejected = True
            kinds = ("reject_once", "reject_always")
        option = next((o for kind in kinds for o in options if o.kind == kind), None)
        if option is None:
            return cancelled_outcome()
        return chosen_outcome(option.option_id)


# --- the agent's words as ours ----------------------------------------------------------
_NOTEBOOK_TOOL = re.compile(r"(?<![A-Za-z0-9])(read_notebook|list_variables|edit_cell|"
                            r"insert_cell|run_cell|delete_cell|move_cell|clear_outputs|"
                            r"run_all|interrupt_kernel|restart_kernel)(?![A-Za-z0-9])")


def _notebook_tool(update: Any) -> str | None:
    """The notebook tool a reported call (or permission request) is a call of, when it
    names the notebook's server and one of its tools — each agent its own way: in the
    tool's name or title (``mcp__neta-notebook__edit_cell``, ``edit_cell (neta-notebook
    MCP Server)``), or in its input (Codex: ``{"server": ..., "tool": ...}``)."""
    text = f"{_tool_name(update)} {getattr(update, 'title', None) or ''}"
    if NOTEBOOK_SERVER in text:
        found = _NOTEBOOK_TOOL.search(text.replace(NOTEBOOK_SERVER, " "))
        if found is not None:
            return found.group(1)
    raw = getattr(update, "raw_input", None)
    if isinstance(raw, dict) and raw.get("server") == NOTEBOOK_SERVER:
        tool = raw.get("tool")
        if isinstance(tool, str) and _NOTEBOOK_TOOL.fullmatch(tool):
            return tool
    return None


_LOCATIONS = 50
"""The most files a card links to (an agent's search may name hundreds)."""


def _locations(reported: list[Any]) -> list[FileLocation]:
    """The files a call reports (``locations``) as its card keeps them: absolute paths
    only (the protocol's; a relative one cannot be placed), each once."""
    kept: dict[tuple[str, int | None], FileLocation] = {}
    for location in reported:
        path = encodable(str(location.path))
        if not os.path.isabs(path) or len(kept) >= _LOCATIONS:
            continue
        line = location.line if isinstance(location.line, int) and location.line > 0 else None
        kept.setdefault((path, line), FileLocation(path=path, line=line))
    return list(kept.values())


def _text_of(content: Any) -> str:
    text = getattr(content, "text", None)
    return text if isinstance(text, str) else ""


def _tool_name(update: Any) -> str:
    """The tool's own name when the agent says it (claude-agent-acp: ``_meta``), else its
    kind (``edit``, ``execute``, ``read``…)."""
    meta = update.field_meta or {}
    for value in meta.values():
        if isinstance(value, dict) and isinstance(value.get("toolName"), str):
            return encodable(value["toolName"])
    kind = getattr(update, "kind", None)
    return encodable(str(kind)) if kind else "tool"


def _args(raw_input: Any) -> dict[str, Any]:
    if raw_input is None:
        return {}
    value = encodable_value(raw_input)
    return value if isinstance(value, dict) else {"input": value}


def _result_text(call: _Call) -> str:
    """A call's output as its card shows it: its text content, its diffs (unified) and
    what else it returned."""
    pieces: list[str] = []
    for item in call.content:
        kind = getattr(item, "type", None)
        if kind == "diff":
            pieces.append(_diff_text(item.path, item.old_text, item.new_text))
        elif kind == "content":
            text = _text_of(item.content)
            if text:
                pieces.append(text)
        elif kind == "terminal":
            pieces.append(f"(terminal {item.terminal_id})")
    output = call.raw_output
    if output is not None and not any(not p.startswith("```diff") for p in pieces):
        pieces.append(output if isinstance(output, str) else
                      json.dumps(output, ensure_ascii=False, default=str))
    return "\n\n".join(pieces)


def _diff_text(path: str, old: str | None, new: str) -> str:
    return "```diff\n" + _unified_diff(path, old, new) + "\n```"


_DIFF_LINES = 3_000
"""The most lines (before and after together) a change is compared in: comparing costs the
kernel's loop about the square of it (0.26 s at 4,000, 1 s at 8,000)."""
_DIFF_CHARS = 400_000


def _unified_diff(path: str, old: str | None, new: str) -> str:
    before, after = (old or "").splitlines(), new.splitlines()
    if len(before) + len(after) > _DIFF_LINES or len(old or "") + len(new) > _DIFF_CHARS:
        return "\n".join([f"--- {path if old is not None else '/dev/null'}", f"+++ {path}",
                          f"(too long to compare here: {len(before):,} lines before, "
                          f"{len(after):,} after)"])
    lines = difflib.unified_diff(before, after,
                                 fromfile=path if old is not None else "/dev/null",
                                 tofile=path, lineterm="")
    return "\n".join(lines)


def _permission_preview(call: _Call) -> ApprovalPreview | None:
    """What a call the agent asks permission for will do, as its approval shows it: the
    change to files it reports (a Write's or an Edit's diff, unified), or the command it
    will run; ``None`` (its arguments are shown) when it reports neither."""
    diffs = [item for item in call.content if getattr(item, "type", None) == "diff"]
    if diffs:
        code = "\n".join(_unified_diff(encodable(item.path), item.old_text, item.new_text)
                         for item in diffs)
        return ApprovalPreview(code=encodable(code), language="diff").bounded()
    command = call.execution.args.get("command")
    if isinstance(command, list) and all(isinstance(word, str) for word in command):
        command = shlex.join(command)  # Codex: the command as its argument list
    if isinstance(command, str) and command.strip():
        return ApprovalPreview(code=command, language="bash").bounded()
    return None


def _usage(usage: Any) -> Usage | None:
    if usage is None:
        return None
    return Usage(input_tokens=usage.input_tokens, output_tokens=usage.output_tokens,
                 cache_read_tokens=usage.cached_read_tokens or 0,
                 cache_write_tokens=usage.cached_write_tokens or 0,
                 thinking_tokens=usage.thought_tokens or 0)
