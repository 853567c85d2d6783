"""Resuming a stored session: its history, plan, cards and figures rebuilt, and a turn
that a dead kernel left running closed the way a live turn closes (what streamed kept,
marked ``interrupted="killed"``; its children settled the same way), and a warning for
each provider URL that was stored without what may have been a secret in it — which
must be given again — and for each sub-agent whose stored server this environment did
not configure (:mod:`~neta_nb.runtime.stored_endpoint`; the top-level agent's raises).

:meth:`AgentSession.resume <neta_nb.runtime.session.AgentSession.resume>` is the public
entry; it calls :func:`resume_session`, which fills the new session's state.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any, Protocol, TypeVar

from ...messages import Message, valid_conversation
from ...store.process_owner import SessionBusyError, busy_error, current_user
from ...store.session_store import SessionRecord, SessionStore
from ...store.session_writes import LOAD_FLUSH_LIMIT, flush_session
from ...stored_urls import describe_withheld, withheld_names
from ...thinking import THINK_LEVELS
from ...tools import ToolCatalog
from ..agent import Agent
from ..stored_endpoint import StoredEndpointError, StoredOrigin, admitted_mcp_servers
from .deps import TurnDeps
from .spending import Spend
from .state import SessionState

__all__ = ["Resumable", "SessionNotOwnedError", "SessionNotResumableError", "check_owned",
           "check_resumable", "resume_session"]


class SessionNotOwnedError(PermissionError):
    """The session belongs to another user: it can be read (a read-only view), not
    continued — a session is written only by its owner's kernels."""


def check_owned(record: SessionRecord) -> None:
    """Raise :class:`SessionNotOwnedError` unless the current user owns ``record`` (a
    record from before sessions had owners is everyone's)."""
    me = current_user()
    if record.user is not None and record.user != me:
        raise SessionNotOwnedError(
            f"session {record.id!r} belongs to {record.user}, not to {me}: it can be "
            f"viewed (read-only) but only its owner's kernels continue it")


class SessionNotResumableError(RuntimeError):
    """The session has no model to continue with — e.g. the calls of an outside MCP
    client, whose "model" was the client itself. It can be read (a read-only view), not
    resumed."""


def check_resumable(record: SessionRecord) -> None:
    """Raise :class:`SessionNotResumableError` for a session whose stored provider said it
    cannot be continued elsewhere (:attr:`~neta_nb.providers.base.Provider.not_resumable`)."""
    provider = record.agent.get("provider")
    why = provider.get("not_resumable") if isinstance(provider, dict) else None
    if why:
        raise SessionNotResumableError(f"session {record.id!r} cannot be resumed: {why}")


log = logging.getLogger(__name__)


class Resumable(Protocol):
    """What a resume fills of the session it makes (an ``AgentSession``)."""

    state: SessionState
    deps: TurnDeps
    parent_id: str | None
    parent_call_id: str | None
    branch_of: str | None
    branch_at: str | None

    @property
    def namespace(self) -> dict[str, Any]: ...

    def flush(self, timeout: float | None = None) -> bool: ...


S = TypeVar("S", bound=Resumable)


