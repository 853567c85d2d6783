"""A Ray worker's providers are configured as the kernel's: what of an agent's own provider
settings (a model string's ``provider_settings``, the environment's base URL) the stored
form withholds — a ``user:password@``, a ``?token=``, headers, secret-named options — and
every variable that gives a supplier its credential reach the worker through its
:class:`Secrets`, never through the spec. No cluster is started: the worker's own rebuild
(``_agent_of``) is run on what a pickle round trip of the spec and secrets gives back."""

from __future__ import annotations

import os
import threading
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("ray", reason="needs Ray: pip install 'neta-nb[ray]'")
from ray import cloudpickle

from neta_nb import Agent, SessionStore, create_provider
from neta_nb.batch.ray_backend import (
    RayBackend,
    Secrets,
    _agent_of,
    environment_secrets,
    set_environment,
)
from neta_nb.providers import models, prices
from neta_nb.providers.endpoints import KEY_VARIABLES, URL_VARIABLES
from neta_nb.providers.models import ModelInfo, register_model
from neta_nb.providers.openai import OpenAIProvider
from neta_nb.providers.prices import ModelPrice, set_price
from neta_nb.providers.scripted.scripted import ScriptedProvider

from ..providers.sse_server import OpenAIStream, SSEServer

SERVER = "http://127.0.0.1:9/v1"
SECRETS = ("URL-PASS", "URL-TOKEN", "HEADER-SECRET", "OPTION-SECRET")


def _backend(agent: Agent) -> RayBackend:
    return RayBackend(agent=agent, store_target="unused.db", run_id="r", template=None,
                      output=None, concurrency=1, rate=None, max_attempts=1, lease=60.0,
                      workers=1, on_change=lambda _row, _state: None)


def _sent(backend: RayBackend) -> tuple[dict[str, Any], Secrets, bytes]:
    """The spec and secrets as a worker receives them, and the spec's bytes."""
    spec_bytes = bytes(cloudpickle.dumps(backend.spec))  # type: ignore[no-untyped-call]
    secrets = cloudpickle.loads(cloudpickle.dumps(backend._secrets))  # type: ignore[no-untyped-call]
    return cloudpickle.loads(spec_bytes), secrets, spec_bytes


@pytest.fixture(autouse=True)
def _no_keys(monkeypatch: pytest.MonkeyPatch) -> None:
    for names in (*KEY_VARIABLES.values(), tuple(URL_VARIABLES.values())):
        for name in names:
            monkeypatch.delenv(name, raising=False)


def test_a_sub_agents_own_settings_reach_the_worker_as_given() -> None:
    given = {"base_url": "http://user:URL-PASS@127.0.0.1:9/v1?token=URL-TOKEN",
             "request_options": {"top_k": 40, "api_key": "OPTION-SECRET",
                                 "extra_headers": {"X-Proxy": "HEADER-SECRET"}}}
    agent = Agent("planner", model="scripted",
                  subagents=[Agent("coder", model="openai-compatible:llama3",
                                   provider_settings=given)])
    spec, secrets, spec_bytes = _sent(_backend(agent))
    for secret in SECRETS:
        assert secret.encode() not in spec_bytes

    coder = _agent_of(spec, secrets).subagent("coder")
    assert coder is not None
    provider = coder.create_provider()
    assert provider.base_url == given["base_url"]
    assert dict(provider.request_options) == given["request_options"]


