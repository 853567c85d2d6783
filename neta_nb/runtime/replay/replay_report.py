"""What a replay found (``replay.replay``): per turn, the stored and the replayed answer
side by side, the tools each used, token and time figures and the checks' verdicts; for
the whole session, the model and the tool-set difference (``ToolResolution.diff``).

A report displays as a table in a notebook, becomes a pandas DataFrame
(:meth:`ReplayReport.to_dataframe`) or a pydantic-evals dataset
(:meth:`ReplayReport.to_pydantic_evals`) — both imported only when asked for.
"""

from __future__ import annotations

import html
import importlib
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from ...escaping import static_markdown_html
from ...messages import Message, Usage
from ...providers.scripted.history_script import StoredTurn
from ...tools.resolution.resolution_steps import ResolutionDiff
from ...tools.resolution.resolver import ToolResolution

__all__ = ["Check", "ReplayReport", "ReplayTurn", "TurnFigures", "usage_of"]

Check = Callable[["ReplayTurn"], Any | Awaitable[Any]]
"""A user check: a function of one turn's comparison returning a verdict (``bool``, a
number or text), sync or async."""

SHOWN_CHARS = 400
"""Characters of an answer shown in a table cell (the report keeps them whole)."""


def usage_of(messages: Iterable[Message]) -> Usage:
    """The usage the provider reported for ``messages``' model calls, added up."""
    total = Usage()
    for message in messages:
        if message.metadata.usage is not None:
            total = total + message.metadata.usage
    return total


def _failed_calls(messages: Sequence[Message]) -> list[str]:
    """The names of the calls whose result was an error, in call order (each response's
    results follow it: ids repeat across responses on some servers)."""
    failed: list[str] = []
    for position, message in enumerate(messages):
        if message.role != "assistant" or not message.tool_calls:
            continue
        errors: set[str] = set()
        for answer in messages[position + 1:]:
            if answer.role != "tool":
                break
            errors |= {r.tool_call_id for r in answer.tool_results if r.is_error}
        failed += [call.name for call in message.tool_calls if call.id in errors]
    return failed


@dataclass
class TurnFigures:
    """One side of a turn: its answer, the tools it called, what it cost and how it ended."""

    answer: str
    tools: list[str]
    usage: Usage
    model_calls: int
    seconds: float | None
    stop_reason: str | None = None
    error: str | None = None
    failed_tools: list[str] = field(default_factory=list)
    """The calls whose result was an error (refused, rejected, failed), by tool name."""

    @classmethod
    def of(cls, messages: Sequence[Message], *, seconds: float | None,
           stop_reason: str | None = None, error: str | None = None) -> TurnFigures:
        """The figures of a turn's messages (everything after its prompt)."""
        responses = [m for m in messages if m.role == "assistant"]
        answers = [m.text for m in responses if m.text]
        return cls(answer=answers[-1] if answers else "",
                   tools=[call.name for m in responses for call in m.tool_calls],
                   usage=usage_of(responses), model_calls=len(responses), seconds=seconds,
                   stop_reason=stop_reason, error=error,
                   failed_tools=_failed_calls(messages))

    @classmethod
    def of_stored(cls, turn: StoredTurn) -> TurnFigures:
        """A stored turn's figures; its time from the prompt to its last message."""
        seconds = (turn.messages[-1].created_at - turn.prompt.created_at
                   if turn.messages else None)
        responses = turn.responses
        last = responses[-1].metadata if responses else None
        return cls.of(turn.messages, seconds=seconds,
                      stop_reason=last.interrupted or last.stop_reason if last else None,
                      error=last.error if last else None)


@dataclass
class ReplayTurn:
    """One prompt, as the stored session answered it (``before``) and as the replay did
    (``after``), with the checks' verdicts by name."""

    index: int
    prompt: str
    before: TurnFigures
    after: TurnFigures
    checks: dict[str, Any] = field(default_factory=dict)
    fixed_results: int = 0
    """Calls answered with the stored result (``keep_tool_results=True``)."""
    live_results: int = 0
    """Calls that had no stored twin and ran for real."""

    @property
    def same_answer(self) -> bool:
        return self.before.answer.strip() == self.after.answer.strip()

    @property
    def same_tools(self) -> bool:
        return self.before.tools == self.after.tools


