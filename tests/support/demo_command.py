"""Running ``scripts/demo.sh --dry-run`` as a user would and starting the JupyterLab command
it prints, for the demo command's tests (the script's own and the browser's).

The script runs on the test run's own virtual environment with nothing installed
(``NETA_NB_VENV``, ``NETA_NB_SKIP_INSTALL=1``): installing would reach a package index,
and tests talk only to 127.0.0.1. Everything after the install is the script's real path:
the root decision, ``neta-nb lab`` and the command it prints.
"""

from __future__ import annotations

import contextlib
import os
import re
import shlex
import shutil
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from collections.abc import Sequence
from pathlib import Path

from .timing import poll_until

__all__ = ["DEMO_COMMAND", "UNPRIVILEGED_USER", "JupyterLabProcess", "demo_dry_run",
           "demo_environment", "run_as", "unprivileged_user_missing_reason"]

ROOT = Path(__file__).resolve().parents[2]
DEMO_COMMAND = ROOT / "scripts" / "demo.sh"
UNPRIVILEGED_USER = (65534, 65534)
"""uid and gid of ``nobody``: a user with no rights of its own."""


def run_as(user: tuple[int, int] | None) -> list[str]:
    """The command prefix that runs as ``user`` (None: as the current user)."""
    if user is None:
        return []
    uid, gid = user
    return ["setpriv", f"--reuid={uid}", f"--regid={gid}", "--clear-groups"]


def unprivileged_user_missing_reason() -> str | None:
    """Why the script cannot be run as ``nobody`` here, or None when it can."""
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is not installed, so no command can run as nobody"
    probe = subprocess.run([*run_as(UNPRIVILEGED_USER), "bash", "-c",
                            'test -r "$1" && "$2" -c pass', "probe", str(DEMO_COMMAND),
                            sys.executable], capture_output=True, text=True, check=False)
    if probe.returncode != 0:
        return (f"user nobody cannot read {DEMO_COMMAND} or run {sys.executable} "
                f"(a parent folder is private to its owner): {probe.stderr.strip()}")
    return None


def demo_environment(home: Path, user: tuple[int, int] | None = None) -> dict[str, str]:
    """The environment for the script and its JupyterLab: this run's venv, nothing
    installed, and a home of its own (owned by ``user``) for every Jupyter folder."""
    dirs = {name: home / name for name in ("config", "runtime", "data", "ipython")}
    for path in dirs.values():
        path.mkdir(parents=True, exist_ok=True)
    if user is not None:
        for path in [home, *home.rglob("*")]:
            os.chown(path, *user)
    return {
        **os.environ,
        "HOME": str(home),
        "NETA_NB_VENV": sys.prefix,
        "NETA_NB_SKIP_INSTALL": "1",
        "JUPYTER_CONFIG_DIR": str(dirs["config"]),
        "JUPYTER_RUNTIME_DIR": str(dirs["runtime"]),
        "JUPYTER_DATA_DIR": str(dirs["data"]),
        "JUPYTER_PLATFORM_DIRS": "1",
        # The run's IPYTHONDIR holds the kernels' network guard but is private to the
        # user running the tests; another user gets one of its own (no kernel is started
        # as that user).
        **({"IPYTHONDIR": str(dirs["ipython"])} if user is not None else {}),
    }


def demo_dry_run(args: Sequence[str], env: dict[str, str],
                 user: tuple[int, int] | None = None) -> tuple[list[str], str]:
    """``bash scripts/demo.sh --dry-run ARGS``: the JupyterLab command it prints (its last
    line) and everything it printed."""
    result = subprocess.run([*run_as(user), "bash", str(DEMO_COMMAND), "--dry-run", *args],
                            env=env, capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, f"demo.sh failed ({result.returncode}):\n{result.stderr}"
    lines = result.stdout.strip().splitlines()
    return shlex.split(lines[-1]), result.stdout


class JupyterLabProcess:
    """A command that starts JupyterLab, run in its own process group (so stopping it ends
    its kernels too), its output in a log file."""

    def __init__(self, command: Sequence[str], *, env: dict[str, str], port: int, log: Path,
                 user: tuple[int, int] | None = None, cwd: Path | None = None) -> None:
        self.port = port
        self.log = log
        with log.open("wb") as output:
            self.process = subprocess.Popen([*run_as(user), *command], env=env, cwd=cwd,
                                            stdout=output, stderr=subprocess.STDOUT,
                                            start_new_session=True)

    def log_text(self) -> str:
        return self.log.read_text(errors="replace") if self.log.exists() else ""

    def wait_for_printed_url(self, timeout: float = 60.0) -> str:
        """The URL JupyterLab prints for the user to open, once it serves."""
        found: list[str] = []

        def printed() -> bool:
            if self.process.poll() is not None:
                raise AssertionError(f"JupyterLab exited with {self.process.returncode}:\n"
                                     f"{self.log_text()}")
            found[:] = re.findall(rf"http://127\.0\.0\.1:{self.port}/\S*\?token=\w+",
                                  self.log_text())
            return bool(found)

        poll_until(printed, within=timeout, what="JupyterLab printed no URL", interval=0.2)
        return found[-1]

    def fetch(self, url: str, within: float = 20.0) -> int:
        """The HTTP status of ``url`` on this server; a refused connection is tried again
        for ``within`` seconds (seen once on a loaded machine right after the URL was
        printed), unless the server exited."""
        deadline = time.monotonic() + within
        while True:
            try:
                with urllib.request.urlopen(url, timeout=10) as response:
                    return int(response.status)
            except urllib.error.HTTPError as error:
                return int(error.code)
            except urllib.error.URLError as error:
                refused = isinstance(error.reason, ConnectionRefusedError)
                if not refused or self.process.poll() is not None or (
                        time.monotonic() > deadline):
                    raise AssertionError(f"{url} did not answer ({error.reason}):\n"
                                         f"{self.log_text()}") from error
                time.sleep(0.2)

    def stop(self) -> None:
        if self.process.poll() is not None:
            return
        with contextlib.suppress(ProcessLookupError):
            os.killpg(self.process.pid, signal.SIGTERM)
        try:
            self.process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(self.process.pid, signal.SIGKILL)
            self.process.wait(timeout=10)
