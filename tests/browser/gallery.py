"""Notebook cells that show every widget with realistic state, shared by the browser tests
and the screenshots."""

from __future__ import annotations

SETUP = """
from neta_nb.todo import TodoStore
from neta_nb.widgets import (SkillCard, ThinkingBlock, ThinkingLevelSelector, TodoCard,
                             TokenStats, ToolCard)
store = TodoStore()
store.write([
    {"id": "1", "content": "Load the sales data from sales.csv", "status": "completed"},
    {"id": "2", "content": "Clean missing values and outliers", "status": "completed"},
    {"id": "3", "content": "Fit a seasonal model per region", "status": "in_progress"},
    {"id": "4", "content": "Write the summary report", "status": "pending"},
    {"id": "5", "content": "Email the report to the team", "status": "cancelled"},
])
""".strip()

TODO = "todo = TodoCard(store)\ntodo"

TOOL = """
tool = ToolCard(name="web_search", label="Web search",
                args={"query": "seasonal decomposition python", "max_results": 5})
tool_done = ToolCard(name="read_file", label="Read file", status="done",
                     args={"path": "data/sales.csv"}, expanded=True,
                     result="Read **1,204 rows** from `data/sales.csv`:\\n\\n"
                            "| region | rows |\\n|---|---|\\n| North | 611 |\\n| South | 593 |")
tool_error = ToolCard(name="run_sql", label="Run SQL", status="error",
                      args={"sql": "SELECT * FROM salez"},
                      result="no such table: salez", expanded=True)
display(tool, tool_done, tool_error)
""".strip()

SKILL = """
skill = SkillCard(name="report", label="Generate report", percent=40,
                  step="Rendering charts (3/8)")
skill
""".strip()

SKILL_DONE = """
skill_done = SkillCard(name="forecast", label="Forecast next quarter", status="done",
                       percent=100, expanded=True,
                       result="## Forecast\\n\\n- North: **+4.2 %**\\n- South: **+1.8 %**\\n\\n"
                              "Confidence is high for both regions.")
skill_done
""".strip()

THINKING = """
thinking = ThinkingBlock()
thinking.append("The user wants a **quarterly forecast**. First I should check the data:\\n\\n"
                "1. Are there gaps in the time series?\\n2. Which regions have enough history?"
                "\\n\\nThe seasonal pattern looks")
thinking.flush()
thinking
""".strip()

THINKING_DONE = """
thinking_done = ThinkingBlock("Checked the data: no gaps. Both regions have 3 years of history, "
                              "so a seasonal model per region is reasonable.", collapsed=False)
thinking_done
""".strip()

TOKENS = """
tokens = TokenStats({"current": {"input_tokens": 12345, "output_tokens": 340,
                                 "total_tokens": 12685, "api_calls": 3},
                     "context": {"used_tokens": 64000, "max_tokens": 200000, "percent": 32}},
                    running=True)
tokens_idle = TokenStats({"current": {"input_tokens": 0, "output_tokens": 0,
                                      "total_tokens": 0, "api_calls": 0},
                          "context": {"used_tokens": 130000, "max_tokens": 200000,
                                      "percent": 65}})
tokens_full = TokenStats({"current": {"input_tokens": 1200000, "output_tokens": 999,
                                      "total_tokens": 1200999, "api_calls": 41},
                          "context": {"used_tokens": 180000, "max_tokens": 200000,
                                      "percent": 90}}, running=True)
display(tokens, tokens_idle, tokens_full)
""".strip()

SELECTOR = """
selector = ThinkingLevelSelector("openai", "gpt-5")
selector
""".strip()

CELLS = [SETUP, TODO, TOOL, SKILL, SKILL_DONE, THINKING, THINKING_DONE, TOKENS, SELECTOR]
