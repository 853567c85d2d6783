"""The public surface of ``neta_nb`` and ``neta_nb.widgets``: sorted ``__all__`` lists that
hold the contract names of DESIGN §2, §5 and §8, every name importable, defined in the
package and documented, and nothing exported by accident — a name exported without being
a contract name or a listed deliberate extra is reported."""

from __future__ import annotations

import importlib
import types
from typing import Any

import pytest

import neta_nb
import neta_nb.widgets

# DESIGN §2 (core and runtime) and §8 (0.2): the contract names `neta_nb` exports.
CORE_CONTRACT = {
    "TodoItem", "TodoSummary", "TodoStore",
    "Tool", "tool", "ToolContext", "ToolCatalog", "AgentToolConfig", "ToolState",
    "resolve_tools",
    "build_thinking_params", "get_model_thinking_capability", "resolve_think_level",
    "Agent", "AgentSession", "SessionStore", "ScriptedProvider",
    "SessionBusyError",
    "create_provider",  # DESIGN §9
    "ModelPrice",  # DESIGN §9
    "AcpAgent",  # DESIGN §10
}
# DESIGN §5 and §8: the widget components.
WIDGETS_CONTRACT = {
    "TodoCard", "ToolCard", "SkillCard", "ThinkingBlock", "TokenStats",
    "ThinkingLevelSelector", "ToolConfigPanel", "ChatView", "SessionSidebar",
    "SubagentCard",
}
# Exported on purpose although DESIGN does not list them, each with the reason. A new
# export belongs in DESIGN's contract list or here; anything else is an accident.
CORE_EXTRAS = {
    "Message": "session.messages holds them; notebooks read their parts",
    "Usage": "session.usage's type",
    "PromptPreview": "preview_prompt's result, shown in notebook 02",
    "preview_prompt": "the prompt preview DESIGN §2 says shares the resolver",
    "ToolResolution": "resolve_tools' result type",
    "ToolArgumentError": "what a tool raises (or sees) for arguments the schema rejects",
    "RichResult": "DESIGN §8's documented return type for rich tool output",
    "Attachment": "the documented form of one file for session.run(attachments=...)",
    "AttachmentError": "what run/start raise for an attachment refused before sending",
    "MentionError": "what run/start raise for an @ mention that resolves to nothing",
    "configure_tracing": "where OpenTelemetry spans go and whether they hold contents",
    "replay": "issue 30's evaluation: a stored session's prompts run again, compared",
    "replay_all": "replay over many stored sessions",
    "llm_judge": "the LLM-judge check a replay takes",
    "ReplayReport": "what replay returns (table, DataFrame, pydantic-evals dataset)",
    "BudgetExceededError": "what run/start raise when the session's budget is spent",
    "SessionNotOwnedError": "what resume raises for another user's session of a shared store",
    "DamagedAgentRecordError": "what resume and replay raise for a damaged stored agent",
    "SessionNotResumableError": "what resume raises for a stored session with no model to "
                                "go on with (an outside MCP client's)",
    "StoredEndpointError": "what resume, replay and BatchRun.resume raise for a stored "
                           "base_url the reader did not configure",
    "serve_notebook_mcp": "issue 49: the notebook served to outside MCP clients",
    "load_ipython_extension": "`%load_ext neta_nb` (the `%neta_mcp serve` magic)",
    "inline_completion": "issue 51: inline code completion in the notebook, switched on",
    "InlineCompletion": "what inline_completion returns (.off(), its cost)",
}
WIDGETS_EXTRAS: dict[str, str] = {
    "BatchGrid": "what a BatchRun (agent.map) shows in a cell: counters and a tile per row",
    "SideBySide": "widgets in one row (a session list beside its chat) whose saved form "
                  "shows them all",
}

MODULES = {"neta_nb": (neta_nb, CORE_CONTRACT, CORE_EXTRAS),
           "neta_nb.widgets": (neta_nb.widgets, WIDGETS_CONTRACT, WIDGETS_EXTRAS)}
PUBLIC = [(module, name) for module, (package, _, _) in MODULES.items()
          for name in package.__all__]
