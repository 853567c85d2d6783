"""Shared test configuration. The offline guard (no provider keys, no connection beyond
127.0.0.1, in this process and in every kernel the tests start) is the plugin
``tests/support/offline.py``, registered by the repository's root ``conftest.py`` so that
it also covers the notebooks nbval collects. Fixtures used by a single module live in that
module."""
