"""Which tools an agent gets: :func:`~.resolver.resolve_tools` decides (the one place that
does), :mod:`.resolution_steps` says how a resolution came about and how two differ, and
:mod:`.resolution_cache` keeps the last one while nothing it depends on changes. The rules
they share are :mod:`neta_nb.tools.rules`."""
