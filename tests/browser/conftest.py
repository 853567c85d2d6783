"""Fixtures for browser tests: one JupyterLab server, one Notebook 7 server and one
Chromium per test session (per worker under ``-n``), a fresh tab-level state per test, and
a failure on any console error. A file that needs a server set up otherwise (other user
settings, a server its test starts by a command) starts its own and says why."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path

import pytest

from .harness import (
    JupyterLabServer,
    LabSession,
    chromium_missing_reason,
    launch_chromium,
    notebook7_server,
)

ARTIFACTS = Path(__file__).parent / "artifacts"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Browser tests run last. The session's Playwright (sync API) keeps an event loop
    running in the main thread until the session ends, and async tests cannot run their
    own loop beside it.

    A browser test that fails runs once more (pytest-rerunfailures), as Playwright's own
    runner does on CI: two JupyterLabs, two Chromiums and their kernels on two cores miss a
    30-second wait now and then, each time in another test. A test that fails twice fails
    the run; one that passed on its second run is listed as RERUN in the summary, and each
    of those is a defect to chase at its cause (docs/contributing.md)."""
    items.sort(key=lambda item: item.get_closest_marker("browser") is not None)
    for item in items:
        if item.get_closest_marker("browser") is not None and not item.get_closest_marker(
                "flaky"):
            item.add_marker(pytest.mark.flaky(reruns=1))


def _running(server: JupyterLabServer) -> Iterator[JupyterLabServer]:
    """``server`` started for as long as its fixture lasts (skipped without Chromium)."""
    reason = chromium_missing_reason()
    if reason:
        pytest.skip(reason)
    server.start()
    try:
        yield server
    finally:
        server.stop()


@pytest.fixture(scope="session")
def lab_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    yield from _running(JupyterLabServer(tmp_path_factory.mktemp("jupyterlab")))


@pytest.fixture(scope="session")
def shared_notebook7(tmp_path_factory: pytest.TempPathFactory) -> Iterator[JupyterLabServer]:
    """The Notebook 7 server (``jupyter notebook``) of the test session, started by the
    first test that asks for :func:`notebook7`."""
    yield from _running(notebook7_server(tmp_path_factory.mktemp("notebook7")))


@pytest.fixture
def notebook7(shared_notebook7: JupyterLabServer) -> Iterator[JupyterLabServer]:
    """The shared Notebook 7 server; the kernels a test left running are shut down after
    it (the tests open its pages in tabs of their own, and close them)."""
    yield shared_notebook7
    shared_notebook7.shut_down_kernels()


@pytest.fixture(scope="session")
def lab_session(lab_server: JupyterLabServer,
                tmp_path_factory: pytest.TempPathFactory) -> Iterator[LabSession]:
    with launch_chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        session = LabSession(lab_server, context)
        session.remember_layout()
        yield session
        session.close()


@pytest.fixture
def lab(lab_session: LabSession) -> Iterator[LabSession]:
    """The shared tab; the test fails on console errors, and its notebooks are closed
    (kernels shut down), the light theme and the tab's first size and side areas are put
    back afterwards."""
    lab_session.console_errors.clear()
    yield lab_session
    errors = list(lab_session.console_errors)
    lab_session.close_all()
    lab_session.set_theme(dark=False)
    lab_session.restore_layout()
    assert not errors, "console errors:\n" + "\n".join(f"{e.type}: {e.text}" for e in errors)


@pytest.fixture(scope="session")
def screenshot_dir() -> Path:
    """docs/screenshots when NETA_NB_UPDATE_SCREENSHOTS=1, else the gitignored artifacts."""
    if os.environ.get("NETA_NB_UPDATE_SCREENSHOTS") == "1":
        return DOCS_SCREENSHOTS
    return ARTIFACTS / "screenshots"
