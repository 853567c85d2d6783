"""``read_file`` and ``list_files``: look at files in the working directory, never beyond.

Both are read-only and confined to :attr:`ToolContext.working_dir` (see
:mod:`.workspace`). Output is bounded so a large file or tree cannot flood the context.
"""

from __future__ import annotations

import fnmatch
import os
from pathlib import Path

from ..base import ToolContext, tool
from .workspace import OutsideWorkingDirError, display_path, resolve_inside

__all__ = ["MAX_LIST_ENTRIES", "MAX_READ_CHARS", "list_files", "read_file"]

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 500
_DEFAULT_MAX_LINES = 2_000


@tool(category="base", core=True, label="Read file")
def read_file(ctx: ToolContext, path: str, start_line: int = 1,
              max_lines: int = _DEFAULT_MAX_LINES) -> str:
    """Read a text file in the working directory.

    Returns the requested lines. Long files are cut; the footer says which lines were
    shown and how to read on.

    Args:
        path: File path, relative to the working directory.
        start_line: First line to return (1-based).
        max_lines: Most lines to return.
    """
    if start_line < 1:
        raise ValueError("start_line must be 1 or more")
    if max_lines < 1:
        raise ValueError("max_lines must be 1 or more")
    target = resolve_inside(ctx.working_dir, path)
    shown = display_path(ctx.working_dir, target)
    if not target.exists():
        raise FileNotFoundError(f"'{shown}' does not exist; use list_files to see what "
                                "is there")
    if target.is_dir():
        raise IsADirectoryError(f"'{shown}' is a directory; use list_files for it")
    data = target.read_bytes()
    if b"\x00" in data[:8192]:
        raise ValueError(f"'{shown}' looks like a binary file ({len(data):,} bytes); "
                         "read_file shows text only")
    lines = data.decode("utf-8", errors="replace").splitlines()
    total = len(lines)
    if total == 0:
        return f"'{shown}' is empty."
    if start_line > total:
        raise ValueError(f"start_line {start_line} is past the end of '{shown}' "
                         f"({total} lines)")
    chosen: list[str] = []
    used = 0
    end = start_line - 1
    for line in lines[start_line - 1:start_line - 1 + max_lines]:
        if used + len(line) + 1 > MAX_READ_CHARS and chosen:
            break
        chosen.append(line)
        used += len(line) + 1
        end += 1
    text = "\n".join(chosen)
    if start_line == 1 and end == total:
        return text
    return (f"{text}\n\n[lines {start_line}-{end} of {total} of '{shown}'; "
            f"call read_file with start_line={end + 1} to read on]"
            if end < total else
            f"{text}\n\n[lines {start_line}-{end} of {total} of '{shown}']")


@tool(category="base", core=True, label="List files")
def list_files(ctx: ToolContext, path: str = ".", pattern: str | None = None,
               recursive: bool = False) -> str:
    """List files and folders in the working directory.

    Folders end with '/', files show their size. Symbolic links that lead outside the
    working directory are listed but marked, and never followed.

    Args:
        path: Folder to list, relative to the working directory.
        pattern: Optional glob on the file name, e.g. '*.csv'.
        recursive: Also list the contents of sub-folders.
    """
    root = ctx.working_dir.resolve()
    folder = resolve_inside(ctx.working_dir, path)
    shown = display_path(ctx.working_dir, folder)
    if not folder.exists():
        raise FileNotFoundError(f"'{shown}' does not exist")
    if not folder.is_dir():
        raise NotADirectoryError(f"'{shown}' is a file; use read_file for it")
    entries: list[str] = []
    truncated = False
    for current, dirs, files in os.walk(folder, followlinks=False):
        dirs.sort()
        here = Path(current)
        for name in sorted(dirs) + sorted(files):
            if pattern is not None and not fnmatch.fnmatch(name, pattern):
                continue
            if len(entries) >= MAX_LIST_ENTRIES:
                truncated = True
                break
            entries.append(_describe_entry(root, here / name))
        if truncated or not recursive:
            break
        # os.walk with followlinks=False already refuses to descend through symlinked
        # folders, so a link cannot lead the listing outside.
    if not entries:
        return f"'{shown}' has no entries" + (f" matching '{pattern}'" if pattern else "") + "."
    count = f"{len(entries)} {'entry' if len(entries) == 1 else 'entries'}"
    header = f"{shown}/ ({count}" + (", cut" if truncated else "") + ")"
    footer = (f"\n[listing cut at {MAX_LIST_ENTRIES} entries; list a sub-folder or use a "
              "pattern]" if truncated else "")
    return header + "\n" + "\n".join(entries) + footer


def _describe_entry(root: Path, entry: Path) -> str:
    relative = entry.relative_to(root).as_posix()
    if entry.is_symlink():
        try:
            resolve_inside(root, relative)
        except OutsideWorkingDirError:
            return f"{relative} -> (link outside the working directory)"
    if entry.is_dir():
        return f"{relative}/"
    try:
        size = entry.stat().st_size
    except OSError:
        return f"{relative} (unreadable)"
    return f"{relative} ({_human_size(size)})"


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
