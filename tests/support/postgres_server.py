"""Start and stop a throwaway, real PostgreSQL server for the tests.

:func:`start_postgres` runs ``initdb`` into a fresh data folder and starts ``postgres`` on
a free port of 127.0.0.1 only, as a child of this process; :class:`PostgresServer` names
it (``url``, ``pid``, ``data_dir``), counts connections and stops it again, leaving no
process behind. PostgreSQL refuses to run as root, so when the tests do, the cluster
belongs to ``nobody`` and both ``initdb`` and the server run as that user. The binaries
come from ``PATH`` or Debian's ``/usr/lib/postgresql/<version>/bin``; ``scripts/test.sh``
installs them.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import re
import shutil
import signal
import stat
import subprocess
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import psutil
import psycopg
from psycopg import sql

from .ports import free_port

__all__ = ["PostgresNotInstalledError", "PostgresServer", "start_postgres"]

USER = "neta"
"""The superuser ``initdb`` creates (trust authentication: no password)."""
DATABASE = "neta"
"""The database :func:`start_postgres` creates; :attr:`PostgresServer.url` names it."""

DEBIAN_VERSIONS = Path("/usr/lib/postgresql")
"""Where Debian's ``postgresql`` package puts each version's binaries (``<version>/bin``)."""

_UNPRIVILEGED = "nobody"
_START_WITHIN = 30.0
_STOP_WITHIN = 10.0
# A Unix socket's path is limited to 107 bytes; the server adds "/.s.PGSQL.<port>.lock".
_SOCKET_DIR_MAX = 80


class PostgresNotInstalledError(RuntimeError):
    """No PostgreSQL binaries on this machine (the tests that need them skip, or fail
    under ``CI``)."""


@dataclass
class PostgresServer:
    """A running server: ``url`` is the ``neta`` database's, ``pid`` the postmaster's."""

    url: str
    pid: int
    data_dir: Path
    port: int
    host: str = "127.0.0.1"
    _process: subprocess.Popen[bytes] | None = field(default=None, repr=False)
    _remove: list[Path] = field(default_factory=list, repr=False)

    def url_for(self, dbname: str) -> str:
        return f"postgresql://{USER}@{self.host}:{self.port}/{dbname}"

    @property
    def log_file(self) -> Path:
        return self.data_dir / "postgres.log"

    def log_tail(self, lines: int = 30) -> str:
        try:
            text = self.log_file.read_text(errors="replace")
        except OSError as error:
            return f"(no server log: {error})"
        return "\n".join(text.splitlines()[-lines:])

    def create_database(self, dbname: str) -> str:
        """Create an empty database; return its URL."""
        with psycopg.connect(self.url_for("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(dbname)))
        return self.url_for(dbname)

    def drop_database(self, dbname: str) -> None:
        """Drop a database, ending whatever connections are still open to it."""
        with psycopg.connect(self.url_for("postgres"), autocommit=True) as conn:
            conn.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)")
                         .format(sql.Identifier(dbname)))

    def connections(self, dbname: str | None = None) -> int:
        """Client connections open to ``dbname`` (``neta`` by default), not counting the
        one that asks."""
        with psycopg.connect(self.url_for("postgres"), autocommit=True) as conn:
            row = conn.execute(
                "SELECT count(*) FROM pg_stat_activity WHERE datname = %s"
                " AND backend_type = 'client backend' AND pid <> pg_backend_pid()",
                (dbname or DATABASE,)).fetchone()
        assert row is not None
        return int(row[0])

    def stop(self) -> None:
        """Stop the postmaster by pid — a fast shutdown (SIGINT: sessions still open are
        ended), SIGKILL after ~10 s — then kill any of its processes still alive and
        remove the folder made outside the caller's. Calling it again does nothing."""
        try:
            postmaster = psutil.Process(self.pid)
            children = postmaster.children(recursive=True)
        except psutil.NoSuchProcess:
            postmaster, children = None, []
        if postmaster is not None:
            with contextlib.suppress(psutil.NoSuchProcess):
                postmaster.send_signal(signal.SIGINT)
            if not self._wait_postmaster(_STOP_WITHIN):
                with contextlib.suppress(psutil.NoSuchProcess):
                    postmaster.kill()
                self._wait_postmaster(_STOP_WITHIN)
        _, alive = psutil.wait_procs(children, timeout=_STOP_WITHIN)
        for child in alive:
            with contextlib.suppress(psutil.NoSuchProcess):
                child.kill()
        psutil.wait_procs(alive, timeout=_STOP_WITHIN)
        if self._process is not None:
            # A wrapper (runuser) ends with the postmaster; reaping it leaves no zombie.
            if self._process.poll() is None:
                try:
                    self._process.wait(_STOP_WITHIN)
                except subprocess.TimeoutExpired:
                    self._process.kill()
                    self._process.wait()
            self._process = None
        for path in self._remove:
            shutil.rmtree(path, ignore_errors=True)
        self._remove.clear()

    def _wait_postmaster(self, within: float) -> bool:
        """Wait for the postmaster to end (reaping it when it is our child)."""
        if self._process is not None and self._process.pid == self.pid:
            try:
                self._process.wait(within)
            except subprocess.TimeoutExpired:
                return False
            return True
        try:
            psutil.Process(self.pid).wait(within)
        except psutil.NoSuchProcess:
            return True
        except psutil.TimeoutExpired:
            return False
        return True


