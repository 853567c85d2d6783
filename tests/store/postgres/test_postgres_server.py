"""The real PostgreSQL server the tests share (``postgres_server``) listens on 127.0.0.1
only and never runs as root; ``postgres_url`` hands every test a database of its own,
empty; ``connections()`` counts the connections a test holds open."""

from __future__ import annotations

import os
from urllib.parse import urlsplit

import psutil
import psycopg
import pytest

from tests.support.postgres_server import PostgresServer

from ...support.timing import poll_until


def test_the_server_listens_on_loopback_only_and_not_as_root(
        postgres_server: PostgresServer) -> None:
    assert urlsplit(postgres_server.url).hostname == "127.0.0.1"
    postmaster = psutil.Process(postgres_server.pid)
    assert postmaster.name() == "postgres"
    assert postgres_server.data_dir.samefile(postmaster.cwd())  # the postmaster's own folder
    listening = [c for c in postmaster.net_connections(kind="inet")
                 if c.status == psutil.CONN_LISTEN]
    assert [(c.laddr.ip, c.laddr.port) for c in listening] == [
        ("127.0.0.1", urlsplit(postgres_server.url).port)]
    with psycopg.connect(postgres_server.url) as conn:
        row = conn.execute("SHOW listen_addresses").fetchone()
    assert row == ("127.0.0.1",)
    if os.geteuid() == 0:
        assert postmaster.username() != "root"
        assert all(owner != "root" for owner in _owners_of_children(postmaster))


def _owners_of_children(process: psutil.Process) -> list[str]:
    """The users of the process's children still alive: a backend of a connection
    just closed may exit between the listing and the question."""
    owners = []
    for child in process.children():
        try:
            owners.append(child.username())
        except psutil.NoSuchProcess:
            continue
    return owners


@pytest.mark.parametrize("turn", ["first", "second"])
def test_every_test_gets_an_empty_database_of_its_own(
        postgres_url: str, postgres_server: PostgresServer, turn: str) -> None:
    dbname = urlsplit(postgres_url).path.lstrip("/")
    assert dbname.startswith("t_") and dbname != "neta"
    with psycopg.connect(postgres_url) as conn:
        tables = conn.execute(
            "SELECT table_name FROM information_schema.tables"
            " WHERE table_schema NOT IN ('pg_catalog', 'information_schema')").fetchall()
        assert tables == []
        # Left behind on purpose: the other turn's database must not have it.
        conn.execute("CREATE TABLE marker (turn text)")
        conn.execute("INSERT INTO marker VALUES (%s)", (turn,))
        conn.commit()


def test_connections_counts_the_connections_open_to_a_database(
        postgres_url: str, postgres_server: PostgresServer) -> None:
    dbname = urlsplit(postgres_url).path.lstrip("/")
    assert postgres_server.connections(dbname) == 0
    with psycopg.connect(postgres_url) as first, psycopg.connect(postgres_url):
        assert postgres_server.connections(dbname) == 2
        first.close()
        poll_until(lambda: postgres_server.connections(dbname) == 1, 10,
                   "the closed connection's backend to end")
    poll_until(lambda: postgres_server.connections(dbname) == 0, 10,
               "the other connection's backend to end")
