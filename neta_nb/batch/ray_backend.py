"""``backend="ray"``: a batch run's rows on Ray Core, across processes and machines
(``neta-nb[ray]``).

* **Workers** are long-lived async actors, one per worker process (by default one per CPU
  of the cluster, at most ``concurrency``; ``workers=`` to choose), each running its
  share of the run's concurrency as sessions at once — the same executor a kernel uses
  (:mod:`neta_nb.batch.executor`), claiming rows by lease from the run's store.
* **One limiter** for the whole run: each worker bounds its share of ``concurrency`` itself
  (the shares add up to the run's), and one actor holds what all must share — the rate's
  tokens (asked per model call when the run has a rate) and ``Retry-After`` pauses (asked
  before each HTTP request).
* **Progress** comes back to the kernel in batches (a streaming generator yields the row
  states that changed, a few times a second), never per token. The results are read from
  the store, not from what streamed: after an actor restart Ray runs the generator again
  and drops as many yields as it had delivered.
* **Crashes**: a worker process that dies is restarted by Ray (``max_restarts``) and its
  call retried; rows it held are claimed again (their owner is a dead process), and the
  store's leases keep every row stored once.
* **The agent** travels as its stored definition (:meth:`Agent.to_record`), sub-agents and
  tool configs included; a provider object among its models (the agent's or a
  sub-agent's) as what rebuilds it (:mod:`neta_nb.providers.portable`: its settings, with
  the base URL and request options as configured), or pickled when settings do not
  rebuild it (the offline model, a class of the user's). The output model travels pickled.
  The prices and models the kernel set (``set_price``, ``register_model``) are set in
  the worker too.
* **Keys** — the provider variables of the kernel's environment, the key a provider object
  was given, credentials in its base URL or request options or in an agent's own
  ``provider_settings``, a pickled provider whole — travel in the workers' arguments,
  apart from the rest (:class:`Secrets`), and are set in the worker's process: never in
  the store, and not in Ray's runtime environment, whose variables Ray's agent writes to
  its log on every node.

An agent whose tools belong to the kernel (``python``, ``list_variables``) or that needs
the user's approval for a tool is refused before the run starts, with the reason; so is a
run whose agent or output model cannot be sent (a provider class that does not pickle).
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable, Iterator
from typing import TYPE_CHECKING, Any

try:
    import ray
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("backend='ray' needs Ray: pip install 'neta-nb[ray]'") from exc
from ray import cloudpickle

from ..providers.base import Provider
from ..providers.endpoints import KEY_VARIABLES, URL_VARIABLES
from ..providers.models import register_model, registered_models
from ..providers.portable import rebuild, recipe_of
from ..providers.prices import set_price, user_prices
from ..providers.scripted.scripted import ScriptedProvider
from ..tools import ToolCatalog
from ..tools.resolution.resolver import resolve_tools
from .executor import LocalExecutor
from .limiter import Rate, RateLimiter

if TYPE_CHECKING:
    from ..runtime.agent import Agent

__all__ = ["KERNEL_TOOLS", "RayBackend", "Secrets", "check_portable", "environment_secrets",
           "set_environment"]

log = logging.getLogger(__name__)

KERNEL_TOOLS = frozenset({"python", "list_variables", "read_notebook", "edit_cell",
                          "insert_cell", "run_cell"})
"""Tools that act on the kernel that started the run: a worker elsewhere has none."""
ENVIRONMENT_VARIABLES = tuple(dict.fromkeys(
    [*(name for names in KEY_VARIABLES.values() for name in names), *URL_VARIABLES.values()]))
"""The variables a provider (or its SDK) takes its credential or endpoint from: the
kernel's are the workers'."""
_CONFIGURED = ("base_url", "request_options")
"""Provider settings whose stored form may withhold what the provider needs."""
PROGRESS_INTERVAL = 0.25
"""Seconds between two progress batches of a worker."""
WORKER_RESTARTS = 4


def check_portable(agent: Agent, catalog: ToolCatalog) -> None:
    """Refuse an agent that cannot run away from the kernel (see the module note) — or
    whose sub-agents (at any depth) cannot."""
    pending, seen = [agent], set()
    while pending:
        current = pending.pop()
        if id(current) in seen:
            continue
        seen.add(id(current))
        _check_one(current, catalog, top=current is agent)
        pending.extend(current.subagents)


def _check_one(agent: Agent, catalog: ToolCatalog, *, top: bool) -> None:
    whose = "" if top else f" (of its sub-agent {agent.name!r})"
    resolution = resolve_tools(catalog, agent.tools, scene=agent.scene,
                               delegates=bool(agent.subagents) or None)
    names = {tool.name for tool in resolution.tools}
    bound = sorted(names & KERNEL_TOOLS)
    if bound:
        raise ValueError(f"backend='ray' runs the agent away from this kernel, but its "
                         f"tools {', '.join(bound)}{whose} act on the kernel: switch them off "
                         f"(AgentToolConfig(disabled=[…])) or use backend='local'")
    asking = sorted(tool.name for tool in resolution.tools if tool.requires_approval)
    if asking:
        raise ValueError(f"backend='ray' has nobody to approve the tools "
                         f"{', '.join(asking)}{whose}: switch them off or use backend='local'")


class Secrets(dict[str, Any]):
    """What a worker is sent that is secret: the environment's key variables
    (``environment``), each provider object's secrets or its pickle (by the provider's
    number), the settings of string models as configured (``configured``). A
    dict that never shows its values — Ray puts an argument it fails to send in its
    error message."""

    def __repr__(self) -> str:
        return "Secrets(withheld)"


def environment_secrets() -> Secrets:
    """This process's :data:`ENVIRONMENT_VARIABLES` that are set: a worker sets them in
    its own process."""
    return Secrets({name: os.environ[name] for name in ENVIRONMENT_VARIABLES
                    if name in os.environ})


def set_environment(environment: Secrets) -> None:
    """This process's :data:`ENVIRONMENT_VARIABLES` made the kernel's
    (:func:`environment_secrets`): those it has set, the others removed — a base URL the
    worker's node has and the kernel has not would get the kernel's key."""
    for name in ENVIRONMENT_VARIABLES:
        os.environ.pop(name, None)
    os.environ.update(environment)


def _tree(agent: Agent) -> Iterator[Agent]:
    """``agent`` and its sub-agents, depth first in list order — the order in which
    :meth:`Agent.from_record` rebuilds them (a shared sub-agent comes once per parent)."""
    yield agent
    for child in agent.subagents:
        yield from _tree(child)


def _records(record: dict[str, Any]) -> Iterator[dict[str, Any]]:
    """A stored definition and its sub-agents' in the order of :func:`_tree`."""
    yield record
    for child in record.get("subagents") or ():
        yield from _records(child)