def resume_session(cls: Callable[..., S], session_id: str, store: SessionStore, *,
                   catalog: ToolCatalog | None = None, agent: Agent | None = None,
                   **options: Any) -> S:
    """``cls.resume(...)``: see :meth:`AgentSession.resume
    <neta_nb.runtime.session.AgentSession.resume>`."""
    store.database.check_claim(session_id, "resume")  # a live turn, even one not recorded yet
    behind = flush_session(store, session_id)  # this process's own writes of it first
    if behind is not None:
        # What it has not stored yet would be missing here, and two writers of one
        # session would store their messages in either order.
        failure = behind.failure
        why = f" ({failure.detail})" if failure is not None else ""
        raise SessionBusyError("session_busy_unsaved", session=repr(session_id),
                               pending=behind.pending, why=why)
    record = store.get_session(session_id)  # a dead owner's turn is settled here
    if record is None:
        raise KeyError(f"no session {session_id!r} in {store.location}")
    if record.running and record.owner is not None:  # still running once settled: alive
        raise busy_error(session_id, record.owner)
    if store.shared:
        check_owned(record)
    if agent is None and options.get("provider") is None:
        check_resumable(record)  # before anything of it is restored
    catalog = catalog if catalog is not None else ToolCatalog.default()
    origin = StoredOrigin(f"session {session_id!r}", record.user)
    # MCP servers come back before the agent, so its config finds their tools; another
    # user's are left out (their command would run here).
    admitted, refused = admitted_mcp_servers(record.mcp_servers, origin,
                                             set(catalog.mcp_servers))
    for problem in [*refused, *catalog.restore_mcp_servers(admitted)]:
        log.warning("resume %s: %s", session_id, problem)
    if agent is None:
        for problem in withheld_from_urls(record.agent,
                                          provider_given=options.get("provider") is not None):
            log.warning("resume %s: %s", session_id, problem)
        agent = Agent.from_record(record.agent, catalog, origin=origin)
        for problem in refused_subagent_endpoints(agent):
            log.warning("resume %s: %s", session_id, problem)
    level = record.think_level if record.think_level in THINK_LEVELS else None
    session = cls(agent, catalog, store, session_id=session_id,
                  think_level=level, **options)
    session.parent_id, session.parent_call_id = record.parent_id, record.parent_call_id
    session.branch_of, session.branch_at = record.branch_of, record.branch_at
    state, deps = session.state, session.deps
    if record.parent_id is not None:
        deps.crew.depth, deps.crew.max_depth = place_in_tree(store, record)
    stored = state.saved.load(store)
    history = state.history
    history.load(stored.messages, stored.view)
    state.compactions = stored.compactions
    state.restore_figures(deps.workspace.provider.price)
    _continue_outside(deps, record)
    # What it paid for turns it went back over is in no message: its record keeps it.
    state.spending.rewound = Spend(**record.rewound.model_dump())
    state.notebook_restore = record.notebook_restore
    draft = stored.draft
    if draft is not None or record.running or record.owner_died:
        # Calls whose tools were running when the process died get their error result
        # first (it must follow the message that made the calls); then the answer that
        # was streaming, as far as it was checkpointed, or an empty marker — whose own
        # complete calls are closed in turn.
        deps.tools.close_unanswered(history.messages, "killed", {})
        message = draft or Message.assistant([])
        message.metadata.interrupted = "killed"
        message.metadata.error = "The kernel stopped while this turn was running."
        history.append(message)
        deps.tools.close_unanswered(history.messages, "killed", {})
        state.saved.clear_draft()  # it is a message now
    settle_subagents(state, store, lambda child_id: resume_session(
        cls, child_id, store, catalog=catalog, namespace=session.namespace))
    # What a store hands back may break the rules providers enforce (a damaged row);
    # the model is sent a conversation that keeps them.
    history.set_view(valid_conversation(history.view))
    state.save_record(running=False, owner=None, owner_died=False)
    return session


def _continue_outside(deps: TurnDeps, record: SessionRecord) -> None:
    """An outside agent continues its own session, as the record describes it."""
    stored = record.agent.get("outside")
    if deps.outside is not None and isinstance(stored, dict):
        deps.outside.restore(stored)


class _Flushable(Protocol):
    def flush(self, timeout: float | None = None) -> bool: ...


def settle_subagents(state: SessionState, store: SessionStore,
                     reopen: Callable[[str], _Flushable]) -> None:
    """A child still recorded as running was cut off by a dead kernel: its card is
    marked interrupted, and the child's own session is closed the way this one was
    (its turn marked killed: ``reopen`` resumes it) so both read as interrupted."""
    for message in state.history.messages:
        changed = False
        for execution in message.metadata.tool_executions:
            run = execution.subagent
            if run is None or run.status != "running":
                continue
            execution.subagent = run.model_copy(update={"status": "interrupted"})
            changed = True
            child = store.get_session(run.session_id)  # settles a dead owner
            if child is None or not (child.running or child.owner_died):
                continue
            try:
                settled = reopen(run.session_id)
                # Stored before this resume returns: a view loads the child's
                # messages from the store to rebuild its nested card.
                settled.flush(LOAD_FLUSH_LIMIT)
            except Exception as exc:  # e.g. its provider needs a key not set here
                log.warning("resume %s: its sub-agent session %s stays unsettled until "
                            "it is resumed itself (%s)", state.id, run.session_id, exc)
        if changed:
            state.history.changed(message)


