"""Confining file tools to the working directory.

A path is resolved (``..`` collapsed, every symlink followed) before it is compared with
the resolved working directory, so neither ``../secret`` nor a symlink pointing outside
lets a tool read beyond it.
"""

from __future__ import annotations

import errno
from pathlib import Path

__all__ = ["OutsideWorkingDirError", "SymlinkLoopError", "display_path", "resolve_inside"]


class OutsideWorkingDirError(PermissionError):
    """A path that leads outside the working directory; the message is for the model."""


class SymlinkLoopError(OSError):
    """A path whose symbolic links lead back to themselves; the message is for the model."""


def resolve_inside(working_dir: Path, path: str) -> Path:
    """``path`` (relative to ``working_dir``, or absolute) resolved, if it stays inside
    the working directory; otherwise :class:`OutsideWorkingDirError`
    (:class:`SymlinkLoopError` if it cannot be resolved at all)."""
    root = working_dir.resolve()
    if "\x00" in path:
        raise OutsideWorkingDirError(f"{path!r} is not a valid path")
    joined = root / Path(path).expanduser()
    try:
        target = joined.resolve()
    except (RuntimeError, OSError) as error:
        # A symlink loop: Python before 3.13 raises RuntimeError, later ones OSError(ELOOP).
        # Either way the model should read what is wrong, not an interpreter message.
        if isinstance(error, OSError) and error.errno != errno.ELOOP:
            raise
        raise SymlinkLoopError(f"'{path}' is a symbolic link loop; it leads to no file"
                               ) from None
    if target != root and not target.is_relative_to(root):
        raise OutsideWorkingDirError(
            f"'{path}' is outside the working directory ({root}); only files inside it "
            "can be accessed")
    return target


def display_path(working_dir: Path, target: Path) -> str:
    """``target`` relative to the working directory, as the model should refer to it."""
    root = working_dir.resolve()
    relative = target.relative_to(root).as_posix()
    return relative or "."
