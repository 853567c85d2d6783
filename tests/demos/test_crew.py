"""The offline crew demo: a planner delegating to two scripted sub-agents at once, each
reporting from its own tool results, the planner from theirs."""

from __future__ import annotations

import shutil
from pathlib import Path

from neta_nb import AgentSession, SessionStore
from neta_nb.demos.crew import CREW_PROMPT, demo_crew

from ..support.sessions import Recorder, assert_valid_history

DATA = Path(__file__).resolve().parents[2] / "notebooks" / "data"


async def test_the_planner_delegates_both_tasks_and_reports_what_came_back(
        tmp_path: Path) -> None:
    work = tmp_path / "work"
    work.mkdir()
    shutil.copy(DATA / "sales.csv", work / "sales.csv")
    (work / "notes.txt").write_text("not a table")
    store = SessionStore(tmp_path / "s.sqlite3")
    session = AgentSession(demo_crew(), store=store, working_dir=work)
    recorder = Recorder()
    session.subscribe(recorder)
    await session.run(CREW_PROMPT)

    starts = recorder.of("subagent_start")
    assert [e.agent for e in starts] == ["researcher", "analyst"]
    # Both were started from one response, before either had ended.
    first_end = recorder.types.index("subagent_end")
    assert max(recorder.events.index(e) for e in starts) < first_end
    ends = {e.agent: e for e in recorder.of("subagent_end")}
    assert ends["researcher"].status == ends["analyst"].status == "done"
    assert ends["researcher"].result.startswith("The folder holds 2 entries. Tables among "
                                                "them: sales.csv")
    assert ends["analyst"].result.startswith("Profile done. In short: Profile of")
    answer = session.messages[-1].text
    assert ends["researcher"].result[:40] in answer and "**analyst**" in answer
    assert "2 sub-agents ran in parallel, 0 did not finish." in answer

    children = {child.agent.name: child for child in session.subagents.values()}
    assert children["researcher"].preview().tool_names == ["list_files", "read_file"]
    assert children["analyst"].preview().tool_names == ["profile_table"]
    assert "delegate" in session.preview().tool_names
    for each in (session, *children.values()):
        assert_valid_history(each.messages)
    # The skill card of the analyst is inside its own session's history.
    analyst_cards = [card.name for m in children["analyst"].messages
                     for card in m.metadata.skill_executions]
    assert analyst_cards == ["profile_table"]
    # Tokens: the planner's turn total holds the children's.
    total = recorder.of("token_update")[-1].current
    own = session.usage
    assert total.input_tokens == own.input_tokens + sum(
        u.input_tokens for u in session.subagent_usage.values())