def _portable_models(agent: Agent, record: dict[str, Any], provider: Provider,
                     secrets: Secrets) -> dict[str, Any]:
    """The provider objects among the models of ``agent``'s tree as a worker rebuilds
    them: ``providers`` (one per object), ``models`` (for each agent of the tree, the
    number of its provider, or ``None``: its model is a string or its parent's). For an
    agent whose model is a string, what its ``record`` withholds of its settings as
    configured goes to ``secrets["configured"]`` by its place in the tree. ``provider``:
    the top agent's, as the kernel made it for ``record``."""
    providers: list[dict[str, Any]] = []
    numbers: dict[int, int] = {}
    models: list[int | None] = []
    configured: dict[str, dict[str, Any]] = {}
    for index, (current, stored) in enumerate(zip(_tree(agent), _records(record),
                                                  strict=True)):
        model = current.model
        if not isinstance(model, Provider):
            models.append(None)
            withheld = _withheld(current, stored.get("provider"),
                                 provider if index == 0 else None)
            if withheld:
                configured[str(index)] = withheld
            continue
        if id(model) not in numbers:
            numbers[id(model)] = len(providers)
            providers.append(_portable(model, current, secrets, len(providers)))
        models.append(numbers[id(model)])
    if configured:
        secrets["configured"] = configured
    return {"providers": providers, "models": models}


