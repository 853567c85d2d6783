"""What only the PostgreSQL store does, against a real server (``postgres_server``): a
pool shared by every session, other processes' changes heard through LISTEN/NOTIFY,
failures told apart by SQLSTATE, blobs in a table, versioned migrations. What both
backends do alike is tested once for both (the ``store_target`` fixture)."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import os
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path
from typing import Any

import psycopg
import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog
from neta_nb.messages import FileTextPart, ImagePart, Message, TextPart
from neta_nb.providers.base import TextDelta
from neta_nb.runtime.session.resume import SessionNotOwnedError
from neta_nb.store.postgres.postgres import MIGRATIONS, POOL_SIZE, PostgresDatabase
from neta_nb.store.postgres.postgres_rows import failure_of
from neta_nb.store.records import SessionRecord
from neta_nb.widgets.chat.panels.session_sidebar import SessionSidebar
from tests.support.postgres_server import PostgresServer

from ...support.sessions import FakeProvider, answer, make_session
from ...support.timing import poll_until, wait_until
from ..test_blobs_hostile import noise_png

ROOT = Path(__file__).resolve().parents[3]


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


# --- text that JSONB would refuse, and names that are not UTF-8 -------------------------

async def test_nul_lone_surrogates_and_a_non_utf8_file_name_round_trip(
        store_target: str | Path, tmp_path: Path) -> None:
    raw = os.path.join(os.fsencode(tmp_path), b"caf\xe9.csv")  # Latin-1 bytes on disk
    await asyncio.to_thread(Path(os.fsdecode(raw)).write_bytes, b"a,b\n1,\x002\n")
    store = SessionStore(store_target)
    session, _, _ = make_session([answer("nul \x00 here, \ud800 lone")], store=store)
    await session.run("a prompt with \x00 NUL and a lone \udcff surrogate",
                      attachments=[os.fsdecode(raw)])
    assert session.flush(10)
    resumed = AgentSession.resume(session.id, SessionStore(store_target),
                                  agent=session.agent, catalog=session.catalog)
    assert resumed.messages == session.messages
    prompt, reply = resumed.messages
    assert prompt.text == "a prompt with \x00 NUL and a lone \ufffd surrogate"
    assert reply.text == "nul \x00 here, \ufffd lone"
    file_part = next(p for p in prompt.parts if isinstance(p, FileTextPart))
    assert file_part.name == "caf\ufffd.csv" and "\x00" in file_part.text
    assert SessionStore(store_target).search_sessions("NUL")[0].id == session.id


# --- one pool for every session ---------------------------------------------------------

async def test_two_hundred_streaming_sessions_share_the_pool(
        postgres_server: PostgresServer, postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    gate = asyncio.Event()
    sessions = []
    for n in range(200):
        steps: list[object] = [TextDelta(f"s{n} ")]
        for i in range(6):
            steps += [TextDelta(f"w{i} "), lambda: asyncio.sleep(0.05)]
        steps.append(gate.wait)
        session, _, _ = make_session([[*steps, *answer("end")]], store=store)
        sessions.append(session)
    tasks = [session.start(f"question {n}") for n, session in enumerate(sessions)]
    peak = 0
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        peak = max(peak, postgres_server.connections(_database(postgres_url)))
        if all(s.streaming_message is not None and len(s.streaming_message.text) > 15
               for s in sessions):
            break
        await asyncio.sleep(0.05)
    peak = max(peak, postgres_server.connections(_database(postgres_url)))
    gate.set()
    await asyncio.gather(*tasks)
    assert all(s.flush(30) for s in sessions)
    # The pool's connections, and the one connection holding this process's turn claims.
    print(f"peak connections: {peak}")
    assert 1 <= peak <= POOL_SIZE + 1, peak
    assert len(store.list_sessions()) == 200
    assert all(store.count_messages(s.id) == 2 for s in sessions)


# --- other processes' changes -------------------------------------------------------------

WRITER = textwrap.dedent("""
    import sys
    sys.path.insert(0, {root!r})
    from neta_nb import SessionStore
    from neta_nb.store.records import SessionRecord
    store = SessionStore({url!r})
    for line in sys.stdin:
        store.save_session(SessionRecord(id=line.strip(), title="from another process"))
        print("saved", flush=True)
