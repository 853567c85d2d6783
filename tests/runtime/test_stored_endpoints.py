"""A stored ``base_url`` never decides where the reader's key goes.

alice's session (or batch run) was made through her own server; bob, with his key in
his environment, replays it, resumes it (a store file handed over) or resumes the batch
run. The provider is rebuilt from alice's record: it must not send bob's key — or
anything — to alice's server. Each case runs against real SDKs and a local server that
records every request, on SQLite and on a real PostgreSQL, for OpenAI and Anthropic;
the server must receive nothing at all. Endpoints the reader configured (the vendor's,
their own ``*_BASE_URL``, a provider they pass) keep working, and so does a reader's own
keyless local server."""

from __future__ import annotations

import asyncio
import logging
import re
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from pathlib import Path

import pytest

from neta_nb import (
    Agent,
    AgentSession,
    ScriptedProvider,
    SessionNotOwnedError,
    SessionStore,
    StoredEndpointError,
    ToolCatalog,
    create_provider,
    replay,
)
from neta_nb.batch import BatchRun
from neta_nb.messages import ToolResultPart
from neta_nb.providers.base import Provider
from neta_nb.runtime.stored_endpoint import StoredOrigin, check_stored_endpoint
from neta_nb.widgets import ChatView, SessionSidebar
from neta_nb.widgets.base import RequestError

from ..providers.sse_server import (
    AnthropicStream,
    OpenAIStream,
    RecordedRequest,
    ScriptedHTTPResponse,
    SSEServer,
)
from ..support.sessions import FakeProvider, answer, calls

ALICE_KEY = "sk-alice-own-1111"
BOB_KEY = "sk-bob-secret-2222"
SPECS = {"openai": "openai:gpt-5", "anthropic": "anthropic:claude-sonnet-4-6"}
KEY_VARIABLES = {"openai": "OPENAI_API_KEY", "anthropic": "ANTHROPIC_API_KEY"}
URL_VARIABLES = {"openai": "OPENAI_BASE_URL", "anthropic": "ANTHROPIC_BASE_URL"}


def _answer(request: RecordedRequest) -> ScriptedHTTPResponse:
    """Any model call answered, in the wire format its path says."""
    if request.path.endswith("/messages"):
        return AnthropicStream().text(["Answered."]).finish().response()
    return OpenAIStream().text(["Answered."]).finish().usage().done().response()


@pytest.fixture
async def server() -> AsyncIterator[SSEServer]:
    """A model server that answers every call and records every request."""
    async with SSEServer() as running:
        running.responder = _answer
        yield running


@pytest.fixture
def as_user(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], None]:
    def switch(name: str) -> None:
        monkeypatch.setenv("JUPYTERHUB_USER", name)
    return switch


@pytest.fixture
def store(store_target: str | Path) -> Iterator[SessionStore]:
    opened = SessionStore(store_target)
    yield opened
    opened.close()


def _provider(vendor: str, url: str, key: str | None = ALICE_KEY) -> Provider:
    return create_provider(SPECS[vendor], api_key=key, base_url=url)


async def _alices_session(store: SessionStore, url: str, vendor: str,
                          as_user: Callable[[str], None]) -> str:
    """alice's session, one turn made through her server at ``url`` with her own key."""
    as_user("alice")
    session = AgentSession(Agent("alice's agent", model=_provider(vendor, url)),
                           ToolCatalog.default(), store)
    await session.run("What is in the report?")
    assert session.messages[-1].text == "Answered."
    assert session.flush(30)
    return session.id


