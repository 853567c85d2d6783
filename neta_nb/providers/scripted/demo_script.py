"""The offline model's built-in demo, :data:`DEMO_SCRIPT`: one turn that plans, lists the
working folder, profiles the table it found there and answers with what stands out in that
profile (the columns with missing values, most first; the widest spread) and what the
tools returned.

It shows everything the chat view can show — streamed thinking, a todo plan updated step
by step, a tool call, a skill with progress and a markdown answer (heading, list, table,
code) — and it says nothing it did not see. Only the wording of its thinking is canned:
which table it profiles, and every fact in its answer, are read from this turn's tool
results in the conversation the provider is given (the provider keeps no state).

The demo answers one prompt, :data:`DEMO_PROMPT` (the quickstart's). Any other prompt is
the user's own question, which a scripted model cannot read: it plays the same demo, and
its thinking and answer say first that this is the offline demo model and how to connect
a real one.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from ...escaping import code_span, escape_markdown, fenced, markdown_cell
from ...messages import Message, ToolResultPart
from .script_format import (
    Script,
    ScriptedResponse,
    ScriptToolCall,
    TextStep,
    ThinkingStep,
    ToolCallStep,
    current_turn,
)

__all__ = ["DEMO_PROMPT", "DEMO_SCRIPT", "REAL_MODEL_HINT"]

DEMO_PROMPT = "Profile the sample sales data and tell me what stands out."
"""The prompt the demo is written for; any other prompt gets the offline-model notice."""

REAL_MODEL_HINT = (
    "To talk to a real model, set `ANTHROPIC_API_KEY`, `OPENAI_API_KEY` or "
    "`DEEPSEEK_API_KEY` in the environment JupyterLab starts from and create the agent "
    "with `model=None` (the first key found wins) or a model name, as below; "
    "`06_real_providers.ipynb` shows each provider and local servers.")

_CONNECT_EXAMPLE = fenced(
    'agent = Agent("analyst", model="anthropic:claude-sonnet-4-6")  # or "openai:gpt-5"\n'
    'session = AgentSession(agent, working_dir="data")', "python")

_GIST_CHARS = 240
"""How much of one tool result the answer quotes."""
_SIZE_SUFFIX = re.compile(r" \([^()]*\)$")  # list_files: "sales.csv (1.8 KB)"

_PLAN = [
    {"id": "1", "content": "Look at the files in the working directory", "status": "in_progress"},
    {"id": "2", "content": "Profile a table column by column", "status": "pending"},
    {"id": "3", "content": "Summarise what the tools returned", "status": "pending"},
]


def _is_demo_prompt(prompt: Message | None) -> bool:
    return prompt is not None and " ".join(prompt.text.split()) == DEMO_PROMPT


def _turn_results(messages: Sequence[Message]) -> list[tuple[str, dict[str, Any],
                                                             ToolResultPart]]:
    """(name, arguments, result) of every tool call of the current turn that has a
    result, in call order."""
    _, turn = current_turn(messages)
    results = {part.tool_call_id: part for message in turn for part in message.tool_results}
    return [(call.name, call.args, results[call.id])
            for message in turn if message.role == "assistant"
            for call in message.tool_calls if call.id in results]


def _plan(messages: Sequence[Message]) -> ScriptedResponse:
    prompt, _ = current_turn(messages)
    if _is_demo_prompt(prompt):
        thinking = (
            "The user wants a first look at the data in this directory. I don't know what "
            "is here yet, so I should list the files before anything else. Then a table "
            "needs a column-by-column profile, and finally a short written summary. That "
            "is three clear steps, so a todo plan will help the user follow along.")
    else:
        thinking = (
            "I am the offline demo model: I cannot understand this question, so I will "
            "play my one demo instead — list the files in the working directory, profile a "
            "table, and report exactly what the tools returned.")
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=thinking),
        TextStep(text="Let me plan this before I start."),
        ToolCallStep(tool_call=ScriptToolCall(name="todo", args={"todos": _PLAN,
                                                                  "merge": False})),
    ])


def _listed_tables(messages: Sequence[Message]) -> list[str]:
    """The CSV files the turn's ``list_files`` result shows (its lines are
    ``name (size)``; folders end with ``/``)."""
    for name, _, result in _turn_results(messages):
        if name == "list_files" and not result.is_error:
            entries = [_SIZE_SUFFIX.sub("", line) for line in result.content.splitlines()[1:]]
            return [entry for entry in entries if entry.lower().endswith(".csv")]
    return []


def _profile_what_was_listed(messages: Sequence[Message]) -> ScriptedResponse:
    tables = _listed_tables(messages)
    if tables:
        args: dict[str, Any] = {"path": tables[0]}
        thinking = (f"The listing is back, so step one is done. {tables[0]} is a table, so "
                    "the profile_table skill can report on every column of it.")
    else:
        args = {}
        thinking = ("The listing is back, so step one is done. It shows no CSV file, so I "
                    "will profile the sample sales table that ships with neta_nb instead.")
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=thinking),
        _plan_update(("1", "completed"), ("2", "in_progress")),
        ToolCallStep(tool_call=ScriptToolCall(name="profile_table", args=args)),
    ])


def _plan_update(*changes: tuple[str, str]) -> ToolCallStep:
    """A ``todo`` call that sets the status of the plan's items ``(id, status)``."""
    content = {item["id"]: item["content"] for item in _PLAN}
    todos = [{"id": item_id, "content": content[item_id], "status": status}
             for item_id, status in changes]
    return ToolCallStep(tool_call=ScriptToolCall(name="todo",
                                                 args={"todos": todos, "merge": True}))