@dataclass
class ReplayReport:
    """A replay of one stored session (see the module's docstring)."""

    session_id: str
    title: str
    model_before: str
    model_after: str
    resolution_before: ToolResolution
    resolution_after: ToolResolution
    replay_session_id: str
    turns: list[ReplayTurn] = field(default_factory=list)

    @property
    def tool_diff(self) -> ResolutionDiff:
        """The tool sets' difference: ``resolution_before.diff(resolution_after)``."""
        return self.resolution_before.diff(self.resolution_after)

    def totals(self) -> dict[str, Any]:
        """Both sides' tokens, model calls and time over all turns."""
        out: dict[str, Any] = {}
        for side in ("before", "after"):
            figures = [getattr(turn, side) for turn in self.turns]
            usage = usage_of_figures(figures)
            out[side] = {"input_tokens": usage.input_tokens,
                         "output_tokens": usage.output_tokens,
                         "model_calls": sum(f.model_calls for f in figures),
                         "seconds": sum(f.seconds or 0.0 for f in figures)}
        return out

    def rows(self) -> list[dict[str, Any]]:
        """One flat row per turn (the DataFrame's and the table's)."""
        rows = []
        for turn in self.turns:
            row: dict[str, Any] = {"turn": turn.index + 1, "prompt": turn.prompt}
            for side in ("before", "after"):
                figures: TurnFigures = getattr(turn, side)
                row.update({f"answer_{side}": figures.answer,
                            f"tools_{side}": list(figures.tools),
                            f"failed_tools_{side}": list(figures.failed_tools),
                            f"input_tokens_{side}": figures.usage.input_tokens,
                            f"output_tokens_{side}": figures.usage.output_tokens,
                            f"model_calls_{side}": figures.model_calls,
                            f"seconds_{side}": figures.seconds,
                            f"stop_{side}": figures.stop_reason,
                            f"error_{side}": figures.error})
            row["same_answer"] = turn.same_answer
            row["same_tools"] = turn.same_tools
            row.update({f"check_{name}": verdict for name, verdict in turn.checks.items()})
            rows.append(row)
        return rows

    def to_dataframe(self) -> Any:
        """The report as a pandas DataFrame, one row per turn."""
        try:
            pandas = importlib.import_module("pandas")  # optional, and untyped
        except ImportError as error:  # pragma: no cover - pandas is a test dependency
            raise ImportError("to_dataframe() needs pandas: pip install pandas") from error
        return pandas.DataFrame(self.rows())

    def to_pydantic_evals(self, name: str | None = None) -> Any:
        """A ``pydantic_evals.Dataset`` with one case per turn: the prompt as input, the
        stored answer as the expected output, the figures as metadata."""
        try:
            from pydantic_evals import Case, Dataset
        except ImportError as error:
            raise ImportError("to_pydantic_evals() needs pydantic-evals: "
                              "pip install pydantic-evals") from error
        cases = [Case(name=f"turn {turn.index + 1}", inputs=turn.prompt,
                      expected_output=turn.before.answer,
                      metadata={"session_id": self.session_id,
                                "tools": list(turn.before.tools),
                                "model": self.model_before})
                 for turn in self.turns]
        return Dataset(name=name or f"replay of {self.session_id}", cases=cases)

    def __repr__(self) -> str:
        same = sum(turn.same_answer for turn in self.turns)
        return (f"ReplayReport({self.session_id!r}: {len(self.turns)} turns, "
                f"{self.model_before} → {self.model_after}, {same} answers unchanged)")

    def _repr_html_(self) -> str:
        diff = self.tool_diff
        added = ", ".join(diff.added) or "—"
        removed = ", ".join(diff.removed) or "—"
        head = (f"<p><b>Replay of {_esc(self.title or self.session_id)}</b>: "
                f"{_esc(self.model_before)} → {_esc(self.model_after)} · tools added: "
                f"{_esc(added)} · removed: {_esc(removed)}</p>")
        checks = sorted({name for turn in self.turns for name in turn.checks})
        header = "".join(f"<th style='text-align:left'>{_esc(h)}</th>" for h in (
            "#", "prompt", "answer (stored)", "answer (replay)", "tools (stored)",
            "tools (replay)", "tokens in/out (stored)", "tokens in/out (replay)",
            "s (stored)", "s (replay)", *checks))
        body = []
        for turn in self.turns:
            before, after = turn.before, turn.after
            cells = [_esc(str(turn.index + 1)), _esc(turn.prompt),
                     _answer_html(before.answer, before.error),
                     _answer_html(after.answer, after.error),
                     _esc(_tools(before)), _esc(_tools(after)),
                     f"{before.usage.input_tokens:,}/{before.usage.output_tokens:,}",
                     f"{after.usage.input_tokens:,}/{after.usage.output_tokens:,}",
                     _seconds(before.seconds), _seconds(after.seconds),
                     *[_esc(str(turn.checks.get(name, ""))) for name in checks]]
            body.append("<tr>" + "".join(f"<td style='text-align:left;vertical-align:top'>"
                                         f"{c}</td>" for c in cells) + "</tr>")
        return (f"<div class='neta-replay-report'>{head}<table><thead><tr>{header}</tr>"
                f"</thead><tbody>{''.join(body)}</tbody></table></div>")


def usage_of_figures(figures: Iterable[TurnFigures]) -> Usage:
    total = Usage()
    for item in figures:
        total = total + item.usage
    return total


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _answer_html(answer: str, error: str | None) -> str:
    """An answer's first ``SHOWN_CHARS`` as the chat draws them (headings, lists, code —
    not the raw ``##`` and ``**``), through the static renderer: the report is shown
    and saved as a notebook output, where model text must load and run nothing. A
    failure follows as plain text."""
    shown = static_markdown_html(_excerpt(answer), headings=False)
    return f"{shown}<p>[error: {_esc(error)}]</p>" if error else shown


def _excerpt(answer: str) -> str:
    """At most ``SHOWN_CHARS`` of ``answer``, cut at a line end (else a space) where one is
    in the second half, so a cut rarely leaves a code span or emphasis open."""
    if len(answer) <= SHOWN_CHARS:
        return answer
    head = answer[:SHOWN_CHARS]
    for mark in ("\n", " "):
        at = head.rfind(mark)
        if at > SHOWN_CHARS // 2:
            return head[:at].rstrip() + " …"
    return head + " …"


def _tools(figures: TurnFigures) -> str:
    """The calls in order, those whose result was an error marked ✗."""
    failed = list(figures.failed_tools)
    shown = []
    for name in figures.tools:
        if name in failed:
            failed.remove(name)
            name += " ✗"
        shown.append(name)
    return ", ".join(shown) or "—"


def _seconds(value: float | None) -> str:
    return "—" if value is None else f"{value:.1f}"
