"""``read_file`` and ``list_files``: look at files in the working directory, never beyond.

Both are read-only and confined to :attr:`ToolContext.working_dir` (see
:mod:`.workspace`). Output is bounded so a large file or tree cannot flood the context,
and ``read_file`` streams: its memory follows what it returns, not the file's size, and
it refuses pipes, sockets and devices instead of waiting on them.
"""

from __future__ import annotations

import fnmatch
import os
import stat
from pathlib import Path
from typing import BinaryIO, NoReturn

from ..base import ToolContext, tool
from .workspace import OutsideWorkingDirError, SymlinkLoopError, display_path, resolve_inside

__all__ = ["MAX_LIST_ENTRIES", "MAX_READ_CHARS", "list_files", "read_file"]

MAX_READ_CHARS = 100_000
MAX_LIST_ENTRIES = 500
_DEFAULT_MAX_LINES = 2_000
_BINARY_PROBE_BYTES = 8192
_CHUNK_BYTES = 1 << 16
# How far past the shown lines read_file scans to report the total line count. Enough
# for the data files an analyst opens (tens of ms from the page cache); a bigger file
# gets "more lines follow" and its size instead.
_COUNT_AHEAD_BYTES = 64 << 20


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
    fd = _open_regular_file(target, shown)
    with os.fdopen(fd, "rb") as stream:
        size = os.fstat(stream.fileno()).st_size
        head = stream.read(_BINARY_PROBE_BYTES)
        if b"\x00" in head:
            raise ValueError(f"'{shown}' looks like a binary file ({size:,} bytes); "
                             "read_file shows text only")
        if not head:
            return f"'{shown}' is empty."
        stream.seek(0)
        return _read_lines(stream, shown, size, start_line, max_lines)


def _open_regular_file(target: Path, shown: str) -> int:
    """A read-only descriptor of ``target``, refused unless it is a regular file.

    Opening a FIFO blocks until a writer appears and reading a device may never end, so
    the type is checked before opening. ``O_NONBLOCK`` guards the race where the path is
    swapped for a FIFO after the check: the open then returns at once and the second
    check, on the descriptor itself, refuses it.
    """
    try:
        mode = os.stat(target).st_mode
    except FileNotFoundError:
        raise FileNotFoundError(f"'{shown}' does not exist; use list_files to see what "
                                "is there") from None
    _require_regular(mode, shown)
    flags = os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_BINARY", 0)
    fd = os.open(target, flags)
    try:
        _require_regular(os.fstat(fd).st_mode, shown)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _require_regular(mode: int, shown: str) -> None:
    if stat.S_ISREG(mode):
        return
    if stat.S_ISDIR(mode):
        raise IsADirectoryError(f"'{shown}' is a directory; use list_files for it")
    raise ValueError(f"'{shown}' is a {_special_kind(mode)}, not a regular file; read_file "
                     "reads regular files only")


def _special_kind(mode: int) -> str:
    if stat.S_ISFIFO(mode):
        return "named pipe (FIFO)"
    if stat.S_ISSOCK(mode):
        return "socket"
    if stat.S_ISCHR(mode):
        return "character device"
    if stat.S_ISBLK(mode):
        return "block device"
    return "special file"


