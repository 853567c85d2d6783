"""Sub-agents that lead back to an agent (``a.subagents.append(a)``, or a cycle through
others made after construction) are refused with a ``ValueError`` that names the chain —
when a session is created, with or without a store, and before a turn — and every walk
over the tree (the stored record, ``Agent.from_record``) stops at a cycle instead of
recursing forever. A helper shared by two parents is no cycle, and the nesting limit keeps
working on a stored tree."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from neta_nb import Agent, AgentSession, SessionStore, ToolCatalog

from ..support.delegation import crew_catalog, delegations
from ..support.sessions import FakeProvider, answer


@pytest.fixture(params=["memory", "store"])
def store(request: pytest.FixtureRequest, tmp_path: Path) -> SessionStore | None:
    return SessionStore(tmp_path / "s.db") if request.param == "store" else None


def _agent(name: str, responses: list[list[Any]] | None = None, **options: Any) -> Agent:
    return Agent(name, model=FakeProvider(responses or []), **options)


def test_an_agent_that_is_its_own_subagent_is_refused_when_a_session_is_created(
        store: SessionStore | None) -> None:
    planner = _agent("planner")
    planner.subagents.append(planner)
    with pytest.raises(ValueError, match="sub-agents form a cycle: planner → planner"):
        AgentSession(planner, ToolCatalog.default(), store)


def test_a_cycle_through_other_agents_is_refused_naming_the_chain(
        store: SessionStore | None) -> None:
    planner, coder = _agent("planner"), _agent("coder")
    planner.subagents = [coder]
    coder.subagents = [planner]
    with pytest.raises(ValueError, match="planner → coder → planner"):
        AgentSession(planner, ToolCatalog.default(), store)


def test_a_cycle_below_the_top_agent_is_named_from_where_it_starts(
        store: SessionStore | None) -> None:
    planner, coder, reviewer = _agent("planner"), _agent("coder"), _agent("reviewer")
    top = _agent("top", subagents=[planner])
    planner.subagents = [coder]
    coder.subagents = [reviewer]
    reviewer.subagents.append(coder)
    with pytest.raises(ValueError, match="coder → reviewer → coder"):
        AgentSession(top, ToolCatalog.default(), store)
    # A new definition around the looping tree is refused as it is built.
    with pytest.raises(ValueError, match="coder → reviewer → coder"):
        Agent("outer", subagents=[top])


def test_a_cycle_made_after_the_session_was_created_is_refused_before_the_turn(
        store: SessionStore | None) -> None:
    planner = _agent("planner", [answer("fine")])
    session = AgentSession(planner, ToolCatalog.default(), store)
    planner.subagents.append(planner)
    with pytest.raises(ValueError, match="planner → planner"):
        session.start("go")
    assert session.messages == [] and not session.running
    planner.subagents.clear()
    assert session.flush(30)


async def test_run_refuses_a_cycle_and_the_session_stays_usable(
        store: SessionStore | None) -> None:
    planner, coder = _agent("planner", [answer("done")]), _agent("coder")
    planner.subagents = [coder]
    session = AgentSession(planner, ToolCatalog.default(), store)
    coder.subagents = [planner]
    with pytest.raises(ValueError, match="planner → coder → planner"):
        await session.run("go")
    coder.subagents = []
    reply = await session.run("go")
    assert reply is not None and reply.text == "done"
    assert session.flush(30)


def test_every_walk_over_the_tree_stops_at_a_cycle() -> None:
    from neta_nb.runtime.agent import subagent_cycle

    planner, coder = _agent("planner"), _agent("coder")
    planner.subagents = [coder]
    coder.subagents = [planner]
    assert subagent_cycle(planner) == [planner, coder, planner]
    assert subagent_cycle(coder) == [coder, planner, coder]
    provider = FakeProvider([])
    for build in (planner.definition_record, lambda: planner.to_record(provider),
                  coder.definition_record):
        with pytest.raises(ValueError, match="sub-agents form a cycle"):
            build()
    # A definition that loops in memory (stored JSON never does) is refused too.
    looping: dict[str, Any] = {"name": "planner", "model": "scripted",
                               "subagents": [{"name": "coder", "model": "scripted"}]}
    looping["subagents"][0]["subagents"] = [looping]
    with pytest.raises(ValueError, match="planner → coder → planner"):
        Agent.from_record(looping, ToolCatalog.default())


def test_a_helper_shared_by_two_parents_is_no_cycle(tmp_path: Path) -> None:
    from neta_nb.runtime.agent import subagent_cycle

    helper = _agent("helper")
    coder, reviewer = _agent("coder", subagents=[helper]), _agent("reviewer",
                                                                  subagents=[helper])
    planner = _agent("planner", subagents=[coder, reviewer])
    assert subagent_cycle(planner) is None
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(planner, ToolCatalog.default(), store)
    assert session.flush(30)
    record = store.get_session(session.id)
    assert record is not None
    rebuilt = Agent.from_record(record.agent, ToolCatalog.default())
    assert [[g.name for g in c.subagents] for c in rebuilt.subagents] == [["helper"],
                                                                          ["helper"]]


async def test_the_nesting_limit_still_holds_for_a_stored_tree(tmp_path: Path) -> None:
    leaf_model = FakeProvider([answer("leaf")])
    middle_model = FakeProvider([delegations(("g1", "leaf", "go deeper")), answer("middle")])
    top_model = FakeProvider([delegations(("c1", "middle", "start")), answer("top")])
    leaf = Agent("leaf", model=leaf_model, subagents=[_agent("deeper")])
    middle = Agent("middle", model=middle_model, subagents=[leaf])
    store = SessionStore(tmp_path / "s.db")
    session = AgentSession(Agent("top", model=top_model, subagents=[middle]), crew_catalog(),
                           store)
    await session.run("go")
    assert session.flush(30)
    assert "delegate" in [t.name for t in top_model.requests[0].tools]
    assert "delegate" in [t.name for t in middle_model.requests[0].tools]  # level 1
    assert "delegate" not in [t.name for t in leaf_model.requests[0].tools]  # the limit
    record = store.get_session(session.id)
    assert record is not None
    stored = Agent.from_record(record.agent, ToolCatalog.default())
    assert stored.subagents[0].subagents[0].subagents[0].name == "deeper"
    assert stored.max_subagent_depth == 2
