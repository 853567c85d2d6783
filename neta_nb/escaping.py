"""Escaping for the static text forms (markdown and HTML) that notebooks keep in their
outputs, and for text a model reads as data (:func:`quoted_lines`).

Static viewers (GitHub, nbviewer, nbconvert, a notebook reopened without a kernel) may
render markdown without sanitizing it, so any text that comes from a tool, a model or a
config must stay text there. These helpers are pure string functions: the core (the
resolver's displays) and the widgets' fallbacks share them, and the core imports no
widget library to get them.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from functools import cache

from markdown_it import MarkdownIt
from markdown_it.token import Token

__all__ = ["QUOTE_MARK", "code_span", "escape_markdown", "fenced", "literal_markdown",
           "markdown_cell", "one_line", "plain_text", "quoted_lines", "static_markdown_html",
           "unquoted"]

QUOTE_MARK = "│"
"""What every line of :func:`quoted_lines` starts with."""
_LINE_BREAKS = re.compile("[\r\x0b\x0c\x1c\x1d\x1e\x85\u2028\u2029]")
"""What ``str.splitlines`` (and a reader) may take for a line break, other than ``\\n``."""
_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u2028\u2029]")
"""Control characters, every line break among them."""


def fenced(text: str, info: str = "") -> str:
    """``text`` as a fenced code block that no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}{info}\n{text}\n{fence}"


def quoted_lines(text: str) -> list[str]:
    """``text`` as lines that each start with :data:`QUOTE_MARK` (``"│ "`` and the line's
    text; ``"│"`` alone for an empty line), for a model to read as data among lines of
    one's own that do not: whatever the text holds, none of its lines can pass for one of
    those (a header, a note), as no fence can be closed from inside.

    Lines end at ``\\n`` (``\\r\\n`` counts as one); every other character a reader may
    take for a line break (``\\r``, ``\\x0b``, ``\\x0c``, ``\\x1c``–``\\x1e``,
    ``\\x85``, ``\\u2028``, ``\\u2029``) is written as that escape, so each line here
    is one line to any reader. A final line break adds no line; ``""`` gives none."""
    if not text:
        return []
    body = text.replace("\r\n", "\n")
    body = body[:-1] if body.endswith("\n") else body
    lines = _LINE_BREAKS.sub(lambda found: repr(found.group())[1:-1], body).split("\n")
    return [f"{QUOTE_MARK} {line}" if line else QUOTE_MARK for line in lines]


def one_line(text: str) -> str:
    """``text`` on one line: every control character (each line break among them, tabs
    too) written as its escape (``\\n``, ``\\x85``, ``\\u2028``), for a notebook's text
    inside a line of one's own (a name, a column label, an error's message)."""
    return _CONTROL.sub(lambda found: repr(found.group())[1:-1], text)


def unquoted(line: str) -> str | None:
    """The text of one line of :func:`quoted_lines`; ``None`` for a line that is not one
    (one's own)."""
    if line == QUOTE_MARK:
        return ""
    return line[len(QUOTE_MARK) + 1:] if line.startswith(f"{QUOTE_MARK} ") else None


def code_span(text: str) -> str:
    """``text`` as an inline code span that no backtick run inside it can close."""
    longest = max((len(run) for run in re.findall(r"`+", text)), default=0)
    ticks = "`" * (longest + 1)
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{ticks}{pad}{text}{pad}{ticks}"


def escape_markdown(text: str) -> str:
    """Text that renders literally inside markdown: markdown punctuation is backslashed and
    HTML special characters become entities (so raw HTML in model text stays text)."""
    escaped = "".join(f"\\{ch}" if ch in "\\`*_{}[]()#+-.!|~>" else ch for ch in text)
    return escaped.replace("&", "&amp;").replace("<", "&lt;")


def literal_markdown(text: str) -> str:
    """Multi-line text that renders literally, its line breaks kept (hard breaks).

    Static viewers (GitHub, nbconvert, a notebook reopened without widget state) may not
    sanitize markdown, and even those that do load its images: model text written as live
    markdown there would fetch ``![](https://host/?d=…)`` on sight."""
    return "  \n".join(escape_markdown(line) for line in text.splitlines())


def markdown_cell(text: str, *, code: bool = False) -> str:
    """``text`` for one cell of a markdown table: on one line, and unable to end the cell.
    ``code=True`` shows it as a code span (a name), where a ``|`` still splits a table
    cell unless backslashed."""
    flat = " ".join(text.split())
    if code:
        return code_span(flat.replace("|", "\\|")) if flat else ""
    return escape_markdown(flat)


@cache
def _parser() -> MarkdownIt:
    # CommonMark plus the GFM tables and strikethrough that model answers use (as the
    # views' renderer does).
    return MarkdownIt("commonmark").enable(["table", "strikethrough"])


