"""Running the tool calls of one model response: cards, approvals, timeouts, and results
the model can read whatever goes wrong.

Calls of one response run concurrently, except calls to the same tool, which keep their
order (a tool need not be re-entrant; two ``todo`` writes must apply in the order the
model wrote them). Results are stored in call order as soon as they and the ones before
them are in, so a kernel that dies mid-tools keeps every finished result.

A tool's visibility decides its events (DESIGN §4): ``tool`` → ``tool_call`` /
``tool_result``, ``skill`` → ``skill_start`` / ``progress`` / ``skill_end``, ``internal``
→ none. A ``tool`` call that reports progress turns into a skill at its first report: a
``skill_start`` with the call's id follows its ``tool_call``, and it ends with
``skill_end``. Sync handlers run in worker threads; a call that is stopped (Stop, timeout)
abandons its thread, which cannot be killed — its late progress is ignored.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from ....encodable import encodable
from ....events import (
    ProgressEvent,
    SkillEndEvent,
    SkillStartEvent,
    ToolCallEvent,
    ToolResultEvent,
)
from ....messages import (
    Message,
    RunStatus,
    SkillExecution,
    ToolCallPart,
    ToolExecution,
    TraceRef,
)
from ....tools import Tool, ToolArgumentError
from ....tools.base import ProgressCallback, ToolFailure, preview_call
from ....tools.resolution.resolver import ToolResolution
from ....tools.rich import RichResult
from ...tracing.tracing import NO_SPAN as _NO_SPAN
from ...tracing.tracing import UNTRACED, CallSpan, TurnTracer
from ..state import SessionState
from .tool_limits import ToolLimits, bound_result
from .toolbox import Toolbox

__all__ = ["INTERRUPTED_TEXT", "ToolLimits", "ToolRunner", "bound_result"]

log = logging.getLogger(__name__)


Outcome = Literal["done", "error", "rejected"]
"""How a call ended: ``rejected`` when approval was refused (the tool never ran)."""


@dataclass(frozen=True, slots=True)
class _Refused:
    """Why a call may not run; ``rejected``: approval was refused (not a failure)."""

    text: str
    rejected: bool = False


INTERRUPTED_TEXT = "This call did not finish: the kernel was interrupted."
_ENDED = frozenset({"done", "error", "rejected"})
"""Card states of a call that ran to its end (its result is on the card)."""

_NOT_RUN_TEXT = {
    "cancelled": "This call did not run: the user cancelled the turn.",
    "interrupted": "This call did not run: the kernel was interrupted.",
    "killed": "This call did not run: the kernel stopped.",
    "budget": "This call did not run: the budget was reached.",
}
"""What the model and the card are told of a call that never started, by why."""

_UNFINISHED_TEXT = {
    "cancelled": "This call did not finish: the user cancelled the turn.",
    "interrupted": INTERRUPTED_TEXT,
    "killed": "This call did not finish: the kernel stopped.",
    "budget": "This call was stopped before it finished (or did not run): the budget was "
              "reached.",
}


def _as_skill(record: ToolExecution) -> SkillExecution:
    return SkillExecution(id=record.id, name=record.name, label=record.label,
                          status=record.status, trace=record.trace)


class ToolRunner:
    """Runs tool calls for one session. Finished results go to the state's history, and
    the assistant message whose calls run (its card records) is saved whenever a card
    changes; ``toolbox`` gives the tools as they are now and each call's context."""

    def __init__(self, state: SessionState, toolbox: Toolbox) -> None:
        self._state = state
        # Bound once: every card and result of every call goes through these.
        self._emit = state.emit
        self._append = state.history.append
        self._persist = state.history.changed
        self._approvals = state.approvals
        self._make_context = toolbox.tool_context
        self._resolve = toolbox.resolution
        self._tracer = UNTRACED
        self._finished: dict[str, Message] = {}
        """Results of calls that finished after a Stop left the wait for an earlier one:
        :meth:`close_unanswered` gives them to the model instead of "did not finish"."""
        self._response: tuple[str, tuple[ToolCallPart, ...], str] = ("", (), "")
        """The response being run: its id, its calls to tools the agent has, and the id
        of the message that began its turn (what each call's context tells)."""

    async def run(self, message: Message, resolution: ToolResolution, *,
                  live_calls: dict[str, object], limits: ToolLimits,
                  tracer: TurnTracer = UNTRACED) -> None:
        """Run every call of ``message`` and append their results in call order.
        ``resolution`` is the one the response was requested with (it decides the cards);
        ``live_calls`` maps the ids of calls running now to their run (the turn's):
        only those may still emit events. ``tracer``: the turn's spans."""
        self._tracer = tracer
        self._finished = {}
        turn = self._state.turn
        self._response = (message.id, tuple(call for call in message.tool_calls
                                            if resolution.get(call.name) is not None),
                          turn.prompt_id if turn is not None else "")
        chains: dict[str, asyncio.Future[Any]] = {}
        tasks = []
        for call in message.tool_calls:
            tool = resolution.get(call.name)
            reentrant = tool is not None and tool.reentrant
            chain = (tool.sequence if tool is not None else None) or call.name
            previous = None if reentrant else chains.get(chain)
            task = asyncio.ensure_future(
                self._run_after(previous, message, call, resolution, live_calls, limits))
            if not reentrant:
                chains[chain] = task
            tasks.append(task)
        appended = 0
        try:
            for task in tasks:
                # Waiting (not awaiting the task itself) makes a Stop cancel this turn
                # even when the running tool swallows its own cancellation.
                await asyncio.wait([task])
                self._append(task.result())
                appended += 1
        finally:
            if appended < len(tasks):  # stopped: keep what ran to its end meanwhile
                for call, task in zip(message.tool_calls[appended:], tasks[appended:],
                                      strict=True):
                    if task.done() and not task.cancelled() and task.exception() is None:
                        self._finished[call.id] = task.result()
            for task in tasks:
                task.cancel()  # only the unfinished ones notice (cancel of a stopped turn)
            # Executions recorded during the calls belong to the assistant message.
            self._persist(message)

    async def run_call(self, message: Message, call: ToolCallPart,
                       resolution: ToolResolution, *, live_calls: dict[str, object],
                       limits: ToolLimits) -> Message:
        """Run one call of ``message`` that its turn did not ask this runner for (an
        outside agent's call of the notebook's MCP server, reviewed in its session): its
        card on ``message``, approval, the tool and its result, which is returned (the
        caller puts it in the history)."""
        try:
            return await self._run_after(None, message, call, resolution, live_calls,
                                         limits)
        finally:
            self._persist(message)

    async def _run_after(self, previous: asyncio.Future[Any] | None, message: Message,
                         call: ToolCallPart, resolution: ToolResolution,
                         live_calls: dict[str, object], limits: ToolLimits) -> Message:
        if previous is not None:
            await asyncio.wait([previous])
        if not self._tracer.on:  # the usual case: no span objects, no context managers
            return await self._run_one(message, call, resolution, live_calls, limits, _NO_SPAN)
        with self._tracer.tool(call.id, call.name, resolution.get(call.name),
                               call.args) as span:
            return await self._run_one(message, call, resolution, live_calls, limits, span)

    # Complex on purpose (C901): one call from card to result; its steps share the card records.
    async def _run_one(self, message: Message, call: ToolCallPart,  # noqa: C901
                       resolution: ToolResolution, live_calls: dict[str, object],
                       limits: ToolLimits, span: CallSpan) -> Message:
        tool = resolution.get(call.name)
        label = tool.label if tool is not None else call.name
        # A token, not the id: ids repeat across responses, and a thread abandoned by an
        # earlier call with this id must not report onto this call's card.
        run = live_calls[call.id] = object()
        card = self._open_card(message, call, tool, span.ref)
        tool_record = card if isinstance(card, ToolExecution) else None
        skill_record = card if isinstance(card, SkillExecution) else None
        if card is not None:
            self._persist(message)  # the card exists from now on, even if the kernel dies

        def set_status(status: RunStatus) -> None:
            """A card's state before the call ends: ``waiting`` for the user's approval,
            then ``running`` once allowed."""
            record = tool_record or skill_record
            if record is not None and record.status != status:
                record.status = status
                self._persist(message)

        def on_progress(percent: float, step: str | None, detail: str | None) -> None:
            nonlocal tool_record, skill_record
            if live_calls.get(call.id) is not run:
                return  # a worker thread still reporting after its call was closed
            if tool_record is None and skill_record is None:
                return  # an internal tool: no card, so no events (DESIGN §4)
            if step is not None:
                step = encodable(step)
            if detail is not None:
                detail = encodable(detail)
            if tool_record is not None:
                # A tool that reports progress (an MCP server's notifications, say) is a
                # long task: its card becomes a skill card in place, with a real bar.
                skill_record = _as_skill(tool_record)
                executions = message.metadata.tool_executions
                executions[:] = [r for r in executions if r is not tool_record]
                message.metadata.skill_executions.append(skill_record)
                tool_record = None
                self._emit(SkillStartEvent(id=call.id, name=call.name, label=label))
                self._persist(message)
            if skill_record is not None:
                skill_record.percent, skill_record.step, skill_record.detail = (
                    percent, step, detail)
            self._emit(ProgressEvent(id=call.id, percent=percent, step=step, detail=detail))

        try:
            outcome: Outcome
            rich: RichResult | None = None
            if tool is None:
                content, outcome = resolution.refusal(call.name), "error"
            else:
                content, outcome, rich = await self._execute(call, on_progress,
                                                             limits.timeout, set_status, span)
        except asyncio.CancelledError:
            raise
        except Exception as exc:  # a bug in the approval path or the context: never fatal
            log.exception("tool call %s (%s) failed outside its handler", call.id, call.name)
            content, outcome = f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", "error"
        except KeyboardInterrupt:
            # A kernel interrupt reached a tool running on the kernel's thread (the only
            # way out of stuck code there). Re-raised from this task it would end the
            # event loop, and with it the kernel; instead the call is closed and the turn
            # stops as if Stop had been pressed.
            content, outcome = INTERRUPTED_TEXT, "error"
            self._state.interrupt()
        except BaseException as exc:  # SystemExit, GeneratorExit...: an error, as above
            log.error("tool call %s (%s) failed outside its handler: %r", call.id, call.name,
                      exc)
            content, outcome = f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", "error"
        if live_calls.get(call.id) is run:
            del live_calls[call.id]
        else:  # closed meanwhile (a Stop the tool did not heed): its card and the history
            # already say how it ended, and events after the turn's end would contradict them.
            return Message.tool_result(call.id, call.name, encodable(content), is_error=True)
        content = bound_result(encodable(content), limits.max_result_chars)
        # For the model a rejected call is an error result; the card says what happened.
        is_error = outcome != "done"
        if self._tracer.on:
            span.end(error=None if outcome == "done" else outcome, **{
                "neta_nb.tool.result_chars": len(content),
                "gen_ai.tool.call.result": content if self._tracer.content else None})

        outputs = rich.items if rich is not None else []
        if tool_record is not None:
            tool_record.status, tool_record.result = outcome, content
            tool_record.outputs = outputs
            self._emit(ToolResultEvent(id=call.id, name=call.name, result=content,
                                       is_error=is_error,
                                       outputs=[item.model_dump() for item in outputs]))
        elif skill_record is not None:
            skill_record.status = outcome
            skill_record.result = content
            if not is_error:
                skill_record.percent = 100.0
            self._emit(SkillEndEvent(id=call.id, name=call.name,
                                     status="error" if is_error else "done", result=content))
        if call.name == "todo" and tool is not None and not is_error:
            self._state.todo_written()
        if tool_record is not None or skill_record is not None:
            self._persist(message)
        images = rich.images() if rich is not None else []
        return Message.tool_result(call.id, call.name, content, is_error=is_error,
                                   images=images)

    def _open_card(self, message: Message, call: ToolCallPart, tool: Tool | None,
                   trace: TraceRef | None) -> ToolExecution | SkillExecution | None:
        """The call's card as its tool shows (a skill's, a tool's, none for an internal
        one; an unknown tool's is a tool card), recorded on ``message`` and announced."""
        visibility = tool.visibility if tool is not None else "tool"
        label = tool.label if tool is not None else call.name
        if visibility == "skill":
            skill = SkillExecution(id=call.id, name=call.name, label=label, trace=trace)
            message.metadata.skill_executions.append(skill)
            self._emit(SkillStartEvent(id=call.id, name=call.name, label=label))
            return skill
        if visibility == "tool":
            record = ToolExecution(id=call.id, name=call.name, label=label, args=call.args,
                                   trace=trace)
            message.metadata.tool_executions.append(record)
            self._emit(ToolCallEvent(id=call.id, name=call.name, label=label, args=call.args))
            return record
        return None

    def close_unanswered(self, messages: Sequence[Message], why: str,
                         live_calls: dict[str, object],
                         resolution: ToolResolution | None = None) -> None:
        """Give every call of the last assistant message that has no result one (APIs
        require a result for each call) and close its card: what a call that finished
        returned (its card says done: so does the history), else an error result — a call
        that was running when the turn stopped, or one that never started (it gets its
        card now, as ``resolution``, the tools the answer was asked with, shows it)."""
        position = next((n for n in range(len(messages) - 1, -1, -1)
                         if messages[n].role == "assistant"), None)
        if position is None:
            return
        last_assistant = messages[position]
        # Only results after that message count: ids can repeat across responses (some
        # OpenAI-compatible servers number calls per response).
        answered = {p.tool_call_id for m in messages[position + 1:]
                    for p in m.tool_results}
        # Stopped by the user or an interrupt: the card says cancelled, not failed.
        closed: RunStatus = ("cancelled" if why in ("cancelled", "interrupted", "budget")
                             else "error")
        metadata = last_assistant.metadata
        for call in last_assistant.tool_calls:
            if call.id in answered:
                continue
            running = live_calls.pop(call.id, None) is not None
            finished = self._finished.pop(call.id, None)
            if finished is not None:  # ran to the end while an earlier call was awaited
                self._append(finished)
                continue
            card: ToolExecution | SkillExecution | None = next(
                (r for r in metadata.tool_executions if r.id == call.id), None) or next(
                (r for r in metadata.skill_executions if r.id == call.id), None)
            if card is not None and card.status in _ENDED and card.result is not None:
                # Ended (stored so before a kernel died, or after the Stop was heard).
                self._append(Message.tool_result(call.id, call.name, card.result,
                                                 is_error=card.status != "done"))
                continue
            started = running or card is not None  # (an internal tool has no card)
            text = (_UNFINISHED_TEXT.get(why, "This call did not finish: the turn stopped.")
                    if started else
                    _NOT_RUN_TEXT.get(why, "This call did not run: the turn stopped."))
            if card is None and not started:
                tool = (resolution or self._resolve()).get(call.name)
                card = self._open_card(last_assistant, call, tool, None)
            if isinstance(card, ToolExecution) and card.status in ("running", "waiting"):
                card.status, card.result = closed, text
                self._emit(ToolResultEvent(id=call.id, name=call.name, result=text,
                                           is_error=True))
            elif isinstance(card, SkillExecution) and card.status in ("running", "waiting"):
                card.status, card.result = closed, text
                self._emit(SkillEndEvent(id=call.id, name=call.name, status="error",
                                         result=text))
            self._append(Message.tool_result(call.id, call.name, text, is_error=True))
        self._persist(last_assistant)

    async def _authorise(self, call: ToolCallPart, set_status: Callable[[RunStatus], None],
                         span: CallSpan, on_progress: ProgressCallback) -> Tool | _Refused:
        """The tool to run, or why it may not run. Authorisation is checked again now:
        the tool may have been switched off (globally or for the agent) while the
        response streamed or while the user decided on an approval. A preview of the call
        (its own context) is made only when the request goes to the user."""
        resolution = self._resolve()
        tool = resolution.get(call.name)
        if tool is None:
            return _Refused(resolution.refusal(call.name))
        if tool.requires_approval:
            waited = False

            def on_waiting() -> None:
                nonlocal waited
                waited = True
                set_status("waiting")

            asked = time.monotonic()
            asking = tool
            allowed, why = await self._approvals.decide(
                call, on_waiting=on_waiting,
                preview=lambda: preview_call(
                    asking, self._make_context(call.id, on_progress), call.args))
            self._tracer.approval(span, allowed, time.monotonic() - asked)
            if not allowed:
                return _Refused(why, rejected=True)
            resolution = self._resolve()
            tool = resolution.get(call.name)
            if tool is None:
                return _Refused(resolution.refusal(call.name))
            if waited:
                set_status("running")
                # The card leaves "waiting" now, not when the tool ends: the views
                # redraw a card on its progress.
                self._emit(ProgressEvent(id=call.id, percent=0.0))
        return tool

    async def _execute(self, call: ToolCallPart, on_progress: ProgressCallback,
                       default_timeout: float,
                       set_status: Callable[[RunStatus], None], span: CallSpan,
                       ) -> tuple[str, Outcome, RichResult | None]:
        """Run a call the request allowed; every failure becomes an error result the model
        can read. The result's display items come along when the call succeeded."""
        content, outcome = await self._execute_text(call, on_progress, default_timeout,
                                                    set_status, span)
        if isinstance(content, RichResult):
            return content.model_text(), outcome, content
        return content, outcome, None

    async def _execute_text(self, call: ToolCallPart, on_progress: ProgressCallback,
                            default_timeout: float,
                            set_status: Callable[[RunStatus], None], span: CallSpan,
                            ) -> tuple[str | RichResult, Outcome]:
        if call.raw_args is not None:
            return (f"The arguments for '{call.name}' were not a JSON object: "
                    f"{call.raw_args[:500]!r}. Call the tool again with valid JSON."), "error"
        tool = await self._authorise(call, set_status, span, on_progress)
        if isinstance(tool, _Refused):
            return tool.text, "rejected" if tool.rejected else "error"
        ctx = self._make_context(call.id, on_progress, self._response)
        timeout = tool.timeout or default_timeout
        deadline = asyncio.timeout(timeout)
        try:
            async with deadline:
                if not self._tracer.on:
                    result = await tool.invoke_rich(dict(call.args), ctx)
                else:
                    with self._tracer.mcp_call(tool):
                        result = await tool.invoke_rich(dict(call.args), ctx)
            declined = isinstance(result, RichResult) and result.declined
            return result, "rejected" if declined else "done"
        except (ToolArgumentError, ToolFailure) as exc:
            return str(exc), "error"
        except TimeoutError as exc:
            if not deadline.expired():  # the tool's own timeout (a socket's, say)
                return f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", "error"
            return (f"Tool '{call.name}' did not finish within {timeout:g} s and was "
                    f"stopped."), "error"
        except asyncio.CancelledError:
            task = asyncio.current_task()
            if task is not None and task.cancelling():
                raise  # the turn is being stopped
            # The tool's own await was cancelled (not the turn): report it like a failure.
            return f"Tool '{call.name}' was cancelled before it finished.", "error"
        except KeyboardInterrupt:
            raise  # a kernel interrupt: closed in run_call, the turn stops
        except BaseException as exc:
            # Any other exception — SystemExit, GeneratorExit, a BaseException of the
            # tool's own — is the tool failing, never the kernel being interrupted.
            return f"Tool '{call.name}' failed: {type(exc).__name__}: {exc}", "error"
