"""The notebooks run where a new user runs them: on a kernel with the demo's extras alone.

``scripts/test.sh`` builds ``.venv-demo`` with ``DEMO_EXTRAS`` (the extras
``scripts/demo.sh`` installs) and registers it as the kernel nbval runs the notebooks on,
so a notebook that imports what only the test extra has (notebook 09 once needed the
OpenTelemetry SDK that way) fails in the test run instead of in a user's first hour.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path

import pytest
from jupyter_client.kernelspec import KernelSpecManager, NoSuchKernel

ROOT = Path(__file__).resolve().parent.parent
SETUP = (ROOT / "scripts" / "_setup.sh").read_text()


def _setup_value(name: str) -> str:
    match = re.search(rf'^{name}="([^"]+)"$', SETUP, re.M)
    assert match, f"scripts/_setup.sh sets no {name}"
    return match.group(1)


DEMO_EXTRAS = _setup_value("DEMO_EXTRAS")
DEMO_KERNEL = _setup_value("DEMO_KERNEL")


def test_the_demo_and_the_test_run_share_the_demo_extras() -> None:
    demo = (ROOT / "scripts" / "demo.sh").read_text()
    test = (ROOT / "scripts" / "test.sh").read_text()
    assert 'install_venv "$DEMO_EXTRAS"' in demo
    assert "install_demo_kernel" in test
    assert '--nbval-kernel-name="$DEMO_KERNEL"' in test


def _demo_python() -> Path:
    try:
        spec = KernelSpecManager().get_kernel_spec(DEMO_KERNEL)
    except NoSuchKernel:
        if os.environ.get("CI"):
            pytest.fail(f"scripts/test.sh registers the kernel {DEMO_KERNEL!r}; it is missing")
        pytest.skip(f"no {DEMO_KERNEL!r} kernel: scripts/test.sh makes it (install_demo_kernel)")
    return Path(spec.argv[0])


def _importable(python: Path, modules: list[str]) -> dict[str, bool]:
    code = ("import importlib.util, json, sys\n"
            "print(json.dumps({m: importlib.util.find_spec(m) is not None "
            "for m in sys.argv[1:]}))")
    out = subprocess.run([str(python), "-c", code, *modules], capture_output=True, text=True,
                         check=True, timeout=60)
    return dict(json.loads(out.stdout))


def test_the_demo_kernel_has_the_demo_extras_and_not_the_test_extra() -> None:
    python = _demo_python()
    found = _importable(python, ["neta_nb", "anthropic", "openai", "mcp", "pandas",
                                 "opentelemetry.sdk", "jupyterlab", "ipykernel",
                                 "nbval", "hypothesis", "playwright", "ray"])
    missing = [m for m in ("neta_nb", "anthropic", "openai", "mcp", "pandas",
                           "opentelemetry.sdk", "jupyterlab", "ipykernel") if not found[m]]
    assert not missing, f"the demo's environment lacks {missing}"
    # Only the test extra and the ray extra bring these: were they there, a notebook that
    # needs them would pass here and fail after the README's install.
    leaked = [m for m in ("nbval", "hypothesis", "playwright", "ray") if found[m]]
    assert not leaked, f"the demo's environment has packages only the tests install: {leaked}"
