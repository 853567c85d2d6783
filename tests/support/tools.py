"""Builders shared by the tool tests (the fixtures live in conftest.py)."""

from __future__ import annotations

from functools import cache

from neta_nb.tools import Tool


@cache  # tools are immutable; building one creates a pydantic model, which is slow
def make_tool(name: str, *, category: str = "base", core: bool = False,
              capabilities: frozenset[str] = frozenset(),
              scenes: frozenset[str] | None = None) -> Tool:
    return Tool(name=name, description=f"The {name} tool.", handler=lambda: name,
                category=category, core=core, capabilities=capabilities, scenes=scenes)
