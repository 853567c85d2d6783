"""A ``BaseException`` that is not an interrupt — ``GeneratorExit``, ``SystemExit``, an
exception class of the code's own — raised by a tool, by the ``python`` tool's code or by
the model's stream: the turn ends as for any error (the call gets an error result the
model can read, no card left running), ``run()`` returns instead of raising into the
user's cell, and the next turn sends a valid history."""

from __future__ import annotations

import pytest

from neta_nb import AgentToolConfig, tool
from tests.support.sessions import answer, assert_valid_history, calls, make_session


class Boom(BaseException):
    """An exception class of the tool's own that is no ``Exception``."""


RAISED: dict[str, BaseException] = {}


@tool(core=True)
async def fragile(kind: str) -> str:
    """Raises what the test put under ``kind`` on the event loop (a synchronous tool runs
    on a worker thread, which reports any exception as an error already)."""
    raise RAISED[kind]


@pytest.mark.parametrize(("kind", "raised", "shown"), [
    ("generator_exit", GeneratorExit("closed"), "GeneratorExit: closed"),
    ("system_exit", SystemExit(3), "SystemExit: 3"),
    ("own", Boom("bang"), "Boom: bang"),
])
async def test_a_tool_raising_a_base_exception_gets_an_error_result(
        kind: str, raised: BaseException, shown: str) -> None:
    RAISED[kind] = raised
    session, recorder, provider = make_session([
        calls(("c1", "fragile", {"kind": kind})), answer("I see it failed."),
        answer("Next turn.")], extra=[fragile])
    await session.run("go")  # returns: nothing reaches the user's cell
    (result,) = recorder.of("tool_result")
    assert result.is_error
    assert result.result == f"Tool 'fragile' failed: {shown}"
    assert "interrupted" not in result.result
    assert session.messages[1].metadata.tool_executions[0].status == "error"
    assert recorder.types[-1] == "done"
    # The model was told the failure, and the session takes the next turn.
    assert provider.requests[1].messages[-1].tool_results[0].content == result.result
    await session.run("again")
    assert session.messages[-1].text == "Next turn."
    assert_valid_history(session.messages)


async def test_python_code_raising_a_base_exception_gives_the_model_its_traceback() -> None:
    code = "class Boom(BaseException):\n    pass\nprint('before')\nraise Boom('bang')"
    session, recorder, _provider = make_session(
        [calls(("c1", "python", {"code": code})), answer("Fixed."), answer("Next turn.")],
        approval_policy="allow", agent_options={"tools": AgentToolConfig(enabled=["python"])})
    await session.run("go")
    (result,) = recorder.of("tool_result")
    assert result.is_error is False  # the code's error is a normal result for the model
    assert result.result.startswith("Output:\nbefore\n\nError:\nTraceback")
    assert result.result.endswith("Boom: bang")
    await session.run("again")
    assert session.messages[-1].text == "Next turn."
    assert_valid_history(session.messages)


async def test_a_stream_raising_a_base_exception_ends_the_turn_with_an_error() -> None:
    session, recorder, _provider = make_session([[Boom("the stream broke")],
                                                 answer("Next turn.")])
    await session.run("go")
    (error,) = recorder.of("error")
    assert "Boom: the stream broke" in error.message
    assert recorder.types[-1] == "done"
    await session.run("again")
    assert session.messages[-1].text == "Next turn."
    assert_valid_history(session.messages)


# --- SystemExit from the model's stream ----------------------------------------------------

async def test_a_stream_raising_system_exit_ends_the_turn_with_an_error() -> None:
    session, recorder, _provider = make_session([[SystemExit(3)], answer("Next turn.")])
    escaped: BaseException | None = None
    try:
        await session.run("go")
    except SystemExit as exc:
        escaped = exc
    assert escaped is None
    (error,) = recorder.of("error")
    assert "SystemExit: 3" in error.message
    await session.run("again")
    assert session.messages[-1].text == "Next turn."
