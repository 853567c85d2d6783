"""Thin anywidget classes for neta_nb's cards. Each renders a plain JS component from
``neta_nb/static/widgets.js`` (sources in ``js/src``); the chat view composes the same
components."""

from .chat_view import ChatView
from .session_sidebar import SessionSidebar
from .skill_card import SkillCard
from .subagent_card import SubagentCard
from .thinking_block import ThinkingBlock
from .thinking_level_selector import ThinkingLevelSelector
from .todo_card import TodoCard
from .token_stats import TokenStats
from .tool_card import ToolCard
from .tool_config_panel import ToolConfigPanel

__all__ = [
    "ChatView",
    "SessionSidebar",
    "SkillCard",
    "SubagentCard",
    "ThinkingBlock",
    "ThinkingLevelSelector",
    "TodoCard",
    "TokenStats",
    "ToolCard",
    "ToolConfigPanel",
]