def start_postgres(base: Path) -> PostgresServer:
    """Create a cluster in a new folder under ``base`` (or, when the tests run as root and
    ``nobody`` cannot reach ``base``, under a new folder of ``/tmp``) and start a server on
    a free port of 127.0.0.1 with a database ``neta``. Raises
    :class:`PostgresNotInstalledError` (a ``RuntimeError``) when PostgreSQL is missing and
    ``RuntimeError`` with the server log's tail when it does not start."""
    bindir = find_bindir()
    account = pwd.getpwnam(_UNPRIVILEGED) if os.geteuid() == 0 else None
    remove: list[Path] = []
    base.mkdir(parents=True, exist_ok=True)
    if account is not None and not _traversable(base, account):
        base = Path(tempfile.mkdtemp(prefix="neta-pg-", dir="/tmp"))
        base.chmod(0o755)
        remove.append(base)
    try:
        data_dir = Path(tempfile.mkdtemp(prefix="pgdata-", dir=base))
        if account is not None:
            os.chown(data_dir, account.pw_uid, account.pw_gid)
        _initdb(bindir, data_dir, account)
        socket_dir = data_dir
        if len(str(data_dir)) > _SOCKET_DIR_MAX:
            socket_dir = Path(tempfile.mkdtemp(prefix="neta-pgsock-", dir="/tmp"))
            remove.append(socket_dir)
            if account is not None:
                os.chown(socket_dir, account.pw_uid, account.pw_gid)
        server = _start_server(bindir, data_dir, socket_dir, account)
    except BaseException:
        for path in remove:
            shutil.rmtree(path, ignore_errors=True)
        raise
    server._remove = remove
    try:
        server.create_database(DATABASE)
    except BaseException:
        server.stop()
        raise
    return server


def find_bindir() -> Path:
    """The folder with ``initdb`` and ``postgres``: the one on ``PATH``, else Debian's
    highest ``/usr/lib/postgresql/<version>/bin``."""
    on_path = shutil.which("initdb")
    if on_path is not None:
        folder = Path(on_path).resolve().parent
        if (folder / "postgres").is_file():
            return folder
    versions = sorted(
        (path for path in DEBIAN_VERSIONS.glob("*/bin")
         if (path / "initdb").is_file() and (path / "postgres").is_file()),
        key=lambda path: [int(part) for part in re.findall(r"\d+", path.parent.name)],
        reverse=True)
    if versions:
        return versions[0]
    raise PostgresNotInstalledError(
        "PostgreSQL is not installed: scripts/test.sh installs Debian's postgresql "
        "(initdb was found neither on PATH nor under /usr/lib/postgresql/*/bin)")


def _traversable(path: Path, account: pwd.struct_passwd) -> bool:
    """Whether ``account`` can reach ``path`` (search permission on it and every parent)."""
    groups = {account.pw_gid} | set(os.getgrouplist(account.pw_name, account.pw_gid))
    for folder in [path.resolve(), *path.resolve().parents]:
        info = folder.stat()
        if info.st_uid == account.pw_uid:
            bit = stat.S_IXUSR
        elif info.st_gid in groups:
            bit = stat.S_IXGRP
        else:
            bit = stat.S_IXOTH
        if not info.st_mode & bit:
            return False
    return True


