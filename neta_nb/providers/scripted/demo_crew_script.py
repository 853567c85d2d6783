"""The offline model's crew demo: a planner that hands two tasks to two sub-agents at
once, and the scripts those sub-agents play (see :func:`neta_nb.demos.crew.demo_crew`).

As in the single-agent demo (:mod:`.demo_script`), only the wording of the thinking is
canned: what each sub-agent reports is read from its own tool results, and the planner's
answer from its ``delegate`` results, in the conversation each provider is given.
"""

from __future__ import annotations

from collections.abc import Sequence

from ...escaping import code_span
from ...messages import Message
from .demo_script import _gist, _turn_results
from .script_format import (
    Script,
    ScriptedResponse,
    ScriptToolCall,
    TextStep,
    ThinkingStep,
    ToolCallStep,
)

__all__ = ["ANALYST_SCRIPT", "CREW_PLANNER_SCRIPT", "CREW_PROMPT", "CREW_TASKS",
           "RESEARCHER_SCRIPT"]

CREW_PROMPT = "Survey the working folder and profile the sales table; split the work."
"""The prompt the crew demo is written for (any prompt plays the same delegation)."""

CREW_TASKS = {
    "researcher": ("List the files in the working directory and report which of them are "
                   "tables, with their sizes."),
    "analyst": ("Profile the sample sales table column by column and report the two "
                "findings that stand out most."),
}
"""What the planner delegates, by sub-agent name."""


def _delegate_both(messages: Sequence[Message]) -> ScriptedResponse:
    return ScriptedResponse(steps=[
        ThinkingStep(thinking=(
            "Two independent jobs: find out what is in the folder, and profile the sales "
            "table. Neither needs the other's result, so my researcher and my analyst can "
            "work on them at the same time.")),
        TextStep(text="I'll split this between my crew; both start now.\n"),
        *[ToolCallStep(tool_call=ScriptToolCall(name="delegate",
                                                args={"agent": name, "task": task}))
          for name, task in CREW_TASKS.items()],
    ])


def _crew_report(messages: Sequence[Message]) -> ScriptedResponse:
    results = [(args.get("agent", "?"), result) for name, args, result
               in _turn_results(messages) if name == "delegate"]
    lines = ["## What the crew found", ""]
    for agent, result in results:
        outcome = "could not finish: " if result.is_error else ""
        lines.append(f"- **{agent}** {outcome}{code_span(_gist(result.content))}")
    failed = sum(result.is_error for _, result in results)
    lines += ["", f"{len(results)} sub-agents ran in parallel, {failed} did not finish. "
              "Expand a sub-agent's card above for its whole transcript."]
    return ScriptedResponse(steps=[
        ThinkingStep(thinking="Both reports are back; I'll put them side by side."),
        TextStep(text="\n".join(lines) + "\n"),
    ])


CREW_PLANNER_SCRIPT = Script(responses=[_delegate_both, _crew_report])


def _researcher_report(messages: Sequence[Message]) -> ScriptedResponse:
    listing = next((result for name, _, result in _turn_results(messages)
                    if name == "list_files"), None)
    if listing is None or listing.is_error:
        text = "I could not list the working directory" + (
            f": {listing.content}" if listing is not None else ".")
    else:
        entries = listing.content.splitlines()[1:]
        tables = [entry for entry in entries if ".csv" in entry.lower()]
        text = (f"The folder holds {len(entries)} entries. Tables among them: "
                + (", ".join(tables) if tables else "none") + ".")
    return ScriptedResponse(steps=[
        ThinkingStep(thinking="The listing is back; I'll report the tables in it."),
        TextStep(text=text),
    ])


RESEARCHER_SCRIPT = Script(responses=[
    ScriptedResponse(steps=[
        ThinkingStep(thinking="I was asked what is in the folder: one listing answers it."),
        ToolCallStep(tool_call=ScriptToolCall(name="list_files", args={"path": "."})),
    ]),
    _researcher_report,
])


def _analyst_report(messages: Sequence[Message]) -> ScriptedResponse:
    profile = next((result for name, _, result in _turn_results(messages)
                    if name == "profile_table"), None)
    if profile is None or profile.is_error:
        text = "The profile failed" + (f": {profile.content}" if profile is not None else ".")
    else:
        text = f"Profile done. In short: {_gist(profile.content)}"
    return ScriptedResponse(steps=[
        ThinkingStep(thinking="The profile is complete; a short summary of it is my answer."),
        TextStep(text=text),
    ])


ANALYST_SCRIPT = Script(responses=[
    ScriptedResponse(steps=[
        ThinkingStep(thinking=("A column-by-column profile is what the profile_table "
                               "skill does; the sample sales table is the one meant.")),
        ToolCallStep(tool_call=ScriptToolCall(name="profile_table", args={})),
    ]),
    _analyst_report,
])
