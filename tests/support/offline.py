"""The pytest plugin that keeps the whole run offline and free of paid calls.

Registered by the repository's root ``conftest.py``, so it covers ``tests/`` and the
notebooks that nbval collects from ``notebooks/`` alike:

* provider keys and endpoints are removed from ``os.environ`` before anything runs, so
  every child process — nbval's kernels, the browser tests' JupyterLab and its kernels —
  inherits an environment without them; a test that needs a key sets one with
  ``monkeypatch`` and points ``base_url`` at 127.0.0.1;
* :mod:`.network_guard` refuses connections to anything but loopback in this process, and
  the same guard runs as an IPython startup file in every kernel (``IPYTHONDIR``);
* a test during which a connection was refused fails, even when the code under test
  caught the error (a provider reports it as an ``error`` event and carries on).
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Generator, Iterator
from pathlib import Path

import pytest

from . import network_guard

# Everything the providers, their SDKs and the real-providers notebook read, plus the
# proxies httpx honours (a proxy would turn a 127.0.0.1 request into a remote one).
PROVIDER_ENVIRONMENT = (
    "ANTHROPIC_API_KEY", "ANTHROPIC_AUTH_TOKEN", "ANTHROPIC_BASE_URL",
    "OPENAI_API_KEY", "OPENAI_BASE_URL", "OPENAI_ORG_ID", "OPENAI_PROJECT_ID",
    "DEEPSEEK_API_KEY", "DEEPSEEK_BASE_URL",
    "LOCAL_LLM_BASE_URL", "LOCAL_LLM_MODEL",
    "HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy",
)


_IPYTHON_DIR = pytest.StashKey[Path]()


def clear_provider_environment(environ: dict[str, str] | os._Environ[str]) -> None:
    for name in PROVIDER_ENVIRONMENT:
        environ.pop(name, None)


def write_kernel_guard(ipython_dir: Path) -> Path:
    """An IPython startup file that installs :mod:`.network_guard` in a kernel. It runs
    the guard's own file (kernels may not be able to import ``tests``) and leaves no
    names in the notebook's namespace."""
    startup = ipython_dir / "profile_default" / "startup" / "00-neta-nb-network-guard.py"
    startup.parent.mkdir(parents=True, exist_ok=True)
    startup.write_text(f"__import__('runpy').run_path({network_guard.__file__!r})['install']()\n")
    return startup


def pytest_configure(config: pytest.Config) -> None:
    clear_provider_environment(os.environ)
    network_guard.install()
    ipython_dir = Path(tempfile.mkdtemp(prefix="neta-nb-ipython-"))
    write_kernel_guard(ipython_dir)
    os.environ["IPYTHONDIR"] = str(ipython_dir)
    config.stash[_IPYTHON_DIR] = ipython_dir


def pytest_unconfigure(config: pytest.Config) -> None:
    ipython_dir = config.stash.get(_IPYTHON_DIR, None)
    if ipython_dir is not None:
        shutil.rmtree(ipython_dir, ignore_errors=True)


def _refused_targets() -> str:
    targets = ", ".join(sorted(set(network_guard.BLOCKED)))
    network_guard.BLOCKED.clear()
    return (f"the test tried to connect to {targets}; tests talk only to 127.0.0.1 "
            "(keys are cleared for the run; pass base_url=<a local server>)")


@pytest.hookimpl(wrapper=True)
def pytest_runtest_call(item: pytest.Item) -> Generator[None, None, None]:
    # Fails the test itself (not its teardown) when its body was refused a connection.
    result = yield
    if network_guard.BLOCKED and "blocked_connections" not in getattr(item, "fixturenames", ()):
        pytest.fail(_refused_targets(), pytrace=False)
    return result


@pytest.fixture(autouse=True)
def _no_connection_left_this_machine() -> Iterator[None]:
    network_guard.BLOCKED.clear()
    yield
    # A fixture's setup or teardown that reached out.
    if network_guard.BLOCKED:
        pytest.fail(_refused_targets(), pytrace=False)


@pytest.fixture
def blocked_connections() -> Iterator[list[str]]:
    """For a test that provokes the guard on purpose: the refused targets, cleared
    afterwards so the test itself does not fail for them."""
    yield network_guard.BLOCKED
    network_guard.BLOCKED.clear()
