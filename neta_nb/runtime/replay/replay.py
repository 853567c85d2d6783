"""Replaying a stored session as an evaluation: the same user prompts, in order, run again
under another model, prompt or tool set (and, when asked, with the stored tool results
fixed), compared turn by turn in a :class:`~neta_nb.runtime.replay.replay_report.ReplayReport`.

``await replay(session, store=store, model="openai:gpt-5")`` — ``session`` is a stored
session's id or record, or a live :class:`AgentSession`. The replay is a new session (kept
in ``replay_store`` when one is given, else in memory); the stored one is only read.
Replaying under ``model=ScriptedProvider.from_history(messages)`` streams exactly what the
stored session streamed.

Tools that need approval are decided by ``approval_policy`` (default: a call whose result
comes from the record is allowed, since it runs nothing; any other is rejected — a replay
must not run code nobody approved).
"""

from __future__ import annotations

import asyncio
import base64
import dataclasses
import inspect
import json
import logging
import re
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any

from ...events import Event
from ...messages import DocumentPart, FileTextPart, ImagePart, Message
from ...providers.base import ModelRequest, Provider, TextDelta
from ...providers.factory import create_provider
from ...providers.scripted.history_script import StoredTurn, split_turns
from ...providers.scripted.scripted import ScriptedProvider
from ...store.session_store import SessionRecord, SessionStore
from ...tools import AgentToolConfig, Tool, ToolCatalog, ToolContext, ToolResolution, resolve_tools
from ...tools.base import ToolFailure
from ..agent import Agent
from ..approvals import ApprovalPolicy
from ..session import AgentSession
from ..session.resume import SessionNotResumableError
from ..stored_endpoint import StoredOrigin, admitted_mcp_servers
from .replay_report import Check, ReplayReport, ReplayTurn, TurnFigures

if TYPE_CHECKING:
    from ...thinking import ThinkLevel

__all__ = ["llm_judge", "replay", "replay_all"]

log = logging.getLogger(__name__)