# Complex on purpose (C901): each bound (size, count, encoding) where it applies.
def _read_lines(stream: BinaryIO, shown: str, size: int, start_line: int,  # noqa: C901
                max_lines: int) -> str:
    """Lines ``start_line`` onwards, at most ``max_lines`` of them and
    :data:`MAX_READ_CHARS` characters, with the footer.

    Memory is bounded by what is returned, never by the file: lines before
    ``start_line`` are skipped by counting newlines in fixed-size chunks, and a line is
    read with a byte limit so even a file that is one huge line costs no more than the
    character budget. Lines end at a line feed (a carriage return before it is dropped,
    so Windows files read the same); splitting the raw bytes there is safe because that
    byte never occurs inside a UTF-8 sequence.
    """
    line_number, last_byte = _skip_lines(stream, start_line - 1)
    if line_number < start_line:
        _past_the_end(start_line, shown, line_number - 1 + (last_byte != b"\n"))
    chosen: list[str] = []
    used = 0
    cut = False
    at_end = False
    while len(chosen) < max_lines:
        room = MAX_READ_CHARS - used - 1
        if room < 0:
            break
        position = stream.tell()
        # A line of `room` characters has at most 4 bytes each, plus "\r\n": reading one
        # byte past that proves the line is longer than the room left.
        raw = stream.readline(4 * room + 3)
        if not raw:
            at_end = True
            break
        complete = raw.endswith(b"\n")
        # No newline and the whole limit read: the line goes on. (No newline short of the
        # limit means the file ended there.)
        longer = not complete and len(raw) > 4 * room + 2
        text = raw.removesuffix(b"\n").removesuffix(b"\r").decode("utf-8", errors="replace")
        if longer or len(text) > room:
            if chosen:
                stream.seek(position)  # the next call starts with this line
                break
            # A single line longer than the whole budget: show its start, skip the rest.
            chosen.append(text[:MAX_READ_CHARS])
            cut = True
            if longer:
                _skip_lines(stream, 1)
            break
        chosen.append(text)
        used += len(text) + 1
    if not chosen:  # the file ends with a newline right before start_line
        _past_the_end(start_line, shown, start_line - 1)
    end = start_line - 1 + len(chosen)
    if at_end:
        total: int | None = end
    else:
        total = _count_remaining_lines(stream, end)
    text = "\n".join(chosen)
    if cut:
        note = (f"[line {end} of '{shown}' is longer than {MAX_READ_CHARS:,} characters "
                "and was cut")
    elif start_line == 1 and end == total:
        return text
    else:
        note = (f"[lines {start_line}-{end} of {total} of '{shown}'" if total is not None
                else f"[lines {start_line}-{end} of '{shown}' ({_human_size(size)}; more "
                     "lines follow)")
    if total is not None and end >= total:
        return f"{text}\n\n{note}]"
    return f"{text}\n\n{note}; call read_file with start_line={end + 1} to read on]"


def _past_the_end(start_line: int, shown: str, total: int) -> NoReturn:
    raise ValueError(f"start_line {start_line} is past the end of '{shown}' "
                     f"({total} lines)")


def _skip_lines(stream: BinaryIO, count: int) -> tuple[int, bytes]:
    """Move past ``count`` newlines, reading fixed-size chunks and keeping none.

    Returns the number of the line the stream is now at (``count + 1`` unless the file
    ended first) and the last byte read (to tell whether a file that ended early had a
    final line without a newline).
    """
    line_number = 1
    last_byte = b""
    while line_number <= count:
        offset = stream.tell()
        chunk = stream.read(_CHUNK_BYTES)
        if not chunk:
            break
        last_byte = chunk[-1:]
        needed = count - line_number + 1
        found = chunk.count(b"\n")
        if found < needed:
            line_number += found
            continue
        index = -1
        for _ in range(needed):
            index = chunk.index(b"\n", index + 1)
        stream.seek(offset + index + 1)
        line_number += needed
    return line_number, last_byte


def _count_remaining_lines(stream: BinaryIO, shown_until: int) -> int | None:
    """The file's total line count if the rest of it is at most
    :data:`_COUNT_AHEAD_BYTES` (counted in chunks, nothing kept); ``None`` beyond that,
    so a multi-gigabyte log costs no more than reading that much."""
    newlines = 0
    scanned = 0
    last_byte = b"\n"
    while scanned <= _COUNT_AHEAD_BYTES:
        chunk = stream.read(_CHUNK_BYTES)
        if not chunk:
            return shown_until + newlines + (last_byte != b"\n")
        newlines += chunk.count(b"\n")
        last_byte = chunk[-1:]
        scanned += len(chunk)
    return None


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
    """One listing line. Whatever is wrong with a single entry (a link outside, a link
    loop, a dangling link, a failing stat) is said on its line; it never fails the
    listing."""
    relative = entry.relative_to(root).as_posix()
    try:
        if entry.is_symlink():
            try:
                resolve_inside(root, relative)
            except OutsideWorkingDirError:
                return f"{relative} -> (link outside the working directory)"
            except SymlinkLoopError:
                return f"{relative} -> (symbolic link loop)"
            if not entry.exists():
                return f"{relative} -> (broken link)"
        info = entry.stat()
    except OSError:
        return f"{relative} (unreadable)"
    if stat.S_ISDIR(info.st_mode):
        return f"{relative}/"
    if not stat.S_ISREG(info.st_mode):
        return f"{relative} ({_special_kind(info.st_mode)})"
    return f"{relative} ({_human_size(info.st_size)})"


def _human_size(size: int) -> str:
    value = float(size)
    for unit in ("B", "KB", "MB", "GB"):
        if value < 1024 or unit == "GB":
            return f"{int(value)} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{size} B"