def _withheld(agent: Agent, stored: Any, provider: Provider | None) -> dict[str, Any]:
    """``base_url`` / ``request_options`` of ``agent``'s provider as configured, where
    its ``stored`` settings differ from them (they leave a credential out): the top
    agent's ``provider`` as made in the kernel (its URL may be the environment's), a
    sub-agent's own :attr:`Agent.provider_settings`. Settings read from a store are
    what they are."""
    if agent.provider_settings_origin is not None:
        return {}
    given: dict[str, Any]
    if provider is not None:
        given = {"base_url": provider.base_url,
                 "request_options": dict(provider.request_options)}
    else:
        given = dict(agent.provider_settings or {})
    stored = stored if isinstance(stored, dict) else {}
    return {name: given[name] for name in _CONFIGURED
            if given.get(name) is not None and given[name] != stored.get(name)}


def _portable(provider: Provider, owner: Agent, secrets: Secrets,
              number: int) -> dict[str, Any]:
    recipe = recipe_of(provider)
    if recipe is None:
        # Its key, if it holds one, is in it: the whole of it is a secret.
        secrets[str(number)] = {"pickled": _pickled_provider(provider, owner)}
        return {"pickled": True}
    try:  # as a worker will: what does not come back is refused before any starts
        rebuild(recipe.settings, recipe.options, recipe.secrets)
    except Exception as exc:
        raise ValueError(
            f"backend='ray' makes the model of agent {owner.name!r} ({provider.model_id}) "
            f"again in its workers from its settings, but they do not make it ({exc}): "
            f"give it a provider from create_provider(...), or use backend='local'") from exc
    secrets[str(number)] = recipe.secrets
    return {"settings": recipe.settings, "options": recipe.options}


def _pickled_provider(provider: Provider, owner: Agent) -> bytes:
    """``provider`` pickled, without the hooks a run's limiter set on it (a local run of
    the same agent sets them: they hold the kernel's loop)."""
    try:
        sent = copy.copy(provider)
        for hook in ("rate_listener", "request_gate"):
            vars(sent).pop(hook, None)
        return bytes(cloudpickle.dumps(sent))  # type: ignore[no-untyped-call]
    except Exception as exc:
        kind = type(provider)
        if isinstance(provider, ScriptedProvider):  # the package's class: its script
            change = ("its script holds a value that cannot be pickled "
                      f"({exc}): let the script's functions use no lock, client or open "
                      "file")
        else:
            change = (f"{kind.__module__}.{kind.__qualname__} cannot be pickled ({exc}): "
                      "make it picklable (leave its locks and clients out in "
                      "__getstate__ and make them again in __setstate__)")
        raise ValueError(
            f"backend='ray' sends the model of agent {owner.name!r} to its workers, but "
            f"{change}, or give the agent a model string or a provider from "
            f"create_provider(...), or use backend='local'") from exc


def _checked_output(output: Any) -> Any:
    if output is not None:
        try:
            cloudpickle.dumps(output)  # type: ignore[no-untyped-call]
        except Exception as exc:
            raise ValueError(f"backend='ray' sends the output model {output.__qualname__} to "
                             f"its workers, but it cannot be pickled ({exc}): define it "
                             f"without such values, or use backend='local'") from exc
    return output


class _WorkerLimiter:
    """A worker's side of the run's limits. Its share of ``concurrency`` is held here —
    the shares add up to the run's, so no call crosses processes for it (an actor round
    trip per model call was most of Ray's per-row cost); the rate's tokens and the
    ``Retry-After`` pauses, which every worker must see, are the limiter actor's."""

    def __init__(self, actor: Any, share: int, rated: bool) -> None:
        self._actor = actor
        self._local = RateLimiter(share)
        self._rated = rated

    @contextlib.asynccontextmanager
    async def call(self) -> AsyncIterator[None]:
        await self._local.acquire()
        try:
            if self._rated:
                await self._actor.take.remote()
            yield
        finally:
            self._local.release()

    def pause(self, seconds: float) -> None:
        self._local.pause(seconds)  # this worker's next requests wait at once
        self._actor.pause.remote(seconds)

    async def unpaused(self) -> None:
        """Before each HTTP request: no pause here, nor in any other worker."""
        await self._local.unpaused()
        await self._actor.unpaused.remote()


