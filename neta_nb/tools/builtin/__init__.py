"""The built-in tools a notebook agent gets from :meth:`ToolCatalog.default`.

* ``todo`` — the plan (internal, planning, core)
* ``read_file``, ``list_files`` — read-only access to the working directory (base, core)
* ``python`` — run code in the notebook's namespace (base; off by default, needs approval)
* ``list_variables`` — the notebook's variables with types and shapes (base; off by default)
* ``profile_table`` — profile a CSV column by column with progress (skill, core)
* ``delegate`` — hand a task to a sub-agent (crew, core; offered only to an agent with
  sub-agents)
"""

from __future__ import annotations

from ..base import Tool
from .delegate import delegate
from .files import list_files, read_file
from .profile import profile_table
from .python_exec import python
from .todo_tool import todo
from .variables import list_variables

__all__ = ["builtin_tools", "delegate", "list_files", "list_variables", "profile_table",
           "python", "read_file", "todo"]


def builtin_tools() -> list[Tool]:
    return [todo, read_file, list_files, python, list_variables, profile_table, delegate]
