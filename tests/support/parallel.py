"""The pytest plugin that decides how ``pytest -n N`` (pytest-xdist) shares the run out
among its workers: whole files, browser files last, the Ray files on one worker.

* A file goes to one worker as a unit, so a module-scoped fixture (a Notebook 7 server, a
  JupyterLab page with a notebook open, a llama.cpp server, a Ray cluster) starts once.
* Files are handed out in collection order, except that browser files always come after
  every other file, whatever the order of the items (``--ff`` puts last run's failures
  first; a crashed worker's unfinished file is queued again at the end). A worker that
  started the session's Playwright (sync API, an event loop running until the session
  ends) must run no asyncio test after it: such a worker is given browser files only,
  and stops when none are left (the replacement of a crashed worker takes the rest).
* The files that start a Ray cluster form one unit, so the Ray tests never run on two
  workers at once: each cluster is ``ray.init(num_cpus=2)`` on a two-core machine, and its
  teardown reaps by pid what started after it.

Registered by the repository's root ``conftest.py``. Without ``-n`` only the check that
every ``ray`` test is in ``RAY_FILES`` runs.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
RAY_FILES = ("tests/batch/test_ray.py", "tests/batch/test_hostile_use.py")
"""Every file with a test marked ``ray``, from the repository's root (checked below)."""

RAY_UNIT = "the Ray cluster's files"
BROWSER_FILES = "tests/browser/"


def work_unit(nodeid: str) -> str:
    """The unit of work a test belongs to: its file, or the Ray files together."""
    path = nodeid.split("::", 1)[0]
    return RAY_UNIT if path in RAY_FILES else path


def _is_browser(unit: str) -> bool:
    return unit.startswith(BROWSER_FILES)


_STRAY = pytest.StashKey[str]()


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    ray_files = {ROOT / name for name in RAY_FILES}
    for item in items:
        if item.get_closest_marker("ray") is not None and item.path not in ray_files:
            # Failed at setup rather than raised here: under -n a collection error in a
            # worker reaches the terminal as xdist's INTERNALERROR, without this text.
            item.stash[_STRAY] = (
                f"{item.path.relative_to(ROOT)} starts a Ray cluster: add it to RAY_FILES "
                "in tests/support/parallel.py, so that no two clusters run at once")


def pytest_runtest_setup(item: pytest.Item) -> None:
    stray = item.stash.get(_STRAY, None)
    if stray is not None:
        pytest.fail(stray, pytrace=False)


@pytest.hookimpl(optionalhook=True)
def pytest_xdist_make_scheduler(config: pytest.Config, log: Any) -> Any:
    if config.getvalue("dist") != "load":  # another --dist asked for by name: xdist's own
        return None
    from xdist.scheduler import LoadScopeScheduling

    class FileScheduling(LoadScopeScheduling):
        def _split_scope(self, nodeid: str) -> str:
            return work_unit(nodeid)

        def _assign_work_unit(self, node: Any) -> None:
            # Browser files behind every other file, each group in its queued order.
            for unit in [unit for unit in self.workqueue if _is_browser(unit)]:
                self.workqueue.move_to_end(unit)
            # xdist keeps every unit a worker was given (done or not) in assigned_work.
            if any(_is_browser(unit) for unit in self.assigned_work.get(node, {})):
                unit = next((unit for unit in self.workqueue if _is_browser(unit)), None)
                if unit is None:  # only asyncio files are left: not for this worker
                    node.shutdown()
                    return
                self.workqueue.move_to_end(unit, last=False)
            super()._assign_work_unit(node)

    # Collection order, not xdist's default of the largest unit first.
    config.option.loadscopereorder = False
    return FileScheduling(config, log)