def _as_user(account: pwd.struct_passwd | None, command: list[str]) -> list[str]:
    """``command`` run as ``account`` (as it is when ``None``). setpriv replaces itself
    with the command, so the process started is the command's own; runuser stays its
    parent (the postmaster's pid is then read from ``postmaster.pid``)."""
    if account is None:
        return command
    setpriv = shutil.which("setpriv")
    if setpriv is not None:
        return [setpriv, f"--reuid={account.pw_uid}", f"--regid={account.pw_gid}",
                "--clear-groups", "--", *command]
    runuser = shutil.which("runuser")
    if runuser is not None:
        return [runuser, "-u", account.pw_name, "--", *command]
    raise RuntimeError("running PostgreSQL as root needs setpriv or runuser (util-linux) "
                       f"to start it as {account.pw_name}")


def _environment(account: pwd.struct_passwd | None, cwd: Path) -> dict[str, str]:
    env = {key: value for key, value in os.environ.items() if not key.startswith("PG")}
    if account is not None:
        env["HOME"] = str(cwd)
        env["USER"] = env["LOGNAME"] = account.pw_name
    return env


def _initdb(bindir: Path, data_dir: Path, account: pwd.struct_passwd | None) -> None:
    common = [str(bindir / "initdb"), "-D", str(data_dir), "--auth=trust",
              f"--username={USER}", "-E", "UTF8"]
    failures = []
    for locale in (["--locale=C.UTF-8"], ["--no-locale"]):
        done = subprocess.run(
            _as_user(account, [*common, *locale]), cwd=data_dir.parent,
            env=_environment(account, data_dir.parent), stdin=subprocess.DEVNULL,
            capture_output=True, text=True, timeout=120, check=False)
        if done.returncode == 0:
            return
        failures.append(f"$ initdb {' '.join(locale)}\n{done.stdout}{done.stderr}")
        for entry in data_dir.iterdir():  # initdb leaves the folder it was given
            if entry.is_dir() and not entry.is_symlink():
                shutil.rmtree(entry)
            else:
                entry.unlink()
    raise RuntimeError("initdb failed:\n" + "\n".join(failures))


def _start_server(bindir: Path, data_dir: Path, socket_dir: Path,
                  account: pwd.struct_passwd | None) -> PostgresServer:
    """Start the postmaster; another free port if the one picked was taken meanwhile."""
    for attempt in range(3):
        port = free_port()
        command = [str(bindir / "postgres"), "-D", str(data_dir), "-p", str(port),
                   "-c", "listen_addresses=127.0.0.1",
                   "-c", f"unix_socket_directories={socket_dir}",
                   "-c", "max_connections=100", "-c", "fsync=off",
                   "-c", "shared_buffers=32MB"]
        log_path = data_dir / "postgres.log"
        with log_path.open("ab") as log:
            process = subprocess.Popen(
                _as_user(account, command), cwd=data_dir.parent,
                env=_environment(account, data_dir.parent), stdin=subprocess.DEVNULL,
                stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
        server = PostgresServer(url=f"postgresql://{USER}@127.0.0.1:{port}/{DATABASE}",
                                pid=process.pid, data_dir=data_dir, port=port,
                                _process=process)
        try:
            _wait_ready(server, process)
        except BaseException:
            server.stop()
            if (attempt < 2 and process.returncode is not None
                    and "already in use" in server.log_tail()):
                continue
            raise
        return server
    raise AssertionError("unreachable")


def _wait_ready(server: PostgresServer, process: subprocess.Popen[bytes]) -> None:
    """Until the server accepts connections; then ``server.pid`` is the postmaster's
    (first line of ``postmaster.pid``)."""
    deadline = time.monotonic() + _START_WITHIN
    last_error: Exception | None = None
    while time.monotonic() < deadline:
        if process.poll() is not None:
            raise RuntimeError(f"PostgreSQL exited with {process.returncode} while starting;"
                               f" its log ({server.log_file}):\n{server.log_tail()}")
        try:
            with psycopg.connect(server.url_for("postgres"), connect_timeout=2):
                pass
        except psycopg.OperationalError as error:
            last_error = error
            time.sleep(0.1)
            continue
        pid_line = (server.data_dir / "postmaster.pid").read_text().splitlines()[0]
        server.pid = int(pid_line)
        return
    raise RuntimeError(f"PostgreSQL did not accept connections within {_START_WITHIN:.0f} s"
                       f" ({last_error}); its log ({server.log_file}):\n{server.log_tail()}")
