"""Shared test configuration. The offline guard (no provider keys, no connection beyond
127.0.0.1, in this process and in every kernel the tests start) is the plugin
``tests/support/offline.py``, registered by the repository's root ``conftest.py`` so that
it also covers the notebooks nbval collects. Fixtures used by a single module live in that
module; those several directories use live here."""

from __future__ import annotations

import os
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

import pytest

from tests.providers.sse_server import SSEServer

if TYPE_CHECKING:
    from tests.support.postgres_server import PostgresServer


def _in_ci() -> bool:
    return os.environ.get("CI", "").strip().lower() not in ("", "0", "false", "no")


@pytest.fixture
async def sse_server() -> AsyncIterator[SSEServer]:
    """A local server that streams the vendors' SSE answers a test queues
    (``tests/providers/sse_server.py``), for the real SDKs to talk to; one per test."""
    async with SSEServer() as server:
        yield server


@pytest.fixture(scope="session")
def postgres_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[PostgresServer]:
    """One real PostgreSQL server for the whole run (``tests/support/postgres_server.py``),
    stopped at its end. Without PostgreSQL installed the tests using it skip, except under
    ``CI``, where they must run and fail instead."""
    # Imported here: psycopg is needed only by the tests that use the server.
    from tests.support.postgres_server import PostgresNotInstalledError, start_postgres

    try:
        server = start_postgres(tmp_path_factory.mktemp("postgres"))
    except PostgresNotInstalledError as error:
        missing = str(error)
    else:
        missing = ""
    if missing:
        if _in_ci():
            pytest.fail(missing, pytrace=False)
        pytest.skip(missing)
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture
def postgres_url(postgres_server: PostgresServer) -> Iterator[str]:
    """The URL of a new, empty database on :func:`postgres_server`, dropped after the test
    (with any connections it left open)."""
    name = f"t_{uuid.uuid4().hex[:12]}"
    url = postgres_server.create_database(name)
    try:
        yield url
    finally:
        postgres_server.drop_database(name)


@pytest.fixture(params=["sqlite", "postgres"])
def store_target(request: pytest.FixtureRequest, tmp_path: Path) -> Iterator[str | Path]:
    """Where a test's session store lives, once per backend: a SQLite file, then a new
    database on the real PostgreSQL server. The store tests take it instead of a path so
    that one suite checks both (``SessionStore(store_target)``)."""
    if request.param == "sqlite":
        yield tmp_path / "s.db"
        return
    url = request.getfixturevalue("postgres_url")
    yield url
    from neta_nb.store.postgres.postgres import close_databases

    close_databases(url)  # pools and listeners a test left open, before the drop
