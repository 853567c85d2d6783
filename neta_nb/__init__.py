"""neta_nb: run LLM agents inside Jupyter and watch their work live.

The public surface is the names in ``__all__``; everything else is internal.
"""

import typing

from .ipython_extension import load_ipython_extension
from .messages import Message, Usage
from .providers import ScriptedProvider, create_provider
from .providers.prices import ModelPrice
from .runtime.acp import AcpAgent
from .runtime.agent import DamagedAgentRecordError
from .runtime.inline_completion import InlineCompletion, inline_completion
from .runtime.mentions.attachments import Attachment, AttachmentError
from .runtime.mentions.mentions import MentionError
from .runtime.replay.replay import llm_judge, replay, replay_all
from .runtime.replay.replay_report import ReplayReport
from .runtime.session import Agent, AgentSession
from .runtime.session.resume import SessionNotOwnedError, SessionNotResumableError
from .runtime.session.spending import BudgetExceededError
from .runtime.stored_endpoint import StoredEndpointError
from .runtime.tracing.tracing import configure_tracing
from .store.process_owner import SessionBusyError
from .store.session_store import SessionStore
from .thinking import build_thinking_params, get_model_thinking_capability, resolve_think_level
from .todo import TodoItem, TodoStore, TodoSummary
from .tools import (
    AgentToolConfig,
    PromptPreview,
    RichResult,
    Tool,
    ToolArgumentError,
    ToolCatalog,
    ToolContext,
    ToolResolution,
    ToolState,
    preview_prompt,
    resolve_tools,
    tool,
)

# Kept sorted by hand (tests/test_public_api.py checks it), so a diff shows what changed.
__all__ = [
    "AcpAgent",
    "Agent",
    "AgentSession",
    "AgentToolConfig",
    "Attachment",
    "AttachmentError",
    "BudgetExceededError",
    "DamagedAgentRecordError",
    "InlineCompletion",
    "MentionError",
    "Message",
    "ModelPrice",
    "PromptPreview",
    "ReplayReport",
    "RichResult",
    "ScriptedProvider",
    "SessionBusyError",
    "SessionNotOwnedError",
    "SessionNotResumableError",
    "SessionStore",
    "StoredEndpointError",
    "TodoItem",
    "TodoStore",
    "TodoSummary",
    "Tool",
    "ToolArgumentError",
    "ToolCatalog",
    "ToolContext",
    "ToolResolution",
    "ToolState",
    "Usage",
    "build_thinking_params",
    "configure_tracing",
    "create_provider",
    "get_model_thinking_capability",
    "inline_completion",
    "llm_judge",
    "load_ipython_extension",
    "preview_prompt",
    "replay",
    "replay_all",
    "resolve_think_level",
    "resolve_tools",
    "serve_notebook_mcp",
    "tool",
]

__version__ = "0.1.0"


def __getattr__(name: str) -> typing.Any:
    # The notebook's MCP server needs the widgets and the `mcp` extra: both are imported
    # when it is first asked for, so `import neta_nb` in a script loads neither.
    if name == "serve_notebook_mcp":
        from .widgets.mcp_review import serve_notebook_mcp

        return serve_notebook_mcp
    raise AttributeError(f"module 'neta_nb' has no attribute {name!r}")