def test_the_environments_base_url_reaches_the_worker_whole(
        monkeypatch: pytest.MonkeyPatch) -> None:
    url = "http://user:URL-PASS@127.0.0.1:9/v1?token=URL-TOKEN"
    monkeypatch.setenv("OPENAI_BASE_URL", url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kernel")
    backend = _backend(Agent("top", model="openai:gpt-5"))
    spec, secrets, spec_bytes = _sent(backend)
    environment = environment_secrets()
    for secret in SECRETS:
        assert secret.encode() not in spec_bytes

    # The worker's process: the kernel's variables as the worker sets them, no others.
    monkeypatch.delenv("OPENAI_BASE_URL")
    monkeypatch.delenv("OPENAI_API_KEY")
    for name, value in environment.items():
        monkeypatch.setenv(name, value)
    provider = _agent_of(spec, secrets).create_provider()
    assert provider.base_url == url


def test_every_variable_a_supplier_takes_its_credential_from_reaches_the_workers(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "bearer-kernel")
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-deepseek")
    environment = environment_secrets()
    assert isinstance(environment, Secrets) and "bearer-kernel" not in repr(environment)
    assert environment == {"ANTHROPIC_AUTH_TOKEN": "bearer-kernel",
                           "DEEPSEEK_API_KEY": "sk-deepseek"}
    assert not os.environ.get("OPENAI_API_KEY")


def test_prices_and_models_the_kernel_set_hold_in_the_worker(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """``set_price`` and ``register_model`` are the kernel process's: a worker is another
    process, and a run with a budget needs the price there too."""
    kernel_registry = dict(models._registry)
    monkeypatch.setattr(models, "_registry", dict(kernel_registry))
    monkeypatch.setattr(prices, "_SET", {})
    price = ModelPrice(input=1.5, output=3.0)
    set_price("openai-compatible", "house-model", price)
    register_model(ModelInfo(supplier="openai-compatible", model="house-model",
                             context_window=12_000, max_output_tokens=2_000,
                             capabilities=frozenset({"tools", "vision"})))
    agent = Agent("top", model="openai-compatible:house-model-7b", budget_usd=1.0,
                  provider_settings={"base_url": SERVER},
                  subagents=[Agent("helper", model=create_provider(
                      "openai-compatible:house-model-1b", base_url=SERVER))])
    spec, secrets, _ = _sent(_backend(agent))

    # A worker's process: the shipped tables only.
    monkeypatch.setattr(models, "_registry", dict(kernel_registry))
    monkeypatch.setattr(prices, "_SET", {})
    assert create_provider("openai-compatible:house-model-7b", base_url=SERVER).price is None
    rebuilt = _agent_of(spec, secrets)
    helper = rebuilt.subagent("helper")
    assert helper is not None
    for provider in (rebuilt.create_provider(), helper.create_provider()):
        assert provider.price == price
        assert provider.info.context_window == 12_000
        assert "vision" in provider.info.capabilities


class PicklableOpenAI(OpenAIProvider):
    """A provider class of the user's that pickles: it travels as itself, its key in it."""

    def __init__(self, model: str, **options: Any) -> None:
        self.options = {"model": model, **options}
        super().__init__(model, **options)

    def __getstate__(self) -> dict[str, Any]:
        return dict(self.options)

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__init__(**state)  # type: ignore[misc]


def test_a_pickled_provider_travels_with_the_secrets_not_in_the_spec() -> None:
    provider = PicklableOpenAI("gpt-5", api_key="sk-PICKLED-SECRET")
    backend = _backend(Agent("top", model=provider))
    spec, secrets, spec_bytes = _sent(backend)
    assert b"PICKLED-SECRET" not in spec_bytes
    assert "PICKLED-SECRET" not in repr(backend.spec)
    rebuilt = _agent_of(spec, secrets).model
    assert isinstance(rebuilt, PicklableOpenAI)
    assert rebuilt._client.api_key == "sk-PICKLED-SECRET"


def test_a_provider_its_settings_do_not_make_again_is_refused_before_the_run() -> None:
    """The class takes a window of 0 (the table's window then holds); ``create_provider``,
    which a worker rebuilds it with, does not: refused in the kernel, not in each worker."""
    provider = OpenAIProvider("gpt-5", api_key="sk-never-shown", context_window=0)
    agent = Agent("top", model="scripted", subagents=[Agent("helper", model=provider)])
    with pytest.raises(ValueError, match=r"agent 'helper'.*context_window") as raised:
        _backend(agent)
    assert "sk-never-shown" not in str(raised.value)


async def test_a_workers_agent_sends_the_credentials_and_stores_none(tmp_path: Path) -> None:
    """The agent a worker rebuilds, run over rows (as a worker's executor does, here in
    this process): its own settings' header and secret-named option reach its server,
    the store's file holds neither."""
    async with SSEServer() as server:
        server.responder = lambda _request: (
            OpenAIStream(model="m").text(["ok"]).finish("stop").usage(5, 1).done().response())
        given = {"base_url": f"{server.base_url}/v1",
                 "request_options": {"extra_headers": {"X-Proxy": "HEADER-SECRET"},
                                     "extra_body": {"session_token": "BODY-SECRET"}}}
        agent = Agent("top", model="openai-compatible:m", provider_settings=given)
        spec, secrets, _ = _sent(_backend(agent))
        store = SessionStore(tmp_path / "s.db")
        results = await _agent_of(spec, secrets).map(["a", "b"], "Say: {input}", store=store)
        store.close()
        requests = [request for request in server.requests
                    if request.path.endswith("/chat/completions")]
    assert list(results["status"]) == ["done", "done"], results["error"].tolist()
    assert requests and all(request.json["session_token"] == "BODY-SECRET"
                            for request in requests)
    assert {request.headers.get("x-proxy") for request in requests} == {"HEADER-SECRET"}
    assert _files_holding(tmp_path, (b"BODY-SECRET", b"HEADER-SECRET")) == []


def _files_holding(folder: Path, secrets: tuple[bytes, ...]) -> list[str]:
    """The files under ``folder`` (the store's, its journal's) holding any of ``secrets``."""
    return [str(path) for path in folder.rglob("*") if path.is_file()
            and any(secret in path.read_bytes() for secret in secrets)]


def test_a_worker_has_the_kernels_provider_variables_and_no_others(
        monkeypatch: pytest.MonkeyPatch) -> None:
    """A variable the kernel does not set is not the worker's either: a base URL left in
    the worker's process (its node's, or the kernel's before it was unset) would get the
    kernel's key, where the local run sends it to the vendor."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-kernel")
    backend = _backend(Agent("top", model="openai:gpt-5"))
    spec, secrets, _ = _sent(backend)
    environment = environment_secrets()

    monkeypatch.setenv("OPENAI_BASE_URL", "http://127.0.0.1:9/stale")  # the worker's
    monkeypatch.setenv("ANTHROPIC_AUTH_TOKEN", "node-token")
    set_environment(environment)
    # Compared one by one: a failure must not print the whole environment.
    left = {name: os.environ.get(name) for name in ("OPENAI_BASE_URL", "ANTHROPIC_AUTH_TOKEN",
                                                    "OPENAI_API_KEY")}
    assert left == {"OPENAI_BASE_URL": None, "ANTHROPIC_AUTH_TOKEN": None,
                    "OPENAI_API_KEY": "sk-kernel"}
    assert _agent_of(spec, secrets).create_provider().base_url is None


def test_a_scripted_model_whose_script_cannot_be_pickled_is_refused_with_what_to_change(
        ) -> None:
    """The class is the package's: the advice is about the script, not ``__getstate__``."""
    lock = threading.Lock()

    def answer(_messages: list[Any]) -> list[dict[str, Any]]:
        with lock:
            return [{"text": "x"}]

    agent = Agent("labeller", model=ScriptedProvider([answer]))
    with pytest.raises(ValueError, match=r"agent 'labeller'.*its script") as raised:
        _backend(agent)
    assert "__getstate__" not in str(raised.value)
