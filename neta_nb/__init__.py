"""neta_nb: run LLM agents inside Jupyter and watch their work live.

The public surface is the names in ``__all__``; everything else is internal.
"""

from .messages import Message, Usage
from .todo import TodoItem, TodoStore, TodoSummary

__all__ = sorted([
    "Message",
    "TodoItem",
    "TodoStore",
    "TodoSummary",
    "Usage",
])

__version__ = "0.1.0"