@ray.remote
class LimiterActor:
    """The run's rate (a token bucket) and pauses, shared by every worker (an async
    actor: its waits overlap). In-flight calls are bounded in the workers."""

    def __init__(self, rate: Rate | None) -> None:
        self._limiter = RateLimiter(sys.maxsize, rate)

    async def take(self) -> None:
        """One token of the rate (waits for it, and for any pause)."""
        await self._limiter.acquire()
        self._limiter.release()

    def pause(self, seconds: float) -> None:
        self._limiter.pause(seconds)

    async def unpaused(self) -> None:
        await self._limiter.unpaused()

    def figures(self) -> dict[str, float]:
        return {"pauses": self._limiter.pauses, "paused_total": self._limiter.paused_total}


@ray.remote
class BatchWorker:
    """One worker process of a run: runs ``slots`` rows at a time."""

    def __init__(self, spec: dict[str, Any], secrets: Secrets) -> None:
        # This process is this actor's alone: the SDKs find the keys where they look.
        set_environment(secrets.get("environment") or Secrets())
        self.spec = spec
        self._secrets = secrets
        self.pid = os.getpid()
        self._executor: LocalExecutor | None = None
        self._cancelled = False

    def process(self) -> int:
        return self.pid

    @ray.method(num_returns="streaming")
    async def run(self, slots: int, limiter: Any,
                  rated: bool) -> AsyncIterator[dict[str, Any]]:
        from ..store.batch_rows import BatchRows
        from ..store.process_owner import ProcessOwner
        from ..store.session_store import SessionStore

        spec = self.spec
        store = SessionStore(spec["store"])
        agent = _agent_of(spec, self._secrets)
        changes: dict[int, str] = {}
        owner = f"{ProcessOwner.current().model_dump_json()}|ray-{self.pid}"
        executor = LocalExecutor(
            agent=agent, catalog=ToolCatalog.default, store=store,
            rows=BatchRows(store, spec["run_id"]), run_id=spec["run_id"],
            template=spec["template"], output=spec["output"],
            limiter=_WorkerLimiter(limiter, slots, rated),  # type: ignore[arg-type]
            concurrency=slots, max_attempts=spec["max_attempts"], lease=spec["lease"],
            owner=owner, on_change=lambda idx, state: changes.__setitem__(idx, state))
        self._executor = executor
        if self._cancelled:  # cancelled before its call came in
            executor.cancel()
        task = asyncio.get_running_loop().create_task(executor.run())
        try:
            while not task.done():
                await asyncio.wait({task}, timeout=PROGRESS_INTERVAL)
                if changes:
                    batch, retried = dict(changes), executor.retried
                    changes.clear()
                    yield {"pid": self.pid, "changes": batch, "retried": retried}
            task.result()
        finally:
            if not task.done():
                executor.cancel()
                with contextlib.suppress(BaseException):
                    await task
            store.close()
        yield {"pid": self.pid, "changes": dict(changes), "retried": executor.retried,
               "finished": True}

    def cancel(self) -> None:
        """Stop claiming and stop the running turns (their rows go back to the queue);
        :meth:`run` then ends with its last batch, as after its last row."""
        self._cancelled = True
        if self._executor is not None:
            self._executor.cancel()


def _agent_of(spec: dict[str, Any], secrets: Secrets) -> Agent:
    """The agent as the kernel sent it: rebuilt from its record, with the provider
    objects of its tree rebuilt (or unpickled) in their places, and the prices and
    models the kernel set (``set_price``, ``register_model``) set here too."""
    from ..runtime.agent import Agent

    for (supplier, model), price in spec["price_table"].items():
        set_price(supplier, model, price)
    for info in spec["model_table"]:
        register_model(info)
    agent = Agent.from_record(spec["agent_record"], ToolCatalog.default())
    # Settings another user stored (a resumed run, a sub-agent of a resumed session) are
    # checked here as in the kernel: the record alone would make them this process's own.
    agent.set_provider_origins(spec.get("agent_origins") or {})
    providers: list[Provider] = []
    for number, sent in enumerate(spec["providers"]):
        own = secrets.get(str(number)) or {}
        if sent.get("pickled"):
            providers.append(cloudpickle.loads(own["pickled"]))
        else:
            providers.append(rebuild(sent["settings"], sent["options"], own))
    configured = secrets.get("configured") or {}
    for index, (current, number) in enumerate(zip(_tree(agent), spec["models"],
                                                  strict=True)):
        if number is not None:
            current.model = providers[number]
        elif str(index) in configured:
            current.provider_settings = {**(current.provider_settings or {}),
                                         **configured[str(index)]}
    return agent


