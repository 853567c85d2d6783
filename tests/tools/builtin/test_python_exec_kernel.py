"""The ``python`` tool under a real ipykernel: two sub-agents of one response run code at
the same time, each reads only what its own code printed, and the notebook's own output
(later cells' ``print``, stderr, logging) still reaches the notebook afterwards — also
after code that closed, detached or replaced ``sys.stdout`` and ``sys.stderr``."""

from __future__ import annotations

import json

import nbformat
import pytest
from nbclient import NotebookClient

SETUP = r'''
import json
from neta_nb import Agent, AgentSession, AgentToolConfig
from neta_nb.providers.scripted.script_format import ScriptedResponse, TextStep
from neta_nb.providers.scripted.scripted import ScriptedProvider

def code(name):
    # Interleaves with the other child: awaits between prints, a thread of its own, stderr.
    return (
        "import asyncio, sys, threading\n"
        "for n in range(20):\n"
        f"    print('{name}', n)\n"
        "    await asyncio.sleep(0.002)\n"
        f"threading.Thread(target=print, args=('{name} thread',)).start()\n"
        "await asyncio.sleep(0.01)\n"
        f"_ = sys.stderr.write('{name} stderr\\n')\n")

def echo(messages):
    """The child answers with its python result, so the parent's results show what it read."""
    return ScriptedResponse(steps=[TextStep(text=messages[-1].tool_results[0].content)])

def child(name):
    return Agent(name, description=f"The {name} child.",
                 model=ScriptedProvider([[{"tool_call": {"name": "python",
                                                         "args": {"code": code(name)}}}],
                                         echo]),
                 tools=AgentToolConfig(inherit_core_tools=False, enabled=["python"]))

planner = Agent("planner", subagents=[child("first"), child("second")],
                model=ScriptedProvider([
                    [{"tool_call": {"name": "delegate", "args": {"agent": a, "task": "print"}}}
                     for a in ("first", "second")],
                    [{"text": "both done"}]]))
session = AgentSession(planner, approval_policy="allow")
'''

RUN = "await session.run('go')\nprint('after the turn')"

RESULTS = """
results = {m.tool_results[0].content.split()[1]: m.tool_results[0].content
           for m in session.messages if m.tool_results}
print(json.dumps(results))
"""

LATER = """
import logging, sys
print('a later cell prints')
print('and writes to stderr', file=sys.stderr)
logging.getLogger('later').warning('and logs')
"""


@pytest.fixture(scope="module")
def executed() -> nbformat.NotebookNode:
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)
                      for source in (SETUP, RUN, RESULTS, LATER)]
    NotebookClient(notebook, kernel_name="python3", timeout=120).execute()
    return notebook


def _text(cell: nbformat.NotebookNode, stream: str) -> str:
    return "".join(output.get("text", "") for output in cell.outputs
                   if output.output_type == "stream" and output.name == stream)


def test_parallel_children_each_read_only_their_own_output(
        executed: nbformat.NotebookNode) -> None:
    results = json.loads(_text(executed.cells[2], "stdout"))
    assert set(results) == {"first", "second"}
    for name, other in (("first", "second"), ("second", "first")):
        text = results[name]
        lines = text.removeprefix("Output:\n").splitlines()
        assert sorted(lines) == sorted([f"{name} {n}" for n in range(20)]
                                       + [f"{name} thread", f"{name} stderr"]), text
        assert other not in text


def test_the_turn_printed_nothing_into_the_cell_but_its_own_line(
        executed: nbformat.NotebookNode) -> None:
    assert _text(executed.cells[1], "stdout") == "after the turn\n"
    assert _text(executed.cells[1], "stderr") == ""


def test_a_later_cell_still_prints_writes_to_stderr_and_logs(
        executed: nbformat.NotebookNode) -> None:
    later = executed.cells[3]
    assert _text(later, "stdout") == "a later cell prints\n"
    assert "and writes to stderr\n" in _text(later, "stderr")
    assert "and logs" in _text(later, "stderr")


HOSTILE_SETUP = r'''
import sys
from neta_nb.tools import ToolContext
from neta_nb.tools.builtin import python
await python.invoke({"code": "print('warm')"}, ToolContext(namespace={}))
before = (sys.stdout, sys.stderr)  # the routers, in front of the kernel's streams
'''

HOSTILE_CALL = r'''
code = """
import io, sys
print('mine')
for stream in (sys.stdout, sys.stderr):
    try:
        stream.detach()
    except io.UnsupportedOperation:
        pass
with sys.stdout:
    print('in with')
sys.stdout.close()
sys.stderr.close()
sys.stdout, sys.stderr = io.StringIO(), io.StringIO()
"""
result = await python.invoke({"code": code}, ToolContext(namespace={}))
'''

HOSTILE_LATER = r'''
print('a later cell prints', sys.stdout is before[0], sys.stderr is before[1])
print('and writes to stderr', file=sys.stderr)
print(repr(result))
'''


def test_code_that_closes_detaches_and_replaces_the_streams_leaves_the_kernels() -> None:
    notebook: nbformat.NotebookNode = nbformat.v4.new_notebook()
    notebook.cells = [nbformat.v4.new_code_cell(source)
                      for source in (HOSTILE_SETUP, HOSTILE_CALL, HOSTILE_LATER)]
    NotebookClient(notebook, kernel_name="python3", timeout=120, allow_errors=True).execute()
    later = notebook.cells[2]
    assert [output.output_type for output in later.outputs
            if output.output_type == "error"] == []
    assert _text(later, "stdout") == "a later cell prints True True\n'Output:\\nmine\\nin with'\n"
    assert _text(later, "stderr") == "and writes to stderr\n"
