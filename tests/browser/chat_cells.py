"""Notebook cells for the chat view's browser tests and screenshots.

The kernel imports the test doubles from this repository (``tests.support.sessions``), so
the cells put the repository on ``sys.path`` first.
"""

from __future__ import annotations

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]

IMPORTS = f"""
import asyncio, sys
sys.path.insert(0, {str(REPO)!r})
from neta_nb import (Agent, AgentSession, AgentToolConfig, ScriptedProvider, SessionStore,
                     ToolCatalog, ToolContext, tool)
from neta_nb.messages import Usage
from neta_nb.providers.base import (StreamDone, TextDelta, ThinkingDelta, ThinkingEnd,
                                    ToolCallReady, UsageUpdate)
from neta_nb.widgets import ChatView, SessionSidebar
from tests.support.sessions import FakeProvider
""".strip()

# The demo model, paced so that each phase of a turn can be seen (and stopped) from the
# browser; it records the thinking level of every request it gets.
RECORDING_DEMO = """
class RecordingScripted(ScriptedProvider):
    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.levels = []

    async def stream(self, request):
        self.levels.append(request.think_level)
        async for event in super().stream(request):
            yield event

provider = RecordingScripted(chars_per_second=CPS)
store = SessionStore(":memory:")
session = AgentSession(Agent("analyst", model=provider), store=store)
chat = ChatView(session)
chat
""".strip()

LONG_ANSWER = """
long_thinking = " ".join(f"idea{i}" for i in range(400))
long_text = " ".join(f"word{i}" for i in range(600))
provider = ScriptedProvider([[{"thinking": long_thinking}, {"text": long_text}]],
                            chars_per_second=400)
session = AgentSession(Agent("analyst", model=provider))
chat = ChatView(session)
chat
""".strip()

APPROVAL = """
deleted = []

@tool(requires_approval=True, label="Delete file")
def delete_file(path: str) -> str:
    \"\"\"Delete a file.\"\"\"
    deleted.append(path)
    return f"Deleted {path}."

catalog = ToolCatalog.default()
catalog.register(delete_file)
provider = ScriptedProvider([
    [{"text": "I will delete it."},
     {"tool_call": {"name": "delete_file", "args": {"path": "old.csv"}}}],
    [{"text": "Done."}],
])
agent = Agent("janitor", model=provider, tools=AgentToolConfig(enabled=["delete_file"]))
session = AgentSession(agent, catalog)
chat = ChatView(session)
chat
""".strip()

SIDEBAR = """
store = SessionStore(":memory:")
agent = Agent("analyst", model=ScriptedProvider())
first = AgentSession(agent, store=store)
first.set_thinking_level("high")
await first.run("Profile the data")
second = AgentSession(Agent("analyst", model=ScriptedProvider([[{"text": "Hello!"}]])),
                      store=store)
second.set_thinking_level("low")
await second.run("Say hello")
first_id, second_id = first.id, second.id
del first  # only the store knows it now: opening it resumes it
chat = ChatView(second)
sidebar = SessionSidebar(store, chat=chat)
import ipywidgets
ipywidgets.HBox([sidebar, chat])
""".strip()

# A turn that stops at chosen points until the test lets it go on: the plan is written,
# a tool ran, the profile skill ran, and the final response is mid-thought.
GATED_TURN = """
gates = {name: asyncio.Event() for name in ("skill", "thinking", "text")}
skill_waiting = asyncio.Event()  # the skill is at 62 % and waits for gates["skill"]
PLAN = [{"id": "1", "content": "Look at the files in the working directory",
         "status": "completed"},
        {"id": "2", "content": "Profile the sample table column by column",
         "status": "in_progress"},
        {"id": "3", "content": "Summarise the findings with a short report",
         "status": "pending"}]
FINAL = ("## Sample data: first look\\n\\nThe table has **40 rows** and **8 columns**. "
         "Two columns have gaps:\\n\\n- `region`: 2 missing\\n- `customer_rating`: 13 missing\\n\\n"
         "| check | result |\\n|---|---|\\n| files listed | ✓ |\\n| columns profiled | ✓ |\\n\\n"
         "Next, I can chart the numeric columns or look for outliers.")
SPLIT = FINAL.index("have gaps")

@tool(visibility="skill", category="skill", label="Profile table")
async def profile_sample(ctx: ToolContext) -> str:
    \"\"\"Profile the sample table.\"\"\"
    ctx.progress(25, "Column 2/8: order_date", "date, 40 unique")
    ctx.progress(62, "Column 5/8: units", "integer, 18 unique")
    skill_waiting.set()
    await gates["skill"].wait()
    ctx.progress(100, "Column 8/8: customer_rating")
    return "## Profile of `sample.csv`\\n\\n40 rows × 8 columns; 2 columns have missing values."

catalog = ToolCatalog.default()
catalog.register(profile_sample)
usage = lambda i, o: UsageUpdate(Usage(input_tokens=i, output_tokens=o))
provider = FakeProvider([
    [ThinkingDelta("The user wants a first look at the data. "), ThinkingDelta("A plan will help."),
     ThinkingEnd(None), TextDelta("Let me plan this before I start."),
     ToolCallReady("c1", "todo", {"todos": PLAN}), usage(1850, 120), StreamDone("tool_use")],
    [ThinkingDelta("Listing the directory shows which files I can use."), ThinkingEnd(None),
     ToolCallReady("c2", "list_files", {"path": "."}), ToolCallReady("c3", "profile_sample", {}),
     usage(2400, 60), StreamDone("tool_use")],
    [ThinkingDelta("The profile is back: step two is done."), ThinkingEnd(None),
     ToolCallReady("c4", "todo", {"todos": [{"id": "2", "content": PLAN[1]["content"],
                                             "status": "completed"},
                                            {"id": "3", "content": PLAN[2]["content"],
                                             "status": "in_progress"}], "merge": True}),
     usage(2900, 70), StreamDone("tool_use")],
    [ThinkingDelta("The profile finished without errors. The two columns with gaps are "
                   "optional, so they do not block the analysis. "), gates["thinking"].wait,
     ThinkingDelta("I'll summarise."), ThinkingEnd(None), TextDelta(FINAL[:SPLIT]),
     gates["text"].wait, TextDelta(FINAL[SPLIT:]),
     ToolCallReady("c5", "todo", {"todos": [{"id": "3", "content": PLAN[2]["content"],
                                             "status": "completed"}], "merge": True}),
     usage(3100, 240), StreamDone("tool_use")],
    [TextDelta("All three steps of the plan are done."), usage(3500, 12),
     StreamDone("end_turn")],
], context_window=200_000)
store = SessionStore(":memory:")
agent = Agent("analyst", model=provider,
              tools=AgentToolConfig(enabled=["list_files", "profile_sample"]))
earlier = AgentSession(Agent("analyst", model=ScriptedProvider()), store=store)
await earlier.run("Summarise last week's sales")
session = AgentSession(agent, catalog, store)
chat = ChatView(session)
sidebar = SessionSidebar(store, chat=chat)
import ipywidgets
ipywidgets.HBox([sidebar, chat])
""".strip()