async def replay(session: str | SessionRecord | AgentSession, *,
                 store: SessionStore | None = None, agent: Agent | None = None,
                 model: str | Provider | None = None, tools: AgentToolConfig | None = None,
                 system_prompt: str | None = None, catalog: ToolCatalog | None = None,
                 keep_tool_results: bool = False,
                 checks: Mapping[str, Check] | Sequence[Check] = (),
                 approval_policy: ApprovalPolicy | None = None,
                 think_level: ThinkLevel | None = None,
                 replay_store: SessionStore | None = None,
                 on_event: Callable[[Event], None] | None = None,
                 check_timeout: float = 300.0,
                 subagents_from_history: bool = False,
                 **session_options: Any) -> ReplayReport:
    """Run the stored session's prompts again and compare (see the module's docstring).

    ``agent``: the agent to replay with; otherwise the stored agent with ``model``,
    ``tools`` and ``system_prompt`` replaced where given. A ``model`` given as
    ``"supplier:model"`` is built as this environment configures it (its endpoint and
    key), without the stored provider's server or options; without ``model``, the
    stored provider is rebuilt, and a stored ``base_url`` that is not the vendor's nor
    the reader's own ``*_BASE_URL`` is refused with ``StoredEndpointError`` when a key
    would come from the environment, or when another user stored it
    (:mod:`~neta_nb.runtime.stored_endpoint`) — give ``model=create_provider(spec,
    base_url=...)`` to use it on purpose. ``keep_tool_results``: a call
    with the same tool and arguments as one of the stored turn answers with the stored
    result instead of running. ``checks``: functions of a :class:`ReplayTurn` (sync or
    async) returning a verdict — ``bool``, a number or text — by name (a sequence is named
    by the functions' names); :func:`llm_judge` makes one that asks a model. ``on_event``:
    subscribed to the replay's session (e.g. to watch it in a chat view).
    ``check_timeout``: seconds a check may take before its verdict is that it took too
    long. Sub-agents run as their stored definitions say (their own models, live) — or,
    with ``subagents_from_history``, each answers as its stored runs did
    (``ScriptedProvider.from_history`` over them, at every depth), and ``delegate`` runs
    them rather than answering from the record: with the top agent on
    ``from_history`` too, a session with sub-agents streams exactly what it streamed.
    ``session_options`` go to the replay's :class:`AgentSession` (``working_dir=``,
    ``namespace=`` …): a replay's tools see what the stored session's saw only when given
    the same."""
    original = _Original.load(session, store)
    work_catalog = catalog if catalog is not None else original.catalog()
    outside = original.outside_agent()
    if outside is not None and agent is None:
        # Its "model" was the agent itself, whose command and keys are never stored.
        raise SessionNotResumableError(
            f"session {original.id!r} is a session of the outside agent {outside!r}: give "
            f"replay(..., agent=...) — AcpAgent(...) to put its prompts to that agent "
            f"again, or any Agent to put them to a model of yours")
    before_agent = agent if outside is not None and agent is not None \
        else original.agent(work_catalog)
    if agent is None:
        agent = dataclasses.replace(
            before_agent,
            model=model if model is not None else before_agent.model,
            # A model named here is the reader's: their endpoint and key, none of the
            # stored provider's server or options.
            provider_settings=before_agent.provider_settings if model is None else None,
            tools=tools if tools is not None else before_agent.tools,
            system_prompt=(system_prompt if system_prompt is not None
                           else before_agent.system_prompt),
            # An evaluation is not held to the stored session's budgets (a replay model
            # often has no price); an agent given here keeps its own.
            budget_usd=None, turn_budget_usd=None)
    descendants: list[Message] = []  # every stored sub-agent run's messages
    if subagents_from_history:
        if store is None:
            raise ValueError("subagents_from_history reads the children from the store: "
                             "pass store=")
        agent = _children_from_history(agent, store, [original.id], descendants)
    turns = split_turns(original.messages)
    recorded = _RecordedResults(
        turns, live={"delegate"} if subagents_from_history else set(),
        elsewhere=split_turns(descendants)) if keep_tool_results else None
    replay_catalog = recorded.wrap(work_catalog) if recorded is not None else work_catalog
    policy = approval_policy if approval_policy is not None else (
        recorded.allows if recorded is not None else "reject")
    session_again = AgentSession(agent, replay_catalog, replay_store,
                                 approval_policy=policy, think_level=think_level,
                                 **session_options)
    if on_event is not None:
        session_again.subscribe(on_event)
    resolution_before = _resolution_of(before_agent, work_catalog)
    resolution_after = session_again.preview().resolution
    named = _named_checks(checks)
    report = ReplayReport(
        session_id=original.id, title=original.title,
        model_before=original.model, model_after=session_again.provider.model_id,
        resolution_before=resolution_before, resolution_after=resolution_after,
        replay_session_id=session_again.id)
    for index, turn in enumerate(turns):
        if recorded is not None:
            recorded.turn = index
        started = len(session_again.messages)
        errors: list[str] = []
        done: list[str] = []

        def listen(event: Any, errors: list[str] = errors, done: list[str] = done) -> None:
            if event.type == "error":
                errors.append(event.message)
            elif event.type == "done":
                done.append(event.stop_reason)

        detach = session_again.subscribe(listen)
        clock = time.monotonic()
        try:
            await session_again.run(turn.prompt.text, attachments=_attachments_of(turn.prompt),
                                    mentions=turn.prompt.mentions)
        finally:
            detach()
        seconds = time.monotonic() - clock
        after = TurnFigures.of(session_again.messages[started + 1:], seconds=seconds,
                               stop_reason=done[-1] if done else None,
                               error=errors[-1] if errors else None)
        row = ReplayTurn(index=index, prompt=turn.prompt.text,
                         before=TurnFigures.of_stored(turn), after=after)
        if recorded is not None:
            row.fixed_results, row.live_results = recorded.counts(index)
        row.checks = {name: await _verdict(check, row, check_timeout)
                      for name, check in named.items()}
        report.turns.append(row)
    return report


async def replay_all(sessions: Iterable[str | SessionRecord | AgentSession],
                     **options: Any) -> list[ReplayReport]:
    """:func:`replay` over many sessions, one after the other, with the same options."""
    return [await replay(session, **options) for session in sessions]