class RayBackend:
    """Runs a run's rows on Ray from the kernel: starts the limiter and the workers,
    follows their progress, and returns once every worker is done."""

    def __init__(self, *, agent: Agent, store_target: str, run_id: str, template: str | None,
                 output: Any, concurrency: int, rate: Rate | None, max_attempts: int,
                 lease: float, workers: int | None,
                 on_change: Callable[[int, str], None]) -> None:
        self.agent = agent
        self._on_change = on_change
        self.concurrency = concurrency
        self.rate = rate
        self.workers = workers
        self.retried = 0
        self.pids: list[int] = []
        # Everything is made ready to send here, before any worker starts: what cannot
        # be sent is refused now.
        self._secrets = Secrets()
        provider = agent.create_provider()
        record = agent.to_record(provider)
        self.spec = {"store": store_target, "run_id": run_id, "template": template,
                     "output": _checked_output(output), "max_attempts": max_attempts,
                     "lease": lease, "agent_record": record,
                     "agent_origins": agent.provider_origins(),
                     # This process's own tables: a worker's process has only the shipped.
                     "price_table": user_prices(), "model_table": registered_models(),
                     **_portable_models(agent, record, provider, self._secrets)}
        self._actors: list[Any] = []
        self._cancelled = False

    def _worker_count(self) -> int:
        if self.workers is not None:
            return max(1, min(self.workers, self.concurrency))
        resources: dict[str, float] = ray.cluster_resources()  # type: ignore[no-untyped-call]
        cpus = int(resources.get("CPU", 1)) or 1
        return max(1, min(cpus, self.concurrency))

    async def run(self) -> None:
        if not ray.is_initialized():
            # Starting a local cluster takes seconds: off the kernel's loop, which keeps
            # drawing the grid (and every other widget) meanwhile.
            await asyncio.to_thread(ray.init, ignore_reinit_error=True,
                                    include_dashboard=False, log_to_driver=False)
        count = self._worker_count()
        limiter = LimiterActor.remote(self.rate)  # type: ignore[attr-defined]
        secrets = Secrets(self._secrets, environment=environment_secrets())
        options: dict[str, Any] = {"max_restarts": WORKER_RESTARTS,
                                   "max_task_retries": WORKER_RESTARTS,
                                   "max_concurrency": 1000}
        self._actors = [BatchWorker.options(**options).remote(  # type: ignore[attr-defined]
            self.spec, secrets) for _ in range(count)]
        self.pids = list(await asyncio.gather(*(actor.process.remote()
                                                for actor in self._actors)))
        shares = [self.concurrency // count + (1 if i < self.concurrency % count else 0)
                  for i in range(count)]
        try:
            rated = self.rate is not None
            await asyncio.gather(*(self._follow(actor.run.remote(share, limiter, rated))
                                   for actor, share in zip(self._actors, shares, strict=True)))
        finally:
            for actor in self._actors:
                with contextlib.suppress(Exception):
                    ray.kill(actor, no_restart=True)
            with contextlib.suppress(Exception):
                ray.kill(limiter, no_restart=True)

    async def _follow(self, generator: Any) -> None:
        retried_by_pid: dict[int, int] = {}
        async for reference in generator:
            batch = await reference
            for idx, state in batch["changes"].items():
                self._on_change(int(idx), state)
            retried_by_pid[batch["pid"]] = batch["retried"]
            self.retried = sum(retried_by_pid.values())

    def cancel(self) -> None:
        """Every worker stops claiming and stops its turns; their last batches come back
        and :meth:`run` returns (the actors are ended there)."""
        self._cancelled = True
        for actor in self._actors:
            with contextlib.suppress(Exception):
                actor.cancel.remote()