def withheld_from_urls(stored: dict[str, Any], *, provider_given: bool) -> list[str]:
    """For each agent of a stored definition whose provider is rebuilt from stored
    settings: what its ``base_url`` was stored without (``user:password``, query
    parameters — by name) and how to give it again. ``provider_given``: the top-level
    agent's provider is given to the resume, so it needs nothing."""
    problems: list[str] = []
    pending: list[tuple[Any, bool]] = [(stored, True)]
    seen: set[int] = set()  # a record is JSON, a tree; never loop even if it were not
    while pending:
        data, top = pending.pop()
        if not isinstance(data, dict) or id(data) in seen:
            continue
        seen.add(id(data))
        children = data.get("subagents")
        if isinstance(children, list):
            pending.extend((child, False) for child in reversed(children))
        settings = data.get("provider")
        if not isinstance(settings, dict):
            settings = {}
        withheld = withheld_names(settings.get("base_url_withheld"))
        options = withheld_names(settings.get("request_options_withheld"))
        if not (withheld or options) or (top and provider_given):
            continue
        name, model = data.get("name", "agent"), data.get("model") or "supplier:model"
        given = ", ".join(what for what, missing in (("base_url=...", withheld),
                                                     ("request_options=...", options))
                          if missing)
        rebuilt = f"create_provider({model!r}, {given})"
        how = (f"AgentSession.resume(..., provider={rebuilt})" if top else
               f"AgentSession.resume(..., agent=...) with an agent whose sub-agent {name!r} "
               f"has model={rebuilt}")
        lost = [f"base_url was stored without {describe_withheld(withheld)}" if withheld
                else "", f"request_options were stored without {', '.join(options)}"
                if options else ""]
        problems.append(f"{'agent' if top else 'sub-agent'} {name!r}: its provider's "
                        f"{' and its '.join(item for item in lost if item)} (they may be "
                        f"secrets); give them again: {how}")
    return problems


def refused_subagent_endpoints(agent: Agent) -> list[str]:
    """Why each sub-agent (at any depth) of a stored definition cannot rebuild its
    provider from the stored settings here (:class:`StoredEndpointError`): said at the
    resume, not first when the model delegates to it. Other failures (a key not set)
    are the delegation's to report."""
    problems: list[str] = []
    pending = list(agent.subagents)
    seen: set[int] = {id(agent)}
    while pending:
        child = pending.pop(0)
        if id(child) in seen:
            continue
        seen.add(id(child))
        pending.extend(child.subagents)
        if not isinstance(child.model, str) or child.provider_settings_origin is None:
            continue
        try:
            child.create_provider()
        except StoredEndpointError as error:
            problems.append(f"sub-agent {child.name!r} cannot be delegated to: {error}")
        except Exception:  # e.g. no key here: reported if the model delegates to it
            continue
    return problems


def place_in_tree(store: SessionStore, record: SessionRecord) -> tuple[int, int]:
    """A stored child's depth below its top-level session and that session's nesting
    limit: the limit holds for the whole tree, so a child opened on its own (resumed
    directly) may delegate no deeper than it could inside its parent's run."""
    depth, top, seen = 0, record, {record.id}
    while top.parent_id is not None:
        parent = store.get_session(top.parent_id)
        if parent is None or parent.id in seen:
            break  # the parent was deleted (or a damaged row loops): the chain ends here
        depth, top = depth + 1, parent
        seen.add(parent.id)
    if top is record:  # its parent is gone: at least one level below one
        return 1, Agent.max_subagent_depth
    limit = top.agent.get("max_subagent_depth") if isinstance(top.agent, dict) else None
    return depth, limit if isinstance(limit, int) and limit >= 0 else Agent.max_subagent_depth
