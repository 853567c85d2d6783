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
* **Keys** reach the workers in Ray's runtime environment (the provider variables of the
  kernel's environment), never through the store.

An agent whose tools belong to the kernel (``python``, ``list_variables``) or that needs
the user's approval for a tool is refused before the run starts, with the reason.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import os
import sys
from collections.abc import AsyncIterator, Callable
from typing import TYPE_CHECKING, Any

try:
    import ray
except ImportError as exc:  # pragma: no cover - the extra is missing
    raise ImportError("backend='ray' needs Ray: pip install 'neta-nb[ray]'") from exc

from ..tools import ToolCatalog
from ..tools.resolver import resolve_tools
from .executor import LocalExecutor
from .limiter import Rate, RateLimiter

if TYPE_CHECKING:
    from ..runtime.agent import Agent

__all__ = ["KERNEL_TOOLS", "RayBackend", "check_portable"]

log = logging.getLogger(__name__)

KERNEL_TOOLS = frozenset({"python", "list_variables", "read_notebook", "edit_cell",
                          "insert_cell", "run_cell"})
"""Tools that act on the kernel that started the run: a worker elsewhere has none."""
KEY_VARIABLES = ("ANTHROPIC_API_KEY", "ANTHROPIC_BASE_URL", "OPENAI_API_KEY",
                 "OPENAI_BASE_URL", "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL")
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

    def __init__(self, spec: dict[str, Any]) -> None:
        self.spec = spec
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
        agent = _agent_of(spec)
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


def _agent_of(spec: dict[str, Any]) -> Agent:
    """The agent as the kernel sent it: itself (pickled) or rebuilt from its record."""
    from ..runtime.agent import Agent

    if spec.get("agent_object") is not None:
        agent: Agent = spec["agent_object"]
        return agent
    agent = Agent.from_record(spec["agent_record"], ToolCatalog.default())
    # Settings another user stored (a resumed run, a sub-agent of a resumed session) are
    # checked here as in the kernel: the record alone would make them this process's own.
    agent.set_provider_origins(spec.get("agent_origins") or {})
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
        self.spec = {"store": store_target, "run_id": run_id, "template": template,
                     "output": output, "max_attempts": max_attempts, "lease": lease,
                     "agent_record": agent.to_record(agent.create_provider()),
                     "agent_origins": agent.provider_origins(),
                     "agent_object": agent if not isinstance(agent.model, str | None)
                     else None}
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
        env = {name: os.environ[name] for name in KEY_VARIABLES if name in os.environ}
        options: dict[str, Any] = {"max_restarts": WORKER_RESTARTS,
                                   "max_task_retries": WORKER_RESTARTS,
                                   "max_concurrency": 1000}
        if env:
            options["runtime_env"] = {"env_vars": env}
        self._actors = [BatchWorker.options(**options).remote(self.spec)  # type: ignore[attr-defined]
                        for _ in range(count)]
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