def _finish_plan(messages: Sequence[Message]) -> ScriptedResponse:
    profiles = [result for name, _, result in _turn_results(messages)
                if name == "profile_table"]
    failed = bool(profiles) and profiles[-1].is_error
    thinking = ("The profile failed; I'll close the plan and say so in the summary."
                if failed else "The profile finished without errors. I'll mark the "
                "remaining steps done and write the summary.")
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=thinking),
        _plan_update(("2", "completed"), ("3", "completed")),
    ])


def _gist(text: str) -> str:
    """A tool result in one line, quoted as it came (a code span in the answer): its
    prose lines and headings without their markdown marks, no tables or code, cut to a
    readable length."""
    lines: list[str] = []
    in_code = False
    for raw in text.splitlines():
        line = raw.strip()
        if line.startswith("```"):
            in_code = not in_code
            continue
        if not line or in_code or line.startswith("|"):
            continue
        lines.append(line.lstrip("#").strip().replace("`", ""))
    gist = "; ".join(lines) or text.strip()
    return gist if len(gist) <= _GIST_CHARS else gist[:_GIST_CHARS - 1].rstrip() + "…"


_TABLE_CELL = re.compile(r"(?<!\\)\|")  # a cell border: a `|` not backslashed


def _profile_columns(report: str) -> list[dict[str, str]]:
    """The rows of a ``profile_table`` report's table, each by its header's names (its
    ``column``, ``count``, ``missing``, ``min``, ``max``, ``mean``…), as the text shows them."""
    header: list[str] = []
    rows: list[dict[str, str]] = []
    for line in report.splitlines():
        line = line.strip()
        if not (line.startswith("|") and line.endswith("|") and len(line) > 1):
            if rows:
                break  # the table has ended
            continue
        cells = [cell.strip().replace("\\|", "|") for cell in _TABLE_CELL.split(line[1:-1])]
        if not header:
            header = cells
        elif not all(set(cell) <= set("-:") for cell in cells):  # not the |---| line
            rows.append(dict(zip(header, cells, strict=False)))
    return rows


_NUMBER = re.compile(r"-?\d+(\.\d+)?([eE][+-]?\d+)?")


def _number(text: str | None) -> float | None:
    """A cell that is a plain number (safe to quote in markdown as it is), as a float."""
    return float(text) if text and _NUMBER.fullmatch(text) else None


