"""Thin anywidget classes for neta_nb's cards. Each renders a plain JS component from
``neta_nb/static/widgets.js`` (sources in ``js/src``), which reaches the page once per
kernel through a shared model (``neta_nb.widgets.bundle``); the chat view composes the same
components."""

from .batch.batch_grid import BatchGrid
from .cards.skill_card import SkillCard
from .cards.subagent_card import SubagentCard
from .cards.thinking_block import ThinkingBlock
from .cards.thinking_level_selector import ThinkingLevelSelector
from .cards.todo_card import TodoCard
from .cards.token_stats import TokenStats
from .cards.tool_card import ToolCard
from .chat.panels.session_sidebar import SessionSidebar
from .chat.view import ChatView
from .layout import SideBySide
from .tool_config.panel import ToolConfigPanel

__all__ = [
    "BatchGrid",
    "ChatView",
    "SessionSidebar",
    "SideBySide",
    "SkillCard",
    "SubagentCard",
    "ThinkingBlock",
    "ThinkingLevelSelector",
    "TodoCard",
    "TokenStats",
    "ToolCard",
    "ToolConfigPanel",
]
