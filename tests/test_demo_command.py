"""The README's demo command, ``bash scripts/demo.sh``: as root (CI, containers, many cloud
notebooks) and as an ordinary user it prints a JupyterLab command that starts, without the
user adding ``--allow-root``, and the URL that JupyterLab then prints is the quickstart's.
While it installs it says how long that takes and announces each step before it runs."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest

from neta_nb.cli import FIRST_NOTEBOOK

from .support.demo_command import (
    DEMO_COMMAND,
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
    assert "nothing is installed" in printed and "\n[start] neta-nb lab: " in printed, printed
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


# Stand-ins for what the install runs: each prints what it was asked to do, into the same
# output as the script's own lines, so their order shows what was announced before what ran.
FAKE_PYTHON3 = """#!/usr/bin/env bash
if [ "$1" = -m ] && [ "$2" = venv ]; then
  echo "RAN python3 -m venv"
  mkdir -p "$3/bin"
  cp "$FAKES/venv-python" "$3/bin/python"
  cp "$FAKES/neta-nb" "$3/bin/neta-nb"
  printf 'export VIRTUAL_ENV=%s\\nexport PATH="$VIRTUAL_ENV/bin:$PATH"\\n' "$3" \\
    > "$3/bin/activate"
  exit 0
fi
exec "$REAL_PYTHON" "$@"
"""
FAKE_VENV_PYTHON = """#!/usr/bin/env bash
case "$1" in
  -m) echo "RAN $2 ${*:3} (NETA_NB_SKIP_JS=${NETA_NB_SKIP_JS:-})";;
  hatch_build.py) echo "RAN hatch_build.py";;
  *) exec "$REAL_PYTHON" "$@";;
esac
"""
FAKES = {"python3": FAKE_PYTHON3, "venv-python": FAKE_VENV_PYTHON,
         "npm": '#!/usr/bin/env bash\necho "RAN npm $*"\n',
         "neta-nb": '#!/usr/bin/env bash\necho "RAN neta-nb $*"\n'}


def test_the_install_says_its_time_and_announces_each_step_before_it_runs(
        tmp_path: Path) -> None:
    """A first install is minutes of quiet npm and pip: the first line says how long it
    takes, and each step — venv, JS build, Python packages, start — is announced before
    its command runs and says how long it took. The JS is built once, in its own step
    (pip is told so). Shown with stand-ins for python3, pip, npm and neta-nb."""
    fakes = tmp_path / "fakes"
    fakes.mkdir()
    for name, text in FAKES.items():
        (fakes / name).write_text(text)
        (fakes / name).chmod(0o755)
    env = {**os.environ, "PATH": f"{fakes}{os.pathsep}{os.environ['PATH']}",
           "FAKES": str(fakes), "REAL_PYTHON": sys.executable,
           "NETA_NB_VENV": str(tmp_path / "venv")}
    env.pop("NETA_NB_SKIP_INSTALL", None)
    env.pop("VIRTUAL_ENV", None)
    result = subprocess.run(["bash", str(DEMO_COMMAND), "--no-browser"], env=env,
                            capture_output=True, text=True, check=False, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
    lines = result.stdout.splitlines()
    assert "about 3 to 4 minutes the first time" in lines[0], lines
    assert "venv, JS build, Python packages, start" in lines[0], lines

    def at(prefix: str, after: int = 0) -> int:
        return next(i for i, line in enumerate(lines) if i >= after
                    and line.startswith(prefix))

    venv = at("[venv] ")
    made = at("RAN python3 -m venv", venv)
    js = at("[JS build] ", at("    done in ", made))
    built = at("RAN hatch_build.py", js)
    packages = at("[Python packages] ", at("    done in ", built))
    installed = at("RAN pip install -q -e .[all,lab,notebooks]", packages)
    start = at("[start] ", at("    done in ", installed))
    at("RAN neta-nb lab --no-browser", start)
    assert lines[installed].endswith("(NETA_NB_SKIP_JS=1)"), lines[installed]
    assert sum(line.startswith("RAN hatch_build.py") for line in lines) == 1, lines