""")


@contextlib.contextmanager
def another_process(url: str) -> Any:
    child = subprocess.Popen([sys.executable, "-c", WRITER.format(root=str(ROOT), url=url)],
                             stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True)
    try:
        yield child
    finally:
        assert child.stdin is not None
        child.stdin.close()
        child.wait(20)
        if child.stdout is not None:
            child.stdout.close()


def _save_there(child: subprocess.Popen[str], session_id: str) -> float:
    assert child.stdin is not None and child.stdout is not None
    child.stdin.write(session_id + "\n")
    child.stdin.flush()
    assert child.stdout.readline().strip() == "saved"
    return time.monotonic()


def test_a_script_with_no_loop_hears_another_process_change(postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    heard: list[tuple[str, float, str]] = []
    unsubscribe = store.subscribe(
        lambda sid: heard.append((sid, time.monotonic(), threading.current_thread().name)))
    with another_process(postgres_url) as child:  # listening already: nothing is missed
        saved = _save_there(child, "s_elsewhere")
        poll_until(lambda: heard, 10, "the other process's change to be heard")
    (session_id, at, thread), = heard
    assert session_id == "s_elsewhere"
    assert thread == "neta-nb-store-listener"  # no loop: called on the listener's thread
    assert at - saved < 10  # measured by benchmarks/store_postgres.py (under a second)
    unsubscribe()
    store.save_session(SessionRecord(id="s_after"))  # its own writes: told directly...
    assert [h[0] for h in heard] == ["s_elsewhere"]  # ...and none once unsubscribed


async def test_a_kernel_hears_another_process_change_on_its_loop(postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    heard: list[tuple[str, bool]] = []
    loop_thread = threading.current_thread()
    store.subscribe(lambda sid: heard.append((sid, threading.current_thread() is loop_thread)))
    store.save_session(SessionRecord(id="s_mine"))  # this process's own: heard once
    with another_process(postgres_url) as child:
        await asyncio.to_thread(_save_there, child, "s_theirs")
        await wait_until(lambda: len(heard) >= 2)
    await asyncio.sleep(0.3)  # its own write does not come back through the server
    assert heard == [("s_mine", True), ("s_theirs", True)]


async def test_the_sidebar_follows_another_kernels_sessions_without_a_refresh(
        postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    sidebar = SessionSidebar(store)
    assert sidebar.sessions == []
    with another_process(postgres_url) as child:
        await asyncio.to_thread(_save_there, child, "s_new_elsewhere")
        await wait_until(lambda: [r["id"] for r in sidebar.sessions] == ["s_new_elsewhere"])
    sidebar.close()


# --- failures, by SQLSTATE ---------------------------------------------------------------

async def test_a_lost_connection_is_reported_and_the_writes_retried(postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    session, _, _ = make_session([answer("one"), answer("two")], store=store)
    await session.run("before the cut")
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        # Every connection of this process dies under it (a server restart, a cut
        # network): the pool's and the one holding claims.
        admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                      "WHERE datname = current_database() AND pid <> pg_backend_pid()")
    await session.run("after the cut")
    assert session.flush(20)
    assert [m.text for m in SessionStore(postgres_url).load_messages(session.id)] == [
        "before the cut", "one", "after the cut", "two"]
    assert session.store_failure is None


@pytest.fixture
def tiny_tablespace(postgres_url: str) -> Any:
    """The session tables moved onto a real 2 MB tmpfs (a tablespace), the folder owned by
    the server's user; root only (CI runs as root), skipped with the reason elsewhere."""
    if os.geteuid() != 0:
        pytest.skip("mounting a tmpfs needs root")
    import pwd
    import shutil
    import tempfile

    folder = Path(tempfile.mkdtemp(prefix="neta-pg-tiny-", dir="/tmp"))
    folder.chmod(0o755)
    mount = folder / "space"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2m", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        shutil.rmtree(folder)
        pytest.skip(f"cannot mount a tmpfs here: {done.stderr.strip()}")
    owner = pwd.getpwnam("nobody")
    os.chown(mount, owner.pw_uid, owner.pw_gid)
    tables = ("sessions", "messages", "drafts", "views")
    name = f"tiny_{_database(postgres_url)}"
    SessionStore(postgres_url).close()  # the schema, before moving it
    with psycopg.connect(postgres_url, autocommit=True) as admin:
        admin.execute(f"CREATE TABLESPACE {name} LOCATION '{mount}'")
        for table in tables:
            admin.execute(f"ALTER TABLE {table} SET TABLESPACE {name}")
    try:
        yield mount
    finally:
        with psycopg.connect(postgres_url, autocommit=True) as admin:
            admin.execute("SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                          "datname = current_database() AND pid <> pg_backend_pid()")
            for table in tables:
                admin.execute(f"ALTER TABLE {table} SET TABLESPACE pg_default")
            admin.execute(f"DROP TABLESPACE {name}")
        subprocess.run(["umount", "-l", str(mount)], check=False)
        shutil.rmtree(folder, ignore_errors=True)


async def test_a_full_disk_on_the_server_holds_writes_until_space_returns(
        postgres_url: str, tiny_tablespace: Path) -> None:
    from neta_nb.events import WarningEvent

    from ..test_writer import _fill

    big = os.urandom(200_000).hex()  # what compression cannot shrink below the free space
    session, recorder, _ = make_session(
        [answer("turn one answer"), answer(f"turn two answer {big}"), answer("turn three")],
        store=SessionStore(postgres_url), context_window=10_000_000)
    await session.run("turn one")
    filler = _fill(tiny_tablespace)

    result = await session.run(f"turn two prompt {big}")  # never raises for the store
    assert result is not None and result.text.startswith("turn two answer")
    await wait_until(lambda: session.store_failure is not None, within=20)
    assert session.store_failure is not None and session.store_failure.kind == "disk_full"
    # The writer's thread records the failure, then hands the warning to the loop: it is
    # waited for, not read at the same moment.
    await wait_until(lambda: any(isinstance(e, WarningEvent) for e in recorder.events),
                     within=20)
    warning = next(e for e in recorder.events if isinstance(e, WarningEvent))
    assert warning.code == "store_behind_disk_full" and "retrying" in warning.message
    await session.run("turn three")  # the session stays usable while behind

    filler.unlink()
    assert session.flush(60)
    assert session.store_failure is None
    stored = [(m.role, m.text) for m in SessionStore(postgres_url).load_messages(session.id)]
    assert stored == [
        ("user", "turn one"), ("assistant", "turn one answer"),
        ("user", f"turn two prompt {big}"), ("assistant", f"turn two answer {big}"),
        ("user", "turn three"), ("assistant", "turn three")]


@pytest.mark.parametrize(("error", "kind"), [
    (psycopg.errors.DiskFull("could not extend file: No space left on device"), "disk_full"),
    (psycopg.errors.LockNotAvailable("canceling statement due to lock timeout"), "locked"),
    (psycopg.errors.DeadlockDetected("deadlock detected"), "locked"),
    (psycopg.errors.AdminShutdown("terminating connection"), "error"),
    (psycopg.OperationalError("server closed the connection unexpectedly"), "error"),
    (psycopg.errors.UndefinedTable('relation "messages" does not exist'), "missing"),
])
def test_failures_map_to_the_codes_the_chat_shows(error: Exception, kind: str) -> None:
    failure = failure_of(error)
    assert failure is not None and failure.kind == kind


def test_a_write_that_can_never_succeed_is_not_retried() -> None:
    assert failure_of(psycopg.errors.NotNullViolation("null value")) is None
    assert failure_of(ValueError("not the database's fault")) is None


# --- blobs in a table ---------------------------------------------------------------------

def test_blobs_are_stored_once_and_go_with_their_last_session(postgres_url: str) -> None:
    store = SessionStore(postgres_url)
    picture = base64.b64encode(noise_png()).decode("ascii")

    def with_picture(text: str) -> Message:
        return Message(role="user", parts=[TextPart(text=text),
                                           ImagePart(media_type="image/png", data=picture)])

    for session_id in ("a", "b"):
        store.save_session(SessionRecord(id=session_id))
        store.append_message(session_id, with_picture(session_id))
        store.append_message(session_id, with_picture(session_id + " again"))
    [[blobs]] = store.database.execute("SELECT COUNT(*) FROM blobs")
    assert blobs == 1  # one row for the picture, whoever names it
    [[row]] = store.database.execute("SELECT data FROM messages LIMIT 1")
    assert picture not in row and '"sha256":"' in row  # the row names it, small
    store.delete_session("a")
    assert store.database.execute("SELECT COUNT(*) FROM blobs") == [(1,)]  # b still uses it
    assert store.load_messages("b")[0].attachments[0].data == picture  # type: ignore[union-attr]
    store.delete_session("b")
    assert store.database.execute("SELECT COUNT(*) FROM blobs") == [(0,)]


# --- schema and owners ----------------------------------------------------------------------

def test_the_schema_is_migrated_once_and_a_newer_one_is_refused(postgres_url: str) -> None:
    SessionStore(postgres_url).close()
    store = SessionStore(postgres_url)  # a second kernel opening it: nothing to do
    assert store.database.execute("SELECT version FROM neta_nb_schema") == [
        (n,) for n in range(1, len(MIGRATIONS) + 1)]
    store.database.execute("INSERT INTO neta_nb_schema (version) VALUES (%s)",
                           (len(MIGRATIONS) + 1,))
    with pytest.raises(RuntimeError, match="newer than this neta_nb knows"):
        SessionStore(postgres_url)


async def test_sessions_are_listed_and_continued_only_by_their_owner(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    # A shared store's rule (a SQLite file is one user's: see the adversarial tests).
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    store = SessionStore(postgres_url)
    mine, _, _ = make_session([answer("hello alice")], store=store)
    await mine.run("alice asks")
    assert mine.flush(10)
    monkeypatch.setenv("JUPYTERHUB_USER", "bob")
    theirs, _, _ = make_session([answer("hello bob")], store=store)
    await theirs.run("bob asks")
    assert theirs.flush(10)
    assert [r.id for r in store.list_sessions()] == [theirs.id]  # bob's own
    assert {r.id for r in store.list_sessions(all_users=True)} == {mine.id, theirs.id}
    assert store.get_session(mine.id).user == "alice"  # type: ignore[union-attr]
    with pytest.raises(SessionNotOwnedError, match="belongs to alice"):
        AgentSession.resume(mine.id, store=store, agent=mine.agent)
    assert store.search_sessions("asks") == store.list_sessions()


async def test_another_users_session_opens_read_only_in_a_shared_sidebar(
        postgres_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    from neta_nb import ScriptedProvider
    from neta_nb.widgets import ChatView

    monkeypatch.setenv("JUPYTERHUB_USER", "alice")
    store = SessionStore(postgres_url)
    alices, _, _ = make_session([answer("for alice")], store=store)
    await alices.run("alice's question")
    assert alices.flush(10)
    monkeypatch.setenv("JUPYTERHUB_USER", "bob")
    chat = ChatView(AgentSession(Agent("bob's", model=ScriptedProvider()), store=store))
    mine_only = SessionSidebar(store, chat=chat)
    assert alices.id not in [row["id"] for row in mine_only.sessions]
    shared = SessionSidebar(store, chat=chat, all_users=True)
    assert alices.id in [row["id"] for row in shared.sessions]
    assert shared.open_session(alices.id) is None  # shown, not continued
    assert chat.session is None and chat.session_id == alices.id
    assert [m["text"] for m in chat.messages] == ["alice's question", "for alice"]
    mine_only.close()
    shared.close()


def test_a_store_url_keeps_its_password_out_of_messages(postgres_url: str) -> None:
    with_password = postgres_url.replace("neta@", "neta:s3cret@")
    store = SessionStore(with_password)  # trust authentication: the password is unused
    assert "s3cret" not in repr(store) and "s3cret" not in store.location
    with pytest.raises(KeyError) as raised:
        AgentSession.resume("missing", store=store)
    assert "s3cret" not in str(raised.value)


def test_the_environment_names_the_default_store(postgres_url: str,
                                                 monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("NETA_NB_STORE_URL", postgres_url)
    store = SessionStore()
    assert isinstance(store.database, PostgresDatabase)
    session = AgentSession(Agent("a", model=FakeProvider([])), ToolCatalog(), store=store)
    assert session.flush(10)
    assert [r.id for r in SessionStore(postgres_url).list_sessions()] == [session.id]


def test_an_unreachable_server_is_a_clear_error() -> None:
    with pytest.raises(ConnectionError, match="cannot connect to the session store"):
        SessionStore("postgresql://neta@127.0.0.1:1/none")
