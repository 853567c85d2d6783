"""A demo catalog that fills every seed category, for notebooks and the config panel.

Every tool here either does something real and harmless, or says in its description that
it is a demo stub. ``web_search`` is disabled globally (there is no network in the demo),
``describe_image`` needs the ``vision`` capability, and ``delegate`` (the real one, off by
default here) is only offered in the ``crew`` scene — so each state and filter of the
resolver has something to show.
"""

from __future__ import annotations

import ast
import dataclasses
import operator
import struct
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .base import Tool, ToolContext, tool
from .builtin import builtin_tools
from .builtin.delegate import delegate as builtin_delegate
from .builtin.workspace import display_path, resolve_inside

__all__ = ["GLOBALLY_DISABLED", "catalog_tools", "demo_tools"]

GLOBALLY_DISABLED = ("web_search",)
"""The demo tools the demo catalog disables globally."""

# Remembered notes per session: the `remember`/`recall` pair is real, not a stub, but
# deliberately lives only as long as the kernel.
_MEMORY: dict[str, dict[str, str]] = {}


@tool(category="interaction", label="Ask user")
def ask_user(question: str) -> str:
    """Demo stub: pretends to ask the user a question and always answers that the user is
    away. Use it to see how an interaction tool shows up; it does not reach anyone.

    Args:
        question: The question for the user.
    """
    return (f"(demo stub) The question {question!r} was not delivered: nobody is "
            "listening in this demo. Proceed with your best judgement and say which "
            "assumption you made.")


@tool(category="memory", label="Remember")
def remember(ctx: ToolContext, key: str, value: str) -> str:
    """Store a short note under a key for the rest of this session.

    Args:
        key: Name of the note.
        value: Text to remember.
    """
    _MEMORY.setdefault(ctx.session_id, {})[key] = value
    return f"Remembered '{key}'."


@tool(category="memory", label="Recall")
def recall(ctx: ToolContext, key: str | None = None) -> str:
    """Read a note stored with remember, or list the keys when no key is given.

    Args:
        key: Name of the note; omit to list every key.
    """
    notes = _MEMORY.get(ctx.session_id, {})
    if key is None:
        return ("Keys: " + ", ".join(sorted(notes))) if notes else "Nothing remembered yet."
    if key not in notes:
        raise KeyError(f"nothing remembered under '{key}'; known keys: "
                       f"{', '.join(sorted(notes)) or 'none'}")
    return notes[key]


# The real `delegate` (see builtin/delegate.py), shown here off by default and offered
# only in the 'crew' scene, so the catalog has a scene-limited tool to show.
delegate = dataclasses.replace(builtin_delegate, core=False, scenes=frozenset({"crew"}))


@tool(category="vision", capabilities={"vision"}, label="Describe image")
def describe_image(ctx: ToolContext, path: str) -> str:
    """Read an image file in the working directory and report its format and pixel size
    (PNG, JPEG, GIF). It needs a vision model because it is meant to pass the image on;
    in this demo it only reads the header.

    Args:
        path: Image file relative to the working directory.
    """
    target, shown = _working_file(ctx, path)
    kind, width, height = _image_size(target)
    return f"'{shown}': {kind} image, {width}×{height} pixels, {target.stat().st_size:,} bytes."


@tool(category="document", label="Word count")
def word_count(ctx: ToolContext, path: str) -> dict[str, Any]:
    """Count the lines, words and characters of a text file in the working directory.

    Args:
        path: Text file relative to the working directory.
    """
    target, shown = _working_file(ctx, path)
    text = target.read_text("utf-8", errors="replace")
    return {"file": shown, "lines": len(text.splitlines()), "words": len(text.split()),
            "characters": len(text)}


@tool(category="base", label="Web search")
def web_search(query: str) -> str:
    """Demo stub: a web search that is disabled globally in the demo catalog (there is
    no network access here). It shows how a globally disabled tool looks.

    Args:
        query: What to search for.
    """
    return f"(demo stub) No search was run for {query!r}."


_OPERATORS: dict[type[ast.AST], Callable[..., Any]] = {
    ast.Add: operator.add, ast.Sub: operator.sub, ast.Mult: operator.mul,
    ast.Div: operator.truediv, ast.FloorDiv: operator.floordiv, ast.Mod: operator.mod,
    ast.Pow: operator.pow, ast.USub: operator.neg, ast.UAdd: operator.pos,
}


@tool(category="custom", label="Calculate")
def calculate(expression: str) -> str:
    """Evaluate an arithmetic expression exactly as written (numbers, + - * / // % ** and
    parentheses; nothing else is evaluated).

    Args:
        expression: For example '(17.5 * 12) / 3'.
    """
    tree = ast.parse(expression, mode="eval")
    return f"{expression} = {_evaluate(tree.body)}"


def _working_file(ctx: ToolContext, path: str) -> tuple[Path, str]:
    """The file ``path`` names inside the working directory, and how to name it to the model."""
    target = resolve_inside(ctx.working_dir, path)
    shown = display_path(ctx.working_dir, target)
    if not target.is_file():
        raise FileNotFoundError(f"'{shown}' is not a file in the working directory")
    return target, shown


def _evaluate(node: ast.AST) -> Any:
    if isinstance(node, ast.Constant) and type(node.value) in (int, float):
        return node.value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        left, right = _evaluate(node.left), _evaluate(node.right)
        if isinstance(node.op, ast.Pow) and abs(right) > 1000:
            raise ValueError("exponent too large")
        return _OPERATORS[type(node.op)](left, right)
    if isinstance(node, ast.UnaryOp) and type(node.op) in _OPERATORS:
        return _OPERATORS[type(node.op)](_evaluate(node.operand))
    raise ValueError(f"only numbers and arithmetic operators are allowed, not "
                     f"{ast.unparse(node)!r}")


def _image_size(path: Path) -> tuple[str, int, int]:
    with path.open("rb") as handle:
        head = handle.read(32)
        if head.startswith(b"\x89PNG\r\n\x1a\n") and len(head) >= 24:
            width, height = struct.unpack(">II", head[16:24])
            return "PNG", width, height
        if head[:6] in (b"GIF87a", b"GIF89a"):
            width, height = struct.unpack("<HH", head[6:10])
            return "GIF", width, height
        if head.startswith(b"\xff\xd8"):
            return ("JPEG", *_jpeg_size(handle))
    raise ValueError(f"'{path.name}' is not a PNG, JPEG or GIF image")


def _jpeg_size(handle: Any) -> tuple[int, int]:
    handle.seek(2)
    while True:
        marker = handle.read(2)
        if len(marker) < 2 or marker[0] != 0xFF:
            break
        if marker[1] in (0xC0, 0xC1, 0xC2):
            _length, _precision, height, width = struct.unpack(">HBHH", handle.read(7))
            return width, height
        (length,) = struct.unpack(">H", handle.read(2))
        handle.seek(length - 2, 1)
    raise ValueError("could not find the JPEG frame size")


def demo_tools() -> list[Tool]:
    return [ask_user, remember, recall, delegate, describe_image, word_count, web_search,
            calculate]


def catalog_tools() -> list[Tool]:
    """What the demo catalog (:meth:`ToolCatalog.demo
    <neta_nb.tools.catalog.ToolCatalog.demo>`) holds: the built-in tools the demo does not
    replace, then the demo tools."""
    demo = demo_tools()
    names = {item.name for item in demo}
    return [*(item for item in builtin_tools() if item.name not in names), *demo]