# --- the stored session ---------------------------------------------------------------

@dataclasses.dataclass
class _Original:
    id: str
    title: str
    messages: list[Message]
    record: SessionRecord | None
    live: AgentSession | None

    @classmethod
    def load(cls, session: str | SessionRecord | AgentSession,
             store: SessionStore | None) -> _Original:
        if isinstance(session, AgentSession):
            if session.running:
                raise RuntimeError("replay a session between turns, not while one runs")
            messages = list(session.messages)
            prompts = [m.text for m in messages if m.role == "user"]
            return cls(session.id, prompts[0][:80] if prompts else "", messages, None, session)
        if store is None:
            raise ValueError("replaying a stored session needs its store: "
                             "replay(session_id, store=store, ...)")
        session_id = session.id if isinstance(session, SessionRecord) else session
        record = store.get_session(session_id)
        if record is None:
            raise KeyError(f"no session {session_id!r} in {store.location}")
        if record.running:
            raise RuntimeError(f"session {session_id!r} is running a turn: replay it "
                               "between turns")
        return cls(record.id, record.title, store.load_messages(record.id), record, None)

    @property
    def model(self) -> str:
        if self.live is not None:
            return self.live.provider.model_id
        return str((self.record.agent if self.record else {}).get("model", "?"))

    def catalog(self) -> ToolCatalog:
        if self.live is not None:
            return self.live.catalog
        catalog = ToolCatalog.default()
        if self.record is not None and self.record.mcp_servers:
            # Another user's servers are left out: their command would run here.
            admitted, refused = admitted_mcp_servers(self.record.mcp_servers,
                                                     self.origin, set(catalog.mcp_servers))
            for problem in [*refused, *catalog.restore_mcp_servers(admitted)]:
                log.warning("replay %s: %s", self.record.id, problem)
        return catalog

    def agent(self, catalog: ToolCatalog) -> Agent:
        if self.live is not None:
            return self.live.agent
        assert self.record is not None
        return Agent.from_record(self.record.agent, catalog, origin=self.origin)

    def outside_agent(self) -> str | None:
        """The name of the outside agent (over the Agent Client Protocol) whose session
        this is, or ``None``: a session of a model."""
        if self.live is not None:
            return self.live.agent.name if self.live.deps.outside is not None else None
        assert self.record is not None
        return str(self.record.agent.get("name")) if self.record.agent.get("outside") else None

    @property
    def origin(self) -> StoredOrigin:
        """Where the stored session was read from, and who wrote it."""
        assert self.record is not None
        return StoredOrigin(f"session {self.record.id!r}", self.record.user)


def _children_from_history(agent: Agent, store: SessionStore, session_ids: Sequence[str],
                           found: list[Message]) -> Agent:
    """``agent`` with each sub-agent answering as its stored runs under ``session_ids``
    did (one script over all of an agent's runs, told apart by their tasks), at every
    depth; a sub-agent that never ran keeps its model. The runs' messages go to
    ``found``."""
    runs: dict[str, list[Message]] = {}
    sessions: dict[str, list[str]] = {}
    for parent_id in session_ids:
        for record in store.list_children(parent_id):
            name = str(record.agent.get("name", ""))
            messages = store.load_messages(record.id)
            found.extend(messages)
            runs.setdefault(name, []).extend(messages)
            sessions.setdefault(name, []).append(record.id)
    children = []
    for child in agent.subagents:
        if child.name in runs:
            child = _children_from_history(dataclasses.replace(
                child, model=ScriptedProvider.from_history(runs[child.name]),
                budget_usd=None, turn_budget_usd=None), store, sessions[child.name], found)
        children.append(child)
    return dataclasses.replace(agent, subagents=children)


def _resolution_of(agent: Agent, catalog: ToolCatalog) -> ToolResolution:
    """The tools the stored agent had, as a session of it would resolve them (its model's
    capabilities when its provider can be made here, e.g. without the vendor's key: none
    filtered otherwise)."""
    try:
        capabilities: frozenset[str] | None = agent.create_provider().info.capabilities
    except Exception:
        capabilities = None
    return resolve_tools(catalog, agent.tools, model_capabilities=capabilities,
                         scene=agent.scene,
                         delegates=bool(agent.subagents) and agent.max_subagent_depth > 0)


