"""A Ray worker rebuilds the run's agent from its record: settings another user stored
(a sub-agent of alice's session, bob's run) stay checked there as in the kernel — the
record alone must not make alice's server one bob's worker sends his key to. No
cluster is started: the worker's own rebuild (``_agent_of``) is run on the spec the
kernel sends."""

from __future__ import annotations

import pytest

pytest.importorskip("ray", reason="needs Ray: pip install 'neta-nb[ray]'")

from neta_nb import Agent, StoredEndpointError, ToolCatalog
from neta_nb.batch.ray_backend import RayBackend, Secrets, _agent_of
from neta_nb.runtime.stored_endpoint import StoredOrigin

ALICES_SERVER = "http://127.0.0.1:9/v1"


def _backend(agent: Agent) -> RayBackend:
    return RayBackend(agent=agent, store_target="unused.db", run_id="r", template=None,
                      output=None, concurrency=1, rate=None, max_attempts=1, lease=60.0,
                      workers=1, on_change=lambda _row, _state: None)


def test_a_worker_checks_a_stored_sub_agents_server_as_the_kernel_does(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("JUPYTERHUB_USER", "bob")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bob-secret-2222")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    alices = {"name": "planner", "model": "openai:gpt-5", "provider": None,
              "subagents": [{"name": "coder", "model": "openai:gpt-5",
                             "provider": {"base_url": ALICES_SERVER}}]}
    stored = Agent.from_record(alices, ToolCatalog.default(),
                               origin=StoredOrigin("session 's1'", "alice"))
    coder = stored.subagent("coder")
    assert coder is not None
    with pytest.raises(StoredEndpointError):  # in the kernel
        coder.create_provider()

    rebuilt = _agent_of(_backend(stored).spec, Secrets())
    worker_coder = rebuilt.subagent("coder")
    assert worker_coder is not None
    with pytest.raises(StoredEndpointError, match="written by alice"):  # in the worker
        worker_coder.create_provider()


def test_a_worker_keeps_the_readers_own_settings_as_given(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-bob-secret-2222")
    mine = Agent("planner", model="openai:gpt-5",
                 subagents=[Agent("coder", model="openai:gpt-5",
                                  provider_settings={"base_url": ALICES_SERVER})])
    rebuilt = _agent_of(_backend(mine).spec, Secrets())
    worker_coder = rebuilt.subagent("coder")
    assert worker_coder is not None
    assert worker_coder.create_provider().base_url == ALICES_SERVER