def _bob_with_key(vendor: str, as_user: Callable[[str], None],
                  monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("bob")
    monkeypatch.setenv(KEY_VARIABLES[vendor], BOB_KEY)


def _assert_nothing_reached(server: SSEServer, before: int) -> None:
    late = server.requests[before:]
    leaked = [r for r in late if any(BOB_KEY in value for value in r.headers.values())]
    assert not leaked, f"bob's key reached alice's server: {[r.path for r in leaked]}"
    assert not late, f"alice's server was asked {[r.path for r in late]}"


async def _attempt(server: SSEServer, before: int,
                   action: Callable[[], Awaitable[object]]) -> None:
    """Run ``action``, then check the server heard nothing since ``before`` — also when
    it raised (without the check, it would have talked to the server first)."""
    try:
        await action()
    finally:
        _assert_nothing_reached(server, before)


def _assert_names_the_url(error: BaseException, url: str, vendor: str) -> None:
    text = str(error)
    assert repr(url) in text and "written by alice" in text
    assert KEY_VARIABLES[vendor] in text
    assert f"create_provider('{SPECS[vendor]}', base_url='{url}')" in text
    assert BOB_KEY not in text


# --- two owners: replay, resume, batch resume -------------------------------------------

@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_replaying_another_users_session_sends_nothing_to_their_server(
        store: SessionStore, server: SSEServer, vendor: str,
        as_user: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = await _alices_session(store, server.base_url, vendor, as_user)
    before = len(server.requests)
    _bob_with_key(vendor, as_user, monkeypatch)
    with pytest.raises(StoredEndpointError) as caught:  # replay as docs/traces.md shows it
        await _attempt(server, before, lambda: replay(session_id, store=store))
    _assert_names_the_url(caught.value, server.base_url, vendor)
    assert f"session {session_id!r}" in str(caught.value)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_resuming_another_users_session_sends_nothing_to_their_server(
        store: SessionStore, server: SSEServer, vendor: str,
        as_user: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = await _alices_session(store, server.base_url, vendor, as_user)
    before = len(server.requests)
    _bob_with_key(vendor, as_user, monkeypatch)
    # A shared store refuses another user's session before its provider is built; a
    # SQLite file someone handed over gets as far as the provider, and is refused there.
    expected = SessionNotOwnedError if store.shared else StoredEndpointError

    async def resume_and_ask() -> None:
        await AgentSession.resume(session_id, store).run("And the totals?")

    with pytest.raises(expected) as caught:
        await _attempt(server, before, resume_and_ask)
    if not store.shared:
        _assert_names_the_url(caught.value, server.base_url, vendor)


@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_resuming_another_users_batch_run_sends_nothing_to_their_server(
        store: SessionStore, server: SSEServer, vendor: str,
        as_user: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("alice")
    agent = Agent("alice's classifier", model=_provider(vendor, server.base_url))

    def define() -> None:  # stored, not started: no loop runs in this thread
        BatchRun(agent, ["ticket 1", "ticket 2"], "Classify: {input}", store=store,
                 run_id="alices-run")

    await asyncio.to_thread(define)
    before = len(server.requests)
    _bob_with_key(vendor, as_user, monkeypatch)

    async def resume_run() -> None:
        await BatchRun.resume("alices-run", store=store)

    with pytest.raises(StoredEndpointError) as caught:
        await _attempt(server, before, resume_run)
    _assert_names_the_url(caught.value, server.base_url, vendor)
    assert "batch run 'alices-run'" in str(caught.value)


# --- the reader's own sessions ----------------------------------------------------------

@pytest.mark.parametrize("vendor", ["openai", "anthropic"])
async def test_an_own_session_goes_to_its_server_only_when_the_reader_configures_it(
        store: SessionStore, server: SSEServer, vendor: str,
        as_user: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = await _alices_session(store, server.base_url, vendor, as_user)
    before = len(server.requests)
    # Her key now comes from her environment: the stored URL alone does not get it.
    monkeypatch.setenv(KEY_VARIABLES[vendor], "sk-alice-env-3333")
    with pytest.raises(StoredEndpointError, match="is not an endpoint you configured"):
        AgentSession.resume(session_id, store)
    _assert_nothing_reached(server, before)

    # Her own *_BASE_URL names that server: it gets her key.
    monkeypatch.setenv(URL_VARIABLES[vendor], server.base_url + "/")
    resumed = AgentSession.resume(session_id, store)
    await resumed.run("Again?")
    assert resumed.messages[-1].text == "Answered."
    last = server.requests[-1].headers
    assert "sk-alice-env-3333" in last.get("authorization", last.get("x-api-key", ""))
    assert resumed.flush(30)

    # A provider given explicitly is the reader's choice, whatever the environment says.
    monkeypatch.delenv(URL_VARIABLES[vendor])
    given = AgentSession.resume(session_id, store,
                                provider=_provider(vendor, server.base_url, key=None))
    await given.run("Once more?")
    assert given.messages[-1].text == "Answered."


async def test_the_session_list_says_why_it_does_not_open_such_a_session(
        store: SessionStore, server: SSEServer, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = await _alices_session(store, server.base_url, "openai", as_user)
    before = len(server.requests)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-alice-env-3333")
    chat = ChatView(AgentSession(Agent("other", model=ScriptedProvider()), store=store))
    sidebar = SessionSidebar(store, chat=chat)
    try:
        # A message for the user (the URL and how to use it), not a failure of the view.
        with pytest.raises(RequestError, match=re.escape(repr(server.base_url))):
            sidebar.open_session(session_id)
    finally:
        sidebar.close()
    _assert_nothing_reached(server, before)


async def test_a_sub_agent_on_a_stored_server_is_named_at_resume_and_never_reached(
        store: SessionStore, server: SSEServer, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch, caplog: pytest.LogCaptureFixture) -> None:
    as_user("alice")
    coder = Agent("coder", model=_provider("openai", server.base_url))
    session = AgentSession(Agent("planner", model=FakeProvider([]), subagents=[coder]),
                           ToolCatalog.default(), store)
    assert session.flush(30)
    before = len(server.requests)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-alice-env-3333")
    planner = FakeProvider([calls(("c1", "delegate", {"agent": "coder", "task": "Sum it."})),
                            answer("Could not delegate.")])
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        resumed = AgentSession.resume(session.id, store, provider=planner)
    assert any("sub-agent 'coder' cannot be delegated to" in r.getMessage()
               and repr(server.base_url) in r.getMessage() for r in caplog.records)
    await resumed.run("Delegate the sum.")
    result = next(part for message in resumed.messages for part in message.parts
                  if isinstance(part, ToolResultPart))
    assert result.is_error and "StoredEndpointError" in result.content
    _assert_nothing_reached(server, before)


async def test_a_replay_given_a_model_uses_the_readers_endpoint_not_the_stored_one(
        store: SessionStore, server: SSEServer, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    session_id = await _alices_session(store, server.base_url, "openai", as_user)
    before = len(server.requests)
    _bob_with_key("openai", as_user, monkeypatch)
    async with SSEServer() as bobs:
        bobs.responder = _answer
        monkeypatch.setenv("OPENAI_BASE_URL", bobs.base_url)
        report = await replay(session_id, store=store, model="openai:gpt-5")
        assert [turn.after.answer for turn in report.turns] == ["Answered."]
        assert [r.headers["authorization"] for r in bobs.requests if
                r.path.endswith("/chat/completions")] == [f"Bearer {BOB_KEY}"]
        # His own provider for alice's server, given on purpose, is used as given.
        await replay(session_id, store=store,
                     model=create_provider("openai:gpt-5", api_key="sk-bob-for-alice",
                                           base_url=server.base_url))
    assert [r.headers["authorization"] for r in server.requests[before:]] == [
        "Bearer sk-bob-for-alice"]


async def test_a_keyless_local_server_is_used_for_its_owner_and_refused_to_others(
        store: SessionStore, server: SSEServer, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("alice")
    local = create_provider("openai-compatible:llama3", base_url=server.base_url + "/v1")
    session = AgentSession(Agent("local", model=local), ToolCatalog.default(), store)
    await session.run("Hello?")
    assert session.flush(30)
    # No key in the environment: her own session's server is hers to use again.
    resumed = AgentSession.resume(session.id, store)
    await resumed.run("Again?")
    assert resumed.messages[-1].text == "Answered."
    assert server.requests[-1].headers["authorization"] == "Bearer not-needed"
    assert resumed.flush(30)
    before = len(server.requests)
    # bob has no key to lose, but alice's server would get his prompts and tool results.
    as_user("bob")
    with pytest.raises(StoredEndpointError, match="another user stored"):
        await replay(session.id, store=store)
    _assert_nothing_reached(server, before)
    # A key in the environment: even her own session's server does not get it.
    as_user("alice")
    monkeypatch.setenv("OPENAI_API_KEY", "sk-alice-env-4444")
    with pytest.raises(StoredEndpointError, match="OPENAI_API_KEY from your environment"):
        await replay(session.id, store=store)
    _assert_nothing_reached(server, before)


# --- the rule, provider by provider -----------------------------------------------------

BOBS = StoredOrigin("session 's1'", "bob")
ALICES = StoredOrigin("session 's1'", "alice")


@pytest.mark.parametrize(("spec", "url"), [
    ("openai:gpt-5", None),
    ("openai:gpt-5", "https://api.openai.com/v1/"),
    ("anthropic:claude-sonnet-4-6", "https://API.anthropic.com"),
    ("deepseek:deepseek-reasoner", None),  # stored as DeepSeek's own URL
    ("deepseek:deepseek-reasoner", "https://api.deepseek.com"),
])
def test_the_vendors_own_endpoint_gets_the_environments_key(
        spec: str, url: str | None, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("bob")
    for variable in ("OPENAI_API_KEY", "ANTHROPIC_API_KEY", "DEEPSEEK_API_KEY"):
        monkeypatch.setenv(variable, BOB_KEY)
    agent = Agent("a", model=spec, provider_settings={"base_url": url},
                  provider_settings_origin=ALICES)
    agent.create_provider()  # built; nothing is sent while building


@pytest.mark.parametrize(("spec", "variable"), [
    ("openai:gpt-5", "OPENAI_API_KEY"),
    ("openai-compatible:llama3", "OPENAI_API_KEY"),
    ("deepseek:deepseek-reasoner", "DEEPSEEK_API_KEY"),
    ("anthropic:claude-sonnet-4-6", "ANTHROPIC_API_KEY"),
    ("anthropic:claude-sonnet-4-6", "ANTHROPIC_AUTH_TOKEN"),  # sent as a bearer token
])
def test_any_credential_from_the_environment_is_kept_from_a_stored_server(
        spec: str, variable: str, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("bob")
    monkeypatch.setenv(variable, BOB_KEY)
    agent = Agent("a", model=spec, provider_settings={"base_url": "http://127.0.0.1:9/v1"},
                  provider_settings_origin=BOBS)  # his own record, even
    with pytest.raises(StoredEndpointError, match=variable):
        agent.create_provider()


def test_settings_given_in_code_and_a_sub_agents_stored_ones(
        as_user: Callable[[str], None], monkeypatch: pytest.MonkeyPatch) -> None:
    as_user("bob")
    monkeypatch.setenv("OPENAI_API_KEY", BOB_KEY)
    url = "http://127.0.0.1:9/v1"
    # Written in the reader's own code: their choice.
    mine = Agent("a", model="openai:gpt-5", provider_settings={"base_url": url})
    assert mine.create_provider().base_url == url
    # A sub-agent of a stored definition is checked as its parent is.
    stored = Agent("top", model="openai:gpt-5",
                   subagents=[Agent("coder", model="openai:gpt-5",
                                    provider_settings={"base_url": url})]
                   ).to_record(create_provider("openai:gpt-5"))
    top = Agent.from_record(stored, ToolCatalog.default(), origin=StoredOrigin(
        "session 'p1'", "alice"))
    assert top.create_provider().base_url is None
    coder = top.subagent("coder")
    assert coder is not None
    with pytest.raises(StoredEndpointError, match="agent 'coder'"):
        coder.create_provider()


def test_a_record_without_a_writer_counts_as_anothers(
        as_user: Callable[[str], None]) -> None:
    as_user("bob")
    provider = create_provider("openai-compatible:m", base_url="http://127.0.0.1:9/v1")
    check_stored_endpoint(provider, StoredOrigin("session 'x'", "bob"), "a")
    with pytest.raises(StoredEndpointError, match="its writer unknown"):
        check_stored_endpoint(provider, StoredOrigin("session 'x'", None), "a")


async def test_an_openai_key_never_goes_to_deepseek_for_a_stored_deepseek_model(
        tmp_path: Path, server: SSEServer, as_user: Callable[[str], None],
        monkeypatch: pytest.MonkeyPatch) -> None:
    # alice's session names a DeepSeek model; the server stands in for DeepSeek's API,
    # which bob configured (DEEPSEEK_BASE_URL) but has no DeepSeek key for: only his
    # OpenAI key is set, and it is OpenAI's, never DeepSeek's.
    store = SessionStore(tmp_path / "s.db")
    as_user("alice")
    alices = create_provider("deepseek:deepseek-chat", api_key=ALICE_KEY,
                             base_url=server.base_url)
    session = AgentSession(Agent("alice's agent", model=alices), ToolCatalog.default(), store)
    await session.run("What is in the report?")
    assert session.flush(30)
    before = len(server.requests)
    _bob_with_key("openai", as_user, monkeypatch)
    monkeypatch.delenv("DEEPSEEK_API_KEY", raising=False)
    monkeypatch.setenv("DEEPSEEK_BASE_URL", server.base_url)
    with pytest.raises(ValueError, match="DEEPSEEK_API_KEY") as caught:
        await _attempt(server, before, lambda: replay(session.id, store=store))
    assert "OPENAI_API_KEY" in str(caught.value) and BOB_KEY not in str(caught.value)
    # Nor to a server stored for a DeepSeek model (refused before its URL is looked at).
    agent = Agent("a", model="deepseek:deepseek-chat",
                  provider_settings={"base_url": "http://127.0.0.1:9/v1"},
                  provider_settings_origin=BOBS)
    with pytest.raises(ValueError, match="DEEPSEEK_API_KEY"):
        agent.create_provider()
    # His DeepSeek key, once set, goes there as configured.
    monkeypatch.setenv("DEEPSEEK_API_KEY", "sk-bob-deepseek-5555")
    await replay(session.id, store=store)
    assert server.requests[-1].headers["authorization"] == "Bearer sk-bob-deepseek-5555"
    store.close()
