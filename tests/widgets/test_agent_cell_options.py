"""The first line of an ``%%agent`` cell: read, looked up in the notebook's variables, and
refused with a clear error — before anything runs — when it cannot be used; and the
rewrite that lets IPython await the cell's turn."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from IPython.core.error import UsageError

from neta_nb import Agent, AgentSession, ScriptedProvider, SessionStore, ToolCatalog
from neta_nb.widgets.agent_cell import AgentCells, AgentCellUsageError
from neta_nb.widgets.agent_cell.magic import rewrite_agent_cell
from neta_nb.widgets.agent_cell.options import CellOptions, parse_line, resolve


def test_the_options_are_read() -> None:
    assert parse_line("") == CellOptions()
    assert parse_line("-a analyst -c tools -s chat -o answer --approve allow --budget 0.25 "
                      "--raise") == CellOptions(
        agent="analyst", catalog="tools", session="chat", output="answer",
        approve="allow", budget=0.25, raise_errors=True)
    assert parse_line("--budget $2").budget == 2.0
    # `%agent`: the words after the options are the prompt.
    assert parse_line("-o x What is in @df?").prompt == "What is in @df?"


@pytest.mark.parametrize(("line", "says"), [
    ("--budget 0", "--budget takes USD, a number more than 0"),
    ("--budget -1", "--budget takes USD, a number more than 0"),
    ("--budget lots", "not 'lots'"),
    ("--budget nan", "--budget takes USD"),
    ("--budget inf", "--budget takes USD"),
    ("--budget", "expected one argument"),
    ("--bugdet 1", "'--bugdet' is not an option of %%agent"),
    ("-x", "'-x' is not an option of %%agent"),
    ("-o 2x", "-o takes a variable name, not '2x'"),
    ("-a 'unclosed", "the options line cannot be read"),
])
def test_a_line_that_cannot_be_read_says_what_is_wrong(line: str, says: str) -> None:
    with pytest.raises(AgentCellUsageError) as raised:
        parse_line(line)
    assert says in str(raised.value)
    assert isinstance(raised.value, UsageError)  # IPython shows its message, no traceback


def _namespace() -> dict[str, Any]:
    return {"analyst": Agent("analyst", model=ScriptedProvider()), "tools": ToolCatalog.default(),
            "text": "not an agent", "number": 3, "judge": lambda name, args: name == "x"}


@pytest.mark.parametrize(("line", "says"), [
    ("-a nobody", "-a nobody: there is no variable 'nobody' in the notebook"),
    ("-a text", "-a text: 'text' is of type str, not an Agent"),
    ("-a tools", "-a tools: 'tools' is of type ToolCatalog, not an Agent"),
    ("-c analyst", "-c analyst: 'analyst' is of type Agent, not a ToolCatalog"),
    ("-a analyst.x", "-a takes the name of a variable holding an Agent, not 'analyst.x'"),
    ("-s nothing", "-s nothing: there is no variable 'nothing' in the notebook"),
    ("-s number", "-s number: 'number' is of type int, not an AgentSession"),
    ("--approve maybe", "--approve maybe: there is no variable 'maybe'"),
    ("--approve number", "'number' is of type int, not a function (tool_name, args) -> bool"),
])
def test_names_that_are_not_what_they_should_be_are_refused(line: str, says: str) -> None:
    with pytest.raises(AgentCellUsageError) as raised:
        resolve(parse_line(line), _namespace())
    assert says in str(raised.value)


def test_names_are_looked_up() -> None:
    namespace = _namespace()
    setup = resolve(parse_line("-a analyst -c tools --approve judge"), namespace)
    assert setup.agent is namespace["analyst"]
    assert setup.catalog is namespace["tools"]
    assert setup.policy is namespace["judge"]
    assert resolve(parse_line("-s s_0123abcd"), namespace).session_id == "s_0123abcd"


def test_a_session_given_takes_no_agent_or_catalog() -> None:
    namespace = {**_namespace(), "chat": AgentSession(Agent("a", model=ScriptedProvider()))}
    assert resolve(parse_line("-s chat"), namespace).session is namespace["chat"]
    with pytest.raises(AgentCellUsageError, match="leave out -a and -c"):
        resolve(parse_line("-s chat -a analyst"), namespace)


class _Shell:
    def __init__(self, namespace: dict[str, Any]) -> None:
        self.user_ns = namespace


@pytest.mark.parametrize(("line", "body", "says"), [
    ("-a text", "Hello?", "is of type str, not an Agent"),
    ("--budget 0", "Hello?", "--budget takes USD"),
    ("", "  \n", "the prompt is empty"),
    ("-o x extra words", "Hello?", "'extra' is not an option of %%agent"),
])
def test_a_refused_cell_runs_nothing_and_opens_no_store(line: str, body: str,
                                                        says: str) -> None:
    opened: list[str] = []

    def store() -> SessionStore:
        opened.append("store")
        raise AssertionError("no store is opened for a cell that cannot run")

    cells = AgentCells(_Shell(_namespace()), store=store)
    with pytest.raises(AgentCellUsageError) as raised:
        asyncio.run(cells.run(line, body))
    assert says in str(raised.value)
    assert opened == []


@pytest.mark.parametrize(("cell", "rewritten"), [
    ("%%agent -o x\nWhat is in @df?\n",
     "await get_ipython().neta_nb_agent_cells.run('-o x', 'What is in @df?\\n')\n"),
    ("\n%%agent\nHi\n", "await get_ipython().neta_nb_agent_cells.run('', 'Hi\\n')\n"),
    ("%agent -o x What's up?\n",
     "await get_ipython().neta_nb_agent_cells.run(\"-o x What's up?\", None)\n"),
])
def test_an_agent_cell_is_rewritten_to_await_its_turn(cell: str, rewritten: str) -> None:
    assert rewrite_agent_cell(cell.splitlines(keepends=True)) == [rewritten]


@pytest.mark.parametrize("cell", ["x = 1\n", "%%agents\nHi\n", "%agent hi\nx = 1\n",
                                  "print(1)\n%agent hi\n", "%%time\n%agent hi\n"])
def test_other_cells_are_left_alone(cell: str) -> None:
    lines = cell.splitlines(keepends=True)
    assert rewrite_agent_cell(lines) is lines
