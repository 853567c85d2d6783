"""The offline model of the outside-agent demo: what Claude Code's model answers, as
Messages API content blocks, when asked :data:`OUTSIDE_PROMPT` (or anything else: the
demo plays for any prompt). Served by the demo's local Messages API
(:mod:`neta_nb.demos.model_server`).

The turn: a plan of three items (``TodoWrite``) after some thinking, a small file written
in the agent's working directory (``Write``: Claude Code asks for permission first), the
plan ticked off, a short answer. Which step comes next is read from the request, as a
model would: the tool results since the last prompt. The working directory is the one
Claude Code states in its system prompt; what became of the file (written, or refused)
is read from the ``Write`` result.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

__all__ = ["NOTE_NAME", "OUTSIDE_PROMPT", "PLAN", "demo_answer", "prompt_step",
           "working_directory"]

OUTSIDE_PROMPT = ("Plan a short note on what this folder is for, write it to notes.md, "
                  "then tick the plan off.")
"""The prompt the demo is written for."""

NOTE_NAME = "notes.md"
"""The file the agent writes, in its working directory."""

PLAN = [f"Write {NOTE_NAME} in the working folder", "Say what the note holds",
        "Tick the plan off"]
"""The plan's three items."""

_ACTIVE = [f"Writing {NOTE_NAME}", "Saying what the note holds", "Ticking the plan off"]
_NOTE = ("# Notes\n\n"
         "This folder is where the outside agent of the neta_nb demo works.\n"
         "Its model was a local, scripted stand-in: nothing left this machine.\n")
_WORKDIR = re.compile(r"Primary working directory: ([^\n]+)")

Block = dict[str, Any]


def _strings(value: Any) -> Iterator[str]:
    if isinstance(value, str):
        yield value
    elif isinstance(value, list):
        for item in value:
            yield from _strings(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _strings(item)


def _blocks(message: dict[str, Any]) -> list[Block]:
    content = message.get("content")
    return [b for b in content if isinstance(b, dict)] if isinstance(content, list) else []


def prompt_step(messages: list[dict[str, Any]]) -> tuple[int, list[Block]]:
    """The step of the turn a request is at — how many tool results came since the last
    prompt (a user message that answers no tool call) — and those results."""
    results: list[Block] = []
    for message in reversed(messages):
        if message.get("role") != "user":
            continue
        answers = [b for b in _blocks(message) if b.get("type") == "tool_result"]
        if not answers:
            break
        results[:0] = answers
    return len(results), results


def working_directory(body: dict[str, Any]) -> str | None:
    """The working directory Claude Code names in its system prompt (or in the prompt's
    context), or ``None``."""
    for text in _strings([body.get("system"), body.get("messages")]):
        found = _WORKDIR.search(text)
        if found:
            return found.group(1).strip()
    return None


def _todos(statuses: list[str]) -> Block:
    return {"todos": [{"content": item, "activeForm": active, "status": status}
                      for item, active, status in zip(PLAN, _ACTIVE, statuses, strict=True)]}


def _tool(step: int, name: str, arguments: Block) -> Block:
    return {"type": "tool_use", "id": f"toolu_demo_{step}", "name": name, "input": arguments}


def _text(result: Block | None) -> str:
    content = (result or {}).get("content")
    return content if isinstance(content, str) else " ".join(_strings(content))


def demo_answer(body: dict[str, Any]) -> tuple[list[Block], str]:
    """The content blocks and stop reason of the model's answer to a Messages API
    request ``body``: the demo turn's next step when the request offers the tools the
    demo uses (``TodoWrite`` and ``Write``: Claude Code's own turn), else a short text (a
    title, a check)."""
    tools = {tool.get("name") for tool in body.get("tools") or [] if isinstance(tool, dict)}
    if not {"TodoWrite", "Write"} <= tools:
        return [{"type": "text", "text": "Offline demo"}], "end_turn"
    step, results = prompt_step(body.get("messages") or [])
    folder = working_directory(body)
    path = f"{folder.rstrip('/')}/{NOTE_NAME}" if folder else NOTE_NAME
    if step == 0:
        return [{"type": "thinking", "thinking": (
                    "The user wants a short note in a file. I will plan the three steps "
                    "first, so the plan shows what is left, then write the file in my "
                    "working directory.")},
                _tool(step, "TodoWrite", _todos(["in_progress", "pending", "pending"]))
                ], "tool_use"
    if step == 1:
        return [{"type": "thinking", "thinking": (
                    f"The plan is set. Now the note itself: a few lines in {NOTE_NAME}. "
                    "Writing a file needs the user's permission, so this asks first.")},
                _tool(step, "Write", {"file_path": path, "content": _NOTE})], "tool_use"
    if step == 2:
        return [_tool(step, "TodoWrite", _todos(["completed", "completed", "completed"]))
                ], "tool_use"
    written = next((r for r in results if r.get("tool_use_id") == "toolu_demo_1"), None)
    refused = written is None or bool(written.get("is_error"))
    if refused:
        answer = (f"I did not write `{NOTE_NAME}`: the write was not allowed "
                  f"({_text(written)[:120] or 'no result'}). The plan is ticked off anyway.")
    else:
        answer = (f"Done: `{NOTE_NAME}` is in my working directory with a three-line note, "
                  "and the plan is ticked off.")
    return [{"type": "text", "text": answer}], "end_turn"
