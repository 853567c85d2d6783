"""Running the model's tool calls: failures of any kind (even a CancelledError that is not
the user's Stop) become error results the model can read, and every call keeps its
result even when ids repeat across responses."""

from __future__ import annotations

import asyncio

from neta_nb import tool
from neta_nb.providers.base import ProviderError, ToolCallReady

from .support.sessions import answer, assert_valid_history, calls, make_session


async def test_cancelled_error_raised_by_a_tool_is_an_error_result() -> None:
    """A tool awaiting something that was cancelled (not the turn) raises CancelledError;
    that is the tool failing, not the user stopping the turn."""

    @tool(core=True)
    async def awaits_cancelled() -> str:
        """Awaits a future someone else cancelled."""
        future: asyncio.Future[str] = asyncio.get_running_loop().create_future()
        future.cancel()
        return await future

    session, rec, _ = make_session([calls(("c", "awaits_cancelled", {})), answer("ok")],
                                   extra=[awaits_cancelled])
    await session.run("go")  # must not raise CancelledError
    result = session.messages[2].tool_results[0]
    assert result.tool_call_id == "c" and result.is_error
    assert rec.of("done")[-1].stop_reason == "end_turn"
    assert session.messages[-1].text == "ok"


async def test_reused_tool_call_ids_are_still_closed_after_a_failed_response() -> None:
    """OpenAI-compatible servers that send no call ids get `call_0` in every response.
    A call of a failed response must get its result even if an earlier, answered call
    had the same id."""
    session, _, provider = make_session([
        calls(("call_0", "plus", {"a": 1, "b": 1})), answer("2"),
        [ToolCallReady("call_0", "plus", {"a": 2, "b": 2}), ProviderError("cut")],
        answer("next")])
    await session.run("first")
    await session.run("second")
    await session.run("third")
    assert_valid_history(provider.requests[-1].messages)
