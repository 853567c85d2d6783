"""The tools contract names are importable from both ``neta_nb`` and ``neta_nb.tools``."""

from __future__ import annotations

import neta_nb
import neta_nb.tools
from neta_nb.tools import base, catalog, config, preview
from neta_nb.tools.resolution import resolver

DEFINED_IN = {
    "Tool": base, "tool": base, "ToolContext": base, "ToolArgumentError": base,
    "ToolCatalog": catalog, "AgentToolConfig": config, "ToolState": resolver,
    "ToolResolution": resolver, "resolve_tools": resolver, "PromptPreview": preview,
    "preview_prompt": preview,
}


def test_contract_names_are_the_defining_objects() -> None:
    for name, module in DEFINED_IN.items():
        assert getattr(neta_nb, name) is getattr(module, name), name
        assert getattr(neta_nb.tools, name) is getattr(module, name), name


def test_tools_all_is_unique_and_importable() -> None:
    assert len(set(neta_nb.tools.__all__)) == len(neta_nb.tools.__all__)
    assert all(hasattr(neta_nb.tools, name) for name in neta_nb.tools.__all__)
