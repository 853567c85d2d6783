"""A provider's ``base_url`` is stored without what may be a secret in it — ``user:password``
and every query parameter but a version (``?api-key=…`` of an Azure-style gateway, a
proxy's ``?token=…``, a signed ``?sig=…``): the secret is nowhere in the session database,
for the top-level agent's provider and for its sub-agents'. A resume says, by name and
never by value, what must be given again and how; the note survives the resumed session's
own saves."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog, create_provider

from ..support.sessions import FakeProvider

GATEWAY = "https://gateway.invalid/openai/v1"
SECRETS = ("KEY-TOP-1111", "SIG-TOP-2222", "PASS-TOP-3333", "TOKEN-CHILD-4444",
           "KEY-CHILD-5555")


def _database_bytes(folder: Path) -> bytes:
    """Every file SQLite keeps for the store (the database and its journal files)."""
    return b"".join(path.read_bytes() for path in sorted(folder.iterdir()) if path.is_file())


def _crew_with_secret_urls() -> Agent:
    provider = create_provider(
        "openai-compatible:gpt-4o", api_key="sk-not-stored",
        base_url=("https://me:PASS-TOP-3333@gateway.invalid/openai/v1?api-version=2024-06-01"
                  "&api-key=KEY-TOP-1111&sig=SIG-TOP-2222"))
    by_settings = Agent("coder", model="openai-compatible:coder-model",
                        provider_settings={"base_url": f"{GATEWAY}?token=TOKEN-CHILD-4444"})
    by_instance = Agent("researcher", model=create_provider(
        "openai-compatible:r", base_url=f"{GATEWAY}?api_version=1&key=KEY-CHILD-5555"))
    return Agent("planner", model=provider, subagents=[by_settings, by_instance])


def test_query_secrets_in_base_urls_never_reach_the_store(tmp_path: Path) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(_crew_with_secret_urls(), ToolCatalog.default(), store)
    assert session.flush(30)
    stored_bytes = _database_bytes(tmp_path)
    for secret in (*SECRETS, "sk-not-stored"):
        assert secret.encode() not in stored_bytes, secret
    record = store.get_session(session.id)
    assert record is not None
    settings = record.agent["provider"]
    assert settings["base_url"] == f"{GATEWAY}?api-version=2024-06-01"
    assert settings["base_url_withheld"] == ["user:password", "api-key", "sig"]
    coder, researcher = record.agent["subagents"]
    assert coder["provider"]["base_url"] == GATEWAY
    assert coder["provider"]["base_url_withheld"] == ["token"]
    assert researcher["provider"]["base_url"] == f"{GATEWAY}?api_version=1"
    assert researcher["provider"]["base_url_withheld"] == ["key"]


def test_resume_says_what_to_give_again_and_keeps_saying_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(_crew_with_secret_urls(), ToolCatalog.default(), store)
    assert session.flush(30)

    for _ in range(2):  # the resumed session's own save keeps the note
        caplog.clear()
        with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
            resumed = AgentSession.resume(session.id, SessionStore(store.path))
        assert resumed.flush(30)
        warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
        top = next(w for w in warnings if "agent 'planner'" in w)
        assert ("base_url was stored without user:password and the query parameters "
                "api-key and sig") in top
        assert "provider=create_provider('openai-compatible:gpt-4o', base_url=...)" in top
        coder = next(w for w in warnings if "sub-agent 'coder'" in w)
        assert "the query parameter token" in coder and "agent=" in coder
        assert any("sub-agent 'researcher'" in w and "parameter key" in w for w in warnings)
        assert not any(secret in w for w in warnings for secret in SECRETS)
        assert resumed.provider.base_url == f"{GATEWAY}?api-version=2024-06-01"
    for secret in SECRETS:
        assert secret.encode() not in _database_bytes(tmp_path), secret


def test_a_resume_given_the_provider_again_does_not_ask_for_it(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "s.db")
    provider = FakeProvider([])
    provider.base_url = f"{GATEWAY}?api-key=KEY-TOP-1111"
    session = AgentSession(Agent("solo", model=provider), ToolCatalog.default(), store)
    assert session.flush(30)
    assert b"KEY-TOP-1111" not in _database_bytes(tmp_path)
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        AgentSession.resume(session.id, store, provider=provider)
    assert not [r for r in caplog.records if "base_url" in r.getMessage()]
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        AgentSession.resume(session.id, store)
    assert any("agent 'solo'" in r.getMessage() and "parameter api-key" in r.getMessage()
               for r in caplog.records)


def test_a_password_alone_is_named_too(tmp_path: Path,
                                       caplog: pytest.LogCaptureFixture) -> None:
    store = SessionStore(tmp_path / "s.db")
    provider = create_provider("openai-compatible:m",
                               base_url="http://user:PASS-TOP-3333@127.0.0.1:8080/v1")
    session = AgentSession(Agent("local", model=provider), ToolCatalog.default(), store)
    assert session.flush(30)
    assert b"PASS-TOP-3333" not in _database_bytes(tmp_path)
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        AgentSession.resume(session.id, store)
    assert any("base_url was stored without user:password (" in r.getMessage()
               for r in caplog.records)


def test_secrets_in_request_options_are_not_stored_and_resume_names_them(
        tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    # The SDKs take headers and query parameters in request options too.
    options = {"extra_headers": {"api-key": "HEADER-SECRET-6666"},
               "extra_query": {"api-version": "3", "api-key": "QUERY-SECRET-7777"},
               "metadata": {"user_token": "NESTED-SECRET-8888", "team": "data"},
               "top_p": 0.9}
    coder = Agent("coder", model="openai-compatible:coder-model",
                  provider_settings={"base_url": GATEWAY, "request_options": options})
    planner = Agent("planner", subagents=[coder], model=create_provider(
        "openai-compatible:gpt-4o", base_url=GATEWAY, request_options=options))
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(planner, ToolCatalog.default(), store)
    assert session.flush(30)
    stored_bytes = _database_bytes(tmp_path)
    for secret in ("HEADER-SECRET-6666", "QUERY-SECRET-7777", "NESTED-SECRET-8888"):
        assert secret.encode() not in stored_bytes, secret
    record = store.get_session(session.id)
    assert record is not None
    for settings in (record.agent["provider"], record.agent["subagents"][0]["provider"]):
        assert settings["request_options"] == {"extra_query": {"api-version": "3"},
                                               "metadata": {"team": "data"}, "top_p": 0.9}
        assert settings["request_options_withheld"] == [
            "extra_headers", "extra_query.api-key", "metadata.user_token"]
    with caplog.at_level(logging.WARNING, logger="neta_nb.runtime.session.resume"):
        AgentSession.resume(session.id, SessionStore(store.path))
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    top = next(w for w in warnings if "agent 'planner'" in w)
    assert ("request_options were stored without extra_headers, extra_query.api-key, "
            "metadata.user_token") in top
    assert "create_provider('openai-compatible:gpt-4o', request_options=...)" in top
    assert any("sub-agent 'coder'" in w and "request_options" in w for w in warnings)
