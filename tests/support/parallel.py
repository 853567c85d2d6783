"""The pytest plugin that decides how ``pytest -n N`` (pytest-xdist) shares the run out
among its workers: whole files, in the order collected, with the Ray files on one worker.

* A file goes to one worker as a unit, so a module-scoped fixture (a Notebook 7 server, a
  JupyterLab page with a notebook open, a llama.cpp server, a Ray cluster) starts once.
* Files are handed out in collection order, which puts the browser tests last
  (``tests/browser/conftest.py``): a worker that started the session's Playwright runs no
  asyncio test after it, whichever files it is given.
* The files that start a Ray cluster form one unit, so two clusters never run at once:
  each is ``ray.init(num_cpus=2)`` on a two-core machine, and its teardown reaps by pid.

Registered by the repository's root ``conftest.py``; without ``-n`` it does nothing.
"""

from __future__ import annotations

from typing import Any

import pytest

RAY_FILES = ("tests/batch/test_ray.py", "tests/batch/test_hostile_use.py")
"""Every file with a test marked ``ray`` (checked at collection)."""

RAY_UNIT = "the Ray cluster's files"


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the Ray files together."""
    path = nodeid.split("::", 1)[0]
    return RAY_UNIT if path in RAY_FILES else path


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    strays = sorted({item.nodeid.split("::", 1)[0] for item in items
                     if item.get_closest_marker("ray") is not None} - set(RAY_FILES))
    if strays:
        raise pytest.UsageError(
            f"{', '.join(strays)} start a Ray cluster: add them to RAY_FILES in "
            "tests/support/parallel.py, so that no two clusters run at once")


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

    # Collection order, not xdist's default of the largest unit first (see the docstring).
    config.option.loadscopereorder = False
    return FileScheduling(config, log)
