"""The session's state has one owner: AgentSession is a facade with no in-package base
classes, and nothing outside its package reaches into a session's (or a parent's)
private attributes — what a part needs of the state it gets through SessionState,
TurnDeps or a public name."""

from __future__ import annotations

import inspect
import re
from pathlib import Path

import neta_nb
from neta_nb.runtime.session import AgentSession, SessionState, TurnDeps, TurnRunner

PACKAGE = Path(neta_nb.__file__).parent
SESSION_PACKAGE = PACKAGE / "runtime" / "session"
REACH_IN = re.compile(r"\b(?:session|parent)\._[a-z]")


def test_the_session_has_no_in_package_base_and_a_bounded_face() -> None:
    assert AgentSession.__bases__ == (object,)
    own = [name for name, value in vars(AgentSession).items()
           if inspect.isfunction(value) or isinstance(value, (property, classmethod))]
    methods = sum(2 if isinstance(vars(AgentSession)[name], property)
                  and vars(AgentSession)[name].fset is not None else 1 for name in own)
    # 46: the last was notebook_restore (what a rewind with the notebook did, kept in the
    # record); the halves of that rewind are module functions, not methods.
    assert methods <= 46, sorted(own)


def test_the_state_and_the_turn_s_dependencies_are_objects_of_their_own(tmp_path: Path) -> None:
    session = AgentSession(neta_nb.Agent("a", model=None), working_dir=tmp_path)
    assert isinstance(session.state, SessionState)
    assert isinstance(session.deps, TurnDeps)
    assert not issubclass(AgentSession, TurnRunner)


def test_nothing_outside_the_session_package_reaches_into_a_session() -> None:
    found = []
    for path in PACKAGE.rglob("*.py"):
        if SESSION_PACKAGE in path.parents:
            continue
        for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            if REACH_IN.search(line):
                found.append(f"{path.relative_to(PACKAGE)}:{number}: {line.strip()}")
    assert found == []
