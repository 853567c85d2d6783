"""The README's demo command, ``bash scripts/demo.sh``: as root (CI, containers, many cloud
notebooks) and as an ordinary user it prints a JupyterLab command that starts, without the
user adding ``--allow-root``, and the URL that JupyterLab then prints is the quickstart's."""

from __future__ import annotations

import os
import shutil
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb.cli import FIRST_NOTEBOOK

from .support.demo_command import (
    UNPRIVILEGED_USER,
    JupyterLabProcess,
    demo_dry_run,
    demo_environment,
    unprivileged_user_missing_reason,
)
from .support.ports import free_port

pytestmark = pytest.mark.skipif(
    not (Path(sys.prefix) / "bin" / "activate").is_file(),
    reason="the tests do not run from a virtual environment, which demo.sh needs")


@pytest.fixture
def home() -> Iterator[Path]:
    """A folder another user can enter (pytest's tmp_path is private to its owner)."""
    path = Path(tempfile.mkdtemp(prefix="neta-nb-demo-"))
    path.chmod(0o755)
    yield path
    shutil.rmtree(path, ignore_errors=True)


def _assert_the_printed_command_starts(home: Path, user: tuple[int, int] | None) -> list[str]:
    port = free_port()
    env = demo_environment(home / "jupyter", user)
    args = ["--no-browser", "--port", str(port), "--port-retries=0", "--ip=127.0.0.1"]
    assert "--allow-root" not in args
    command, printed = demo_dry_run(args, env, user)
    assert "-m" in command and "jupyterlab" in command, printed
    lab = JupyterLabProcess(command, env=env, port=port, log=home / "lab.log", user=user)
    try:
        url = lab.wait_for_printed_url()
        # The URL a user copies from the terminal opens the quickstart, not the Launcher.
        assert url.startswith(f"http://127.0.0.1:{port}/lab/tree/{FIRST_NOTEBOOK}?token="), url
        assert lab.fetch(url) == 200
    finally:
        lab.stop()
    return command


@pytest.mark.skipif(os.geteuid() != 0, reason="needs root; CI runs as root")
def test_demo_as_root_starts_jupyterlab_without_being_told_allow_root(home: Path) -> None:
    command = _assert_the_printed_command_starts(home, user=None)
    # JupyterLab refuses root without it ("Running as root is not recommended").
    assert "--allow-root" in command


def test_demo_as_an_ordinary_user_starts_jupyterlab_without_allow_root(home: Path) -> None:
    if os.geteuid() == 0:
        reason = unprivileged_user_missing_reason()
        if reason:
            pytest.skip(reason)
        user: tuple[int, int] | None = UNPRIVILEGED_USER
        os.chown(home, *UNPRIVILEGED_USER)
    else:
        user = None
    command = _assert_the_printed_command_starts(home, user)
    assert "--allow-root" not in command