# --- stored tool results, fixed -------------------------------------------------------

def _key(name: str, args: Mapping[str, Any]) -> str:
    return name + "\0" + json.dumps(args, sort_keys=True, default=str)


@dataclasses.dataclass(frozen=True)
class _Stored:
    """One stored call's outcome: its result text, and whether it failed or the user
    rejected it (a rejected call never ran: it is rejected again, not answered)."""

    content: str
    is_error: bool
    rejected: bool


class _RecordedResults:
    """The stored results of each turn's calls, handed out once each to the replay's
    calls with the same tool and arguments (in the order the stored turn made them)."""

    def __init__(self, turns: Sequence[StoredTurn], *, live: set[str],
                 elsewhere: Sequence[StoredTurn] = ()) -> None:
        self.turn = 0
        self.live = live
        """Tools that always run (``delegate`` when the children replay themselves)."""
        self._results = [self._of([turn]) for turn in turns]
        self._elsewhere = self._of(elsewhere)
        """The sub-agents' stored calls (any turn): what their replayed calls answer from."""
        self._fixed: dict[int, int] = {}
        self._live: dict[int, int] = {}

    @staticmethod
    def _of(turns: Sequence[StoredTurn]) -> dict[str, list[_Stored]]:
        by_key: dict[str, list[_Stored]] = {}
        for turn in turns:
            calls: dict[str, Any] = {}
            rejected: set[str] = set()
            for message in turn.messages:
                if message.role == "assistant":
                    # Results answer the response right before them: ids repeat across
                    # responses on some servers (call_0 in each).
                    calls = {call.id: call for call in message.tool_calls}
                    rejected = {e.id for e in message.metadata.tool_executions
                                if e.status == "rejected"}
                for result in message.tool_results:
                    call = calls.get(result.tool_call_id)
                    if call is not None:
                        by_key.setdefault(_key(call.name, call.args), []).append(_Stored(
                            result.content, result.is_error, call.id in rejected))
        return by_key

    def _pool(self, name: str, args: Mapping[str, Any]) -> list[_Stored] | None:
        """The stored results left for this call: the turn's own, else the sub-agents'."""
        key = _key(name, args)
        own = self._results[self.turn].get(key) if self.turn < len(self._results) else None
        return own or self._elsewhere.get(key) or None

    def _next(self, name: str, args: Mapping[str, Any]) -> _Stored | None:
        pool = self._pool(name, args)
        return pool[0] if pool else None

    def take(self, name: str, args: Mapping[str, Any]) -> _Stored | None:
        pool = self._pool(name, args)
        counts = self._live if pool is None else self._fixed
        counts[self.turn] = counts.get(self.turn, 0) + 1
        return pool.pop(0) if pool is not None else None

    def counts(self, turn: int) -> tuple[int, int]:
        return self._fixed.get(turn, 0), self._live.get(turn, 0)

    def allows(self, name: str, args: dict[str, Any]) -> bool:
        """The default approval of a replay with fixed results: a call answered from the
        record runs nothing, so it is allowed — unless the user rejected it there; any
        other is rejected."""
        stored = self._next(name, args)
        return stored is not None and not stored.rejected

    def wrap(self, catalog: ToolCatalog) -> ToolCatalog:
        """A catalog with the same tools, states and order, each answering from the record
        where it can."""
        wrapped = ToolCatalog()
        for item in catalog:
            wrapped.register(item if item.name in self.live
                             else _RecordedTool.around(item, self))
            if not catalog.is_globally_enabled(item.name):
                wrapped.disable(item.name)
        return wrapped


