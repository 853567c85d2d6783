"""The options of an ``%%agent`` cell: its first line read (:func:`parse_line`) and the
names in it looked up in the notebook's variables (:func:`resolve`).

Everything is checked before anything runs: a flag not understood, a name that is no
variable, a variable of the wrong kind, a budget that is no positive number — each is a
:class:`AgentCellUsageError` naming what is wrong, and no session is made, no turn run."""

from __future__ import annotations

import argparse
import math
import shlex
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, NoReturn

from IPython.core.error import UsageError

from ...runtime.session import Agent, AgentSession
from ...tools import ToolCatalog

__all__ = ["USAGE", "AgentCellUsageError", "CellOptions", "CellSetup", "parse_line", "resolve"]

USAGE = ("usage: %%agent [-a AGENT] [-c CATALOG] [-s SESSION] [-o NAME] "
         "[--approve reject|allow|POLICY] [--budget USD] [--raise]  (the prompt is the "
         "cell's body; %agent PROMPT for one line; see docs/agent-cells.md)")


class AgentCellUsageError(UsageError, ValueError):
    """An ``%%agent`` cell that cannot run as written (nothing was run). IPython shows a
    usage error as its message alone, without a traceback."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of printing and leaving the process."""

    def error(self, message: str) -> NoReturn:
        raise AgentCellUsageError(f"{message}\n{USAGE}")

    def exit(self, status: int = 0, message: str | None = None) -> NoReturn:
        raise AgentCellUsageError(message or USAGE)


def _parser() -> _Parser:
    parser = _Parser(prog="%%agent", add_help=False, allow_abbrev=False)
    parser.add_argument("-a", "--agent", dest="agent")
    parser.add_argument("-c", "--catalog", dest="catalog")
    parser.add_argument("-s", "--session", dest="session")
    parser.add_argument("-o", "--output", dest="output")
    parser.add_argument("--approve", dest="approve", default="reject")
    parser.add_argument("--budget", dest="budget")
    parser.add_argument("--raise", dest="raise_errors", action="store_true")
    return parser


@dataclass(frozen=True)
class CellOptions:
    """The first line of an ``%%agent`` cell, as written (names, not yet looked up)."""

    agent: str | None = None
    catalog: str | None = None
    session: str | None = None
    output: str | None = None
    approve: str = "reject"
    budget: float | None = None
    raise_errors: bool = False
    prompt: str = ""
    """What follows the options on the line (``%agent PROMPT``)."""


def parse_line(line: str) -> CellOptions:
    """The options of ``line`` (the text after ``%%agent``, or after ``%agent`` with the
    prompt at its end)."""
    try:
        words = shlex.split(line)
    except ValueError as exc:
        raise AgentCellUsageError(f"the options line cannot be read ({exc})\n{USAGE}") from None
    known, rest = _parser().parse_known_args(words)
    unknown = [word for word in rest if word.startswith("-") and len(word) > 1]
    if unknown:
        raise AgentCellUsageError(f"{unknown[0]!r} is not an option of %%agent\n{USAGE}")
    if known.output is not None and not known.output.isidentifier():
        raise AgentCellUsageError(f"-o takes a variable name, not {known.output!r}")
    return CellOptions(agent=known.agent, catalog=known.catalog, session=known.session,
                       output=known.output, approve=known.approve,
                       budget=_budget(known.budget), raise_errors=known.raise_errors,
                       prompt=" ".join(rest))


def _budget(text: str | None) -> float | None:
    if text is None:
        return None
    try:
        value = float(text.removeprefix("$"))
    except ValueError:
        value = math.nan
    if not math.isfinite(value) or value <= 0:
        raise AgentCellUsageError(f"--budget takes USD, a number more than 0 (e.g. "
                                  f"--budget 0.50), not {text!r}")
    return value


Policy = Callable[[str, dict[str, Any]], "bool | Awaitable[bool]"]


@dataclass(frozen=True)
class CellSetup:
    """What an ``%%agent`` cell runs with, its names looked up."""

    options: CellOptions
    agent: Agent | None
    """The agent (``None``: the default one, or the given session's)."""
    catalog: ToolCatalog | None
    session: AgentSession | None
    """A session given by variable (``-s`` naming an :class:`AgentSession`)."""
    session_id: str | None
    """A stored session given by its id (``-s`` naming no variable)."""
    policy: Policy | str


def _variable(namespace: Mapping[str, Any], flag: str, name: str, kind: type,
              what: str) -> Any:
    if not name.isidentifier():
        raise AgentCellUsageError(f"{flag} takes the name of a variable holding {what}, "
                                  f"not {name!r}")
    if name not in namespace:
        raise AgentCellUsageError(f"{flag} {name}: there is no variable {name!r} in the "
                                  f"notebook (it takes the name of a variable holding {what})")
    value = namespace[name]
    if not isinstance(value, kind):
        raise AgentCellUsageError(f"{flag} {name}: {name!r} is of type "
                                  f"{type(value).__name__}, not {what}")
    return value


def resolve(options: CellOptions, namespace: Mapping[str, Any]) -> CellSetup:
    """Look the names of ``options`` up in ``namespace`` (the notebook's variables)."""
    agent = (_variable(namespace, "-a", options.agent, Agent, "an Agent")
             if options.agent else None)
    catalog = (_variable(namespace, "-c", options.catalog, ToolCatalog, "a ToolCatalog")
               if options.catalog else None)
    session: AgentSession | None = None
    session_id: str | None = None
    if options.session:
        if options.session.isidentifier() and options.session in namespace:
            session = _variable(namespace, "-s", options.session, AgentSession,
                                "an AgentSession")
        elif options.session.isidentifier() and not options.session.startswith("s_"):
            raise AgentCellUsageError(
                f"-s {options.session}: there is no variable {options.session!r} in the "
                f"notebook (-s takes a variable holding an AgentSession, or a stored "
                f"session's id)")
        else:
            session_id = options.session
        if session is not None and (agent is not None or catalog is not None):
            raise AgentCellUsageError("-s names a session, which has its agent and tools "
                                      "already: leave out -a and -c")
    policy: Policy | str
    if options.approve in ("reject", "allow"):
        policy = options.approve
    else:
        policy = _variable(namespace, "--approve", options.approve, object,
                           "a policy: reject, allow or a function (tool_name, args) -> bool")
        if not callable(policy):
            raise AgentCellUsageError(
                f"--approve {options.approve}: {options.approve!r} is of type "
                f"{type(policy).__name__}, not a function (tool_name, args) -> bool; "
                f"or write --approve reject / --approve allow")
    return CellSetup(options=options, agent=agent, catalog=catalog, session=session,
                     session_id=session_id, policy=policy)