_CODE_BOX = ("margin:6px 0;padding:6px 10px;border:1px solid rgba(128,128,128,.4);"
             "border-radius:6px;overflow-x:auto")


@cache
def _static_renderer(headings: bool = True) -> MarkdownIt:
    # Raw HTML off (written as text); links only where markdown-it's own check allows
    # them (no javascript:, vbscript:, file: or data: other than images); images are
    # their alt text — a static page loads an image on sight, so model text could
    # otherwise send what it read to any host (see ``literal_markdown``).
    renderer = MarkdownIt("commonmark", {"html": False}).enable(["table", "strikethrough"])

    def image(_renderer: object, tokens: Sequence[Token], index: int, _options: object,
              _env: object) -> str:
        alt = _inline_text(tokens[index].children or ())
        return f"[{_escape_html(alt)}]" if alt else "[image]"

    def link_open(_renderer: object, tokens: Sequence[Token], index: int, _options: object,
                  _env: object) -> str:
        href = _escape_html(str(tokens[index].attrGet("href") or ""))
        return f'<a href="{href}" rel="noopener noreferrer nofollow">'

    renderer.add_render_rule("image", image)
    renderer.add_render_rule("link_open", link_open)
    # A code block in a saved page has no stylesheet of ours: boxed and set apart by
    # inline style (a neutral border, seen on light and dark pages alike).
    for kind in ("fence", "code_block"):
        renderer.add_render_rule(kind, _boxed(getattr(renderer.renderer, kind)))
    if not headings:
        # In a table cell a page heading's size is out of place: a heading is a bold line.
        def heading_open(*_args: object) -> str:
            return "<p><strong>"

        def heading_close(*_args: object) -> str:
            return "</strong></p>\n"

        renderer.add_render_rule("heading_open", heading_open)
        renderer.add_render_rule("heading_close", heading_close)
    return renderer


def _boxed(draw: Callable[..., str]) -> Callable[..., str]:
    """A render rule that draws as ``draw`` does, inside a :data:`_CODE_BOX`."""
    def rule(_renderer: object, tokens: Sequence[Token], index: int, options: object,
             env: object) -> str:
        return f'<div style="{_CODE_BOX}">{draw(tokens, index, options, env)}</div>\n'
    return rule


def _escape_html(text: str) -> str:
    return (text.replace("&", "&amp;").replace("<", "&lt;").replace(">", "&gt;")
            .replace('"', "&quot;"))


def static_markdown_html(markdown: str, *, headings: bool = True) -> str:
    """Model text (markdown) as HTML for a static page: headings, lists, tables, code and
    emphasis drawn; no raw HTML, no image loaded, no script-carrying link. For the
    notebook's saved form, which viewers show without sanitizing. ``headings=False``
    draws a heading as a bold line (for text set inside a table cell)."""
    return str(_static_renderer(headings).render(markdown))


def plain_text(markdown: str) -> str:
    """What ``markdown`` reads as, without its markup: one line per block (paragraph,
    heading, list item, table row, code block), list items with their number or a bullet,
    images as their alt text, raw HTML tags dropped.

    Parsed, not stripped: ``sample_sales.csv`` keeps its underscores and ``3 * 4`` its
    star, which removing "markdown characters" would mangle."""
    lines: list[str] = []
    line: list[str] = []
    lists: list[str] = []  # the open lists, innermost last: "ordered" or "bullet"

    def end_line() -> None:
        text = " ".join("".join(line).split())
        if text:
            lines.append(text)
        line.clear()

    for token in _parser().parse(markdown):
        kind = token.type
        if kind in ("ordered_list_open", "bullet_list_open"):
            lists.append(kind.split("_")[0])
        elif kind in ("ordered_list_close", "bullet_list_close"):
            lists.pop()
        elif kind == "list_item_open":
            end_line()
            line.append(f"{token.info}. " if lists and lists[-1] == "ordered" else "• ")
        elif kind == "inline":
            line.append(_inline_text(token.children or ()))
        elif kind in ("fence", "code_block"):
            end_line()
            lines.extend(text for text in token.content.splitlines() if text.strip())
        elif kind in ("th_open", "td_open") and line:
            line.append(" ")
        elif (kind.endswith("_close") and kind not in ("th_close", "td_close")) or kind == "hr":
            end_line()
    end_line()
    return "\n".join(lines)


def _inline_text(tokens: Sequence[Token]) -> str:
    parts: list[str] = []
    for token in tokens:
        if token.type in ("text", "code_inline"):
            parts.append(token.content)
        elif token.type in ("softbreak", "hardbreak"):
            parts.append(" ")
        elif token.type == "image":
            parts.append(_inline_text(token.children or ()))
    return "".join(parts)
