"""Running the model's tool calls: failures of any kind (even a CancelledError that is not
the user's Stop) become error results the model can read, and every call keeps its
result even when ids repeat across responses."""

from __future__ import annotations

import asyncio
import threading

from neta_nb import ToolContext, tool
from neta_nb.providers.base import ProviderError, ToolCallReady

from ..support.sessions import answer, assert_valid_history, calls, make_session


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


# --- a tool's own timeout, and ids reused across responses ------------------------------

@tool(core=True)
def flaky_net() -> str:
    """Fetch something that times out on its own (a socket timeout)."""
    raise TimeoutError("connect timed out after 1 s")


async def test_a_tools_own_timeout_error_is_not_reported_as_the_runners_timeout() -> None:
    session, rec, _ = make_session([calls(("c1", "flaky_net", {})), answer("ok")],
                                   extra=[flaky_net])
    await session.run("go")
    result = rec.of("tool_result")[0].result
    assert "did not finish within" not in result, result
    assert "connect timed out" in result


release = threading.Event()
reported = threading.Event()


@tool(visibility="skill", category="skill", core=True, timeout=0.2)
def stuck_skill(ctx: ToolContext) -> str:
    """Blocks until released, then reports progress."""
    release.wait(10)
    ctx.progress(42, step="late progress of the abandoned call")
    reported.set()
    return "late"


@tool(visibility="skill", category="skill", core=True)
async def waiting_skill() -> str:
    """Lets the stuck thread report while this call (with the same id) runs."""
    release.set()
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, reported.wait, 10)
    # The late report was handed to the loop (call_soon_threadsafe) before `reported` was
    # set, so it is ahead of this callback in the loop's queue: once this one has run, the
    # report has been delivered, while this call (with the same id) is still running.
    behind_the_report: asyncio.Future[None] = loop.create_future()
    loop.call_soon(behind_the_report.set_result, None)
    await behind_the_report
    return "done"


async def test_late_progress_of_an_abandoned_call_never_reaches_a_new_call_with_its_id(
) -> None:
    # Some servers number calls per response, so "call_0" comes back in the next one.
    release.clear()
    reported.clear()
    session, rec, _ = make_session([calls(("call_0", "stuck_skill", {})),
                                    calls(("call_0", "waiting_skill", {})), answer("ok")],
                                   extra=[stuck_skill, waiting_skill])
    await session.run("go")
    assert reported.is_set()
    steps = [e.step for e in rec.of("progress")]
    assert "late progress of the abandoned call" not in steps, steps