# Contract names that have not landed yet: reported as skips until they do.
PENDING = [(module, name) for module, (package, contract, _) in MODULES.items()
           for name in sorted(contract) if name not in package.__all__]


def own_docstring(value: Any) -> str:
    """A class's own docstring (not a base class's, nor a dataclass's generated
    signature), or a function's."""
    doc = value.__dict__.get("__doc__") if isinstance(value, type) else value.__doc__
    doc = (doc or "").strip()
    if isinstance(value, type) and doc.startswith(f"{value.__name__}("):
        return ""
    return doc


@pytest.mark.parametrize("module", MODULES)
def test_all_is_sorted_without_duplicates(module: str) -> None:
    names = MODULES[module][0].__all__
    assert names == sorted(names)
    assert len(set(names)) == len(names)


@pytest.mark.parametrize("module", MODULES)
def test_star_import_gives_exactly_all(module: str) -> None:
    namespace: dict[str, object] = {}
    exec(f"from {module} import *", namespace)
    assert sorted(set(namespace) - {"__builtins__"}) == sorted(MODULES[module][0].__all__)


@pytest.mark.parametrize(("module", "name"), PUBLIC, ids=[f"{m}.{n}" for m, n in PUBLIC])
def test_public_name_is_importable_defined_here_and_documented(module: str, name: str) -> None:
    value = getattr(importlib.import_module(module), name)
    assert value.__module__.startswith("neta_nb."), value.__module__
    # The object is the one its defining module holds (a re-export, not a copy).
    assert getattr(importlib.import_module(value.__module__), name) is value
    assert own_docstring(value), f"{module}.{name} has no docstring"


@pytest.mark.parametrize("module", MODULES)
def test_every_export_is_a_contract_name_or_a_listed_extra(module: str) -> None:
    package, contract, extras = MODULES[module]
    unlisted = sorted(set(package.__all__) - contract - set(extras))
    assert unlisted == [], (
        f"{module} exports names that are not in DESIGN's contract list: {unlisted}; add "
        "them to DESIGN or, with the reason, to the extras in tests/test_public_api.py")
    assert sorted(set(extras) - set(package.__all__)) == [], "extras listed but not exported"


def test_an_unlisted_export_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(neta_nb, "__all__", [*neta_nb.__all__, "helper_by_accident"])
    reported = r"not in DESIGN's contract list: \['helper_by_accident'\]"
    with pytest.raises(AssertionError, match=reported):
        test_every_export_is_a_contract_name_or_a_listed_extra("neta_nb")


@pytest.mark.parametrize("module", MODULES)
def test_landed_contract_names_are_exported(module: str) -> None:
    package, contract, _ = MODULES[module]
    defined = {name for name in contract if hasattr(package, name)}
    assert sorted(defined - set(package.__all__)) == []


def test_every_contract_name_has_landed() -> None:
    # DESIGN §2 and §8 are built whole: no contract name is missing from the package.
    assert PENDING == []


@pytest.mark.parametrize("module", MODULES)
def test_nothing_public_is_exported_by_accident(module: str) -> None:
    # Every public attribute is either in __all__ or a subpackage/module of the package.
    package = MODULES[module][0]
    stray = [name for name, value in vars(package).items()
             if not name.startswith("_") and name not in package.__all__
             and not isinstance(value, types.ModuleType)]
    assert stray == []


def test_contract_names_are_the_defining_objects() -> None:
    from neta_nb import providers, store, thinking, todo
    from neta_nb.runtime import session

    assert neta_nb.TodoStore is todo.TodoStore
    assert neta_nb.TodoItem is todo.TodoItem
    assert neta_nb.TodoSummary is todo.TodoSummary
    assert neta_nb.build_thinking_params is thinking.build_thinking_params
    assert neta_nb.get_model_thinking_capability is thinking.get_model_thinking_capability
    assert neta_nb.resolve_think_level is thinking.resolve_think_level
    assert neta_nb.Agent is session.Agent
    assert neta_nb.AgentSession is session.AgentSession
    assert neta_nb.SessionStore is store.SessionStore
    assert neta_nb.ScriptedProvider is providers.ScriptedProvider
    assert neta_nb.create_provider is providers.create_provider
