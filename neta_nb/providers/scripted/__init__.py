"""The scripted model's family: the offline provider (:mod:`.scripted`), the format of its
scripts (:mod:`.script_format`), a stored conversation read back as a script
(:mod:`.history_script`) and the demo scripts (:mod:`.demo_script`, :mod:`.demo_crew_script`,
:mod:`.demo_notebook_script`). ``neta_nb.providers.scripted`` keeps naming what
:mod:`.scripted` exports."""

from .scripted import *  # noqa: F403
from .scripted import __all__ as __all__
