"""The built-in demo in a real session: it profiles the table it found, its answer states
what the tools returned in this session (never a canned claim), and a question of the
user's own gets told plainly that this is the offline demo model and how to connect a real
one."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from neta_nb import Agent, AgentSession, ScriptedProvider
from neta_nb.providers.scripted.demo_script import DEMO_PROMPT, REAL_MODEL_HINT
from neta_nb.tools.builtin.profile import profile_columns

ORDERS = "order,city,amount\n1,Lyon,12.5\n2,,7\n3,Oslo,\n"
NOTEBOOK_DATA = Path(__file__).resolve().parents[3] / "notebooks" / "data"
OFFLINE_NOTICE = "This is the offline demo model."


async def play(working_dir: Path, prompt: str) -> AgentSession:
    session = AgentSession(Agent("analyst", model=ScriptedProvider()), working_dir=working_dir)
    await session.run(prompt)
    return session


def calls(session: AgentSession) -> list[tuple[str, dict[str, object]]]:
    return [(call.name, call.args) for message in session.messages
            for call in message.tool_calls if call.name != "todo"]


async def test_the_answer_states_what_the_tools_returned_here(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text(ORDERS)
    (tmp_path / "notes.txt").write_text("not a table")

    session = await play(tmp_path, DEMO_PROMPT)

    # It profiles the table the listing showed, not a bundled one.
    assert calls(session) == [("list_files", {"path": "."}),
                              ("profile_table", {"path": "orders.csv"})]
    answer = session.messages[-1].text
    columns = profile_columns(ORDERS)
    assert f"3 rows × {len(columns)} columns" in answer
    assert "Columns with missing values: city, amount." in answer
    assert "notes.txt" in answer and "orders.csv" in answer
    # Nothing it did not see: no sample table, no library the demo does not have.
    assert "sample_sales" not in answer and "pandas" not in answer
    assert "2 tool calls, 0 failed" in answer
    # The demo prompt is the demo: no notice that the question went unread.
    assert OFFLINE_NOTICE not in answer
    assert REAL_MODEL_HINT in answer


async def test_the_answer_says_what_stands_out_as_the_profile_shows_it(tmp_path: Path) -> None:
    # The quickstart's question is "what stands out": the answer reads the profile's table.
    (tmp_path / "orders.csv").write_text(
        "order,city,amount,rating\n1,Lyon,10,\n2,,12,4\n3,Oslo,9,\n4,Rome,95,\n")

    answer = (await play(tmp_path, DEMO_PROMPT)).messages[-1].text

    stands_out = answer.index("What stands out in the profile:")
    assert stands_out < answer.index("What the tools returned")
    assert ("- **Missing values:** `rating` is empty in 3 of 4 rows (75 %), the most of any "
            "column; `city` in 1. The other 2 columns are complete.") in answer
    assert "- **Widest spread:** `amount` runs from 9 to 95, mean 31.5." in answer


async def test_the_quickstarts_table_stands_out_by_its_missing_ratings() -> None:
    answer = (await play(NOTEBOOK_DATA, DEMO_PROMPT)).messages[-1].text

    assert "`customer_rating` is empty in 13 of 40 rows (33 %), the most of any column" in answer


async def test_a_table_without_gaps_is_said_to_have_none(tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text("order,amount\n1,10\n2,11\n")

    answer = (await play(tmp_path, DEMO_PROMPT)).messages[-1].text

    assert "- **No missing values** in any of the 2 columns." in answer
    assert "Widest spread" not in answer  # nothing far above its mean


async def test_without_a_table_it_profiles_the_sample_and_says_so(tmp_path: Path) -> None:
    (tmp_path / "notes.txt").write_text("not a table")

    session = await play(tmp_path, DEMO_PROMPT)

    assert calls(session)[1] == ("profile_table", {})
    answer = session.messages[-1].text
    assert "Profile of sample_sales.csv (sample data); 40 rows × 8 columns" in answer
    assert "(no arguments)" in answer


async def test_a_question_of_ones_own_is_told_this_is_the_offline_model(
        tmp_path: Path) -> None:
    (tmp_path / "orders.csv").write_text(ORDERS)
    question = "Which city spends the most?"

    session = await play(tmp_path, question)

    answer = session.messages[-1].text
    notice = answer.index(OFFLINE_NOTICE)
    assert notice < answer.index("What the tools returned")  # said first
    assert "(“Which city spends the most?”)" in answer
    assert REAL_MODEL_HINT in answer and "ANTHROPIC_API_KEY" in answer
    assert 'model="anthropic:claude-sonnet-4-6"' in answer
    first_thinking = next(m.thinking for m in session.messages if m.thinking)
    assert first_thinking.startswith("I am the offline demo model")
    # It still shows the demo, with this session's results.
    assert "3 rows × 3 columns" in answer


async def test_a_failing_tool_is_reported_as_failed(tmp_path: Path) -> None:
    session = await play(tmp_path / "missing", DEMO_PROMPT)

    answer = session.messages[-1].text
    assert "failed: `Tool 'list_files' failed: FileNotFoundError" in answer
    assert "2 tool calls, 1 failed" in answer
    assert "| `list_files` | `path=\".\"` | ✗ failed |" in answer


@pytest.mark.parametrize("prompt", [DEMO_PROMPT, "  Profile the sample sales data\n and "
                                                 "tell me what stands out.  "])
async def test_the_demo_prompt_is_recognised_however_it_is_spaced(
        tmp_path: Path, prompt: str) -> None:
    session = await play(tmp_path, prompt)
    assert OFFLINE_NOTICE not in session.messages[-1].text


def test_the_quickstart_asks_the_demo_prompt() -> None:
    # Its first answer is the demo's, without the notice for a question of one's own.
    quickstart = Path(__file__).resolve().parents[3] / "notebooks" / "01_quickstart.ipynb"
    sources = ["".join(cell["source"]) for cell in json.loads(quickstart.read_text())["cells"]]
    asked = f"await session.run({DEMO_PROMPT!r})".replace("'", '"')
    assert any(source.endswith(asked) for source in sources), asked
