"""Root of the test run (``tests/`` and nbval's ``notebooks/``): the offline guard is a
plugin here so that it is active however pytest is started — ``pytest tests``, ``pytest
--nbval notebooks`` or both. See ``tests/support/offline.py``.

Property tests get no per-example deadline: like every test here they assert behaviour,
never speed (the machines are shared and have two cores; speed is measured in
``benchmarks/``)."""

from hypothesis import settings

settings.register_profile("neta_nb", deadline=None)
settings.load_profile("neta_nb")

pytest_plugins = ["tests.support.offline", "tests.support.parallel"]