def _what_stands_out(report: str) -> list[str]:
    """What stands out in a profile, read from the report: the columns with missing
    values, most first, and the numeric column that spreads widest above its mean."""
    columns = [c for c in _profile_columns(report)
               if c.get("column") and str(c.get("missing", "")).isdigit()
               and str(c.get("count", "")).isdigit()]
    if not columns:
        return []
    gaps = sorted((c for c in columns if int(c["missing"]) > 0),
                  key=lambda c: -int(c["missing"]))
    facts: list[str] = []
    if gaps:
        most = int(gaps[0]["missing"])
        rows = most + int(gaps[0]["count"])
        top = [c for c in gaps if int(c["missing"]) == most]
        names = " and ".join(code_span(c["column"]) for c in top)
        share = f"{most} of {rows} rows ({int(100 * most / max(rows, 1) + 0.5)} %)"
        line = (f"- **Missing values:** {names} is empty in {share}" if len(top) == 1
                else f"- **Missing values:** {names} are empty in {share} each")
        if len(gaps) == len(top):
            line += "" if len(top) > 1 else ", the only column with gaps"
        else:
            line += (", the most of any column; " + ", ".join(
                f"{code_span(c['column'])} in {c['missing']}" for c in gaps[len(top):]))
        complete = len(columns) - len(gaps)
        line += (f". The other {complete} columns are complete." if complete > 1
                 else ". The other column is complete." if complete == 1 else ".")
        facts.append(line)
    else:
        facts.append(f"- **No missing values** in any of the {len(columns)} columns.")
    spreads = [(maximum / mean, c) for c in columns
               if (mean := _number(c.get("mean"))) and mean > 0
               and (maximum := _number(c.get("max"))) is not None
               and _number(c.get("min")) is not None]
    if spreads:
        ratio, widest = max(spreads, key=lambda item: item[0])
        if ratio >= 2:  # the largest value at least twice the mean
            facts.append(f"- **Widest spread:** {code_span(widest['column'])} runs from "
                         f"{widest['min']} to {widest['max']}, mean {widest['mean']}.")
    return facts


def _arguments(args: dict[str, Any]) -> str:
    return ", ".join(f"{key}={json.dumps(value, ensure_ascii=False)}"
                     for key, value in args.items())


def _report(messages: Sequence[Message]) -> ScriptedResponse:
    prompt, _ = current_turn(messages)
    results = [(name, args, result) for name, args, result in _turn_results(messages)
               if name != "todo"]  # the plan is the card above, not a finding
    parts = ["## Sample data: first look", ""]
    if not _is_demo_prompt(prompt):
        asked = " ".join((prompt.text if prompt else "").split())
        asked = asked if len(asked) <= 120 else asked[:119] + "…"
        parts += [f"**This is the offline demo model.** It cannot read your question "
                  f"(“{escape_markdown(asked)}”) and plays the same demo whatever you ask; "
                  "what follows is what its tools returned just now.", ""]
    profiles = [result for name, _, result in results
                if name == "profile_table" and not result.is_error]
    findings = _what_stands_out(profiles[-1].content) if profiles else []
    if findings:
        parts += ["What stands out in the profile:", "", *findings, ""]
    parts += ["What the tools returned in this session:", ""]
    parts += [f"- {code_span(name)} "
              f"({code_span(_arguments(args)) if args else 'no arguments'}): "
              + ("failed: " if result.is_error else "") + code_span(_gist(result.content))
              for name, args, result in results] or ["- No tool returned anything."]
    failures = sum(result.is_error for _, _, result in results)
    parts += ["", "| tool | arguments | outcome |", "|---|---|---|"]
    parts += [f"| {markdown_cell(name, code=True)} | {markdown_cell(_arguments(args), code=True)}"
              f" | {'✗ failed' if result.is_error else '✓ done'} |"
              for name, args, result in results]
    parts += ["", f"{len(results)} tool calls, {failures} failed. The skill card above holds "
              "the whole profile, column by column.", "", REAL_MODEL_HINT, "",
              _CONNECT_EXAMPLE, "", "Until then, whatever you ask, I replay this demo with "
              "fresh tool results."]
    return ScriptedResponse(steps=[
        ThinkingStep(thinking="Everything is in place; time to present the results clearly."),
        TextStep(text="\n".join(parts) + "\n"),
    ])


DEMO_SCRIPT = Script(responses=[
    _plan,
    ScriptedResponse(steps=[
        ThinkingStep(thinking=(
            "Step one is in progress. Listing the current directory will show which files "
            "I can work with.")),
        ToolCallStep(tool_call=ScriptToolCall(name="list_files", args={"path": "."})),
    ]),
    _profile_what_was_listed,
    _finish_plan,
    _report,
])
"""One user prompt's worth of responses showing everything the UI can show; the ones
that depend on what the tools returned are computed from the conversation."""