@dataclasses.dataclass(frozen=True, eq=False)
class _RecordedTool(Tool):
    """A tool that answers with the stored result of the same call when there is one,
    and runs the real tool otherwise."""

    original: Tool = dataclasses.field(kw_only=True, repr=False)
    recorded: _RecordedResults = dataclasses.field(kw_only=True, repr=False)

    @classmethod
    def around(cls, tool: Tool, recorded: _RecordedResults) -> _RecordedTool:
        fields = {f.name: getattr(tool, f.name) for f in dataclasses.fields(Tool)
                  if f.init and not f.name.startswith("_")}
        return cls(**{**fields, "handler": _unreachable}, original=tool, recorded=recorded)

    async def invoke(self, args: dict[str, Any] | None, ctx: ToolContext) -> str:
        stored = self.recorded.take(self.name, args or {})
        if stored is None:
            return await self.original.invoke(args, ctx)
        if stored.is_error:
            raise ToolFailure(stored.content)  # an error result again, worded as stored
        return stored.content


async def _unreachable() -> str:  # pragma: no cover - _RecordedTool overrides invoke
    raise RuntimeError("recorded tools are run by _RecordedTool.invoke")


def _attachments_of(prompt: Message) -> list[tuple[bytes, str, str]]:
    """The files a stored prompt carried, to send again (one whose stored file is gone
    cannot be: the replay's prompt lacks it, as the stored session's model did)."""
    files: list[tuple[bytes, str, str]] = []
    for part in prompt.parts:
        if isinstance(part, (ImagePart, DocumentPart)) and part.data is not None:
            files.append((base64.b64decode(part.data), part.media_type,
                          part.name or "attachment"))
        elif isinstance(part, FileTextPart):
            files.append((part.text.encode("utf-8", "surrogatepass"), part.media_type,
                          part.name))
    return files


# --- checks ---------------------------------------------------------------------------

_VERDICT = re.compile(r"[\W_]*(PASS|FAIL)(?![A-Za-z])", re.IGNORECASE)
"""PASS or FAIL first, whatever markdown wraps it (``**FAIL** —``, ```PASS```)."""

def _named_checks(checks: Mapping[str, Check] | Sequence[Check]) -> dict[str, Check]:
    if isinstance(checks, Mapping):
        return {str(name): check for name, check in checks.items()}
    named: dict[str, Check] = {}
    for check in checks:
        name = getattr(check, "__name__", None) or type(check).__name__
        while name in named:
            name += "'"
        named[name] = check
    return named


async def _verdict(check: Check, turn: ReplayTurn, seconds: float) -> Any:
    """A check's verdict; a check that raises (anything but an interrupt of the replay
    itself) or takes longer than ``seconds`` gives that as text, and the replay
    goes on."""
    try:
        async with asyncio.timeout(seconds):
            verdict = check(turn)
            if inspect.isawaitable(verdict):
                verdict = await verdict
        return verdict
    except TimeoutError:
        return f"check failed: no verdict within {seconds:g} s"
    except KeyboardInterrupt:
        raise
    except asyncio.CancelledError:
        task = asyncio.current_task()
        if task is not None and task.cancelling():
            raise  # the replay itself is being cancelled
        return "check failed: CancelledError"
    except BaseException as exc:  # SystemExit from a check is the check failing
        return f"check failed: {type(exc).__name__}: {exc}"


def llm_judge(rubric: str, *, model: str | Provider) -> Check:
    """A check that asks a model whether the replayed answer meets ``rubric``, given the
    prompt and the original answer. Its verdict is ``True``/``False`` (the judge's first
    word, PASS or FAIL); an answer that is neither gives the judge's text."""
    provider = model if isinstance(model, Provider) else create_provider(model)
    system = ("You grade an AI assistant's answer. Reply with PASS or FAIL as the first "
              "word, then one sentence saying why.")

    async def judge(turn: ReplayTurn) -> bool | str:
        question = (f"Rubric: {rubric}\n\nUser prompt:\n{turn.prompt}\n\n"
                    f"Reference answer:\n{turn.before.answer}\n\n"
                    f"Answer to grade:\n{turn.after.answer}")
        request = ModelRequest(system_prompt=system, messages=[Message.user(question)],
                               tools=[], think_level="off")
        async with asyncio.timeout(300):
            text = "".join([event.text async for event in provider.stream(request)
                            if isinstance(event, TextDelta)]).strip()
        verdict = _VERDICT.match(text)
        if verdict is not None:
            return verdict.group(1).upper() == "PASS"
        return text or "the judge gave no answer"

    return judge
