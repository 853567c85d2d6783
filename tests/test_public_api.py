"""The public surface of ``neta_nb``: a sorted ``__all__`` that holds the contract names of
DESIGN §2 and nothing exported by accident."""

from __future__ import annotations

import importlib
import types

import neta_nb

# DESIGN §2 contract names that exist so far; add each one here as it lands.
CONTRACT_NAMES = [
    "AgentToolConfig",
    "TodoItem",
    "TodoStore",
    "TodoSummary",
    "Tool",
    "ToolCatalog",
    "ToolContext",
    "ToolState",
    "build_thinking_params",
    "get_model_thinking_capability",
    "resolve_think_level",
    "resolve_tools",
    "tool",
]


def test_all_is_sorted_without_duplicates() -> None:
    assert neta_nb.__all__ == sorted(neta_nb.__all__)
    assert len(set(neta_nb.__all__)) == len(neta_nb.__all__)


def test_every_name_in_all_is_importable() -> None:
    module = importlib.import_module("neta_nb")
    missing = [name for name in neta_nb.__all__ if not hasattr(module, name)]
    assert missing == []
    namespace: dict[str, object] = {}
    exec("from neta_nb import *", namespace)
    assert set(neta_nb.__all__) <= set(namespace)


def test_all_holds_the_contract_names() -> None:
    assert sorted(set(CONTRACT_NAMES) - set(neta_nb.__all__)) == []


def test_nothing_public_is_exported_by_accident() -> None:
    # Every public attribute is either in __all__ or a subpackage/module of neta_nb.
    stray = [name for name, value in vars(neta_nb).items()
             if not name.startswith("_") and name not in neta_nb.__all__
             and not isinstance(value, types.ModuleType)]
    assert stray == []


def test_contract_names_are_the_defining_objects() -> None:
    from neta_nb import thinking, todo

    assert neta_nb.TodoStore is todo.TodoStore
    assert neta_nb.TodoItem is todo.TodoItem
    assert neta_nb.TodoSummary is todo.TodoSummary
    assert neta_nb.build_thinking_params is thinking.build_thinking_params
    assert neta_nb.get_model_thinking_capability is thinking.get_model_thinking_capability
    assert neta_nb.resolve_think_level is thinking.resolve_think_level
