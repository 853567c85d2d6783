"""Root of the test run (``tests/`` and nbval's ``notebooks/``): the offline guard is a
plugin here so that it is active however pytest is started — ``pytest tests``, ``pytest
--nbval notebooks`` or both. See ``tests/support/offline.py``."""

pytest_plugins = ["tests.support.offline"]
